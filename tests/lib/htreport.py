#!/usr/bin/env python3
# tests/lib/htreport.py - what the test checkers read out of `heaptap report --format json`
# SPDX-License-Identifier: MIT
"""Shared by the Python checkers (they put tests/lib on sys.path) and by the
shell cases, which run it:

  htreport.py through REPORT.json FUNCTION
      prints "calls=N bytes=N leaked=N": the sums over every backtrace that
      has a frame of FUNCTION (exact name)

A report lists call sites under "allocations"; a site with several
backtraces lists them under "backtraces", a site with one is its own
backtrace (traces() yields either way).
"""
import json
import sys

SUMS = ("calls", "bytes", "leaked")


def load(path):
    with open(path) as f:
        return json.load(f)


def traces(rep):
    """Every backtrace of the report, each with its frames and numbers."""
    for s in rep.get("allocations", []):
        for t in s.get("backtraces") or [s]:
            yield t


def function(frame):
    return frame.get("function") or ""


def through(rep, name, keys=SUMS):
    """Sums of keys over the backtraces that have a frame of function name."""
    got = dict((k, 0) for k in keys)
    for t in traces(rep):
        if any(function(f) == name for f in t.get("frames", [])):
            for k in keys:
                got[k] += int(t.get(k, 0))
    return got


def size(n):
    """The same text as report/units.c rpt_format_size."""
    if n < 1024:
        return "%d B" % n
    units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    v, u = n / 1024.0, 0
    while v >= 1023.95 and u + 1 < len(units):
        v /= 1024.0
        u += 1
    return "%.1f %s" % (v, units[u])


def main(argv):
    if len(argv) == 4 and argv[1] == "through":
        got = through(load(argv[2]), argv[3])
        print(" ".join("%s=%d" % (k, got[k]) for k in SUMS))
        return 0
    print("usage: htreport.py through REPORT.json FUNCTION", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
