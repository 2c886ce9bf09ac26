#!/usr/bin/env python3
# tests/jvm/check_safepoints.py - did heaptap hold a Java thread, or delay a safepoint?
# SPDX-License-Identifier: MIT
#
# Usage: check_safepoints.py SP_LOG HOLDS_JSON JAVA_TIDS [JAVA_TIDS...]
#   SP_LOG      the JVM's -Xlog:safepoint:file=...:timenanos output
#   HOLDS_JSON  holdwatch.py's intervals (threads that had a tracer)
#   JAVA_TIDS   files with the tids of the JVM's Java threads, one a line
#
# Fails (exit 1) when
#   - a thread heaptap stopped is a Java thread: only Java threads take part
#     in a safepoint, so holding one is the only way an attach can delay it;
#   - a safepoint was delayed by a hold of a Java thread: its
#     synchronisation ("Reaching safepoint") overlapped the hold, lasted
#     1 ms or more, and ended when the hold ended (between 0.2 ms before the
#     hold was last seen and 1 ms after it was first seen gone), which is
#     what waiting for the held thread looks like.
# A safepoint line is logged when it ends: its begin is the log time minus
# "Total", its synchronisation ended "Reaching" later. The same signature
# next to a hold of a thread that is not a Java thread is a coincidence
# (on a loaded machine synchronisations of several ms are common) and is
# printed as such, not judged: that thread cannot take part in a safepoint.
# Prints what it saw either way.
import json
import re
import sys

sp_log, holds_json = sys.argv[1], sys.argv[2]
java = set()
for fn in sys.argv[3:]:
    for line in open(fn):
        if line.strip().isdigit():
            java.add(int(line))
data = json.load(open(holds_json))
holds = data["holds"]
pat = re.compile(r'\[(\d+)ns\] Safepoint "([^"]*)".*Reaching safepoint: (\d+) ns.*Total: (\d+) ns')
sps = []
for line in open(sp_log, errors="replace"):
    m = pat.search(line)
    if m:
        end, name, reach, total = int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4))
        begin = end - total
        sps.append((begin, begin + reach, name, reach))
if not sps:
    sys.exit("check_safepoints: no safepoint in %s (is -Xlog:safepoint on?)" % sp_log)
bad = []
for h in holds:
    if h["tid"] in java:
        bad.append("heaptap stopped Java thread %d for %.3f..%.3f ms" % (
            h["tid"], (h["end_lo"] - h["start_hi"]) / 1e6, (h["end_hi"] - h["start_lo"]) / 1e6))
near = []
for b, s, name, reach in sps:
    for h in holds:
        if b < h["end_hi"] and s > h["start_lo"]:
            near.append((name, reach, h["tid"]))
            if reach >= 1_000_000 and h["end_lo"] - 200_000 <= s <= h["end_hi"] + 1_000_000:
                msg = "safepoint %r synchronised for %.3f ms and ended as the hold of thread %d ended" % (
                    name, reach / 1e6, h["tid"])
                if h["tid"] in java:
                    bad.append(msg)
                else:
                    print("check_safepoints: NOTE: %s; a coincidence: that thread is not a Java "
                          "thread" % msg, file=sys.stderr)
t0 = min(h["start_lo"] for h in holds) if holds else 0
t1 = max(h["end_hi"] for h in holds) if holds else 0
print("safepoints: %d logged, %d during the session's holds (%s); longest synchronisation "
      "%.3f ms overall, %.3f ms during holds; %d holds of threads %s, %d Java threads" % (
          len(sps), len(near), ", ".join(sorted(set(n for n, _, _ in near))) or "-",
          max(r for _, _, _, r in sps) / 1e6, max([r for _, r, _ in near] or [0]) / 1e6,
          len(holds), sorted(set(h["tid"] for h in holds)), len(java)), file=sys.stderr)
if not holds:
    # The hold lasted less than one sweep of holdwatch.py (it happens on a
    # busy machine); heaptap's own -v line still names the thread (held_ok).
    print("check_safepoints: NOTE: holdwatch saw no hold in %d sweeps; nothing to judge the "
          "safepoints against in this run" % data.get("sweeps", 0), file=sys.stderr)
for x in bad:
    print("check_safepoints: " + x, file=sys.stderr)
sys.exit(1 if bad else 0)
