# tests/unit/inject.cmake - inject/: Check suite (unit.inject)
# The internals (maps snapshot, word rewriting) are tested in every build,
# ASan/UBSan included. The session against a real target program
# (tests/inject) needs plain binaries: only in non-sanitizer, non-fuzz builds.
heaptap_unit_test(inject LIBS heaptap_inject_core heaptap_interpret heaptap_recfile
  Threads::Threads ${CMAKE_DL_LIBS})
if(TARGET check_inject)
  target_compile_definitions(check_inject PRIVATE _GNU_SOURCE)
  if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
    add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../inject ${CMAKE_BINARY_DIR}/tests/inject)
    target_compile_definitions(check_inject PRIVATE INJECT_E2E=1)
    add_dependencies(check_inject inject_target injt_late heaptap_inject)
  endif()
endif()
