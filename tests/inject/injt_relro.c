/* tests/inject/injt_relro.c - test library built with -fno-plt and full RELRO (-z relro -z now) */
/* SPDX-License-Identifier: MIT */
/*
 * Its calls to malloc & co. go through GLOB_DAT slots inside PT_GNU_RELRO,
 * read-only once relocated: inject/ must make the page writable for the
 * store and put it back. The numbers are checked by tests/unit/check_inject.c.
 */
#include <stdlib.h>

#include "tests/inject/injt.h"

static void *keep[INJT_RELRO_N + 1];

__attribute__((noinline)) void injt_relro_alloc(void)
{
	void *tmp;

	for (int i = 0; i < INJT_RELRO_N; i++)
		keep[i] = malloc(INJT_RELRO_SZ);
	keep[INJT_RELRO_N] = calloc(INJT_RELRO_CN, INJT_RELRO_CSZ);
	tmp = malloc(INJT_RELRO_SZ);
	free(tmp);
	__asm__ volatile("" ::: "memory"); /* no tail call: the frame stays */
}

void injt_relro_churn(void)
{
	free(malloc(INJT_CHURN_SZ + 8));
}

void injt_relro_warm(void)
{
	free(malloc(16));
}
