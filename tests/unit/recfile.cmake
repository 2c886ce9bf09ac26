# tests/unit/recfile.cmake - unit.recfile: writer/reader round trips, damaged files
heaptap_unit_test(recfile LIBS heaptap_recfile heaptap_util Threads::Threads)
# unit.recfile_thread: the chunk thread writes the same file and returns its errors
heaptap_unit_test(recfile_thread LIBS heaptap_recfile heaptap_util Threads::Threads)
# unit.recfile_events: split event columns, version 1 chunks, damaged splits, edge-case round trips
heaptap_unit_test(recfile_events LIBS heaptap_recfile heaptap_util Threads::Threads)
