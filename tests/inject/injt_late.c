/* tests/inject/injt_late.c - test library the target dlopens after the session started */
/* SPDX-License-Identifier: MIT */
/*
 * Built with the default (lazy) binding: inject/ must notice it through
 * dl_iterate_phdr's counters and patch its JUMP_SLOTs too.
 */
#include <stdlib.h>

#include "tests/inject/injt.h"

static void *keep[INJT_LATE_N];

__attribute__((noinline)) void injt_late_alloc(void)
{
	for (int i = 0; i < INJT_LATE_N; i++)
		keep[i] = malloc(INJT_LATE_SZ);
	keep[0] = realloc(keep[0], INJT_LATE_RSZ);
	__asm__ volatile("" ::: "memory");
}
