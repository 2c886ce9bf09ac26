#!/usr/bin/env python3
# tests/report/html_check.py - the HTML report as Chromium rendered it, against the JSON report
# SPDX-License-Identifier: MIT
"""html_check.py DOM REPORT.json CONSOLE_LOG

DOM is what `chromium --dump-dom` printed after the page's JS ran. Checks:
the page says it rendered (<body data-rendered="ok">, #errors empty); the
summary numbers it shows (ids sum-*) and every row of the four top tables
(data-v attributes) equal the JSON report; the leak list has the JSON
report's leaked sites in order; the heap curve's highest point is the peak
heap and the flame graph's root has the total calls, bytes, peak and leaked
bytes (data-* attributes of the canvases); the browser logged no console
message. Prints what is wrong, exits 1.
"""
import math
import os
import re
import sys
from html.parser import HTMLParser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from htreport import load, size  # noqa: E402 (report/units.c's size text)


class Dom(HTMLParser):
    """Text of elements by id, attributes by id, and the rows of the tables."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.attrs, self.stack = {}, {}, []
        self.body = {}
        self.rows = {}  # table id -> [[(data-v or None, text), ...], ...]
        self.table = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if tag in ("meta", "br", "img", "input", "link"):
            return
        if a.get("id"):
            self.attrs[a["id"]] = a
            self.text[a["id"]] = ""
        if tag == "table":
            self.table = a.get("id")
            self.rows[self.table] = []
        if tag == "tr" and self.table and a.get("id", "").startswith("top-"):
            self.rows[self.table].append([])
        if tag == "td" and self.table and self.rows[self.table]:
            self.rows[self.table][-1].append([a.get("data-v"), ""])
        self.stack.append((tag, a.get("id")))

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        for _, i in self.stack:
            if i:
                self.text[i] += data
        if self.table and self.rows.get(self.table) and self.rows[self.table][-1] and \
                self.stack and self.stack[-1][0] == "td":
            self.rows[self.table][-1][-1][1] += data


def grouped(n):
    return "{:,}".format(int(round(n)))


errors = []


def want(what, got, expected):
    if got != expected:
        errors.append("%s: the page shows %r, the JSON report %r" % (what, got, expected))


def main():
    dom = Dom()
    dom.feed(open(sys.argv[1], encoding="utf-8").read())
    rep = load(sys.argv[2])
    console = [l for l in open(sys.argv[3], errors="replace") if ":CONSOLE" in l]
    s = rep["summary"]

    if dom.body.get("data-rendered") != "ok":
        errors.append("the page did not finish rendering (body data-rendered=%r): %s"
                      % (dom.body.get("data-rendered"), dom.text.get("errors", "").strip()))
    if dom.text.get("errors", "").strip():
        errors.append("the page shows errors: " + dom.text["errors"].strip())
    for line in console:
        errors.append("console: " + line.strip())

    t = dom.text
    want("calls", t.get("sum-calls"), grouped(s["calls"]))
    # a rate that ends in .5: the page rounds half up, Python's round() to even
    cps = s["calls_per_second"]
    half_up = "{:,}".format(int(math.floor(cps + 0.5)))
    want("calls/s", t.get("sum-calls-per-second"),
         half_up if t.get("sum-calls-per-second") == half_up else grouped(cps))
    want("duration", t.get("sum-duration"), "%.3f s" % (s["duration_ns"] / 1e9))
    for key, field in (("peak-heap", "peak_heap"), ("peak-rss", "peak_rss"), ("bytes", "bytes"),
                       ("leaked", "leaked")):
        want(key, t.get("sum-" + key), size(s[field]))
        want(key + " (exact)", t.get("sum-%s-exact" % key), grouped(s[field]) + " B")
    want("leaked calls", t.get("sum-leaked-calls"), grouped(s["leaked_calls"]))
    want("temporary", t.get("sum-temporary"), grouped(s["temporary"]))
    want("frees", t.get("sum-frees"), grouped(s["frees"]))
    want("events", t.get("sum-events"), grouped(s["events"]))
    if s["peak_time_ns"] is not None:
        want("peak time", t.get("sum-peak-time"), "%.3f s" % (s["peak_time_ns"] / 1e9))
    if not (t.get("command") or "").startswith(s["command"]):
        errors.append("command: the page shows %r, the JSON report %r" % (t.get("command"), s["command"]))

    # the tables: columns #, function, location, calls, bytes, peak, leaked, temporary, traces
    for table, lst in (("calls", "allocations"), ("peak", "peak"), ("leaked", "leaked"),
                       ("temporary", "temporary")):
        rows = dom.rows.get("table-" + table, [])
        sites = rep[lst][:10]
        if len(rows) != len(sites):
            errors.append("table %s: %d rows, the JSON report %d sites" % (table, len(rows), len(sites)))
            continue
        for i, (row, site) in enumerate(zip(rows, sites)):
            got = [int(c[0]) for c in row[3:9]]
            exp = [site["calls"], site["bytes"], site["peak"], site["leaked"], site["temporary"],
                   site["traces"]]
            want("table %s row %d numbers" % (table, i + 1), got, exp)
            fn = site["frames"][0]["function"] if site["frames"] else None
            if fn is not None:
                want("table %s row %d function" % (table, i + 1), row[1][1], fn)

    # the leak list: the leaked sites in order (at most 100)
    leaks = [t.get("leak-%d" % i) for i in range(len(rep["leaked"]) + 1)]
    nleaks = len([x for x in leaks if x is not None])
    want("leak list length", nleaks, min(len(rep["leaked"]), 100))
    for i, site in enumerate(rep["leaked"][:nleaks]):
        head = t["leak-%d" % i]
        if size(site["leaked"]) not in head:
            errors.append("leak %d: %r does not show %s" % (i + 1, head[:200], size(site["leaked"])))
    for cid in ("chart", "flame"):
        if cid not in dom.attrs:
            errors.append("no <canvas id=%s>" % cid)
    chart, flame = dom.attrs.get("chart", {}), dom.attrs.get("flame", {})
    # the heap curve (its own replay) reaches exactly the analysis' peak
    want("heap curve's highest point", int(chart.get("data-heap-max", -1)), s["peak_heap"])
    if not 1 <= int(chart.get("data-points", 0)) <= 2000:
        errors.append("heap curve: %s points, expected 1 to 2000" % chart.get("data-points"))
    # the flame graph's root holds every allocation
    for k, field in (("calls", "calls"), ("bytes", "bytes"), ("peak", "peak"), ("leaked", "leaked")):
        want("flame root " + k, int(flame.get("data-root-" + k, -1)), s[field])
    if int(flame.get("data-nodes", 0)) < 2:
        errors.append("the flame graph has no node under its root")

    if errors:
        for e in errors:
            print("html_check: " + e, file=sys.stderr)
        sys.exit(1)
    print("html_check: summary, %d table rows and %d leaks match" %
          (sum(len(v) for v in dom.rows.values()), nleaks))


if __name__ == "__main__":
    main()
