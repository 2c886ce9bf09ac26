#!/usr/bin/env python3
# tests/session/maxrss.py - run a command, then write the peak RSS (KiB) of it and its children to a file
# SPDX-License-Identifier: MIT
# usage: maxrss.py OUTFILE COMMAND [ARGS...]; exits with the command's status
import resource
import subprocess
import sys

rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as f:
    f.write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc if rc >= 0 else 128 - rc)
