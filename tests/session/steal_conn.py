#!/usr/bin/env python3
# tests/session/steal_conn.py - take a copy of heaptap attach's connection to its library, then drain it
# SPDX-License-Identifier: MIT
#
# Usage: steal_conn.py HEAPTAP_PID
# Makes the state `heaptap detach` case 2 is for: the library's peer end
# stays open (here: in this process) after its heaptap is gone, so the
# library never sees EOF and keeps tracking with nobody holding the session.
# pidfd_getfd(2) (Linux 5.6, needs ptrace access to heaptap) copies every
# connected unix socket of heaptap that is not its control socket
# ("@heaptap-session/..."). Prints "stolen N" and then reads and discards
# what arrives (so the library is never blocked on a full socket) until EOF
# on all of them.
import ctypes, os, select, sys

SYS_pidfd_getfd = 438
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])

conn = {}
with open("/proc/net/unix") as f:
    next(f)
    for line in f:
        w = line.split()
        if len(w) >= 7 and w[5] == "03":  # SS_CONNECTED
            conn[w[6]] = w[7] if len(w) > 7 else ""

pidfd = os.pidfd_open(pid)
fds = []
for name in os.listdir("/proc/%d/fd" % pid):
    try:
        link = os.readlink("/proc/%d/fd/%s" % (pid, name))
    except OSError:
        continue
    if not link.startswith("socket:["):
        continue
    ino = link[8:-1]
    if ino not in conn or conn[ino].startswith("@heaptap-session"):
        continue
    fd = libc.syscall(SYS_pidfd_getfd, pidfd, int(name), 0)
    if fd < 0:
        print("pidfd_getfd: %s" % os.strerror(ctypes.get_errno()), file=sys.stderr)
        sys.exit(1)
    fds.append(fd)
print("stolen %d" % len(fds), flush=True)
while fds:
    r, _, _ = select.select(fds, [], [])
    for fd in r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            os.close(fd)
            fds.remove(fd)
