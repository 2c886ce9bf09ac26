/* bench/workloads/deep.c - allocations from many distinct, deep call stacks */
/* SPDX-License-Identifier: MIT */
/*
 * deep [N]: N allocations (default 2,000,000), each at the end of a chain
 * of 6 to 13 levels (two calls each: 14 to 28 frames, plus main and libc's
 * start) through four mutually recursive functions; the path is spelled by
 * the bits of a hash of the allocation's number modulo 65536, so there are
 * tens of thousands of distinct stacks, each seen about 30 times. The cost is stack capture and new-trace handling. A
 * ring of 1024 live blocks, the oldest freed. The functions do work after
 * the call, so no tail call shortens a stack.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 1024

static void *ring[RING];
static unsigned long nalloc;

static __attribute__((noinline)) int leaf(uint32_t path)
{
	size_t n = 16 + (path % 64);
	void *p = malloc(n);

	if (!p)
		abort();
	free(ring[nalloc % RING]);
	ring[nalloc % RING] = p;
	nalloc++;
	return (int)n;
}

#include "deep_rec.h"

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000;
	unsigned long sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		uint32_t h = (uint32_t)((i * 2654435761u) >> 7) & 0xffff;

		/* up to 8 levels spelled by h (4 ways each), then straight on */
		sum += (unsigned long)step(h, 6 + (int)(h % 8));
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	printf("deep: %lu allocations, checksum %lu\n", nalloc, sum);
	return 0;
}
