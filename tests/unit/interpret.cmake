# tests/unit/interpret.cmake - Check suite of interpret/ (unit.interpret)
heaptap_unit_test(interpret
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_interpret_wire.c
  LIBS heaptap_interpret Threads::Threads ${CMAKE_DL_LIBS})
# the reader thread's input queue (interpret/inq.c): order, bound, EOF, errors, signals, stop
heaptap_unit_test(inq LIBS heaptap_interpret Threads::Threads)
