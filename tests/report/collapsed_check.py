#!/usr/bin/env python3
# tests/report/collapsed_check.py - folded stacks against the JSON report
# SPDX-License-Identifier: MIT
#
# usage: collapsed_check.py REPORT_JSON COST FOLDED [SUFFIX N]
# Every line of FOLDED must be "frame;frame;... N" (N a positive integer,
# no empty frame); the Ns must add up to the JSON summary's COST total
# (calls, bytes, peak, leaked, temporary). With SUFFIX N: the lines whose
# stack ends with SUFFIX (";"-separated, outer to inner) must add up to N.
import json
import re
import sys


def main():
    summary = json.load(open(sys.argv[1]))["summary"]
    cost = sys.argv[2]
    total, errors, suffix_sum = 0, [], 0
    suffix = sys.argv[4].split(";") if len(sys.argv) > 5 else None
    for no, line in enumerate(open(sys.argv[3], encoding="utf-8", errors="replace"), 1):
        m = re.fullmatch(r"(.+) ([0-9]+)\n", line)
        if not m:
            errors.append("line %d is not 'stack N': %r" % (no, line[:200]))
            continue
        frames, n = m.group(1).split(";"), int(m.group(2))
        if n == 0 or any(f == "" for f in frames):
            errors.append("line %d: zero count or empty frame: %r" % (no, line[:200]))
        total += n
        if suffix and frames[-len(suffix):] == suffix:
            suffix_sum += n
    if total != summary[cost]:
        errors.append("%s: folded stacks add up to %d, the JSON total is %d" % (cost, total, summary[cost]))
    if suffix and suffix_sum != int(sys.argv[5]):
        errors.append("%s: stacks ending in %s add up to %d, expected %s" %
                      (cost, sys.argv[4], suffix_sum, sys.argv[5]))
    for e in errors:
        print("collapsed_check: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
