// tests/jvm/JvmLeak.java - a JVM whose threads call a JNI library that allocates, frees and leaks known amounts
// SPDX-License-Identifier: MIT
//
// Usage: java -cp DIR JvmLeak /abs/path/libjvmtest.so [WORKERS]
//
// Threads:
//   workers (default 4)  loop: churn() in the JNI library (malloc, calloc,
//                        realloc, free), check its hash against the same
//                        computation in Java; while leaking, leak() too
//   spawner              every 20 ms starts and joins a short thread (the
//                        JVM mallocs its thread structures) and calls
//                        Thread.getAllStackTraces() (a safepoint)
//   ticker               while armed, timestamps in a tight loop: the longest
//                        gap is the longest pause this thread saw
//   main                 reads commands on stdin, answers one line each
//
// Commands (one line each; the answer is one line):
//   ping                 pong
//   waitpatched MS       "patched" once the library's malloc GOT slot differs
//                        from its value at load (heaptap's hook is in), or
//                        "timeout"
//   waitrestored MS      "restored" once it holds that value again, or "timeout"
//   leak start           workers leak one block every 8th iteration from now on: leaking
//   leak stop            workers stop leaking; once each has finished the
//                        iteration it was in: "leaked calls=N bytes=B unpatched=U"
//                        (U: leaks made while the slot was not patched)
//   gaps start           reset the pause counters, arm the ticker: armed
//   gaps                 "gaps ticker_us=T workers_us=W spawner_us=S max_us=M",
//                        longest gaps since "gaps start"; disarms the ticker
//   stats                "stats iters=N bad=B spawned=S" (bad: hash mismatches)
//   deflate N            creates N java.util.zip.Deflaters (zlib state in
//                        native memory) and keeps them, never end()ed:
//                        "deflaters N" (all kept so far)
//   upcall N             the JNI upcall: upcall() (native) calls upcalled()
//                        (Java), which calls upleak() (native), which leaks
//                        N blocks of 3456 bytes: "upcalled N"
//   burst N              calls churn() N times in a row on this thread (about
//                        a dozen allocations each): "burst ns=T cpu=C", the
//                        time it took and this thread's CPU time in it
//                        (bench/jvm/run --cost)
//   quit                 stops the threads, exits 0 if bad == 0, else 3
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.Deflater;
import java.util.concurrent.locks.LockSupport;

public final class JvmLeak {
    static native long churn(int seed, int n);
    static native int leak(int n);
    static native boolean patched();
    static native int leakSize();
    static native int tid();
    static native int upcall(int n);
    static native int upleak(int n);

    // Called from native code (Java_JvmLeak_upcall): Java between two native sections.
    static int upcalled(int n) {
        return upleak(n); // upcalled's call of upleak
    }

    static final int BLOCKS = 6;
    static volatile boolean running = true;
    static volatile boolean leaking = false;
    static volatile boolean armed = false;
    static final Object armLock = new Object();
    static final AtomicLong iters = new AtomicLong();
    static final AtomicLong bad = new AtomicLong();
    static final AtomicLong spawned = new AtomicLong();
    static volatile long tickerGap, spawnerGap;
    static final ArrayList<Deflater> deflaters = new ArrayList<>();

    static final class Worker extends Thread {
        final int id;
        volatile long done;          // iterations finished
        volatile long leaked, unpatched;
        volatile long gap;           // longest gap between iterations since "gaps start"

        Worker(int id) {
            super("jvmleak-worker-" + id);
            this.id = id;
            setDaemon(true);
        }

        void leakOne() {
            int seen = leak(1);
            leaked++;
            unpatched += 1 - seen;
        }

        // One iteration: a method invoked anew each time, so once it is
        // compiled every later iteration runs its compiled code (the loop
        // in run() is entered once and may stay interpreted).
        int step(int seed) {
            if (leaking && (done & 7) == 0)
                leakOne(); // JvmLeak.leak's caller, and its caller step(), in the stack of the leak
            seed = (seed + 1) % 1000000;
            if (churn(seed, BLOCKS) != expect(seed, BLOCKS))
                bad.incrementAndGet();
            iters.incrementAndGet();
            done++;
            return seed;
        }

        @Override
        public void run() {
            long last = System.nanoTime();
            int seed = id * 100003;
            while (running) {
                seed = step(seed);
                LockSupport.parkNanos(200_000);
                long t = System.nanoTime();
                if (t - last > gap)
                    gap = t - last;
                last = t;
            }
        }
    }

    // The same hash as jt_churn_block() in jvmtest.c.
    static long expect(int seed, int n) {
        long h = 1469598103934665603L;
        for (int i = 0; i < n; i++) {
            int size = 16 + (seed * 131 + i * 977) % 1000;
            for (int j = 0; j < size; j++)
                h = (h ^ ((seed + i * 7 + j * 13) & 0xff)) * 1099511628211L;
            if (i % 4 == 1)
                for (int j = size; j < size + 100; j++)
                    h = (h ^ ((j * 3) & 0xff)) * 1099511628211L;
        }
        return h;
    }

    static void spawner() {
        long last = System.nanoTime();
        while (running) {
            Thread t = new Thread(() -> {
                int[] a = new int[64];
                a[3] = 1;
            }, "jvmleak-short");
            t.start();
            try {
                t.join();
            } catch (InterruptedException e) {
                return;
            }
            spawned.incrementAndGet();
            Thread.getAllStackTraces();
            LockSupport.parkNanos(20_000_000);
            long now = System.nanoTime();
            if (now - last > spawnerGap)
                spawnerGap = now - last;
            last = now;
        }
    }

    static void ticker() {
        while (running) {
            synchronized (armLock) {
                while (!armed && running) {
                    try {
                        armLock.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            // compared with the shared value, which "gaps start" resets: a
            // local maximum would survive a quick disarm and re-arm
            long last = System.nanoTime();
            while (armed) {
                long t = System.nanoTime();
                if (t - last > tickerGap)
                    tickerGap = t - last;
                last = t;
            }
        }
    }

    // Native memory through a JDK class: each Deflater's zlib stream, never end()ed.
    static int deflaters(int n) {
        for (int i = 0; i < n; i++)
            deflaters.add(new Deflater(Deflater.BEST_SPEED, true));
        return deflaters.size();
    }

    static boolean waitFor(boolean want, long ms) {
        long end = System.nanoTime() + ms * 1_000_000L;
        while (patched() != want) {
            if (System.nanoTime() > end)
                return false;
            LockSupport.parkNanos(1_000_000);
        }
        return true;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: JvmLeak /abs/path/libjvmtest.so [WORKERS]");
            System.exit(2);
        }
        System.load(args[0]);
        int nw = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        Worker[] w = new Worker[nw];
        for (int i = 0; i < nw; i++) {
            w[i] = new Worker(i);
            w[i].start();
        }
        Thread sp = new Thread(JvmLeak::spawner, "jvmleak-spawner");
        sp.setDaemon(true);
        sp.start();
        Thread tk = new Thread(JvmLeak::ticker, "jvmleak-ticker");
        tk.setDaemon(true);
        tk.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready pid=" + ProcessHandle.current().pid() + " main_tid=" + tid());
        String line;
        while ((line = in.readLine()) != null) {
            String[] c = line.trim().split("\\s+");
            String ans;
            switch (c[0]) {
            case "ping":
                ans = "pong";
                break;
            case "waitpatched":
                ans = waitFor(true, Long.parseLong(c[1])) ? "patched" : "timeout";
                break;
            case "waitrestored":
                ans = waitFor(false, Long.parseLong(c[1])) ? "restored" : "timeout";
                break;
            case "leak":
                if (c.length > 1 && c[1].equals("start")) {
                    for (Worker x : w) {
                        x.leaked = 0;
                        x.unpatched = 0;
                    }
                    leaking = true;
                    ans = "leaking";
                } else {
                    leaking = false;
                    long[] mark = new long[nw];
                    for (int i = 0; i < nw; i++)
                        mark[i] = w[i].done;
                    // each worker finishes the iteration that may still leak
                    for (int i = 0; i < nw; i++)
                        while (w[i].done < mark[i] + 2 && w[i].isAlive())
                            LockSupport.parkNanos(1_000_000);
                    long n = 0, u = 0;
                    for (Worker x : w) {
                        n += x.leaked;
                        u += x.unpatched;
                    }
                    ans = "leaked calls=" + n + " bytes=" + n * leakSize() + " unpatched=" + u;
                }
                break;
            case "gaps":
                if (c.length > 1 && c[1].equals("start")) {
                    for (Worker x : w)
                        x.gap = 0;
                    spawnerGap = 0;
                    tickerGap = 0;
                    synchronized (armLock) {
                        armed = true;
                        armLock.notifyAll();
                    }
                    ans = "armed";
                } else {
                    armed = false;
                    long wg = 0;
                    for (Worker x : w)
                        wg = Math.max(wg, x.gap);
                    long m = Math.max(wg, Math.max(tickerGap, spawnerGap));
                    ans = "gaps ticker_us=" + tickerGap / 1000 + " workers_us=" + wg / 1000
                        + " spawner_us=" + spawnerGap / 1000 + " max_us=" + m / 1000;
                }
                break;
            case "burst": {
                int n = Integer.parseInt(c[1]);
                java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
                long c0 = mx.getCurrentThreadCpuTime(), t0 = System.nanoTime();
                for (int i = 0; i < n; i++)
                    churn(i, BLOCKS);
                long t1 = System.nanoTime(), c1 = mx.getCurrentThreadCpuTime();
                ans = "burst ns=" + (t1 - t0) + " cpu=" + (c1 - c0);
                break;
            }
            case "upcall":
                ans = "upcalled " + upcall(Integer.parseInt(c[1]));
                break;
            case "deflate":
                ans = "deflaters " + deflaters(Integer.parseInt(c[1]));
                break;
            case "stats":
                ans = "stats iters=" + iters.get() + " bad=" + bad.get() + " spawned=" + spawned.get();
                break;
            case "quit":
                running = false;
                armed = false;
                synchronized (armLock) {
                    armLock.notifyAll();
                }
                System.exit(bad.get() == 0 ? 0 : 3);
                return;
            default:
                ans = "unknown command";
            }
            System.out.println(ans);
        }
        System.exit(bad.get() == 0 ? 0 : 3);
    }
}
