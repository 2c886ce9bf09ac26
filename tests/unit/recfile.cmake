# tests/unit/recfile.cmake - unit.recfile: writer/reader round trips, damaged files
# unit.recfile is one program of three files (check_recfile.h)
heaptap_unit_test(recfile LIBS heaptap_recfile heaptap_util Threads::Threads
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_recfile_damage.c
          ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_recfile_big.c)
# unit.recfile_thread: the chunk thread writes the same file and returns its errors
heaptap_unit_test(recfile_thread LIBS heaptap_recfile heaptap_util Threads::Threads)
# unit.recfile_events: split event columns, version 1 chunks, damaged splits, edge-case round trips
heaptap_unit_test(recfile_events LIBS heaptap_recfile heaptap_util Threads::Threads)
