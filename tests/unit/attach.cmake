# tests/unit/attach.cmake - attach/: Check suite (unit.attach) and the real-process tests in tests/attach
heaptap_unit_test(attach LIBS heaptap_attach)
if(TARGET check_attach)
  target_compile_definitions(check_attach PRIVATE _GNU_SOURCE)
  set_tests_properties(unit.attach PROPERTIES SKIP_RETURN_CODE ${HEAPTAP_SKIP_RETURN_CODE})
endif()
# The victims and their driver must not be sanitizer builds (a target loads
# plain libraries); tests/CMakeLists.txt skips e2e in those builds the same way.
if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../attach ${CMAKE_BINARY_DIR}/tests/attach)
endif()
# attach/deps.c and attach/stage.c on real files, in every build (ASan too):
# unit.stage, its source beside the e2e cases it backs (tests/attach/minroot.sh)
if(CHECK_FOUND)
  add_executable(check_stage ${CMAKE_CURRENT_LIST_DIR}/../attach/check_stage.c)
  target_link_libraries(check_stage PRIVATE heaptap_attach PkgConfig::CHECK)
  target_compile_definitions(check_stage PRIVATE _GNU_SOURCE)
  add_dependencies(check_stage heaptap_inject)
  add_test(NAME unit.stage COMMAND check_stage)
  set_tests_properties(unit.stage PROPERTIES LABELS unit TIMEOUT 300
    ENVIRONMENT "CK_DEFAULT_TIMEOUT=60;HEAPTAP_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
