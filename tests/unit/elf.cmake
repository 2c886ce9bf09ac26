# tests/unit/elf.cmake - unit.elf: fixture libraries and the Check suite for elf/
#
# Included from tests/CMakeLists.txt (CMAKE_CURRENT_SOURCE_DIR is tests/).
# The fixtures are one small source linked five ways (tests/data/elf/README);
# they are also the fuzz seeds (tests/fuzz/elf.cmake).

set(ELFR_FX_SRC ${CMAKE_CURRENT_SOURCE_DIR}/data/elf/fx_alloc.c)
set(ELFR_FX_DIR ${CMAKE_BINARY_DIR}/tests/elf-fixtures)
set(ELFR_FIXTURES elfr_fx_plt elfr_fx_noplt elfr_fx_relro elfr_fx_sysv elfr_fx_gnu)
foreach(fx ${ELFR_FIXTURES})
  add_library(${fx} SHARED ${ELFR_FX_SRC})
  set_target_properties(${fx} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ELFR_FX_DIR})
endforeach()
target_compile_options(elfr_fx_noplt PRIVATE -fno-plt)
target_link_options(elfr_fx_plt PRIVATE -Wl,-z,lazy)
target_link_options(elfr_fx_relro PRIVATE -Wl,-z,relro,-z,now)
target_link_options(elfr_fx_sysv PRIVATE -Wl,--hash-style=sysv)
target_link_options(elfr_fx_gnu PRIVATE -Wl,--hash-style=gnu)

# Symbol versions (elfr_file_version_missing): two "libc.so.6" defining
# different GLIBC_* sets, and a library needing GLIBC_2.2.5 and GLIBC_2.34
# from the newer one.
set(ELFR_FX_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/elf)
foreach(v old new)
  add_library(elfr_fx_libc_${v} SHARED ${ELFR_FX_DATA}/fx_fakelibc.c)
  set_target_properties(elfr_fx_libc_${v} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ELFR_FX_DIR} NO_SONAME ON)
  target_link_options(elfr_fx_libc_${v} PRIVATE -nostdlib -Wl,-soname,libc.so.6
    -Wl,--version-script=${ELFR_FX_DATA}/fx_fakelibc_${v}.map)
endforeach()
target_compile_definitions(elfr_fx_libc_new PRIVATE FX_NEW)
add_library(elfr_fx_versioned SHARED ${ELFR_FX_DATA}/fx_versioned.c)
set_target_properties(elfr_fx_versioned PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ELFR_FX_DIR})
target_link_options(elfr_fx_versioned PRIVATE -nostdlib)
target_link_libraries(elfr_fx_versioned PRIVATE elfr_fx_libc_new)
list(APPEND ELFR_FIXTURES elfr_fx_libc_old elfr_fx_libc_new elfr_fx_versioned)

heaptap_unit_test(elf
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_elf_crafted.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_elf_file.c
  LIBS heaptap_elf ${CMAKE_DL_LIBS})
if(TARGET check_elf)
  add_dependencies(check_elf ${ELFR_FIXTURES})
  target_compile_definitions(check_elf PRIVATE
    ELFR_FX_PLT="$<TARGET_FILE:elfr_fx_plt>"
    ELFR_FX_NOPLT="$<TARGET_FILE:elfr_fx_noplt>"
    ELFR_FX_RELRO="$<TARGET_FILE:elfr_fx_relro>"
    ELFR_FX_SYSV="$<TARGET_FILE:elfr_fx_sysv>"
    ELFR_FX_GNU="$<TARGET_FILE:elfr_fx_gnu>"
    ELFR_FX_LIBC_OLD="$<TARGET_FILE:elfr_fx_libc_old>"
    ELFR_FX_LIBC_NEW="$<TARGET_FILE:elfr_fx_libc_new>"
    ELFR_FX_VERSIONED="$<TARGET_FILE:elfr_fx_versioned>")
endif()
