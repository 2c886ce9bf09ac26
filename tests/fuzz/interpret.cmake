# tests/fuzz/interpret.cmake - fuzz harness of interpret/ (fuzz.stream)
heaptap_fuzz_target(stream
  LIBS heaptap_interpret
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/data/stream)
