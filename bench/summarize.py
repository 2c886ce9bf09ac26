#!/usr/bin/env python3
# bench/summarize.py - medians, ratios and goals from bench/run's raw.tsv
# SPDX-License-Identifier: MIT
#
# Usage: summarize.py RAW.tsv RESULTS.tsv REPS MACHINE WHEN COMMIT
# Prints the table (bench/run tees it to table.txt) and writes RESULTS.tsv:
#   workload tool runs_ok wall_s x_base overhead_s file_bytes report_s cpu_s cpu_overhead_s
# plus one row per workload with tool "heaptap/heaptrack" whose columns
# overhead_s, file_bytes, report_s and cpu_overhead_s hold the ratios:
# overhead, file size, report speed-up (heaptrack report time / heaptap
# report time), CPU overhead. CPU columns are "-" without GNU time.
import csv, statistics, sys

raw, results, reps, machine, when, commit = sys.argv[1:7]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
order = []
for r in rows:
    if r["workload"] not in order:
        order.append(r["workload"])


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def f(v, fmt):
    return "-" if v is None else fmt % v


out = open(results, "w")
out.write("workload\ttool\truns_ok\twall_s\tx_base\toverhead_s\tfile_bytes\treport_s\tcpu_s\tcpu_overhead_s\n")
print("heaptap bench: %s; median of %s; %s; commit %s" % (when, reps, machine, commit))
print("(last row: overhead, file size and cpu overhead of heaptap over heaptrack's; report: times faster)")
for w in order:
    stats = {}
    for tool in ("base", "heaptrack", "heaptap"):
        rs = [r for r in rows if r["workload"] == w and r["tool"] == tool]
        if not rs:
            continue
        ok = [r for r in rs if r["status"] == "0"]
        wall = med([int(r["wall_us"]) / 1e6 for r in ok])
        size = med([int(r["file_bytes"]) for r in ok if r["file_bytes"]])
        rep_s = med([int(r["report_us"]) / 1e6 for r in ok
                     if r["report_us"] and r["report_status"] == "0"])
        cpu = med([int(r["cpu_us"]) / 1e6 for r in ok if r.get("cpu_us")])
        stats[tool] = dict(ok=len(ok), n=len(rs), wall=wall, size=size, report=rep_s, cpu=cpu)
    base = stats.get("base", {}).get("wall")
    base_cpu = stats.get("base", {}).get("cpu")
    print()
    print("== %s" % w)
    print("%-18s %8s %8s %11s %9s %9s %8s %9s  %s" % (
        "tool", "wall s", "x base", "overhead s", "file MB", "report s", "cpu s", "cpu over", "runs ok"))
    for tool, label in (("base", "uninstrumented"), ("heaptrack", "heaptrack"), ("heaptap", "heaptap")):
        s = stats.get(tool)
        if not s:
            continue
        x = s["wall"] / base if (base and s["wall"] is not None) else None
        s["over"] = (s["wall"] - base) if (base is not None and s["wall"] is not None and tool != "base") else None
        s["cover"] = (s["cpu"] - base_cpu) if (base_cpu is not None and s["cpu"] is not None and tool != "base") else None
        print("%-18s %8s %8s %11s %9s %9s %8s %9s  %d/%d" % (
            label, f(s["wall"], "%.3f"), f(x, "%.2f"), f(s["over"], "%.3f"),
            f(s["size"] / 1e6 if s["size"] else None, "%.2f"), f(s["report"], "%.3f"),
            f(s["cpu"], "%.3f"), f(s["cover"], "%.3f"), s["ok"], s["n"]))
        out.write("%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" % (
            w, tool, s["ok"], f(s["wall"], "%.4f"), f(x, "%.3f"), f(s["over"], "%.4f"),
            f(s["size"], "%d"), f(s["report"], "%.4f"), f(s["cpu"], "%.4f"), f(s["cover"], "%.4f")))
    ht, hp = stats.get("heaptrack"), stats.get("heaptap")
    if ht and hp:
        def ratio(a, b):
            return a / b if (a is not None and b) else None
        # overhead below 0 (noise) counts as 0
        ro = ratio(max(hp["over"], 0) if hp["over"] is not None else None, ht["over"])
        rf = ratio(hp["size"], ht["size"])
        rr = ratio(ht["report"], hp["report"])
        rc = ratio(max(hp["cover"], 0) if hp["cover"] is not None else None, ht["cover"])
        # overhead and file: heaptap's over heaptrack's; report: how many times faster
        print("%-18s %8s %8s %11s %9s %9s %8s %9s" % ("heaptap/heaptrack", "", "", f(ro, "%.2f"),
                                                      f(rf, "%.2f"), f(rr, "%.1fx"), "", f(rc, "%.2f")))

        def goal(v, ok):
            return "n/a" if v is None else ("ok" if ok(v) else "MISSED")
        print("goals: overhead <= 0.5 of heaptrack's: %s; file <= 0.5: %s; report >= 3x faster: %s" % (
            goal(ro, lambda v: v <= 0.5), goal(rf, lambda v: v <= 0.5), goal(rr, lambda v: v >= 3)))
        out.write("%s\theaptap/heaptrack\t-\t-\t-\t%s\t%s\t%s\t-\t%s\n" % (
            w, f(ro, "%.3f"), f(rf, "%.3f"), f(rr, "%.2f"), f(rc, "%.3f")))
out.close()
