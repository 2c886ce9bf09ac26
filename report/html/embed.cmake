# report/html/embed.cmake - turn a file into a C string (the HTML report's assets)
# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
# writes "const char NAME[] = { 0x.., ..., 0x00 };": bytes, so no escaping
# can go wrong, and NUL-terminated for the C side.
if(NOT IN OR NOT OUT OR NOT NAME)
  message(FATAL_ERROR "embed.cmake: IN, OUT and NAME are needed")
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" len)
# 0xNN, per byte, 16 to a line
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" hex "${hex}")
get_filename_component(base "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* generated from report/html/${base} by report/html/embed.cmake: do not edit */\n"
  "const char ${NAME}[] = {\n${hex}\n0x00 };\n")
# only touch OUT when it changed, so a rebuild does not recompile for nothing
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
