/* tests/sample/snapsym_lib.c - a shared library installed stripped: only its .dynsym names its functions */
/* SPDX-License-Identifier: MIT */
/*
 * Built -g and then stripped (--strip-all: no .symtab, no DWARF), so a
 * symbolizer can name the exported functions from .dynsym alone and
 * nothing at all in the hidden one.
 */
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default"), noinline))

static volatile unsigned sink;

/* not exported: no name left for it after the strip */
static __attribute__((noinline, noclone)) void *snapsym_hidden_alloc(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 1, n);
	sink += n; /* work after the call: not a tail call */
	return p;
}

EXPORT void *snapsym_exported_alloc(size_t n)
{
	char *p = malloc(n);

	if (p)
		memset(p, 2, n);
	sink += n;
	return p;
}

EXPORT void *snapsym_exported_outer(size_t n)
{
	void *p = snapsym_hidden_alloc(n);

	sink += 1;
	return p;
}
