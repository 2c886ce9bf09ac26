# tests/unit/cli.cmake - unit.cli: argument parsing, output names, library lookup, session socket
heaptap_unit_test(cli LIBS heaptap_cli)
