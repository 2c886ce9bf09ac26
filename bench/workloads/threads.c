/* bench/workloads/threads.c - 8 threads allocating at once */
/* SPDX-License-Identifier: MIT */
/*
 * threads [N]: 8 threads each make N allocations (default 1,000,000) of
 * 16 to 256 bytes, keep a ring of 64 and free the oldest. They share no
 * data, so any slowdown beyond the single-thread cost comes from a tool's
 * locks.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 8
#define RING 64

static unsigned long per_thread;

static __attribute__((noinline)) void *work(void *arg)
{
	void *ring[RING] = { 0 };
	uintptr_t seed = (uintptr_t)arg * 7919 + 1;

	for (unsigned long i = 0; i < per_thread; i++) {
		void *p;

		seed = seed * 6364136223846793005u + 1442695040888963407u;
		p = malloc(16 + ((seed >> 33) % 241));
		if (!p)
			abort();
		free(ring[i % RING]);
		ring[i % RING] = p;
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[NTHREADS];

	per_thread = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&tid[t], NULL, work, (void *)(uintptr_t)t))
			return 1;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(tid[t], NULL);
	printf("threads: %d x %lu allocations\n", NTHREADS, per_thread);
	return 0;
}
