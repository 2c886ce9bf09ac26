# tests/unit/recfile.cmake - unit.recfile: writer/reader round trips, damaged files
heaptap_unit_test(recfile LIBS heaptap_recfile heaptap_util Threads::Threads)
