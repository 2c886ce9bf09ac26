# tests/fuzz/elf.cmake - fuzz.elf: libFuzzer over the in-memory ELF walker
#
# Seeds are real modules, copied at build time (nothing binary is committed):
# the tests/unit/elf.cmake fixtures (included just before this file) and the
# C library the compiler links against.

# The walker's sources are compiled into the harness too, so they get the
# harness's coverage instrumentation (-fsanitize=fuzzer); heaptap_elf itself
# stays uninstrumented for the other targets of a fuzz build. The objects
# win over the archive's members, so nothing is defined twice.
set(ELFR_SEED_DIR ${CMAKE_BINARY_DIR}/fuzz-seed/elf)
get_target_property(ELFR_SRCS heaptap_elf SOURCES)
get_target_property(ELFR_SRC_DIR heaptap_elf SOURCE_DIR)
list(TRANSFORM ELFR_SRCS PREPEND ${ELFR_SRC_DIR}/)
heaptap_fuzz_target(elf SOURCES ${ELFR_SRCS} LIBS heaptap_elf CORPUS ${ELFR_SEED_DIR})
if(TARGET fuzz_elf)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libc.so.6
    OUTPUT_VARIABLE ELFR_LIBC OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  set(ELFR_SEED_COPIES "")
  foreach(fx ${ELFR_FIXTURES})
    list(APPEND ELFR_SEED_COPIES COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:${fx}> ${ELFR_SEED_DIR}/)
  endforeach()
  if(IS_ABSOLUTE "${ELFR_LIBC}" AND EXISTS "${ELFR_LIBC}")
    list(APPEND ELFR_SEED_COPIES COMMAND ${CMAKE_COMMAND} -E copy ${ELFR_LIBC} ${ELFR_SEED_DIR}/libc.so.6)
  endif()
  add_dependencies(fuzz_elf ${ELFR_FIXTURES})
  add_custom_command(TARGET fuzz_elf POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ELFR_SEED_DIR}
    ${ELFR_SEED_COPIES}
    COMMENT "fuzz.elf: seed corpus of real modules in ${ELFR_SEED_DIR}"
    VERBATIM)
endif()
