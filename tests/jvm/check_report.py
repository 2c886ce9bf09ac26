#!/usr/bin/env python3
# tests/jvm/check_report.py - assertions on `heaptap report --format json` of a JVM session
# SPDX-License-Identifier: MIT
#
# Usage: check_report.py REPORT_JSON LEAK_CALLS LEAK_SIZE LEAK_LINE MAPS
#   LEAK_CALLS  leaks the Java side made while attached (0: no leak window)
#   LEAK_LINE   line of jvmtest.c whose malloc leaks (marked JT_LEAK_LINE)
#   MAPS        /proc/PID/maps of the JVM taken during the session
# Checks:
#   1. every trace through jt_leak_block: calls, bytes and leaked bytes sum
#      to LEAK_CALLS x LEAK_SIZE exactly; that frame says jvmtest.c:LEAK_LINE
#      and its caller is Java_JvmLeak_leak;
#   2. the JVM's own allocations: stacks whose innermost frame is in
#      libjvm.so and named (os::malloc, os::realloc, ...);
#   3. no garbage frames: a frame outside every module may only be the
#      frame in JIT code where unwinding stopped (its ip inside an anonymous
#      executable mapping of the JVM) followed by track's cut marker, which
#      is the outermost frame, or, where heaptap's JVMTI agent named them,
#      Java frames in its place, never after such a frame; a native frame
#      right after a Java frame is JavaCalls::call_helper (the native frames
#      outer to the Java ones, all in modules) or the marker. Without the
#      marker in this build (older
#      track/), the frames after the first JIT frame are counted and shown,
#      not judged.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from htreport import function as fname, load, traces  # noqa: E402

rep = load(sys.argv[1])
leak_calls, leak_size, leak_line = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
anon_x = []
for line in open(sys.argv[5]):
    f = line.split()
    if len(f) >= 5 and "x" in f[1] and (len(f) == 5 or f[5].startswith("[anon:")):
        lo, hi = f[0].split("-")
        anon_x.append((int(lo, 16), int(hi, 16)))
CUT = "[frames cut"


def is_java(f):
    return f.get("lang") == "java"


errors = []


def err(msg):
    if len(errors) < 20:
        errors.append(msg)


def in_jit(ip):
    return any(lo <= ip < hi for lo, hi in anon_x)


summ = rep.get("summary", {})
have_cut = "cut_traces" in summ
got = dict(calls=0, bytes=0, leaked=0)
jvm_own = jvm_named = 0
own_names = set()
unframed = after_jit = cut_seen = java_seen = 0
for t in traces(rep):
    fr = t.get("frames", [])
    names = [fname(f) for f in fr]
    if "jt_leak_block" in names:
        i = names.index("jt_leak_block")
        for k in got:
            got[k] += int(t.get(k, 0))
        f = fr[i]
        if not (f.get("file") or "").endswith("jvmtest.c") or f.get("line") != leak_line:
            err("jt_leak_block at %s:%s, not jvmtest.c:%d" % (f.get("file"), f.get("line"), leak_line))
        if i + 1 >= len(fr) or names[i + 1] != "Java_JvmLeak_leak":
            err("jt_leak_block's caller is %r" % (names[i + 1] if i + 1 < len(fr) else None))
        if have_cut and not names[-1].startswith(CUT) and not (i + 2 < len(fr) and is_java(fr[i + 2])):
            err("a stack through jt_leak_block neither is cut at the JIT code nor goes on in Java: %s" % names)
    if fr and (fr[0].get("module") or "").endswith("libjvm.so"):
        jvm_own += int(t.get("calls", 0))
        if names[0]:
            jvm_named += int(t.get("calls", 0))
            own_names.add(names[0].split("(")[0])
    # garbage frames
    first_jit = None
    for i, f in enumerate(fr):
        if is_java(f):
            java_seen += 1
            if first_jit is not None:
                err("a Java frame %d after a frame in JIT code: %s" % (i, names))
            if i + 1 < len(fr) and not is_java(fr[i + 1]) and not names[i + 1].startswith(CUT) and \
                    not names[i + 1].startswith("JavaCalls::call_helper("):
                err("a native frame other than JavaCalls::call_helper after Java frame %d: %s" % (i, names))
            continue
        if f.get("module"):
            continue
        if names[i].startswith(CUT):
            cut_seen += 1
            if i != len(fr) - 1:
                err("the cut marker is not the outermost frame: %s" % names)
            continue
        if first_jit is None:
            first_jit = i
            ip = int(f.get("ip", "0"), 16)
            if not in_jit(ip):
                unframed += 1
                if have_cut:
                    err("frame %d (%#x) is in no module and not in JIT code: %s" % (i, ip, names))
            if have_cut and i != len(fr) - 2:
                err("the JIT frame %d is not right before the cut marker: %s" % (i, names))
        else:
            after_jit += 1
            if have_cut:
                err("frame %d is in no module after the first JIT frame: %s" % (i, names))

want = dict(calls=leak_calls, bytes=leak_calls * leak_size, leaked=leak_calls * leak_size)
print("report: jt_leak_block %s (want %s); JVM's own allocations %d (%d named, innermost %s); "
      "cut marker %s (%d stacks, summary cut_traces=%s cut_calls=%s); frames in no module "
      "and no JIT code %d, frames after a JIT frame %d, Java frames %d" % (
          got, want, jvm_own, jvm_named, sorted(own_names)[:6], "present" if have_cut else "absent",
          cut_seen, summ.get("cut_traces"), summ.get("cut_calls"), unframed, after_jit, java_seen),
      file=sys.stderr)
if got != want:
    err("jt_leak_block: got %s, want %s" % (got, want))
if jvm_named == 0:
    err("no allocation of the JVM itself (innermost frame a named libjvm.so function)")
if not any(n.startswith("os::") for n in own_names):
    err("no libjvm.so allocation through os::malloc/os::realloc/os::strdup: %s" % sorted(own_names))
if have_cut and not java_seen and (summ.get("cut_traces") or 0) == 0:
    err("summary says no stack was cut, but the JNI calls come from JIT code")
if not have_cut:
    print("report: NOTE: this build's report has no cut marker (track/ without it): garbage "
          "frames after JIT code were counted (%d), not judged" % after_jit, file=sys.stderr)
for e in errors:
    print("check_report: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
