# tests/unit/jvm.cmake - unit.jvm (jvm/hotspot.c), and heaptap attach on a running JVM (tests/jvm), label e2e
# unit.jvm: HotSpot's answer to the agent load, parsed as hostile input
heaptap_unit_test(jvm LIBS heaptap_jvm)
# unit.jvm_walk: the agent's walker of HotSpot's physical frames, on a made-up JVM (needs the JDK's jni.h)
if(TARGET heaptap_jvm_agent)
  heaptap_unit_test(jvm_walk SOURCES ${CMAKE_SOURCE_DIR}/jvm/walk.c ${CMAKE_SOURCE_DIR}/jvm/xframes.c
    LIBS heaptap_track)
  if(TARGET check_jvm_walk)
    get_target_property(jvm_walk_inc heaptap_jvm_agent INCLUDE_DIRECTORIES)
    target_include_directories(check_jvm_walk PRIVATE ${jvm_walk_inc})
    target_compile_definitions(check_jvm_walk PRIVATE _GNU_SOURCE)
  endif()
endif()
# Real processes and plain libraries: not in sanitizer or fuzz builds.
if(NOT HEAPTAP_SANITIZE AND NOT HEAPTAP_FUZZ)
  add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/jvm ${CMAKE_CURRENT_BINARY_DIR}/jvm)
endif()
