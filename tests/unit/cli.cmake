# tests/unit/cli.cmake - unit.cli: argument parsing, output names, library lookup, session socket
heaptap_unit_test(cli LIBS heaptap_cli)
# unit.top: heaptap top's arguments, cleaning of target bytes, folding per call site, sparklines
heaptap_unit_test(top LIBS heaptap_cli)
