/* interpret/nodes.c - raw trace-node indices to recording trace indices */
/* SPDX-License-Identifier: MIT */
/*
 * See struct itp_nodes: dense raw indices live in an array that grows by
 * doubling, but only to cover indices up to twice (nodes seen + 64K); any
 * index beyond that goes to a hash map. Lookups try the array, then the
 * map, so an entry stays valid wherever it was put.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/table_internal.h"

#define SLACK 65536

int itp_nodes_put(struct itp_nodes *t, uint64_t raw, uint32_t idx)
{
	if (raw >= t->direct_cap && raw < 2 * ((uint64_t)t->n + SLACK)) {
		size_t ncap = t->direct_cap ? t->direct_cap : 1024;
		uint32_t *d;

		while (ncap <= raw)
			ncap *= 2;
		if (itp_mem_take(t->mem, (ncap - t->direct_cap) * sizeof(*d)))
			return -EDQUOT;
		d = realloc(t->direct, ncap * sizeof(*d));
		if (!d) {
			itp_mem_give(t->mem, (ncap - t->direct_cap) * sizeof(*d));
			return -ENOMEM;
		}
		memset(d + t->direct_cap, 0, (ncap - t->direct_cap) * sizeof(*d));
		t->direct = d;
		t->direct_cap = ncap;
	}
	if (raw < t->direct_cap) {
		t->direct[raw] = idx + 1;
	} else {
		int rc = itp_map_put(&t->sparse, raw, idx);

		if (rc)
			return rc;
	}
	t->n++;
	return 0;
}

void itp_nodes_free(struct itp_nodes *t)
{
	itp_mem_give(t->mem, t->direct_cap * sizeof(*t->direct));
	free(t->direct);
	itp_map_free(&t->sparse);
	memset(t, 0, sizeof(*t));
}
