/* tests/report/diff_leak.c - a leak that grows with its argument, for diff.test */
/* SPDX-License-Identifier: MIT */
/*
 * diff_leak N: d_leak leaks N blocks of 1000 bytes; d_shrink allocates and
 * frees 10 - N blocks of 300 bytes; d_steady allocates and frees 5 blocks
 * of 64 bytes whatever N is. Between a run with N = 3 and one with N = 7,
 * d_leak grows by 4 calls, 4000 bytes and 4000 leaked bytes, d_shrink
 * shrinks by 4 calls and 1200 bytes, and d_steady does not change. No
 * stdio: the program allocates nothing else.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *kept[10];

static NOINLINE void d_leak(int n)
{
	for (int i = 0; i < n; i++)
		kept[i] = malloc(1000);
}

static NOINLINE void d_shrink(int n)
{
	for (int i = 0; i < 10 - n; i++) {
		void *p = malloc(300);

		free(p);
	}
}

static NOINLINE void d_steady(void)
{
	for (int i = 0; i < 5; i++) {
		void *p = malloc(64);

		free(p);
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;

	if (n < 0 || n > 10)
		return 2;
	d_steady();
	d_leak(n);
	d_shrink(n);
	return kept[0] == (void *)1; /* keeps the leaked blocks reachable from a global */
}
