/* interpret/map.c - u64 -> u32 open-addressing hash map */
/* SPDX-License-Identifier: MIT */
/*
 * Used for raw trace-node indices, instruction pointers and thread ids, all
 * of which come from the untrusted target: any 64-bit key is fine, the
 * table grows at 50% load and never shrinks (entries are never removed).
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/table_internal.h"

static int grow(struct itp_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024, i, j, mask = ncap - 1;
	struct itp_map_ent *e;

	if (itp_mem_take(m->mem, (ncap - m->cap) * sizeof(*e)))
		return -EDQUOT;
	e = calloc(ncap, sizeof(*e));
	if (!e) {
		itp_mem_give(m->mem, (ncap - m->cap) * sizeof(*e));
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->e[i].val)
			continue;
		for (j = util_fmix64(m->e[i].key) & mask; e[j].val; j = (j + 1) & mask)
			;
		e[j] = m->e[i];
	}
	free(m->e);
	m->e = e;
	m->cap = ncap;
	return 0;
}

int itp_map_put(struct itp_map *m, uint64_t key, uint32_t val)
{
	size_t mask, i;

	if ((m->n + 1) * 2 > m->cap) {
		int rc = grow(m);

		if (rc)
			return rc;
	}
	mask = m->cap - 1;
	for (i = util_fmix64(key) & mask; m->e[i].val; i = (i + 1) & mask) {
		if (m->e[i].key == key) {
			m->e[i].val = (uint64_t)val + 1;
			return 0;
		}
	}
	m->e[i].key = key;
	m->e[i].val = (uint64_t)val + 1;
	m->n++;
	return 0;
}

void itp_map_free(struct itp_map *m)
{
	itp_mem_give(m->mem, m->cap * sizeof(*m->e));
	free(m->e);
	m->e = NULL;
	m->cap = m->n = 0;
}
