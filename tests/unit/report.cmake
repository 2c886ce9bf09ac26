# tests/unit/report.cmake - unit.report: report computations on recordings written by the test
heaptap_unit_test(report SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/unit/check_report_render.c
  LIBS heaptap_report heaptap_recfile)
# unit.report_pprof: the pprof builder and export, read back with zlib and a small decoder
find_package(ZLIB REQUIRED)
heaptap_unit_test(report_pprof LIBS heaptap_report heaptap_recfile ZLIB::ZLIB)
# unit.report_diff: call sites of two recordings matched across load addresses
heaptap_unit_test(report_diff LIBS heaptap_report heaptap_recfile)
# unit.report_exports: the heaptrack, folded-stack and massif writers, line by line
heaptap_unit_test(report_exports LIBS heaptap_report heaptap_recfile)
# unit.report_html: the heap curve (against a plain replay) and the flame tree's merging
heaptap_unit_test(report_html LIBS heaptap_report heaptap_recfile)
