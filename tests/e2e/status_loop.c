/* tests/e2e/status_loop.c - allocate and free for a given time (the live status line test) */
/* SPDX-License-Identifier: MIT */
/*
 * status_loop MS: for MS milliseconds, allocate blocks of 64 bytes into a
 * ring of 1000 and free the one they replace, then free the ring except
 * one block (a leak of 64 bytes), and print how many allocations it made.
 * Time-bound rather than count-bound, so the status line gets several
 * redraws however fast or loaded the machine is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RING 1000

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static void *ring[RING];
	double end = now_ms() + (argc > 1 ? atof(argv[1]) : 1500);
	unsigned long n = 0;
	int i;

	while (now_ms() < end) {
		for (i = 0; i < 1000; i++, n++) {
			void *p = malloc(64);

			if (!p)
				return 1;
			free(ring[n % RING]);
			ring[n % RING] = p;
		}
	}
	for (i = 1; i < RING; i++)
		free(ring[i]);
	printf("allocations %lu\n", n);
	return 0;
}
