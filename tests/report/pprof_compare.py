#!/usr/bin/env python3
# tests/report/pprof_compare.py - compare `go tool pprof -top` with heaptap's JSON report
# SPDX-License-Identifier: MIT
#
# Usage: pprof_compare.py REPORT.json TOP.txt SAMPLE_INDEX [MUST_FUNCTION...]
#
# TOP.txt is `go tool pprof -top -unit=B -nodefraction=0 -nodecount=N
# -sample_index=SAMPLE_INDEX` of the export of the same recording. The flat
# value of a function in pprof is the sum over the samples whose leaf line is
# that function; in heaptap's report, the sum over the call sites whose
# innermost frame is that function. For every symbolized function these must
# be equal, and pprof's total must equal the report's total. MUST_FUNCTIONs
# must be among them with a non-zero value (so an empty export cannot pass),
# and pprof's first (largest) entry must be the report's largest.
import json
import re
import sys

FIELD = {
    "alloc_space": ("allocations", "bytes"),
    "alloc_objects": ("allocations", "calls"),
    "inuse_space": ("leaked", "leaked"),
    "inuse_objects": ("leaked", "leaked_calls"),
}

report, top_path, index = sys.argv[1], sys.argv[2], sys.argv[3]
must = sys.argv[4:]
lst, key = FIELD[index]
d = json.load(open(report))

want = {}
unsymbolized = 0
for site in d[lst]:
    v = site[key]
    fn = site["frames"][0]["function"] if site["frames"] else None
    if fn is None:
        unsymbolized += v
        continue
    want[fn] = want.get(fn, 0) + v
want = {k: v for k, v in want.items() if v}
total_want = d["summary"][key]

got = {}
order = []
total_got = None
row = re.compile(r"^\s*(\d+)B\s+[\d.]+%\s+[\d.]+%\s+(\d+)B\s+[\d.]+%\s+(.+?)\s*$")
for line in open(top_path):
    m = re.search(r"Total samples = (\d+)B", line)
    if m:
        total_got = int(m.group(1))
    m = row.match(line)
    if m and int(m.group(1)):
        got[m.group(3)] = got.get(m.group(3), 0) + int(m.group(1))
        order.append((int(m.group(1)), m.group(3)))

fails = []
if total_got is None:
    # pprof prints no total line when every value is 0
    total_got = 0
if total_got != total_want:
    fails.append(f"total: pprof {total_got}, report {total_want}")
for fn, v in want.items():
    if got.get(fn) != v:
        fails.append(f"{fn}: pprof {got.get(fn)}, report {v}")
extra = sum(v for fn, v in got.items() if fn not in want)
if extra != unsymbolized:
    fails.append(f"pprof has {extra} in functions the report has no name for ({unsymbolized})")
for fn in must:
    if not want.get(fn):
        fails.append(f"{fn}: not in the report's {lst} list ({index})")
if want and order:
    big = max(want.values())
    if order[0][0] != big:
        fails.append(f"pprof's top entry {order[0]} is not the report's largest ({big})")
if fails:
    print(f"pprof_compare {index}: " + "; ".join(fails), file=sys.stderr)
    sys.exit(1)
print(f"pprof_compare {index}: {len(want)} functions, total {total_want} agree")
