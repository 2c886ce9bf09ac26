#!/usr/bin/env python3
# tests/evloop/servers.py - attach to an idle one-thread event-loop server, then load it
# SPDX-License-Identifier: MIT
"""servers.py HEAPTAP TMPDIR c WHEEL_SERVER | py ASYNCIO_SERVER.py

The server (tests/evloop/wheel_server.c or asyncio_server.py) is started,
4 clients connect and go quiet, and once its one thread sleeps in its
epoll wait, `heaptap attach -v` runs. heaptap must say what it did with
the wait ("thread N was in epoll_wait: ..."). Then 4 clients send 50
requests each: every one must be answered, and the recording must hold
their allocations (srv_alloc for the C server: all 200; for asyncio the
bytearrays' mallocs, told by their sizes). heaptap ends by SIGINT, exit 0,
slots restored; the idle clients' connections still work; the C server
saw no EINTR and its 20 ms tick was never later than 5 ms plus the
hold and plus what it was with nobody attached. The same twice (a second
attach reuses the library); an attach whose stop found the wait already
ended by the server's own tick is done again (6 attaches at most). Exit 0 pass, 1 fail.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import htreport  # noqa: E402

NREQ = 50
SIZES = range(70000, 70000 + 4 * NREQ)  # above pymalloc's and the tcache's sizes: malloc each


def fail(msg):
    print("FAIL: %s" % msg, file=sys.stderr)
    sys.exit(1)


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.f = self.s.makefile("rb")

    def ask(self, line):
        self.s.sendall(line.encode() + b"\n")
        return self.f.readline().decode().strip()

    def many(self, sizes):
        self.s.sendall(b"".join(b"%d\n" % n for n in sizes))
        return [self.f.readline().decode().strip() for _ in sizes]


def one_thread_waiting(pid, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        tasks = os.listdir("/proc/%d/task" % pid)
        with open("/proc/%d/syscall" % pid) as f:
            nr = f.read().split()[0]
        if len(tasks) == 1 and nr in ("232", "281"):  # epoll_wait, epoll_pwait
            return nr
        time.sleep(0.005)
    fail("the server's one thread is not idle in epoll_wait (%d threads, syscall %s)" %
         (len(tasks), nr))


def stats(c):
    ans = c.ask("stats").split()
    return dict((k, int(v)) for k, v in (w.split("=") for w in ans[1:]))


def attach_round(ht, tmp, kind, pid, port, idle, rnd, base):
    one_thread_waiting(pid)
    name = os.path.join(tmp, "%s-%d" % (kind, rnd))
    # O_APPEND: heaptap shares this file offset; our seek(0) must not make it
    # write over its first lines
    open(name + ".err", "w").close()
    err = open(name + ".err", "a+")
    h = subprocess.Popen([ht, "attach", "-v", "-o", name + ".htap", str(pid)],
                         stdin=subprocess.DEVNULL, stderr=err)
    end = time.monotonic() + 30
    while True:
        err.seek(0)
        text = err.read()
        if " stopped " in text:
            break
        if h.poll() is not None or time.monotonic() > end:
            h.kill()
            fail("%s: heaptap attach exited %s before the session ran:\n%s" % (kind, h.poll(), text))
        time.sleep(0.005)
    note = [l for l in text.splitlines() if " was in epoll" in l]
    if not note:
        # its tick had just ended the wait as the stop came (a loaded machine): not this case
        print("%s round %d: the thread was not in a broken wait at the stop; again:\n%s" %
              (kind, rnd, text), file=sys.stderr)
        h.send_signal(signal.SIGINT)
        h.wait(60)
        os.unlink(name + ".htap")
        return False
    probe = Client(port)
    if kind == "c":
        while "patched=1" not in probe.ask("1"):
            if time.monotonic() > end:
                fail("c: no hook in the server's malloc slot")
            time.sleep(0.01)
    else:
        time.sleep(0.3)  # the library's first patch pass: a few ms
    clients = [Client(port) for _ in range(4)]
    sizes = list(SIZES)
    for i, c in enumerate(clients):
        got = [" ".join(a.split()[:2]) for a in c.many(sizes[i * NREQ:(i + 1) * NREQ])]
        want = ["ok %d" % n for n in sizes[i * NREQ:(i + 1) * NREQ]]
        if got != want:
            fail("%s: requests not all answered: %s" % (kind, [g for g in got if g not in want][:3]))
    for c in idle:
        if not c.ask("5").startswith("ok 5"):
            fail("%s: an idle client's connection no longer answers" % kind)
    st = stats(probe) if kind == "c" else None
    h.send_signal(signal.SIGINT)
    rc = h.wait(60)
    err.seek(0)
    text = err.read()
    if rc != 0 or "heaptap: restored " not in text:
        fail("%s: heaptap attach exited %d:\n%s" % (kind, rc, text))
    rep = subprocess.run([ht, "report", "--format", "json", "-n", "1000000", "-b", "0",
                          name + ".htap"], capture_output=True, text=True, check=False)
    if rep.returncode != 0:
        fail("%s: heaptap report exited %d: %s" % (kind, rep.returncode, rep.stderr))
    rep = json.loads(rep.stdout)
    if kind == "c":
        got = htreport.through(rep, "srv_alloc")["calls"]
    else:  # every backtrace whose allocations are all of our sizes
        got = sum(int(t["calls"]) for t in htreport.traces(rep)
                  if int(t["calls"]) and SIZES[0] * int(t["calls"]) <= int(t["bytes"]) <=
                  (SIZES[-1] + 64) * int(t["calls"]))
    held = 0
    for l in text.splitlines():
        if " stopped " in l and " ms: stop " in l:
            held = int(float(l.split(" stopped ", 1)[1].split(" ms")[0]) * 1000)
    print("%s round %d: %s; %d of %d requests' allocations recorded; held %d us; %s" %
          (kind, rnd, note[0].split(" was in ", 1)[1], got, len(sizes), held,
           "stats %s (unattached: late %d us)" % (st, base) if st else ""), file=sys.stderr)
    if got < len(sizes):
        fail("%s: %d of the %d requests' allocations in the recording" % (kind, got, len(sizes)))
    if st and st["eintr"]:
        fail("c: the server saw EINTR %d times" % st["eintr"])
    if st and st["late_us"] > base + 5000 + held:
        fail("c: its tick fired %d us late (unattached %d us, held %d us)" %
             (st["late_us"], base, held))
    for f in (name + ".htap", name + ".err"):
        os.unlink(f)
    return True


def main(argv):
    ht, tmp, kind, prog = argv[1], argv[2], argv[3], argv[4]
    cmd = [prog] if kind == "c" else [sys.executable, prog]
    srv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        line = srv.stdout.readline().decode().split()
        if not line or line[0] != "ready":
            fail("%s: the server said %s" % (kind, line))
        pid, port = int(line[1].split("=")[1]), int(line[2].split("=")[1])
        idle = [Client(port) for _ in range(4)]
        base = 0
        if kind == "c":
            time.sleep(0.3)
            base = stats(idle[0])["late_us"]
        done = 0
        for rnd in range(6):
            done += attach_round(ht, tmp, kind, pid, port, idle, rnd, base)
            if done == 2:
                break
        if done < 2:
            fail("%s: in 6 attaches the thread was in a broken epoll wait only %d times" % (kind, done))
        if srv.poll() is not None:
            fail("%s: the server ended (exit %d)" % (kind, srv.returncode))
    finally:
        srv.kill()
        srv.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
