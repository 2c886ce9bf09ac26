/* tests/sample/snapsym_prog.c - allocates through a stripped shared library for SECS seconds */
/* SPDX-License-Identifier: MIT */
/*
 * snapsym_prog [SECS]: prints "ready", then for SECS seconds (default 30)
 * allocates through snapsym_lib.so's exported functions (one allocates
 * itself, one through a hidden function) and frees what it allocated a
 * round before, so the heap stays small.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void *snapsym_exported_alloc(size_t n);
void *snapsym_exported_outer(size_t n);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 30, end = now() + secs;
	void *keep[64] = { 0 };
	struct timespec nap = { 0, 200000 };

	printf("ready\n");
	fflush(stdout);
	for (unsigned k = 0; now() < end; k++) {
		unsigned i = k % 32;

		free(keep[2 * i]);
		free(keep[2 * i + 1]);
		keep[2 * i] = snapsym_exported_alloc(64 + i);
		keep[2 * i + 1] = snapsym_exported_outer(128 + i);
		if (i == 31)
			nanosleep(&nap, NULL);
	}
	for (unsigned i = 0; i < 64; i++)
		free(keep[i]);
	return 0;
}
