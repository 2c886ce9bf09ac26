/* interpret/ptrmap.c - live blocks by pointer: open addressing, backward-shift delete */
/* SPDX-License-Identifier: MIT */
/*
 * The hottest table: one insert per allocation, one lookup-and-remove per
 * free. Linear probing keeps a probe within one or two cache lines; removal
 * shifts the following entries of the run back instead of leaving
 * tombstones, so a long session with churn never degrades. Pointer 0 marks
 * an empty slot (a NULL block is never inserted). Grows at 50% load.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/internal.h"

static inline size_t home(uint64_t ptr, size_t mask)
{
	/* blocks are 16-aligned: a multiplicative hash spreads the high bits */
	return (size_t)((ptr * 0x9e3779b97f4a7c15ULL) >> 20) & mask;
}

_Static_assert(sizeof(struct itp_ptr) == 32, "two slots a cache line");

/*
 * 256 slots at first (8 KiB): a program that churns, with few blocks live
 * at a time, keeps the whole table in L1; a 4096-slot start (160 KiB then)
 * made every put and take an L1 miss.
 */
#define FIRST_CAP 256

static int grow(struct itp_ptrmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : FIRST_CAP, mask = ncap - 1, i, j;
	struct itp_ptr *v;

	if (ncap / 2 > ITP_MAX_LIVE)
		return -E2BIG;
	v = calloc(ncap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		if (!m->v[i].ptr)
			continue;
		for (j = home(m->v[i].ptr, mask); v[j].ptr; j = (j + 1) & mask)
			;
		v[j] = m->v[i];
	}
	free(m->v);
	m->v = v;
	m->cap = ncap;
	return 0;
}

int itp_ptrmap_put(struct itp_ptrmap *m, const struct itp_ptr *e, int *replaced)
{
	size_t mask, i;

	*replaced = 0;
	if ((m->n + 1) * 2 > m->cap) {
		int rc = grow(m);

		if (rc)
			return rc;
	}
	mask = m->cap - 1;
	for (i = home(e->ptr, mask); m->v[i].ptr; i = (i + 1) & mask) {
		if (m->v[i].ptr == e->ptr) {
			m->v[i] = *e;
			*replaced = 1;
			return 0;
		}
	}
	m->v[i] = *e;
	m->n++;
	return 0;
}

int itp_ptrmap_take(struct itp_ptrmap *m, uint64_t ptr, struct itp_ptr *out)
{
	size_t mask, i, j;

	if (!m->cap || !ptr)
		return 0;
	mask = m->cap - 1;
	for (i = home(ptr, mask);; i = (i + 1) & mask) {
		if (!m->v[i].ptr)
			return 0;
		if (m->v[i].ptr == ptr)
			break;
	}
	*out = m->v[i];
	/* backward shift: move later entries of the run into the hole when
	 * their home slot does not lie cyclically in (hole, j] */
	for (j = (i + 1) & mask; m->v[j].ptr; j = (j + 1) & mask) {
		size_t h = home(m->v[j].ptr, mask);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->v[i].ptr = 0;
	m->n--;
	return 1;
}

void itp_ptrmap_free(struct itp_ptrmap *m)
{
	free(m->v);
	*m = (struct itp_ptrmap){0};
}
