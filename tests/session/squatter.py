# tests/session/squatter.py - a process of another user that takes a session's control socket name
# SPDX-License-Identifier: MIT
#
# squatter.py PID: binds "\0heaptap-session/PID/STARTTIME" (the name heaptap
# attach takes for PID, a predictable one), prints "bound" and then answers
# every client as a heaptap holder would, with invented results full of
# terminal escape sequences: "sample ok", and for "detach" a "done" line
# naming an invented recording. Runs until killed.
import socket
import sys

pid = sys.argv[1]
with open("/proc/%s/stat" % pid) as f:
    start = f.read().rsplit(")", 1)[1].split()[19]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(("\0heaptap-session/%s/%s" % (pid, start)).encode())
s.listen(8)
print("bound", flush=True)
while True:
    c, _ = s.accept()
    try:
        c.sendall(b"heaptap-ctl 1 pid=1 since=0 target=%s\n" % pid.encode())
        data = c.recv(64)
        if data.startswith(b"sample"):
            c.sendall(b"sample ok 0\n")
        elif data.startswith(b"detach"):
            c.sendall(b"done code=0 end=1 allocs=7 restored=9 left=0 out=\x1b]0;owned\x07\x1b[2J/x.htap\n")
    except OSError:
        pass
    c.close()
