#!/usr/bin/env python3
# tests/jvm/holdwatch.py - record when threads of a process have a tracer (heaptap holds them)
# SPDX-License-Identifier: MIT
#
# Usage: holdwatch.py PID OUT.json STOPFILE
# OUT.json.ready appears after the first sweep.
# Sweeps /proc/PID/task/*/status in a tight loop until STOPFILE exists (or
# 600 s pass), then writes a JSON list of intervals, one per time a thread
# was seen traced: {"tid", "start_lo", "start_hi", "end_lo", "end_hi"}, in
# CLOCK_MONOTONIC ns (the clock of the JVM's System.nanoTime and of its
# -Xlog "timenanos" decoration). The thread was first traced within
# [start_lo, start_hi] and let go within [end_lo, end_hi]; one sweep of
# every thread's status file is the resolution (well under a millisecond).
import json
import os
import sys
import time

pid, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
base = "/proc/%s/task" % pid
open_iv = {}  # tid -> [start_lo, start_hi, last_seen]
done = []
prev = time.monotonic_ns()
deadline = prev + 600 * 10**9
sweeps = 0
while not os.path.exists(stop) and prev < deadline:
    try:
        tids = os.listdir(base)
    except OSError:
        break
    seen = set()
    for t in tids:
        try:
            with open("%s/%s/status" % (base, t), "rb") as f:
                st = f.read()
        except OSError:
            continue
        i = st.find(b"TracerPid:")
        if i >= 0 and int(st[i + 10:st.index(b"\n", i)]) != 0:
            seen.add(int(t))
    now = time.monotonic_ns()
    for t in seen:
        if t not in open_iv:
            open_iv[t] = [prev, now, now]
        else:
            open_iv[t][2] = now
    for t in list(open_iv):
        if t not in seen:
            lo, hi, last = open_iv.pop(t)
            done.append(dict(tid=t, start_lo=lo, start_hi=hi, end_lo=last, end_hi=now))
    prev = now
    sweeps += 1
    if sweeps == 1:
        open(out + ".ready", "w").close()
now = time.monotonic_ns()
for t, (lo, hi, last) in open_iv.items():
    done.append(dict(tid=t, start_lo=lo, start_hi=hi, end_lo=last, end_hi=now, open=True))
with open(out + ".tmp", "w") as f:
    json.dump(dict(sweeps=sweeps, holds=done), f)
os.rename(out + ".tmp", out)
