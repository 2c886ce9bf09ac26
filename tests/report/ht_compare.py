#!/usr/bin/env python3
# tests/report/ht_compare.py - heaptrack_print's text of a heaptap export against heaptap's JSON report
# SPDX-License-Identifier: MIT
#
# usage: ht_compare.py HEAPTRACK_PRINT_OUTPUT REPORT_JSON [TOP]
# Checks: allocation calls equal; peak heap and leaked bytes equal within
# heaptrack's rounding (1000-based units, two decimals); the TOP (default 5)
# call sites of "MOST CALLS" and "PEAK MEMORY CONSUMERS" are the same
# (calls or bytes, innermost function) as heaptap's lists. Prints what
# differs and exits 1, else exits 0.
import json
import re
import sys

UNITS = {"B": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_size(s):
    """heaptrack's formatBytes: '812B', '20.53K', '3.87M'; returns (value, tolerance)."""
    m = re.fullmatch(r"(-?[0-9.]+)([BKMGT])B?", s.strip())
    if not m:
        raise ValueError("not a heaptrack size: %r" % s)
    scale = UNITS[m.group(2)]
    tol = 0 if scale == 1 else 0.005 * scale + 1
    return float(m.group(1)) * scale, tol


def site_name(site):
    """heaptrack prints the innermost function, or the ip in hex when there is none."""
    fr = site.get("frames") or []
    if fr and fr[0].get("function"):
        return fr[0]["function"]
    return site["ip"] or "?"


def blocks(text, title, header_re):
    """(number, function) of each site header in section title."""
    out = []
    start = text.find("\n" + title + "\n")
    if start < 0:
        return out
    lines = text[start + len(title) + 2:].split("\n")
    for i, line in enumerate(lines):
        if line == "" and i + 1 < len(lines) and lines[i + 1] == "":
            break
        m = re.fullmatch(header_re, line)
        if m and i + 1 < len(lines):
            out.append((m.group(1), lines[i + 1].strip()))
    return out


def main():
    text = open(sys.argv[1]).read()
    rep = json.load(open(sys.argv[2]))
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    s = rep["summary"]
    errors = []

    m = re.search(r"^calls to allocation functions: (\d+) ", text, re.M)
    if not m:
        errors.append("no 'calls to allocation functions' line")
    elif int(m.group(1)) != s["calls"]:
        errors.append("calls: heaptrack_print %s, heaptap %d" % (m.group(1), s["calls"]))
    for label, key in (("peak heap memory consumption", "peak"), ("total memory leaked", "leaked")):
        m = re.search(r"^%s: (\S+)$" % label, text, re.M)
        if not m:
            errors.append("no '%s' line" % label)
            continue
        v, tol = parse_size(m.group(1))
        if abs(v - s[key]) > tol:
            errors.append("%s: heaptrack_print %s, heaptap %d" % (key, m.group(1), s[key]))

    # top call sites by calls: same counts in the same order, same functions
    ht = blocks(text, "MOST CALLS TO ALLOCATION FUNCTIONS",
                r"(\d+) calls to allocation functions with \S+ peak consumption from")
    ours = [(str(x["calls"]), site_name(x)) for x in rep["allocations"]]
    n = min(top, len(ours))
    if len(ht) < n:
        errors.append("heaptrack_print lists %d sites by calls, heaptap %d" % (len(ht), len(ours)))
    else:
        if [c for c, _ in ht[:n]] != [c for c, _ in ours[:n]]:
            errors.append("top calls differ: heaptrack_print %s, heaptap %s" % (ht[:n], ours[:n]))
        for c, fn in ht[:n]:
            if (c, fn) not in ours:
                errors.append("heaptrack_print's site (%s calls, %s) is not in heaptap's list" % (c, fn))

    # top call sites by peak bytes
    ht = blocks(text, "PEAK MEMORY CONSUMERS", r"(\S+) peak memory consumed over \d+ calls from")
    ours = [(x["peak"], site_name(x)) for x in rep["peak"]]
    n = min(top, len(ours))
    if len(ht) < n:
        errors.append("heaptrack_print lists %d sites by peak, heaptap %d" % (len(ht), len(ours)))
    for (hsize, hfn), (psize, pfn) in zip(ht[:n], ours[:n]):
        v, tol = parse_size(hsize)
        if abs(v - psize) > tol:
            errors.append("peak list: heaptrack_print %s %s, heaptap %d %s" % (hsize, hfn, psize, pfn))
        elif hfn != pfn and not any(abs(v - p) <= tol and f == hfn for p, f in ours):
            errors.append("peak list: heaptrack_print's %s (%s) is not among heaptap's" % (hfn, hsize))

    for e in errors:
        print("ht_compare: " + e, file=sys.stderr)
    if not errors:
        print("ht_compare: calls %d, peak %d, leaked %d%s agree" %
              (s["calls"], s["peak"], s["leaked"], " and the top sites" if top else ""), file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
