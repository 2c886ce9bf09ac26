/* bench/hooks/ordercost.c - ns an event spends on its place in the global order, three ways */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: hooks_ordercost [-n STEPS] [-r ROUNDS]
 *
 * Every event the hooks record takes its place in one process-wide order.
 * Today that is the shared sequence counter as trk_thr_enter_seq takes it
 * (track/buf_internal.h): a relaxed store of the thread's busy flag, then a
 * seq_cst fetch_add on a global 64-bit counter on its own cache line (on
 * x86-64 the lock xadd doubles as the fence the busy/claim handshake
 * needs), and at the event's end a release store of busy = 0. This times
 * STEPS such steps in a loop, ROUNDS times, and prints the median ns a step
 * (min-max in brackets) for:
 *
 *   flag     the busy flag's two stores alone: the part every scheme keeps
 *   (a)      the shared counter, one thread
 *   (b)      the shared counter, two threads pinned to two CPUs, both
 *            taking numbers at once (the counter's line moves between the
 *            cores): each thread's ns a step
 *   (c)      a per-thread clock instead: the busy flag by atomic exchange
 *            (the fence the handshake then needs, as no locked add gives
 *            it), then the time stamp counter read in order, lfence + rdtsc
 *            or rdtscp, made strictly increasing per thread (a stamp not
 *            above the thread's last becomes last + 1); one thread
 *   tsc      rdtsc alone (no flag, no fence, no fix-up): the clock's read,
 *            which a virtual machine may make dearer than on bare metal
 *
 * (b) needs two CPUs in the affinity mask and is skipped otherwise; (c)
 * and tsc need x86 with rdtscp and are skipped elsewhere. Nothing here is the
 * hooks' code: the steps are written out as the hooks take them, so the
 * figures are the order's cost alone.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#define LINE 64

/* the counter on its own line, as trk_g.seq */
static struct {
	_Atomic uint64_t seq __attribute__((aligned(LINE)));
	char pad[LINE - sizeof(uint64_t)];
} g;

/* one thread's state on its own line, as a trk_thr's busy flag and clock */
struct thr {
	_Atomic int busy __attribute__((aligned(LINE)));
	uint64_t last;	/* (c): the thread's last stamp */
	uint64_t sink;	/* what the steps return, kept so the loop stays */
	long steps;
	int cpu;	/* -1: not pinned */
	pthread_barrier_t *start;
	double ns;	/* result: ns a step */
};

enum mode { M_FLAG, M_SEQ, M_LFENCE_RDTSC, M_RDTSCP, M_RDTSC };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t step_flag(struct thr *t)
{
	atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
	atomic_store_explicit(&t->busy, 0, memory_order_release);
	return 0;
}

static uint64_t step_seq(struct thr *t)
{
	uint64_t seq;

	atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
	seq = atomic_fetch_add_explicit(&g.seq, 1, memory_order_seq_cst);
	atomic_store_explicit(&t->busy, 0, memory_order_release);
	return seq;
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t fix(struct thr *t, uint64_t c)
{
	if (c <= t->last)
		c = t->last + 1;
	t->last = c;
	return c;
}

static uint64_t step_lfence_rdtsc(struct thr *t)
{
	uint64_t c;

	atomic_exchange_explicit(&t->busy, 1, memory_order_seq_cst);
	_mm_lfence();
	c = fix(t, __rdtsc());
	atomic_store_explicit(&t->busy, 0, memory_order_release);
	return c;
}

static uint64_t step_rdtscp(struct thr *t)
{
	unsigned aux;
	uint64_t c;

	atomic_exchange_explicit(&t->busy, 1, memory_order_seq_cst);
	c = fix(t, __rdtscp(&aux));
	atomic_store_explicit(&t->busy, 0, memory_order_release);
	return c;
}

static uint64_t step_rdtsc(struct thr *t)
{
	(void)t;
	return __rdtsc();
}

static int have_rdtscp(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000001, &a, &b, &c, &d))
		return 0;
	return (d >> 27) & 1;
}
#else
static uint64_t step_lfence_rdtsc(struct thr *t)
{
	return step_flag(t);
}

static uint64_t step_rdtscp(struct thr *t)
{
	return step_flag(t);
}

static uint64_t step_rdtsc(struct thr *t)
{
	return step_flag(t);
}

static int have_rdtscp(void)
{
	return 0;
}
#endif

static enum mode run_mode;

static void *loop(void *arg)
{
	struct thr *t = arg;
	uint64_t (*step)(struct thr *) = run_mode == M_FLAG	       ? step_flag
					 : run_mode == M_SEQ	       ? step_seq
					 : run_mode == M_LFENCE_RDTSC ? step_lfence_rdtsc
					 : run_mode == M_RDTSCP	       ? step_rdtscp
								       : step_rdtsc;
	uint64_t acc = 0;
	double t0;

	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	if (t->start)
		pthread_barrier_wait(t->start);
	t0 = now();
	for (long i = 0; i < t->steps; i++)
		acc += step(t);
	t->ns = (now() - t0) / (double)t->steps;
	t->sink = acc;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* one round of mode with nthr threads (pinned to cpus[] when nthr > 1): the threads' mean ns a step */
static double round_of(enum mode m, int nthr, const int *cpus, long steps)
{
	struct thr t[2];
	pthread_t th[2];
	pthread_barrier_t bar;
	double sum = 0;

	run_mode = m;
	memset(t, 0, sizeof(t));
	if (nthr == 1) {
		t[0].steps = steps;
		t[0].cpu = -1;
		loop(&t[0]);
		return t[0].ns;
	}
	pthread_barrier_init(&bar, NULL, (unsigned)nthr);
	for (int i = 0; i < nthr; i++) {
		t[i].steps = steps;
		t[i].cpu = cpus[i];
		t[i].start = &bar;
		if (pthread_create(&th[i], NULL, loop, &t[i])) {
			fprintf(stderr, "hooks_ordercost: pthread_create failed\n");
			exit(1);
		}
	}
	for (int i = 0; i < nthr; i++) {
		pthread_join(th[i], NULL);
		sum += t[i].ns;
	}
	pthread_barrier_destroy(&bar);
	return sum / nthr;
}

static void report(const char *label, double *v, int rounds)
{
	qsort(v, (size_t)rounds, sizeof(*v), cmp_double);
	printf("%-58s %6.1f ns [%.1f-%.1f]\n", label, v[rounds / 2], v[0], v[rounds - 1]);
}

int main(int argc, char **argv)
{
	long steps = 20000000;
	int rounds = 9, cpus[2], ncpu = 0, rdtscp = have_rdtscp();
	cpu_set_t set;
	double *v[6];

	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			steps = strtol(argv[++i], &end, 10);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc)
			rounds = (int)strtol(argv[++i], &end, 10);
		if (!end || *end || steps < 1 || rounds < 1 || rounds > 1000) {
			fprintf(stderr, "usage: hooks_ordercost [-n STEPS] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE && ncpu < 2; c++)
			if (CPU_ISSET(c, &set))
				cpus[ncpu++] = c;
	for (int i = 0; i < 6; i++)
		if (!(v[i] = calloc((size_t)rounds, sizeof(double))))
			return 1;
	/* the modes in turn within each round, so all see the same load */
	for (int r = 0; r < rounds; r++) {
		v[0][r] = round_of(M_FLAG, 1, cpus, steps);
		v[1][r] = round_of(M_SEQ, 1, cpus, steps);
		if (ncpu == 2)
			v[2][r] = round_of(M_SEQ, 2, cpus, steps);
		if (rdtscp) {
			v[3][r] = round_of(M_LFENCE_RDTSC, 1, cpus, steps);
			v[4][r] = round_of(M_RDTSCP, 1, cpus, steps);
			v[5][r] = round_of(M_RDTSC, 1, cpus, steps);
		}
	}
	printf("ns an ordering step, median of %d rounds of %ld steps [min-max]\n", rounds, steps);
	report("flag: busy flag's stores alone", v[0], rounds);
	report("(a) shared counter (lock xadd), 1 thread", v[1], rounds);
	if (ncpu == 2) {
		char l[96];

		snprintf(l, sizeof(l), "(b) shared counter, 2 threads on CPUs %d and %d", cpus[0], cpus[1]);
		report(l, v[2], rounds);
	} else {
		printf("(b) skipped: fewer than two CPUs in this process's affinity mask\n");
	}
	if (rdtscp) {
		report("(c) per-thread clock: xchg flag + lfence;rdtsc, 1 thread", v[3], rounds);
		report("(c) per-thread clock: xchg flag + rdtscp, 1 thread", v[4], rounds);
		report("tsc: rdtsc alone", v[5], rounds);
	} else {
		printf("(c) and tsc skipped: no rdtscp on this CPU (x86 only)\n");
	}
	for (int i = 0; i < 6; i++)
		free(v[i]);
	return 0;
}
