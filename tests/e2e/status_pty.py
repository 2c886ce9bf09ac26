#!/usr/bin/env python3
# tests/e2e/status_pty.py - run a command with stderr on a pseudo-terminal, keep what it drew
# SPDX-License-Identifier: MIT
"""status_pty.py OUT COLS CMD [ARGS...]

Runs CMD with stdin from /dev/null, stdout to OUT.stdout, and stderr on
the slave side of a new pseudo-terminal COLS columns wide; writes every
byte read from the master side to OUT (raw: carriage returns and escape
sequences kept). Exits with CMD's exit status (124 after 120 s).
"""
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time


def main():
    out, cols, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    # raw output: no "\n" -> "\r\n", so the test sees exactly what was written
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    with open(os.devnull, "rb") as devnull, open(out + ".stdout", "wb") as so:
        proc = subprocess.Popen(cmd, stdin=devnull, stdout=so, stderr=slave)
    os.close(slave)
    data = bytearray()
    deadline = time.monotonic() + 120
    while True:
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            sys.exit(124)
        r, _, _ = select.select([master], [], [], 0.5)
        if not r:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every slave side is closed
            break
        if not chunk:
            break
        data += chunk
    with open(out, "wb") as f:
        f.write(data)
    sys.exit(proc.wait())


if __name__ == "__main__":
    main()
