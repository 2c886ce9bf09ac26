/* interpret/ptrmap.c - live blocks by pointer: open addressing, backward-shift delete */
/* SPDX-License-Identifier: MIT */
/*
 * The hottest table: one insert per allocation, one lookup-and-remove per
 * free. Linear probing keeps a probe within one or two cache lines; removal
 * shifts the following entries of the run back instead of leaving
 * tombstones, so a long session with churn never degrades. Pointer 0 marks
 * an empty slot (a NULL block is never inserted). Grows at 50% load, at
 * 25% while it has at most ITP_PTRMAP_SPARSE_CAP slots.
 * Put and take are inline in internal.h (they run for every event); this
 * file grows and frees the table.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/table_internal.h"

_Static_assert(sizeof(struct itp_ptr) == 32, "two slots a cache line");

/*
 * 256 slots at first (8 KiB): a program that churns, with few blocks live
 * at a time, keeps the whole table in L1; a 4096-slot start (160 KiB then)
 * made every put and take an L1 miss.
 */
#define FIRST_CAP 256

int itp_ptrmap_grow(struct itp_ptrmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : FIRST_CAP, mask = ncap - 1, i, j;
	struct itp_ptr *v;

	if (ncap / 2 > ITP_MAX_LIVE)
		return -E2BIG;
	if (itp_mem_take(m->mem, (ncap - m->cap) * sizeof(*v)))
		return -EDQUOT;
	v = calloc(ncap, sizeof(*v));
	if (!v) {
		itp_mem_give(m->mem, (ncap - m->cap) * sizeof(*v));
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->v[i].ptr)
			continue;
		for (j = itp_ptrmap_home(m->v[i].ptr, mask); v[j].ptr; j = (j + 1) & mask)
			;
		v[j] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = ncap;
	return 0;
}

void itp_ptrmap_free(struct itp_ptrmap *m)
{
	free(m->v);
	*m = (struct itp_ptrmap){0};
}
