/* tests/sample/sample_prog.c - a known allocation pattern big enough for 512K sampling to estimate */
/* SPDX-License-Identifier: MIT */
/*
 * Three call sites, each its own function (never inlined):
 *   small  300,000 x about 4 KB, freed at once   (1.2 GB allocated)
 *   mid     30,000 x about 40 KB, freed at once  (1.2 GB)
 *   big        100 x 2 MiB, all live together    (200 MiB: the peak)
 * At a 512 KiB mean that is about 2,300 samples per churn site (2 % standard
 * error) and the 2 MiB blocks are sampled with probability 0.98, so the
 * estimates of each site's bytes and of the peak land within a few percent
 * of the exact figures (tests/sample/accuracy.test). The 2 MiB blocks are
 * never touched: they cost address space, not memory. Prints nothing.
 * Argument: a scale factor (default 1) for bench runs.
 */
#include <stdlib.h>

static void *volatile sink;

__attribute__((noinline)) static void *alloc_small(size_t i)
{
	return malloc(4000 + (i % 193));
}

__attribute__((noinline)) static void *alloc_mid(size_t i)
{
	return malloc(40000 + (i % 1999));
}

__attribute__((noinline)) static void *alloc_big(void)
{
	return malloc(2u << 20);
}

int main(int argc, char **argv)
{
	static void *big[100];
	long scale = argc > 1 ? atol(argv[1]) : 1;

	if (scale < 1)
		scale = 1;
	for (long s = 0; s < scale; s++) {
		for (size_t i = 0; i < 300000; i++) {
			void *p = alloc_small(i);

			sink = p;
			free(p);
			if (i % 10 == 0) {
				p = alloc_mid(i);
				sink = p;
				free(p);
			}
		}
	}
	for (int i = 0; i < 100; i++)
		big[i] = alloc_big();
	for (int i = 0; i < 100; i++)
		free(big[i]);
	return 0;
}
