# tests/unit/interpret.cmake - Check suites of interpret/ (unit.interpret, unit.interpret_*)
#
# Every suite feeds crafted streams (check_interpret_wire.c) through itp_run
# (check_interpret_harness.h) and reads the recording back.
set(ITP_TEST_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_interpret_wire.c)
set(ITP_TEST_LIBS heaptap_interpret Threads::Threads ${CMAKE_DL_LIBS})
# the stream applied: events, allocation infos, weights, counters (and the tools: --bench*, --write-seeds)
heaptap_unit_test(interpret
  SOURCES ${ITP_TEST_SOURCES} ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_interpret_tools.c
  LIBS ${ITP_TEST_LIBS})
# events of many threads put back in sequence order: chunks, gaps, the reorder limit, ticks
heaptap_unit_test(interpret_order SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
# hostile streams: bad headers, lengths, varints, unknown ops, cut streams
heaptap_unit_test(interpret_bad SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
# reading and control: split reads, queue blocks, stop, status, the output file
heaptap_unit_test(interpret_io SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
# after a stop: END behind a long flush, a silent library, an endless stream
heaptap_unit_test(interpret_stop SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
# symbolization against the test binary itself, modules, demangling
heaptap_unit_test(interpret_symbols SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
# the reader thread's input queue (interpret/inq.c): order, bound, EOF, errors, signals, stop
heaptap_unit_test(inq LIBS heaptap_interpret Threads::Threads)
# hostile module streams (a MODULE_DEL flood, a huge range), the module index, the memory budget, a second stop
heaptap_unit_test(modindex SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
# foreign frames (Java, Python): definitions before and after use, marks, hostile records, the budget
heaptap_unit_test(interpret_xframe SOURCES ${ITP_TEST_SOURCES} LIBS ${ITP_TEST_LIBS})
