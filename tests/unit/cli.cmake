# tests/unit/cli.cmake - unit.cli: argument parsing, output names, library lookup, session socket
heaptap_unit_test(cli LIBS heaptap_cli)
# the multiarch directory cli/libdir.c also looks in (lib/<multiarch>/heaptap)
if(TARGET check_cli AND CMAKE_LIBRARY_ARCHITECTURE)
  target_compile_definitions(check_cli PRIVATE HEAPTAP_MULTIARCH="${CMAKE_LIBRARY_ARCHITECTURE}")
endif()
# unit.top: heaptap top's arguments, cleaning of target bytes, folding per call site, sparklines
heaptap_unit_test(top LIBS heaptap_cli)
