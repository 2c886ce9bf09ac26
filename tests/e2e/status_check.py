#!/usr/bin/env python3
# tests/e2e/status_check.py - check the live status lines a pty captured against the JSON report
# SPDX-License-Identifier: MIT
"""status_check.py PTY_CAPTURE REPORT.json RECORDING

The capture holds what heaptap drew on its terminal stderr. Checks: several
status lines, redrawn in place ("\\r" + erase to end of line), growing;
some live line with calls/s > 0; the last one ended by a newline, with the
report's calls, peak heap and recording size. Prints what is wrong and exits
1, or exits 0.
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from htreport import load, size  # noqa: E402 (report/units.c's size text)

LINE = re.compile(r"^heaptap: ([0-9.]+)s  (\S+) calls  (\S+)/s  heap (.+?)  peak (.+?)"
                  r"  (\S+) stacks  rec (.+)$")


def fail(msg):
    print("status_check: " + msg, file=sys.stderr)
    sys.exit(1)


def count(s):
    """A compact count back to (value, rounding error)."""
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}
    if s[-1] in mult:
        digits = s[:-1]
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        return float(digits) * mult[s[-1]], 0.5 * mult[s[-1]] / 10 ** decimals
    return float(s), 0.0


def main():
    raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
    rep = load(sys.argv[2])["summary"]
    rec_bytes = os.path.getsize(sys.argv[3])

    if "\r\x1b[Kheaptap: " not in raw:
        fail("no line redrawn in place (\\r, erase to end of line) in %r" % raw[-300:])
    # each redraw starts with \r ESC[K; the final one ends with \n
    pieces = raw.split("\r\x1b[K")[1:]
    lines, final = [], None
    for p in pieces:
        text = p.split("\n")[0].split("\r")[0]
        m = LINE.match(text)
        if not m:
            continue
        lines.append(m)
        final = m if p.startswith(text + "\n") else None
    if len(lines) < 3:
        fail("%d status lines, expected several redraws: %r" % (len(lines), raw[-500:]))
    if final is None or final is not lines[-1]:
        fail("the last status line is not ended by a newline")
    live = lines[:-1]
    if not any(count(m.group(3))[0] > 0 for m in live):
        fail("no live line shows calls/s > 0")
    prev_t, prev_c = -1.0, -1.0
    for m in lines:
        t, c = float(m.group(1)), count(m.group(2))[0]
        if t < prev_t or c < prev_c:
            fail("elapsed or calls went down: %s" % m.group(0))
        prev_t, prev_c = t, c
    if len({m.group(2) for m in lines}) < 2:
        fail("the calls never changed between redraws")

    calls, err = count(final.group(2))
    if abs(calls - rep["calls"]) > err:
        fail("final line: %s calls, the report %d" % (final.group(2), rep["calls"]))
    if final.group(5) != size(rep["peak_heap"]):
        fail("final line: peak %s, the report %s" % (final.group(5), size(rep["peak_heap"])))
    if final.group(4) != size(rep["leaked"]):
        fail("final line: heap %s, the report's leaked %s" % (final.group(4), size(rep["leaked"])))
    if final.group(7) != size(rec_bytes):
        fail("final line: rec %s, the file has %s" % (final.group(7), size(rec_bytes)))
    if int(count(final.group(6))[0]) < 1:
        fail("final line: no stacks")
    rate, rerr = count(final.group(3))
    want = rep["calls_per_second"]
    # the line's elapsed time is the interpreter's; the report's the last tick's
    if not (want / 1.5 <= rate + rerr and rate - rerr <= want * 1.5):
        fail("final line: %s calls/s, the report %.0f" % (final.group(3), want))
    print("status_check: %d lines, final: %s" % (len(lines), final.group(0)))


if __name__ == "__main__":
    main()
