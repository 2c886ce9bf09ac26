#!/usr/bin/env python3
# tests/session/top_screen.py - read a captured heaptap top screen (tmux capture-pane -p)
# SPDX-License-Identifier: MIT
#
# Usage: top_screen.py SCREEN CHECK [ARG]
#   first          print the function of the table's first row ("" when none)
#   sorted COLUMN  exit 0 when the table has at least 2 rows and COLUMN (live,
#                  change, alloc, calls, temp) does not increase down the table,
#                  else print why and exit 1
#   order          print the functions of the rows, one line
#   layout W H     exit 0 when the screen is H lines with the header at the top,
#                  the table's titles on line 6 and the key line at the bottom,
#                  no line wider than W; else print why and exit 1
#   header         exit 0 when line 2 is "heap H  peak P  RSS R  allocs C/s  B/s"
#                  with P >= H and R > 0, and lines 3 and 4 are the heap and
#                  RSS sparklines (a label, at least one bar, "max V"); print
#                  "H P R C B" as numbers; else print why and exit 1
#   rates          print the header's allocs/s and bytes/s (line 2) as numbers;
#                  exit 1 when line 2 has none
#   row FUNCTION   print the five columns of FUNCTION's row as numbers ("-"
#                  stays "-"); exit 1 when it has no row
# The table is the lines after the one starting with "NOT FREED" up to the
# key line; a row is NOT FREED, CHANGE, ALLOC/S, CALLS/S, TEMP/S, then the
# call site (function first).
import re
import sys

# bytes are binary (K M G), counts decimal (k M G): within one column either
# reading keeps the order, which is all the checks compare
UNITS = {"B": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4, "k": 1e3}
COLS = {"live": 0, "change": 1, "alloc": 2, "calls": 3, "temp": 4}


def value(s):
    if s == "-":
        return None
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-")
    mult = 1
    if s and s[-1] in UNITS:
        mult = UNITS[s[-1]]
        s = s[:-1]
    return sign * float(s) * mult


def table(lines):
    rows, inside = [], False
    for ln in lines:
        if ln.startswith("NOT FREED"):
            inside = True
            continue
        if not inside:
            continue
        if ln.startswith(("l a c t", "Enter/Esc")) or not ln.strip():
            break
        f = ln.split()
        if len(f) < 6:
            break
        rows.append((f[:5], f[5]))
    return rows


def main():
    lines = open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    what = sys.argv[2]
    rows = table(lines)
    if what == "first":
        print(rows[0][1] if rows else "")
    elif what == "order":
        print(" ".join(r[1] for r in rows))
    elif what == "sorted":
        col = COLS[sys.argv[3]]
        vals = [value(r[0][col]) for r in rows]
        if len(vals) < 2 or None in vals:
            print("%d rows, values %s" % (len(vals), vals))
            sys.exit(1)
        for a, b in zip(vals, vals[1:]):
            if b > a:
                print("%s increases down the table: %s" % (sys.argv[3], vals))
                sys.exit(1)
    elif what == "layout":
        w, h = int(sys.argv[3]), int(sys.argv[4])
        if len(lines) != h:
            print("%d lines, not %d" % (len(lines), h))
            sys.exit(1)
        wide = [ln for ln in lines if len(ln) > w]
        if wide:
            print("a line wider than %d: %r" % (w, wide[0]))
            sys.exit(1)
        if not lines[0].startswith("heaptap top "):
            print("line 1 is not the header: %r" % lines[0])
            sys.exit(1)
        if not lines[5].startswith("NOT FREED"):
            print("line 6 is not the table's titles: %r" % lines[5])
            sys.exit(1)
        if not lines[h - 1].startswith("l a c t sort"):
            print("the last line is not the keys: %r" % lines[h - 1])
            sys.exit(1)
    elif what == "header":
        m = re.match(r"^heap (\S+)  peak (\S+)  RSS (\S+)  allocs (\S+)/s  (\S+)/s", lines[1] if len(lines) > 1 else "")
        if not m:
            print("line 2 is not heap, peak, RSS, allocs/s, bytes/s: %r" % (lines[1:2],))
            sys.exit(1)
        h, pk, rss, calls, nbytes = (value(x) for x in m.groups())
        if pk < h or rss <= 0:
            print("peak %s below heap %s, or no RSS (%s)" % (pk, h, rss))
            sys.exit(1)
        for i, label in ((2, "heap "), (3, "RSS  ")):
            ln = lines[i] if len(lines) > i else ""
            if not ln.startswith(label) or not ln[5:6].strip() or not re.search(r"max \S+", ln):
                print("line %d is not the %s sparkline: %r" % (i + 1, label.strip(), ln))
                sys.exit(1)
        print("%d %d %d %d %d" % (h, pk, rss, calls, nbytes))
    elif what == "rates":
        m = re.search(r"  allocs (\S+)/s  (\S+)/s", lines[1] if len(lines) > 1 else "")
        if not m:
            print("line 2 has no allocs/s and bytes/s: %r" % (lines[1:2],))
            sys.exit(1)
        print("%d %d" % tuple(value(x) for x in m.groups()))
    elif what == "row":
        for cols, fn in rows:
            if fn == sys.argv[3]:
                print(" ".join("-" if value(c) is None else "%d" % value(c) for c in cols))
                return
        sys.exit(1)
    else:
        sys.exit("top_screen.py: unknown check %s" % what)


main()
