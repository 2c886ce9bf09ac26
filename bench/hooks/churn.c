/* bench/hooks/churn.c - the session service's churn loop, timed by each thread's own CPU clock */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: churn THREADS ITERS [EXTRA_FRAMES [WORK]]
 *
 * Each of THREADS threads runs ITERS iterations of the loop the session
 * service's workers run (tests/session/service.c, churn(): 8 mallocs of
 * 16-520 bytes, a realloc, 8 frees, a calloc and its free: 10 allocation
 * events and 10 free events) and measures them with CLOCK_THREAD_CPUTIME_ID after a
 * warm-up of ITERS / 10 iterations. EXTRA_FRAMES (default 0) calls the
 * loop through that many more nested frames (the service's own stacks are
 * 4-5 frames: churn, worker, start_thread, clone3). WORK (default 0) is the
 * service's WORK: arithmetic steps each iteration does besides allocating.
 *
 * bench/hooks/run compiles this and runs it untracked and preloaded with
 * libheaptap_preload.so (full tracing, the stream drained by a reader that
 * only reads). Output, one line per thread and one for the process:
 *   thread I cpu_ns_per_iter=X
 *   process cpu_ns_per_iter=X threads=N iters=N
 * (process: user + system of the whole process from start to the end of
 * the measured loops, per iteration of all threads: includes the timer
 * thread and the warm-up).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "churn_body.h"

#define MAX_THREADS 64

static unsigned long iters;
static unsigned extra;
static unsigned work;
static __thread volatile unsigned work_sink; /* per thread: no shared cache line */
static uint64_t thread_ns[MAX_THREADS];
static pthread_barrier_t go;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The service's churn(), as it is. */
__attribute__((noinline)) static void churn(unsigned k)
{
	for (unsigned i = 0; i < work; i++)
		work_sink = work_sink * 31 + i;
	CHURN_BODY(k, malloc, realloc, free, calloc);
}

__attribute__((noinline)) static void loop(unsigned long n, unsigned *k)
{
	for (unsigned long i = 0; i < n; i++)
		churn((*k)++);
	__asm__ volatile("" ::: "memory");
}

/* nest - call loop through d more frames (not a tail call: each keeps a frame). */
__attribute__((noinline)) static void nest(unsigned d, unsigned long n, unsigned *k)
{
	if (d == 0)
		loop(n, k);
	else
		nest(d - 1, n, k);
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	unsigned k = 0;
	uint64_t t0;

	nest(extra, iters / 10, &k); /* warm-up: caches, tree, first flushes */
	pthread_barrier_wait(&go);
	t0 = cpu_ns();
	nest(extra, iters, &k);
	thread_ns[id] = cpu_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	struct rusage ru;
	int nt, i;

	if (argc < 3 || (nt = atoi(argv[1])) < 1 || nt > MAX_THREADS ||
	    (iters = strtoul(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: churn THREADS(1-%d) ITERS [EXTRA_FRAMES [WORK]]\n", MAX_THREADS);
		return 2;
	}
	extra = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
	if (extra > 200) {
		fprintf(stderr, "churn: EXTRA_FRAMES at most 200\n");
		return 2;
	}
	work = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 0;
	if (work > 1000000) {
		fprintf(stderr, "churn: WORK at most 1000000\n");
		return 2;
	}
	pthread_barrier_init(&go, NULL, (unsigned)nt);
	for (i = 0; i < nt; i++) {
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "churn: pthread_create failed\n");
			return 1;
		}
	}
	for (i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	getrusage(RUSAGE_SELF, &ru);
	for (i = 0; i < nt; i++)
		printf("thread %d cpu_ns_per_iter=%.1f\n", i, (double)thread_ns[i] / (double)iters);
	printf("process cpu_ns_per_iter=%.1f threads=%d iters=%lu\n",
	       ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 /
			       ((double)iters * 1.1 * nt) +
		       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3 /
			       ((double)iters * 1.1 * nt),
	       nt, iters);
	return 0;
}
