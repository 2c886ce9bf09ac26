# tests/unit/util.cmake - Check suite of util/: the /proc/PID/status id reader (procids.h) on crafted files
heaptap_unit_test(util LIBS heaptap_util)
