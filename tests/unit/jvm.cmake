# tests/unit/jvm.cmake - heaptap attach on a running JVM (tests/jvm), label e2e
# Real processes and plain libraries: not in sanitizer or fuzz builds.
if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/jvm ${CMAKE_CURRENT_BINARY_DIR}/jvm)
endif()
