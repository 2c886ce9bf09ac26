#!/usr/bin/env python3
# tests/jvm/check_upcall.py - the stack of a leak under a JNI upcall, in `heaptap report --format json`
# SPDX-License-Identifier: MIT
#
# Usage: check_upcall.py REPORT N SIZE UPCALLED_LINE
# JvmLeak's main thread ran "upcall N": JvmLeak.upcall (native,
# Java_JvmLeak_upcall) called back into Java, JvmLeak.upcalled, which called
# the native JvmLeak.upleak (Java_JvmLeak_upleak), which leaked N blocks of
# SIZE bytes from jt_upcall_block. Checks that the backtraces through
# jt_upcall_block leak exactly N x SIZE bytes, and that each is, innermost
# first, five sections in this order:
#   native  jt_upcall_block, Java_JvmLeak_upleak
#   Java    JvmLeak.upleak (native method), JvmLeak.upcalled at JvmLeak.java:UPCALLED_LINE
#   native  JavaCalls::call_helper ... Java_JvmLeak_upcall (libjvm.so's JNI call, the upcalling function)
#   Java    JvmLeak.upcall (native method), then JvmLeak.main
#   native  JavaCalls::call_helper ... start_thread, clone3 (the launcher's thread)
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from htreport import function as fname, load, traces  # noqa: E402

rep = load(sys.argv[1])
n, size, line = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
errors = []
leaked = 0
shown = None


def base(f):
    return fname(f).split("(")[0]


for t in traces(rep):
    fr = t.get("frames", [])
    if not any(fname(f) == "jt_upcall_block" for f in fr):
        continue
    sec = []
    for f in fr:
        java = f.get("lang") == "java"
        if not sec or sec[-1][0] != java:
            sec.append((java, []))
        sec[-1][1].append(f)
    shown = " | ".join(("J: " if j else "N: ") + " <- ".join(base(f) for f in fs) for j, fs in sec)
    why = None
    if [j for j, _ in sec] != [False, True, False, True, False]:
        why = "sections %s, want native, Java, native, Java, native" % ["Java" if j else "native" for j, _ in sec]
    else:
        n1, j1, n2, j2, n3 = (fs for _, fs in sec)
        if [base(f) for f in n1[:2]] != ["jt_upcall_block", "Java_JvmLeak_upleak"] or len(n1) != 2:
            why = "first native section is not jt_upcall_block <- Java_JvmLeak_upleak"
        elif [base(f) for f in j1] != ["JvmLeak.upleak", "JvmLeak.upcalled"] or j1[0].get("kind") != "native" \
                or j1[1].get("line") != line:
            why = "first Java section is not JvmLeak.upleak (native) <- JvmLeak.upcalled:%d" % line
        elif base(n2[0]) != "JavaCalls::call_helper" or base(n2[-1]) != "Java_JvmLeak_upcall":
            why = "second native section does not go from JavaCalls::call_helper to Java_JvmLeak_upcall"
        elif base(j2[0]) != "JvmLeak.upcall" or j2[0].get("kind") != "native" or base(j2[-1]) != "JvmLeak.main":
            why = "second Java section is not JvmLeak.upcall (native) ... JvmLeak.main"
        elif base(n3[0]) != "JavaCalls::call_helper" or [base(f) for f in n3[-2:]] != ["start_thread", "clone3"]:
            why = "last native section does not go from JavaCalls::call_helper to start_thread <- clone3"
        elif any(f.get("kind") is None for f in j1 + j2):
            why = "a Java frame without its kind"
    if why:
        if len(errors) < 10:
            errors.append("%s: %s" % (why, shown))
    else:
        leaked += int(t.get("leaked", 0))
if leaked != n * size:
    errors.append("leaked under the upcall with its five sections: %d bytes, want %d x %d = %d" %
                  (leaked, n, size, n * size))
print("check_upcall: %d bytes; %s" % (leaked, shown), file=sys.stderr)
for e in errors:
    print("check_upcall: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
