# bench/benchlib.py - pieces the bench scripts share: a draining event sink, a timed run
# SPDX-License-Identifier: MIT
#
# Imported by bench/floor, bench/hooks/run, bench/sample/floor and bench/sample/ab
# (each puts bench/ on sys.path and writes no __pycache__ into the tree).
#
# Sink: a listening AF_UNIX socket for a preloaded libheaptap_preload.so
# (HEAPTAP_SOCKET) and a thread that only reads what the library sends, so a
# run measures the cost inside the target with heaptap's interpreter free.
# With tee=FILE the bytes also go to FILE: an event stream that
# bench/consume's consume_replay can replay through the interpreter.
#
# timed(): run a command, its wall time and CPU time (user + system of it and
# of every process it waited for, from os.wait4), and its exit status.
# machine(): the CPU, kernel and load average line a table starts with.
import os
import socket
import subprocess
import threading
import time


class Sink:
    """Listens at PATH; start() before the program runs, finish() after it exited."""

    def __init__(self, path, tee=None, timeout=30):
        if os.path.exists(path):
            os.unlink(path)
        self.path = path
        self.tee = tee
        self.timeout = timeout
        self.bytes = 0
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.thread = None

    def env(self, env, preload):
        """env with the library preloaded and pointed at this sink (full tracing, as heaptap record)."""
        env = {k: v for k, v in env.items() if not k.startswith("HEAPTAP_") and k != "LD_PRELOAD"}
        env["LD_PRELOAD"] = preload
        env["HEAPTAP_SOCKET"] = self.path
        env["HEAPTAP_SAMPLE"] = "0,0"  # what heaptap record sets: full tracing from the start
        return env

    def _drain(self):
        self.srv.settimeout(self.timeout)
        try:
            c, _ = self.srv.accept()
        except OSError:
            return
        out = open(self.tee, "wb") if self.tee else None
        buf = bytearray(1 << 22)
        view = memoryview(buf)
        try:
            while True:
                n = c.recv_into(buf)
                if n <= 0:
                    break
                self.bytes += n
                if out:
                    out.write(view[:n])
        finally:
            c.close()
            if out:
                out.close()

    def start(self):
        self.thread = threading.Thread(target=self._drain)
        self.thread.start()
        return self

    def finish(self, timeout=60):
        """Wait for the stream's end (the program exited); the bytes read."""
        if self.thread:
            self.thread.join(timeout)
        self.srv.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
        return self.bytes


def timed(cmd, env=None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
    """Run cmd (stdin /dev/null); returns (wall s, CPU s of it and its reaped children, exit status)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, p.returncode


def machine(load_before):
    """The machine line of a table: CPU model, CPUs, kernel, load average before and now."""
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    u = os.uname()
    with open("/proc/loadavg") as f:
        now = " ".join(f.read().split()[:3])
    return "%s, %d CPUs, %s %s, load average %s before, %s after" % (
        model, os.cpu_count(), u.sysname, u.release, load_before, now)
