/* preload/boot.c - a static bootstrap arena for allocations during dlsym */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, before the real allocator is known. dlsym() may call
 * calloc/malloc while we resolve malloc itself; those requests are served
 * here by a lock-free bump allocator over a static, zero-filled array. Each
 * block is preceded by a 16-byte header holding its size, for realloc.
 *
 *   | hdr(size) | block ... | pad | hdr(size) | block ... |
 */
#include <stdatomic.h>
#include <stdint.h>

#include "preload/preload.h"

#define ARENA_SIZE PLD_BOOT_ARENA_SIZE
#define HDR 16

char pld_boot_arena[ARENA_SIZE] __attribute__((aligned(4096)));
static _Atomic size_t used;

void *pld_boot_alloc(size_t size, size_t align)
{
	size_t old = atomic_load(&used), start, end;

	if (align == 0 || align > 4096 || (align & (align - 1)) || size > ARENA_SIZE)
		return NULL;
	if (align < HDR)
		align = HDR;
	do {
		start = (old + HDR + align - 1) & ~(align - 1);
		end = start + size;
		if (end > ARENA_SIZE || end < start)
			return NULL;
	} while (!atomic_compare_exchange_weak(&used, &old, end));
	*(size_t *)(pld_boot_arena + start - HDR) = size;
	return pld_boot_arena + start;
}

size_t pld_boot_size(const void *p)
{
	return *(const size_t *)((const char *)p - HDR);
}
