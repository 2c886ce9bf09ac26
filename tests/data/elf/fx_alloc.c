/* tests/data/elf/fx_alloc.c - fixture library: calls every allocator heaptap hooks */
/* SPDX-License-Identifier: MIT */
/*
 * Built several times by tests/unit/elf.cmake with different link flags
 * (see README); check_elf compares the slots elf/ finds in each against
 * `readelf -rW`. The pointers below are stored where the compiler cannot
 * drop the calls.
 */
#define _GNU_SOURCE /* reallocarray */
#include <malloc.h>
#include <stdlib.h>

/* Addresses taken in writable data: word-sized absolute relocations. */
void *(*fx_malloc_ptr)(size_t) = malloc;
void (*fx_free_ptr)(void *) = free;

void *volatile fx_keep[10];

int fx_run(void)
{
	void *p = NULL;
	int bad = 0;

	fx_keep[0] = malloc(16);
	fx_keep[1] = calloc(2, 8);
	fx_keep[2] = realloc(fx_keep[0], 32);
	bad |= posix_memalign(&p, 64, 64);
	fx_keep[3] = p;
	fx_keep[4] = aligned_alloc(64, 128);
	fx_keep[5] = memalign(64, 64);
	fx_keep[6] = valloc(64);
	fx_keep[7] = pvalloc(64);
	fx_keep[8] = reallocarray(NULL, 4, 8);
	for (int i = 1; i < 9; i++)
		free(fx_keep[i]);
	return bad;
}
