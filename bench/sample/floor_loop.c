/* bench/sample/floor_loop.c - a malloc + free loop timed by the thread's own CPU clock */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: floor_loop [N]
 *
 * N (default 20,000,000) iterations of
 *     p = malloc(16 + (i & 7) * 16); free(ring[i & 7]); ring[i & 7] = p;
 * after a warm-up of N / 10, timed with CLOCK_THREAD_CPUTIME_ID. Prints
 * "ns_per_pair=X". bench/sample/floor runs it untracked, under each of
 * floor_hooks.c's variants and under libheaptap_preload.so (sampling), so
 * the cost of each piece of the sampled hot path stands beside the whole.
 * Sizes of 16-128 bytes stay in glibc's tcache: the allocator itself is as
 * cheap as it gets, which is what makes the hooks' share visible.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *ring[8];

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void loop(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		void *p = malloc(16 + (i & 7) * 16);

		if (!p)
			abort();
		free(ring[i & 7]);
		ring[i & 7] = p;
		__asm__ volatile("" ::: "memory"); /* keep every call */
	}
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000000ul;
	uint64_t t0, t1;
	unsigned i;

	if (!n) {
		fprintf(stderr, "floor_loop: N must be a positive number\n");
		return 2;
	}
	loop(n / 10);
	t0 = thread_ns();
	loop(n);
	t1 = thread_ns();
	for (i = 0; i < 8; i++) {
		free(ring[i]);
		ring[i] = NULL;
	}
	printf("ns_per_pair=%.3f\n", (double)(t1 - t0) / (double)n);
	return 0;
}
