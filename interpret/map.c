/* interpret/map.c - u64 -> u32 open-addressing hash map */
/* SPDX-License-Identifier: MIT */
/*
 * Used for raw trace-node indices, instruction pointers and thread ids, all
 * of which come from the untrusted target: any 64-bit key is fine, the
 * table grows at 50% load and never shrinks (entries are never removed).
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/internal.h"

static int grow(struct itp_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 1024;
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	uint32_t *vals = calloc(ncap, sizeof(*vals));
	size_t i, j, mask = ncap - 1;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (i = 0; i < m->cap; i++) {
		if (!m->vals[i])
			continue;
		for (j = itp_hash64(m->keys[i]) & mask; vals[j]; j = (j + 1) & mask)
			;
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
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
	for (i = itp_hash64(key) & mask; m->vals[i]; i = (i + 1) & mask) {
		if (m->keys[i] == key) {
			m->vals[i] = val + 1;
			return 0;
		}
	}
	m->keys[i] = key;
	m->vals[i] = val + 1;
	m->n++;
	return 0;
}

void itp_map_free(struct itp_map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->n = 0;
}
