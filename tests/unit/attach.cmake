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
