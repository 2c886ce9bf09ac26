/* interpret/infos.c - allocation infos (size, trace, kind), deduplicated */
/* SPDX-License-Identifier: MIT */
/*
 * Each allocation event of the recording names an allocinfo; equal
 * (size, trace, kind) triples share one, so the event stream is a list of
 * small indices. Open addressing with linear probing; each 16-byte slot
 * holds the key and the index (struct itp_info_ent), so a lookup touches
 * one cache line even when millions of distinct stacks make the table far
 * bigger than the cache. Grows at 50% load, never shrinks.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/table_internal.h"


/* 256 slots at first (4 KiB, in L1 while a program has few distinct infos) */
#define FIRST_CAP 256

static int grow(struct itp_infos *t)
{
	size_t ncap = t->cap ? t->cap * 2 : FIRST_CAP, mask = ncap - 1, i, j;
	unsigned bits = (unsigned)__builtin_ctzll(ncap);
	struct itp_info_ent *tab;

	if (itp_mem_take(t->mem, (ncap - t->cap) * sizeof(*tab)))
		return -EDQUOT;
	tab = calloc(ncap, sizeof(*tab));
	if (!tab) {
		itp_mem_give(t->mem, (ncap - t->cap) * sizeof(*tab));
		return -ENOMEM;
	}
	for (i = 0; i < t->cap; i++) {
		const struct itp_info_ent *f = &t->tab[i];

		if (!f->kind_idx)
			continue;
		j = itp_info_slot(f->size, f->trace, f->kind_idx >> ITP_INFO_IDX_BITS, bits);
		while (tab[j].kind_idx)
			j = (j + 1) & mask;
		tab[j] = *f;
	}
	free(t->tab);
	t->tab = tab;
	t->cap = ncap;
	return 0;
}

int itp_infos_find(struct itp_infos *t, uint64_t size, uint32_t trace, uint32_t kind, uint32_t *idx,
		   int *created)
{
	uint32_t want = kind << ITP_INFO_IDX_BITS;
	size_t mask, i;
	int rc;

	*created = 0;
	if (itp_infos_get(t, size, trace, kind, idx))
		return 0;
	if (t->n >= ITP_MAX_INFOS)
		return -E2BIG;
	if ((t->n + 1) * 2 > t->cap) {
		rc = grow(t);
		if (rc)
			return rc;
	}
	mask = t->cap - 1;
	for (i = itp_info_slot(size, trace, kind, (unsigned)__builtin_ctzll(t->cap)); t->tab[i].kind_idx;
	     i = (i + 1) & mask)
		;
	t->tab[i] = (struct itp_info_ent){
	    .size = size, .trace = trace, .kind_idx = want | (uint32_t)(t->n + 1)};
	*idx = (uint32_t)t->n++;
	*created = 1;
	return 0;
}

void itp_infos_free(struct itp_infos *t)
{
	free(t->tab);
	*t = (struct itp_infos){0};
}
