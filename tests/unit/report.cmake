# tests/unit/report.cmake - unit.report: report computations on recordings written by the test
heaptap_unit_test(report LIBS heaptap_report heaptap_recfile)
