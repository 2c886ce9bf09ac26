/* bench/unwind/rec.c - deep-like call stacks for bench/unwind (built twice: with and without frame
 * pointers) */
/* SPDX-License-Identifier: MIT */
/*
 * The recursion of bench/workloads/deep.c (four mutually recursive
 * functions under a dispatcher, the path spelled by a hash, 6 to 13
 * levels: 14 to 28 frames), with a call of the probe where deep calls
 * malloc. PFX names the copy: uw_nofp_run (-O2, no frame pointers, as
 * deep) and uw_fp_run (-O2 -fno-omit-frame-pointer, for the frame-pointer
 * walk).
 */
#include <stdint.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define F(name) CAT(PFX, name)

extern void (*uw_probe)(void);

static __attribute__((noinline)) int leaf(uint32_t path)
{
	uw_probe();
	__asm__ volatile("" ::: "memory");
	return (int)(path & 7);
}

#include "../workloads/deep_rec.h"

/* F(run) - n probes, each at the end of the stack deep's n-th allocation has. */
int F(run)(unsigned long first, unsigned long n);
int F(run)(unsigned long first, unsigned long n)
{
	int s = 0;

	for (unsigned long i = first; i < first + n; i++) {
		uint32_t h = (uint32_t)((i * 2654435761u) >> 7) & 0xffff;

		s += step(h, 6 + (int)(h % 8));
	}
	return s;
}
