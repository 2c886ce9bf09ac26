#!/usr/bin/env python3
# tests/python/check_stacks.py - Python frames in a heaptap JSON report of tests/python/workload.py
# SPDX-License-Identifier: MIT
#
# Usage: check_stacks.py MODE REPORT.json WORKLOAD.py [ROUNDS]
#   once     make_blob, grow_array's array growth and compress_it's zlib each
#            have backtraces whose Python frames are exactly the chain that
#            made them (function, this workload's file, the marked lines),
#            innermost first, below a native frame and above the evaluation
#            loop's; make_blob exactly ROUNDS calls (default 5)
#   threads  each of the 4 threads' blobs carries its own chain
#            (tK_a, worker, threading's frames), never <module>
#   loop     as once, at least one blob (a recording of some rounds)
#   native   no Python frame at all, and the blobs' native stacks still run
#            through _PyEval_EvalFrameDefault (the stacks of today)
#   folded   the default report: no stack with Python frames keeps
#            _PyEval_EvalFrameDefault or PyEval_EvalCode, the blobs' chain
#            is still there (make_blob, one_round, ..., <module>) and the
#            frame after <module> is no interpreter frame of the folded set
# The other modes need a report made with --native-all.
import json
import sys

mode, report, workload = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 5
LINES = {}
for no, text in enumerate(open(workload), 1):
    if "# LINE:" in text:
        LINES[text.split("# LINE:")[1].strip()] = no
BLOB = 300000
rep = json.load(open(report))
fails = []


def fail(msg, bt=None):
    if bt is not None:
        msg += "\n    " + "\n    ".join(
            "%s %s:%s%s" % (f["function"], f["file"], f["line"], " [py]" if f.get("lang") == "python" else "")
            for f in bt["frames"])
    fails.append(msg)


def py(bt):
    return [(f["function"], f["file"], f["line"]) for f in bt["frames"] if f.get("lang") == "python"]


def backtraces():
    for site in rep["allocations"]:
        for bt in site["backtraces"]:
            yield bt


def chain_ok(bt, want, what):
    """want: [(function, line)] innermost first, all in the workload's file, right after native frames."""
    fr = bt["frames"]
    got = py(bt)
    exp = [(f, workload, l) for f, l in want]
    if got[:len(exp)] != exp:
        fail("%s: Python frames %s, want %s first" % (what, got[:len(exp) + 1], exp), bt)
        return False
    first = next(i for i, f in enumerate(fr) if f.get("lang") == "python")
    if first == 0:
        fail("%s: no native frame inside the innermost Python frame" % what, bt)
        return False
    # the Python frames of one evaluation loop stand together, then its C frame
    k = first
    while k < len(fr) and fr[k].get("lang") == "python":
        k += 1
    if k >= len(fr) or fr[k]["function"] != "_PyEval_EvalFrameDefault":
        fail("%s: the frame after the Python frames is not _PyEval_EvalFrameDefault" % what, bt)
        return False
    return True


def blob_size(bt, base, spread=8):
    # the bytes object's header (33 bytes in 3.11) comes on top of n
    size = bt["bytes"] // max(bt["calls"], 1)
    return 0 <= size - base - 33 < spread


if mode in ("once", "loop"):
    blobs = [bt for bt in backtraces() if blob_size(bt, BLOB) and any(f[0] == "make_blob" for f in py(bt))]
    calls = 0
    for bt in blobs:
        if chain_ok(bt, [("make_blob", LINES["make_blob"]), ("one_round", LINES["round_blob"])], "blob"):
            calls += bt["calls"]
            if py(bt)[-1] != ("<module>", workload, LINES["module"]):
                fail("blob: outermost Python frame is not <module> at line %d" % LINES["module"], bt)
    if mode == "once" and calls != rounds:
        fail("make_blob: %d calls with the right chain, want %d" % (calls, rounds))
    if mode == "loop" and calls < 1:
        fail("make_blob: no call with the right chain")
    arrays = [bt for bt in backtraces() if py(bt) and py(bt)[0][0] == "grow_array"]
    if not arrays:
        fail("no backtrace from grow_array")
    for bt in arrays:
        chain_ok(bt, [("grow_array", LINES["grow_array"]), ("one_round", LINES["round_array"])], "array")
    zl = [bt for bt in backtraces() if py(bt) and py(bt)[0][0] == "compress_it"]
    if not zl:
        fail("no backtrace from compress_it")
    libz = 0
    for bt in zl:
        if chain_ok(bt, [("compress_it", LINES["compress_it"]), ("one_round", LINES["round_zlib"])], "zlib"):
            inner = bt["frames"][:next(i for i, f in enumerate(bt["frames"]) if f.get("lang") == "python")]
            libz += any("libz.so" in (f["module"] or "") for f in inner)
    if not libz:
        fail("no compress_it backtrace runs through libz")
elif mode == "threads":
    for k in range(4):
        bts = [bt for bt in backtraces() if blob_size(bt, BLOB + 100 + k, 1)]
        calls = 0
        for bt in bts:
            names = [f[0] for f in py(bt)]
            if chain_ok(bt, [("make_blob", LINES["make_blob"]), ("t%d_a" % k, LINES["t%d_a" % k]),
                             ("worker", LINES["worker"])], "thread %d" % k):
                calls += bt["calls"]
                if "<module>" in names or names[-1] != "Thread._bootstrap":
                    fail("thread %d: chain %s" % (k, names), bt)
        if calls != 3:
            fail("thread %d: %d blobs with its own chain, want 3" % (k, calls))
elif mode == "folded":
    # (Debian's python3.11 has no names for its static functions: an unnamed frame ends a folded
    # run, so _PyRun_SimpleFileObject and the rest beyond run_mod's frames stay)
    FOLDED = {"_PyEval_EvalFrameDefault", "PyEval_EvalCode", "_PyFunction_Vectorcall"}
    blobs = 0
    for bt in backtraces():
        names = [f["function"] for f in bt["frames"]]
        if not py(bt):
            continue
        if FOLDED & set(names):
            fail("a stack with Python frames keeps %s" % sorted(FOLDED & set(names)), bt)
            break
        if blob_size(bt, BLOB) and [f[0] for f in py(bt)][:2] == ["make_blob", "one_round"]:
            blobs += bt["calls"]
            k = names.index("<module>")
            if k + 1 < len(names) and names[k + 1] in FOLDED:
                fail("the frame after <module> is %s" % names[k + 1], bt)
    if blobs != rounds:
        fail("folded: %d blob calls with their chain, want %d" % (blobs, rounds))
elif mode == "native":
    n = 0
    for bt in backtraces():
        if py(bt):
            fail("a Python frame in a native-only recording", bt)
            break
        if blob_size(bt, BLOB):
            n += 1
            if "_PyEval_EvalFrameDefault" not in [f["function"] for f in bt["frames"]]:
                fail("a blob's native stack without _PyEval_EvalFrameDefault", bt)
    if not n:
        fail("no blob allocation in the report")
else:
    sys.exit("unknown mode " + mode)
for f in fails[:10]:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
