/* tests/session/symlib.c - a module whose one function allocates, built under several names (symfiles.test) */
/* SPDX-License-Identifier: MIT */
/*
 * SYMLIB_FN names the function; every name has 12 characters so that all
 * builds have the same layout: the "secret" build's function then sits at
 * the very address of the target's own, as an attacker would arrange.
 */
#include <stdlib.h>

#ifndef SYMLIB_FN
#error "build with -DSYMLIB_FN=name"
#endif

__attribute__((noinline, visibility("default"))) void *SYMLIB_FN(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
