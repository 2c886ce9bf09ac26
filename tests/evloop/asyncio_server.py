#!/usr/bin/env python3
# tests/evloop/asyncio_server.py - a one-thread asyncio server, the shape of a Python service
# SPDX-License-Identifier: MIT
"""Listens on 127.0.0.1 (an ephemeral port), prints "ready pid=N port=P", and
answers line requests on the event loop's one thread:

  "N"      allocates a bytearray of N bytes (malloc for N above pymalloc's
           512 bytes), keeps one in ten, answers "ok N"
  "stats"  "stats late_us=L ticks=T": the largest lateness of a 20 ms
           call_later tick since the last stats (microseconds)

asyncio retries a call that fails with EINTR by itself (PEP 475); what it
would show of a broken wait is a late timer or a lost connection.
"""
import asyncio
import os
import sys
import threading

KEPT = []
STATE = {"late": 0.0, "ticks": 0}
TICK = 0.02


def tick(loop, due):
    now = loop.time()
    STATE["late"] = max(STATE["late"], now - due)
    STATE["ticks"] += 1
    nxt = max(due + TICK, now + 0.001)
    loop.call_at(nxt, tick, loop, nxt)


async def serve(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        req = line.strip().decode()
        if req == "stats":
            writer.write(b"stats late_us=%d ticks=%d\n" % (STATE["late"] * 1e6, STATE["ticks"]))
            STATE["late"] = 0.0
        else:
            n = int(req)
            b = bytearray(n)
            if n % 10 == 0:
                KEPT.append(b)
            writer.write(b"ok %d\n" % n)
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    loop = asyncio.get_running_loop()
    loop.call_at(loop.time() + TICK, tick, loop, loop.time() + TICK)
    port = server.sockets[0].getsockname()[1]
    print("ready pid=%d port=%d" % (os.getpid(), port), flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if threading.active_count() != 1:
        sys.exit(2)
    asyncio.run(main())
