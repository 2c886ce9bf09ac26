# tests/unit/session.cmake - heaptap attach end to end (tests/session), label e2e
# Real processes and plain libraries: not in sanitizer or fuzz builds.
if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/session ${CMAKE_CURRENT_BINARY_DIR}/session)
endif()
