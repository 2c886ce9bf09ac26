#!/usr/bin/env python3
# tests/sample/compare.py - sampled vs full-tracing JSON reports of the same program
# SPDX-License-Identifier: MIT
#
# compare.py FULL.json SAMPLED.json [--tol 0.05] [--top 3] [--table NAME]
#            [--peak-sigmas K] [--stacks N]
# Call sites are matched by (module offset of the innermost frame). For the
# top sites by bytes of the full run: |estimate / exact - 1| <= tol for
# bytes; the same for the peak heap, or, with --peak-sigmas K, the peak's
# error must be within K of the standard errors the sampled report gives
# (peak_heap_stderr; for heaps too small for tol at this rate). The sampled
# report must say it is an estimate, name its rate, and its exact totals
# (site counters) must equal the full run's calls and bytes. --stacks N
# also prints (does not check) the N costliest whole stacks (every frame's
# module offset; the reports need -b 0). Prints one table row per site
# (markdown with --table NAME). Exit 1 on any miss.
import json
import sys


def sites(rep):
    out = {}
    for s in rep["allocations"]:
        fr = s["frames"][0] if s["frames"] else None
        key = (fr["module"], fr["offset"]) if fr else ("?", s["ip"])
        name = (fr.get("function") or s["ip"]) if fr else s["ip"]
        o = out.setdefault(key, {"name": name, "bytes": 0, "calls": 0})
        o["bytes"] += s["bytes"]
        o["calls"] += s["calls"]
    return out


def stacks(rep):
    out = {}
    for s in rep["allocations"]:
        for bt in s.get("backtraces", []):
            key = tuple((f["module"], f["offset"]) for f in bt["frames"])
            names = [f.get("function") or "?" for f in bt["frames"]]
            o = out.setdefault(key, {"name": "<".join(names[:3]), "bytes": 0})
            o["bytes"] += bt["bytes"]
    return out


def main():
    args = sys.argv[1:]
    tol, top, table = 0.05, 3, None
    if "--tol" in args:
        i = args.index("--tol"); tol = float(args[i + 1]); del args[i:i + 2]
    if "--top" in args:
        i = args.index("--top"); top = int(args[i + 1]); del args[i:i + 2]
    if "--table" in args:
        i = args.index("--table"); table = args[i + 1]; del args[i:i + 2]
    sigmas, nstacks = None, 0
    if "--peak-sigmas" in args:
        i = args.index("--peak-sigmas"); sigmas = float(args[i + 1]); del args[i:i + 2]
    if "--stacks" in args:
        i = args.index("--stacks"); nstacks = int(args[i + 1]); del args[i:i + 2]
    full = json.load(open(args[0]))
    smp = json.load(open(args[1]))
    fs, ss = full["summary"], smp["summary"]
    bad = []
    if not ss.get("estimated") or not ss.get("sampled") or not ss.get("sample_bytes"):
        bad.append("sampled report does not say it is an estimate at a rate")
    if fs.get("sampled"):
        bad.append("full report claims to be sampled")
    if ss.get("exact_calls") != fs["calls"] or ss.get("exact_bytes") != fs["bytes"]:
        bad.append("exact totals %s calls / %s bytes, full run %s / %s" % (
            ss.get("exact_calls"), ss.get("exact_bytes"), fs["calls"], fs["bytes"]))
    f_sites, s_sites = sites(full), sites(smp)
    rows = []
    for key, f in sorted(f_sites.items(), key=lambda kv: -kv[1]["bytes"])[:top]:
        est = s_sites.get(key, {"bytes": 0})["bytes"]
        err = est / f["bytes"] - 1 if f["bytes"] else 0.0
        rows.append((f["name"] + " bytes", f["bytes"], est, err))
    pk = ss["peak_heap"] / fs["peak_heap"] - 1 if fs["peak_heap"] else 0.0
    se = ss.get("peak_heap_stderr", 0)
    peak_name = "peak heap (std. error %d)" % se
    rows.append((peak_name, fs["peak_heap"], ss["peak_heap"], pk))
    for name, exact, est, err in rows:
        if name == peak_name and sigmas is not None:
            if abs(est - exact) > max(tol * exact, sigmas * se):
                bad.append("peak heap: estimate %d, exact %d: more than %g standard errors (%d) off"
                           % (est, exact, sigmas, se))
        elif abs(err) > tol:
            bad.append("%s: estimate %d, exact %d (%+.2f %%)" % (name, est, exact, 100 * err))
        if table:
            print("| %s | %s | %d | %d | %+.2f %% |" % (table, name, exact, est, 100 * err))
        else:
            print("%-34s exact %14d  estimate %14d  error %+6.2f %%" % (name, exact, est, 100 * err))
    if nstacks:
        f_st, s_st = stacks(full), stacks(smp)
        for key, f in sorted(f_st.items(), key=lambda kv: -kv[1]["bytes"])[:nstacks]:
            est = s_st.get(key, {"bytes": 0})["bytes"]
            err = est / f["bytes"] - 1 if f["bytes"] else 0.0
            name = "stack " + f["name"]
            if table:
                print("| %s | %s | %d | %d | %+.2f %% |" % (table, name, f["bytes"], est, 100 * err))
            else:
                print("%-34s exact %14d  estimate %14d  error %+6.2f %%" % (name[:34], f["bytes"], est,
                                                                           100 * err))
    for b in bad:
        print("MISS: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
