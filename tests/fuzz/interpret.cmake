# tests/fuzz/interpret.cmake - fuzz harness of interpret/ (fuzz.stream)
# The harness gives itp_run a 512 MiB budget (FUZZ_BUDGET_MIB); the RSS limit
# is that plus ASan's 256 MiB quarantine of freed blocks and libFuzzer's own.
heaptap_fuzz_target(stream
  LIBS heaptap_interpret
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/data/stream
  RSS_MB 1024)
