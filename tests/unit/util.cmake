# tests/unit/util.cmake - Check suite of util/: the bounded file reader (procread.h) and the status id reader (procids.h)
heaptap_unit_test(util LIBS heaptap_util)
