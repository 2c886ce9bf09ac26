/* interpret/infos.c - allocation infos (size, trace, kind), deduplicated */
/* SPDX-License-Identifier: MIT */
/*
 * Each allocation event of the recording names an allocinfo; equal
 * (size, trace, kind) triples share one, so the event stream is a list of
 * small indices. The table holds index + 1 (0 = empty), the triples live in
 * a dense array indexed like the recording's allocinfo table.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/internal.h"

static inline uint64_t info_hash(uint64_t size, uint32_t trace, uint32_t kind)
{
	return itp_hash64(size ^ ((uint64_t)trace << 32 | kind) * 0x9e3779b97f4a7c15ULL);
}

static int grow_tab(struct itp_infos *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 4096, mask = ncap - 1, i, j;
	uint32_t *tab = calloc(ncap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		const struct itp_info *f = &t->v[i];

		for (j = info_hash(f->size, f->trace, f->kind) & mask; tab[j]; j = (j + 1) & mask)
			;
		tab[j] = (uint32_t)i + 1;
	}
	free(t->tab);
	t->tab = tab;
	t->cap = ncap;
	return 0;
}

int itp_infos_find(struct itp_infos *t, uint64_t size, uint32_t trace, uint32_t kind,
		   uint32_t *idx, int *created)
{
	size_t mask, i;
	int rc;

	*created = 0;
	if (t->cap) {
		mask = t->cap - 1;
		for (i = info_hash(size, trace, kind) & mask; t->tab[i]; i = (i + 1) & mask) {
			const struct itp_info *f = &t->v[t->tab[i] - 1];

			if (f->size == size && f->trace == trace && f->kind == kind) {
				*idx = t->tab[i] - 1;
				return 0;
			}
		}
	}
	if (t->n >= ITP_MAX_TABLE)
		return -E2BIG;
	if ((t->n + 1) * 2 > t->cap) {
		rc = grow_tab(t);
		if (rc)
			return rc;
	}
	if (t->n == t->vcap) {
		size_t ncap = t->vcap ? t->vcap * 2 : 4096;
		struct itp_info *v = realloc(t->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->vcap = ncap;
	}
	t->v[t->n] = (struct itp_info){ .size = size, .trace = trace, .kind = kind };
	mask = t->cap - 1;
	for (i = info_hash(size, trace, kind) & mask; t->tab[i]; i = (i + 1) & mask)
		;
	t->tab[i] = (uint32_t)t->n + 1;
	*idx = (uint32_t)t->n++;
	*created = 1;
	return 0;
}

void itp_infos_free(struct itp_infos *t)
{
	free(t->v);
	free(t->tab);
	*t = (struct itp_infos){ 0 };
}
