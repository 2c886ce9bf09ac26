# tests/unit/inject.cmake - inject/: Check suites unit.inject and unit.inject_attach
# unit.inject: the internals (maps snapshot, word rewriting, a pass over the
# test process) in every build, ASan/UBSan included; a whole session against
# tests/inject/inject_target (which loads the library itself) in plain builds.
# unit.inject_attach: a real runtime attach (attach/ + inject/) to
# tests/inject/inject_victim; plain builds only, skipped (77) without ptrace.
# Targets and the library they load must not be sanitizer builds.
heaptap_unit_test(inject LIBS heaptap_inject_core heaptap_interpret heaptap_recfile
  Threads::Threads ${CMAKE_DL_LIBS})
if(TARGET check_inject)
  target_compile_definitions(check_inject PRIVATE _GNU_SOURCE)
  if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
    add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../inject ${CMAKE_BINARY_DIR}/tests/inject)
    target_compile_definitions(check_inject PRIVATE INJECT_E2E=1)
    add_dependencies(check_inject inject_target injt_late heaptap_inject)

    heaptap_unit_test(inject_attach LIBS heaptap_attach heaptap_interpret heaptap_recfile
      Threads::Threads)
    if(TARGET check_inject_attach)
      target_compile_definitions(check_inject_attach PRIVATE _GNU_SOURCE)
      add_dependencies(check_inject_attach inject_victim heaptap_inject)
      set_tests_properties(unit.inject_attach PROPERTIES
        SKIP_RETURN_CODE ${HEAPTAP_SKIP_RETURN_CODE})
    endif()
  endif()
endif()

# unit.startrec: inject/'s WIRE_REC_START, built by the library's encoder, parsed by
# interpret/ (round trip, newer/older/absent record, corrupt ones refused with bounds)
heaptap_unit_test(startrec SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_interpret_wire.c
  LIBS heaptap_inject_core heaptap_interpret heaptap_recfile Threads::Threads ${CMAKE_DL_LIBS})
