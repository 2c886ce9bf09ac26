# tests/python/workload.py - a Python program whose known functions allocate native memory
# SPDX-License-Identifier: MIT
#
# Lines marked "# LINE:name" are where the allocations are made (the checks
# read the numbers from this file). Modes:
#   once               every allocator a few times, then exit (record)
#   threads            4 threads, each through its own function chain
#   loop STOPFILE      rounds until STOPFILE exists, a checksum line a round
#                      (deterministic), then "rounds N"; prints "ready" first;
#                      ends (status 3) once the process that started it is
#                      gone, so a test that died on any path leaves no loop
#   rounds N           the same N rounds without waiting (the untracked reference)
#   serve              bench rounds for ever: "t MONOTONIC ROUNDS" every 0.2 s (bench/python)
# Sizes are large enough that CPython's allocator hands them to malloc.
import array
import os
import sys
import threading
import time
import zlib

BLOB = 300000


def make_blob(n):
    return b"\x01" * n  # LINE:make_blob


def grow_array(n):
    a = array.array("d")
    for i in range(n):
        a.append(i)  # LINE:grow_array
    return a


def compress_it(data):
    return zlib.compress(data, 6)  # LINE:compress_it


def one_round(k):
    blob = make_blob(BLOB + k % 7)  # LINE:round_blob
    arr = grow_array(20000)  # LINE:round_array
    z = compress_it(blob[: 50000 + k % 1000])  # LINE:round_zlib
    return zlib.crc32(z) ^ len(arr) ^ len(blob)


def main(mode, arg):
    if mode == "once":
        total = 0
        for k in range(5):
            total ^= one_round(k)  # LINE:main_round
        print("done", total)
    elif mode == "threads":
        threads = [threading.Thread(target=worker, args=(k,), name="w%d" % k) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("done")
    elif mode == "loop":
        print("ready", flush=True)
        k = 0
        parent = os.getppid()
        while not os.path.exists(arg):
            if os.getppid() != parent:
                sys.exit(3)
            print("round", k, one_round(k), flush=True)
            k += 1
        print("rounds", k, flush=True)
    elif mode == "rounds":
        for k in range(int(arg)):
            print("round", k, one_round(k))
        print("rounds", int(arg))
    elif mode == "serve":
        k = 0
        last = 0.0
        while True:
            bench_round(k)
            k += 1
            now = time.monotonic()
            if now - last >= 0.2:
                print("t %.6f %d" % (now, k), flush=True)
                last = now


def nest(depth, k):
    if depth:
        return nest(depth - 1, k)  # LINE:nest
    return [make_blob(1000 + (k + i) % 64) for i in range(50)]  # LINE:nest_leaf


def bench_round(k):
    # a service's request: a few large buffers and many medium ones 10 calls deep
    one_round(k)
    for j in range(20):
        nest(8, k + j)

def worker(k):
    # each thread has a chain of its own: worker -> tN_a -> make_blob
    f = [t0_a, t1_a, t2_a, t3_a][k]
    for i in range(3):
        f()  # LINE:worker


def t0_a():
    return make_blob(BLOB + 100)  # LINE:t0_a


def t1_a():
    return make_blob(BLOB + 101)  # LINE:t1_a


def t2_a():
    return make_blob(BLOB + 102)  # LINE:t2_a


def t3_a():
    return make_blob(BLOB + 103)  # LINE:t3_a


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)  # LINE:module
