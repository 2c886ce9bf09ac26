#!/usr/bin/env python3
# tests/jvm/check_java.py - the Java frames of `heaptap report --format json` of a JVM session
# SPDX-License-Identifier: MIT
#
# Usage: check_java.py REPORT LEAK_CALLS LEAK_SIZE LEAK_LINE STEP_LINE DEFL_LINE NDEFL MODE
#        check_java.py --none REPORT
#   LEAK_LINE  JvmLeak.java line of Worker.leakOne's leak(1) call
#   STEP_LINE  JvmLeak.java line of Worker.step's leakOne() call
#   DEFL_LINE  JvmLeak.java line of JvmLeak.deflaters' new Deflater
#   NDEFL      Deflaters created and kept
#   MODE       interpreted, compiled (C1 only), c2 (C2 only, leakOne inlined into step), or any
#              (tiered: each frame's kind is known, whichever it is)
# Checks:
#   1. every backtrace through jt_leak_block goes on, right above
#      Java_JvmLeak_leak, with the Java frames JvmLeak.leak (a native
#      method: no line), JvmLeak$Worker.leakOne at JvmLeak.java:LEAK_LINE,
#      JvmLeak$Worker.step at JvmLeak.java:STEP_LINE; their leaked bytes sum
#      to LEAK_CALLS x LEAK_SIZE exactly (no leak stack without its Java
#      frames, or with frames left unnamed);
#   2. zlib's memory under deflateInit2_: the backtraces that go on with
#      java.util.zip.Deflater.init, java.util.zip.Deflater.<init> and then
#      JvmLeak.deflaters at JvmLeak.java:DEFL_LINE hold at least NDEFL
#      allocations not freed;
#   3. the Java frames hold no native module; a native frame right after a
#      Java frame is JavaCalls::call_helper (the call stub's caller);
#   4. kinds: on every leak stack JvmLeak.leak is native and (leakOne, step)
#      a pair that can be: interpreted; C1 or C2 code (leakOne compiled or
#      inlined into step, step compiled or inlined into run) or interpreted
#      in the mode's compiler (code made not entrant runs interpreted until
#      it is compiled again). At least half the leaked bytes went through the
#      mode's target: both interpreted (interpreted, and nothing else),
#      step compiled by C1 with leakOne compiled or inlined (compiled),
#      leakOne inlined by C2 into step's C2 code (c2);
#   5. outer frames: every leak stack goes on after its last Java frame with
#      JavaCalls::call_helper, then libjvm.so's frames in order down to
#      thread_native_entry, start_thread and clone3, its last frame.
# --none: no Java frame anywhere (a JVM where heaptap had no agent).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from htreport import function as fname, load, traces  # noqa: E402

errors = []


def err(msg):
    if len(errors) < 20:
        errors.append(msg)


def is_java(f):
    return f.get("lang") == "java"


def show(fr):
    return " <- ".join("%s%s" % (fname(f), ":%s" % f["line"] if f.get("line") else "") for f in fr[:14])


if sys.argv[1] == "--none":
    rep = load(sys.argv[2])
    for t in traces(rep):
        if any(is_java(f) for f in t.get("frames", [])):
            err("a Java frame: " + show(t["frames"]))
            break
    for e in errors:
        print("check_java: " + e, file=sys.stderr)
    sys.exit(1 if errors else 0)

rep = load(sys.argv[1])
calls, size, leak_line, step_line, defl_line, ndefl = (int(a) for a in sys.argv[2:8])
mode = sys.argv[8]
# (kind, tier) of (leakOne, step) on a leak stack: what the mode is after (the JIT's code for them, which
# the test waited for), and what else a frame may honestly be meanwhile (code made not entrant and run
# interpreted until it is compiled again, step inlined into run)
INT = ("interpreted", None)


def pairs(t):
    c, i = ("compiled", t), ("inlined", t)
    return {(INT, INT), (c, INT), (c, c), (c, i), (i, c), (i, i)}


target = {
    "interpreted": {(INT, INT)},
    "compiled": {(("inlined", "C1"), ("compiled", "C1")), (("compiled", "C1"), ("compiled", "C1"))},
    "c2": {(("inlined", "C2"), ("compiled", "C2")), (("inlined", "C2"), ("inlined", "C2"))},
    "any": pairs("C1") | pairs("C2"),
}[mode]
allowed = {"interpreted": target, "compiled": pairs("C1"), "c2": pairs("C2"), "any": target}[mode]
target_bytes = 0
# the outer frames of a worker thread, in order, after the last Java frame
want_outer = ["JavaCalls::call_helper", "JavaCalls::call_virtual", "thread_entry", "JavaThread::thread_main_inner",
              "Thread::call_run", "thread_native_entry", "start_thread", "clone3"]
kinds_seen = {}
want_leak = [("JvmLeak.leak", None), ("JvmLeak$Worker.leakOne", leak_line), ("JvmLeak$Worker.step", step_line)]
want_defl = [("java.util.zip.Deflater.init", None), ("java.util.zip.Deflater.<init>", None)]
leaked = 0
defl_calls = 0
java_frames = 0
for t in traces(rep):
    fr = t.get("frames", [])
    names = [fname(f) for f in fr]
    for i, f in enumerate(fr):
        if is_java(f):
            java_frames += 1
            if f.get("module"):
                err("a Java frame with a module: %s" % f)
            if i + 1 < len(fr) and not is_java(fr[i + 1]) and not names[i + 1].startswith("[frames cut") and \
                    not names[i + 1].startswith("JavaCalls::call_helper("):
                err("a native frame other than JavaCalls::call_helper after a Java frame: " + show(fr))
    if "jt_leak_block" in names:
        j = names.index("Java_JvmLeak_leak") if "Java_JvmLeak_leak" in names else -1
        got = [(fname(f), f.get("line")) for f in fr[j + 1:j + 4]] if j >= 0 else []
        ok = len(got) == 3 and all(g[0] == w[0] and (w[1] is None or g[1] == w[1]) for g, w in zip(got, want_leak))
        ok = ok and all(is_java(f) and f.get("file") == "JvmLeak.java" for f in fr[j + 1:j + 4])
        if ok:
            kinds = [(f.get("kind"), f.get("tier")) for f in fr[j + 1:j + 4]]
            for nm, kd in zip(("leak", "leakOne", "step"), kinds):
                kinds_seen.setdefault(nm, set()).add(kd)
            if kinds[0] != ("native", None):
                ok = False
                err("JvmLeak.leak is not a native frame: %s" % (kinds[0],))
            if tuple(kinds[1:]) not in allowed:
                ok = False
                err("leakOne and step %s, want one of %s: %s" % (kinds[1:], sorted(allowed, key=str), show(fr)))
            elif tuple(kinds[1:]) in target:
                target_bytes += int(t.get("leaked", 0))
            last = max(i for i, f in enumerate(fr) if is_java(f))
            outer = [n.split("(")[0] for n in names[last + 1:]]
            if outer != want_outer:
                ok = False
                err("outer frames %s, want %s" % (outer, want_outer))
        if ok:
            leaked += int(t.get("leaked", 0))
        else:
            err("a leak without its Java frames (want %s): %s" % (want_leak, show(fr)))
    if "deflateInit2_" in names:
        k = next((i for i, f in enumerate(fr) if is_java(f)), -1)
        if k < 0:
            err("zlib memory without Java frames: " + show(fr))
            continue
        if [n for n, _ in want_defl] != names[k:k + 2]:
            err("zlib memory not under Deflater.init <- Deflater.<init>: " + show(fr))
            continue
        m = next((i for i in range(k, len(fr)) if names[i] == "JvmLeak.deflaters"), -1)
        if m < 0 or fr[m].get("line") != defl_line:
            err("zlib memory not blamed on JvmLeak.deflaters at line %d: %s" % (defl_line, show(fr)))
            continue
        defl_calls += int(t.get("leaked_calls", 0))

if leaked != calls * size:
    err("leaked through the Java frames: %d bytes, the workers counted %d x %d = %d" % (leaked, calls, size,
                                                                                         calls * size))
if target_bytes * 2 < leaked:
    err("leakOne and step ran as %s for %d of %d bytes leaked, want at least half" % (sorted(target, key=str),
                                                                                    target_bytes, leaked))
if defl_calls < ndefl:
    err("allocations not freed under JvmLeak.deflaters: %d, want at least %d" % (defl_calls, ndefl))
print("check_java: %d Java frames; leak %d bytes with its Java frames (%d as %s), kinds %s, outer frames %s; "
      "%d zlib allocations not freed under JvmLeak.deflaters" % (
          java_frames, leaked, target_bytes, mode, sorted(kinds_seen.items(), key=str), " <- ".join(want_outer),
          defl_calls), file=sys.stderr)
for e in errors:
    print("check_java: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
