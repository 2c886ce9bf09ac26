#!/usr/bin/env python3
# tests/e2e/check.py - compare a heaptap JSON report with what a target printed
# SPDX-License-Identifier: MIT
#
# Usage: check.py EXPECT REPORT.json
#
# EXPECT holds the target's output; lines it does not know are ignored:
#   site NAME key=value ...   allocations whose backtrace runs through function
#                             NAME: sums of calls, bytes, leaked, temporary,
#                             peak equal the values given; file=F line=N: a
#                             frame of NAME at F:N; caller=C caller_line=N: the
#                             frame after NAME is C at line N; calls=0: absent
#   absent NAME               no backtrace runs through NAME
#   frame NAME key=value ...  some frame of NAME has file=F (basename), line=N,
#                             module=SUBSTRING, inlined=0|1, outer=FUNCTION (the
#                             next frame's function)
#   nomodule SUBSTRING        no frame's module path contains SUBSTRING
#   kind KIND calls=N bytes=N the per-function table: the target's own part
#   total key=value ...       the summary: the target's own part
#
# Allocations whose backtraces run through none of the NAMEs of site lines
# belong to the loader, libc or the runtime ("other"). The per-function table
# and the totals must equal the target's part plus "other" exactly for the
# additive numbers (calls, bytes, leaked, temporary); peak is exact only
# when there is no "other" allocation at all.
#
# Site names must not call one another, so that each backtrace belongs to
# at most one site line. A name matches a frame's function when equal to
# it, or to it without its parameter list ("ns::f<int>" matches
# "ns::f<int>(unsigned long)"), without its return type ("int* ns::f<int>")
# and without ABI tags ("ns::g[abi:cxx11]").
import json
import os
import re
import sys

ADDITIVE = ("calls", "bytes", "leaked", "temporary")
NUMS = ADDITIVE + ("peak",)

failures = []
passed = 0


def check(cond, msg):
    global passed
    if cond:
        passed += 1
    else:
        failures.append(msg)
    return cond


def strip_params(f):
    """'ns::f<int>(unsigned long) const' -> 'ns::f<int>'"""
    s = f.strip()
    for suffix in (" const", " volatile", " &", " &&"):
        if s.endswith(suffix):
            s = s[: -len(suffix)]
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            depth -= 1
            if depth == 0:
                return s[:i].strip()
    return s


def strip_return_type(s):
    """'int* ns::f<int>' -> 'ns::f<int>' (templates' demangled names lead with it)"""
    depth = 0
    cut = 0
    for i, ch in enumerate(s):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0 and not s[:i].endswith("operator"):
            cut = i + 1
    return s[cut:]


def name_matches(function, name):
    if not function:
        return False
    if function == name:
        return True
    # ABI tags are part of the demangled name but not of what a reader types:
    # "cx::grow_string[abi:cxx11]()" is cx::grow_string
    bare = re.sub(r"\[abi:[^\]]*\]", "", strip_params(function))
    return bare == name or strip_return_type(bare) == name


def num(d, key):
    v = d.get(key, 0)
    if isinstance(v, dict):  # {"bytes": n} style
        v = v.get("bytes", v.get("count", 0))
    return int(v or 0)


UNLISTED = "<backtraces the report does not list>"


def units(report):
    """Yield (costs, frames) that partition every allocation of the recording.

    A site of the report ("allocations" list: every call site when -n is
    large enough) is one innermost instruction pointer; it lists some of
    its backtraces ("traces" says how many it has), each with its own
    costs and whole frame list. Each listed backtrace is a unit; what the
    listed ones leave of the site's costs is one more unit whose only
    frame is UNLISTED (main() reports it: those allocations cannot be
    attributed).
    """
    sites = report.get("allocations")
    if sites is None:
        sites = report.get("sites", [])
    for s in sites:
        traces = s.get("backtraces") or []
        if not traces:
            yield s, s.get("frames", [])
            continue
        for t in traces:
            yield t, t.get("frames", [])
        if len(traces) < int(s.get("traces", len(traces))):
            rest = {k: num(s, k) - sum(num(t, k) for t in traces) for k in NUMS}
            inner = (s.get("frames") or [{}])[0].get("function")
            yield rest, [{"function": UNLISTED, "site": inner, "listed": len(traces),
                          "traces": int(s["traces"])}]


def parse_expect(path):
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or parts[0] not in (
                "site", "absent", "frame", "nomodule", "kind", "total"
            ):
                continue
            kv = {}
            for p in parts[2:]:
                if "=" in p:
                    k, v = p.split("=", 1)
                    kv[k] = v
            if parts[0] == "total":
                # "total calls=.." has no name
                for p in parts[1:]:
                    if "=" in p:
                        k, v = p.split("=", 1)
                        kv[k] = v
                rows.append(("total", None, kv))
            else:
                rows.append((parts[0], parts[1], kv))
    return rows


def frames_through(frames, name):
    return [i for i, fr in enumerate(frames) if name_matches(fr.get("function"), name)]


def describe(fr):
    return "%s at %s:%s in %s%s" % (
        fr.get("function"), fr.get("file"), fr.get("line"), fr.get("module"),
        " (inlined)" if fr.get("inlined") else "")


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: check.py EXPECT REPORT.json\n")
        return 2
    rows = parse_expect(sys.argv[1])
    with open(sys.argv[2]) as f:
        report = json.load(f)
    us = list(units(report))
    names = [n for (t, n, _) in rows if t in ("site", "absent")]

    def owned(frames):
        # the unlisted rest of a site is reported once below, not as "other"
        if frames and frames[0].get("function") == UNLISTED:
            return True
        return any(frames_through(frames, n) for n in names)

    for typ, name, kv in rows:
        if typ == "site":
            mine = [(c, fr) for (c, fr) in us if frames_through(fr, name)]
            if int(kv.get("calls", "1")) == 0:
                check(not mine, "site %s: expected no allocation, report has %d backtrace(s)"
                      % (name, len(mine)))
                continue
            if not check(mine, "site %s: not in the report" % name):
                continue
            for k in NUMS:
                if k in kv:
                    got = sum(num(c, k) for c, _ in mine)
                    check(got == int(kv[k]), "site %s: %s expected %s, report %d"
                          % (name, k, kv[k], got))
            if "file" in kv and "line" in kv:
                want = (os.path.basename(kv["file"]), int(kv["line"]))
                seen = set()
                for _, fr in mine:
                    for i in frames_through(fr, name):
                        seen.add((os.path.basename(fr[i].get("file") or ""),
                                  int(fr[i].get("line") or 0)))
                check(want in seen, "site %s: expected a frame at %s:%d, report has %s"
                      % (name, want[0], want[1], sorted(seen)))
            if "caller" in kv:
                want = (kv["caller"], int(kv.get("caller_line", "0")))
                seen = set()
                for _, fr in mine:
                    for i in frames_through(fr, name):
                        if i + 1 < len(fr):
                            nxt = fr[i + 1]
                            seen.add((strip_params(nxt.get("function") or "?"),
                                      int(nxt.get("line") or 0)))
                check(want in seen, "site %s: expected caller %s at line %d, report has %s"
                      % (name, want[0], want[1], sorted(seen)))
        elif typ == "absent":
            mine = [fr for (_, fr) in us if frames_through(fr, name)]
            check(not mine, "absent %s: report has %d backtrace(s) through it, first: %s"
                  % (name, len(mine), [describe(f) for f in (mine[0] if mine else [])][:4]))
        elif typ == "frame":
            cands = []
            for _, fr in us:
                for i in frames_through(fr, name):
                    cands.append((fr[i], fr[i + 1] if i + 1 < len(fr) else {}))
            if not check(cands, "frame %s: no frame of that function in the report" % name):
                continue

            def fits(pair):
                f, nxt = pair
                if "file" in kv and os.path.basename(f.get("file") or "") != os.path.basename(kv["file"]):
                    return False
                if "line" in kv and int(f.get("line") or 0) != int(kv["line"]):
                    return False
                if "module" in kv and kv["module"] not in (f.get("module") or ""):
                    return False
                if "inlined" in kv and bool(f.get("inlined")) != bool(int(kv["inlined"])):
                    return False
                if "outer" in kv and not name_matches(nxt.get("function"), kv["outer"]):
                    return False
                return True

            check(any(fits(p) for p in cands), "frame %s: expected %s, report has %s"
                  % (name, kv, sorted(set(describe(f) + " / next: " + str(n.get("function"))
                                          for f, n in cands))[:6]))
        elif typ == "nomodule":
            bad = [describe(f) for (_, fr) in us for f in fr if name in (f.get("module") or "")]
            check(not bad, "nomodule %s: report has frames in it: %s" % (name, bad[:4]))

    for c, fr in us:
        if fr and fr[0].get("function") == UNLISTED and num(c, "calls"):
            check(False, "the call site at %s has %d backtraces, the JSON lists %d: %d calls "
                  "cannot be attributed to a function" % (fr[0]["site"], fr[0]["traces"],
                                                          fr[0]["listed"], num(c, "calls")))

    other = {k: 0 for k in NUMS}
    nother = 0
    for c, fr in us:
        if not owned(fr):
            nother += 1
            for k in NUMS:
                other[k] += num(c, k)
    if nother:
        print("note: %d backtrace(s) outside the target's sites: %s" % (
            nother, ", ".join("%s=%d" % (k, other[k]) for k in ADDITIVE)))

    kinds = [(n, kv) for (t, n, kv) in rows if t == "kind"]
    if kinds:
        funcs = report.get("functions", {})
        if isinstance(funcs, list):
            funcs = {f.get("function", f.get("name")): f for f in funcs}
        excess = {"calls": 0, "bytes": 0}
        for name, kv in kinds:
            f = funcs.get(name, {})
            for k in ("calls", "bytes"):
                got = num(f, k)
                exp = int(kv.get(k, "0"))
                check(got >= exp, "function %s: %s expected at least %d, report %d"
                      % (name, k, exp, got))
                excess[k] += got - exp
        listed = {n for n, _ in kinds}
        for name, f in funcs.items():
            if name not in listed:
                for k in ("calls", "bytes"):
                    excess[k] += num(f, k)
        for k in ("calls", "bytes"):
            check(excess[k] == other[k],
                  "functions: %s beyond the target's own is %d, other backtraces have %d"
                  % (k, excess[k], other[k]))

    for typ, _, kv in rows:
        if typ != "total":
            continue
        summ = report.get("summary", {})
        tot = summ.get("total", summ)
        for k in ADDITIVE:
            if k in kv:
                got = num(tot, k)
                check(got == int(kv[k]) + other[k], "total %s: expected %s + %d other, report %d"
                      % (k, kv[k], other[k], got))
        if "peak" in kv:
            got = num(tot, "peak")
            if nother == 0:
                check(got == int(kv["peak"]), "total peak: expected %s, report %d" % (kv["peak"], got))
            else:
                check(got >= int(kv["peak"]), "total peak: expected at least %s, report %d"
                      % (kv["peak"], got))
        # the lists partition the allocations: their calls add up to the total
        allcalls = sum(num(c, "calls") for c, _ in us)
        check(allcalls == num(tot, "calls"), "backtraces' calls add up to %d, summary says %d"
              % (allcalls, num(tot, "calls")))

    for f in failures:
        print("FAIL: " + f)
    print("%d checks passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
