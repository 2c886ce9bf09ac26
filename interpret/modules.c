/* interpret/modules.c - every module ever announced, and which one holds an ip */
/* SPDX-License-Identifier: MIT */
/*
 * Modules are kept for the whole session, with the sequence numbers of
 * their MODULE and MODULE_DEL events, because an ip is resolved only at the
 * end (docs/decisions.md 3): by then a library may have been unloaded and
 * another loaded at the same address. itp_modules_find prefers the module
 * that was loaded when the ip's first trace node was recorded, and falls back
 * to the newest module that ever covered the address.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/internal.h"

void itp_module_free(struct itp_module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->build_id);
	free(m->seg);
	free(m);
}

int itp_modules_add(struct itp_modules *t, struct itp_module *m)
{
	if (t->n >= ITP_MAX_TABLE)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct itp_module **v = realloc(t->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = ncap;
	}
	t->v[t->n++] = m;
	return 0;
}

int itp_modules_del(struct itp_modules *t, uint64_t base, uint64_t seq)
{
	size_t i;

	for (i = t->n; i-- > 0;) {
		struct itp_module *m = t->v[i];

		if (m->base == base && m->seq_del == UINT64_MAX && m->seq_add <= seq) {
			m->seq_del = seq;
			return 0;
		}
	}
	return -ENOENT;
}

static const struct itp_modules *sort_ctx;

static int by_lo_cmp(const void *a, const void *b)
{
	const struct itp_module *x = sort_ctx->v[*(const uint32_t *)a];
	const struct itp_module *y = sort_ctx->v[*(const uint32_t *)b];

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

int itp_modules_index(struct itp_modules *t)
{
	size_t i;

	free(t->by_lo);
	free(t->max_hi);
	t->by_lo = malloc((t->n + 1) * sizeof(*t->by_lo));
	t->max_hi = malloc((t->n + 1) * sizeof(*t->max_hi));
	if (!t->by_lo || !t->max_hi)
		return -ENOMEM;
	for (i = 0; i < t->n; i++)
		t->by_lo[i] = (uint32_t)i;
	/* qsort has no context argument in C11; itp_run is single-threaded */
	sort_ctx = t;
	qsort(t->by_lo, t->n, sizeof(*t->by_lo), by_lo_cmp);
	sort_ctx = NULL;
	for (i = 0; i < t->n; i++) {
		uint64_t hi = t->v[t->by_lo[i]]->hi;

		t->max_hi[i] = i && t->max_hi[i - 1] > hi ? t->max_hi[i - 1] : hi;
	}
	return 0;
}

static int covers(const struct itp_module *m, uint64_t ip)
{
	size_t i;

	if (ip < m->lo || ip >= m->hi)
		return 0;
	for (i = 0; i < m->nseg; i++) {
		uint64_t start = m->base + m->seg[i].vaddr;

		if (ip >= start && ip - start < m->seg[i].memsz)
			return 1;
	}
	return 0;
}

long itp_modules_find(const struct itp_modules *t, uint64_t ip, uint64_t seq)
{
	size_t lo = 0, hi = t->n, i;
	long best = -1;

	if (!t->by_lo)
		return -1;
	/* first position whose module starts above ip */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[t->by_lo[mid]]->lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* walk down while some module further left may still reach ip */
	for (i = lo; i-- > 0 && t->max_hi[i] > ip;) {
		uint32_t k = t->by_lo[i];
		const struct itp_module *m = t->v[k];

		if (!covers(m, ip))
			continue;
		if (m->seq_add <= seq && seq < m->seq_del)
			return k;
		if (best < 0 || m->seq_add > t->v[best]->seq_add)
			best = k;
	}
	return best;
}

void itp_modules_free(struct itp_modules *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		itp_module_free(t->v[i]);
	free(t->v);
	free(t->by_lo);
	free(t->max_hi);
	*t = (struct itp_modules){0};
}
