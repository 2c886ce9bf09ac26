# tests/unit/preload.cmake - Check suite of preload/ (environment, bootstrap arena, the
# library run under a real program). The library itself is found through
# HEAPTAP_BUILD_DIR; the exec test skips itself in sanitizer builds.
heaptap_unit_test(preload
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/../preload/env.c ${CMAKE_CURRENT_SOURCE_DIR}/../preload/boot.c
  LIBS heaptap_wire Threads::Threads)
if(TARGET check_preload)
  target_compile_definitions(check_preload PRIVATE _GNU_SOURCE)
  add_dependencies(check_preload heaptap_preload)
endif()
