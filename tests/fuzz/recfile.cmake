# tests/fuzz/recfile.cmake - fuzz.recfile: the recording reader under libFuzzer
if(HEAPTAP_FUZZ)
  # the same source built as a program writes the seed corpus at build time
  set(recfile_seed_dir ${CMAKE_BINARY_DIR}/fuzz-seed/recfile)
  add_executable(fuzz_recfile_seed ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_recfile.c)
  target_compile_definitions(fuzz_recfile_seed PRIVATE FUZZ_RECFILE_SEED=1)
  target_link_libraries(fuzz_recfile_seed PRIVATE heaptap_recfile)
  # the libraries of a fuzz build are instrumented: link the runtimes
  target_link_options(fuzz_recfile_seed PRIVATE -fsanitize=address,undefined)
  add_custom_command(OUTPUT ${recfile_seed_dir}/small
    COMMAND ${CMAKE_COMMAND} -E make_directory ${recfile_seed_dir}
    COMMAND fuzz_recfile_seed ${recfile_seed_dir}
    DEPENDS fuzz_recfile_seed
    COMMENT "Writing the recfile fuzz seed corpus")
  add_custom_target(fuzz_recfile_corpus ALL DEPENDS ${recfile_seed_dir}/small)
endif()
heaptap_fuzz_target(recfile LIBS heaptap_recfile CORPUS ${CMAKE_BINARY_DIR}/fuzz-seed/recfile)
if(TARGET fuzz_recfile)
  add_dependencies(fuzz_recfile fuzz_recfile_corpus)
endif()
