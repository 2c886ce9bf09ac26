# tests/unit/jvm.cmake - unit.jvm (jvm/hotspot.c), and heaptap attach on a running JVM (tests/jvm), label e2e
# unit.jvm: HotSpot's answer to the agent load, parsed as hostile input
heaptap_unit_test(jvm LIBS heaptap_jvm)
# Real processes and plain libraries: not in sanitizer or fuzz builds.
if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/jvm ${CMAKE_CURRENT_BINARY_DIR}/jvm)
endif()
