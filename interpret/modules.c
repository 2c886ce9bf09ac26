/* interpret/modules.c - every module ever announced, and which one holds an ip */
/* SPDX-License-Identifier: MIT */
/*
 * Modules are kept for the whole session, with the sequence numbers of
 * their MODULE and MODULE_DEL events, because an ip is resolved only when it
 * is symbolized (docs/decisions.md 3): by then a library may have been
 * unloaded and another loaded at the same address. The module of an ip is
 * the one that was loaded when the ip's first trace node was recorded, else
 * the newest module that ever covered the address.
 *
 * The stream is hostile input, so nothing here scans all modules per event
 * or per ip. A MODULE_DEL finds its module through a hash of bases (each
 * base keeps a list of its loaded modules, newest first, walked at most
 * DEL_WALK steps). Lookups are answered offline (itp_modindex_*): the
 * modules' ranges are cut into elementary slots between their distinct
 * bounds, and two segment trees over those slots hold, for any range, the
 * module assigned to it last during a sweep in sequence order (loaded at
 * that moment) and the newest module that ever covered it. A range of any
 * size costs O(log n) nodes, a lookup O(log n).
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/module_internal.h"

#define DEL_WALK 64 /* loaded modules of one base a MODULE_DEL looks at */

void itp_module_free(struct itp_module *m)
{
	if (!m)
		return;
	free(m->path);
	free(m->build_id);
	free(m->seg);
	free(m);
}

/* the newest loaded module of base, or UINT32_MAX (the map keeps a removed head: empty) */
static uint32_t base_head(const struct itp_modules *t, uint64_t base)
{
	uint32_t k;

	if (!itp_map_get(&t->by_base, base, &k) || t->v[k]->seq_del != UINT64_MAX)
		return UINT32_MAX;
	return k;
}

int itp_modules_add(struct itp_modules *t, struct itp_module *m)
{
	uint32_t head;

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
	head = base_head(t, m->base);
	if (itp_map_put(&t->by_base, m->base, (uint32_t)t->n))
		return -ENOMEM;
	m->next_same_base = head == UINT32_MAX ? 0 : head + 1;
	t->v[t->n++] = m;
	return 0;
}

int itp_modules_del(struct itp_modules *t, uint64_t base, uint64_t seq)
{
	uint32_t k = base_head(t, base), prev = UINT32_MAX, steps;

	/* the list of a base holds its loaded modules only, newest first */
	for (steps = 0; k != UINT32_MAX && steps < DEL_WALK; steps++) {
		struct itp_module *m = t->v[k];

		if (m->seq_add <= seq) {
			m->seq_del = seq;
			if (prev != UINT32_MAX)
				t->v[prev]->next_same_base = m->next_same_base;
			else if (m->next_same_base)
				(void)itp_map_put(&t->by_base, base, m->next_same_base - 1);
			/* else the map keeps m, removed now: the base has none left */
			return 0;
		}
		prev = k;
		k = m->next_same_base ? m->next_same_base - 1 : UINT32_MAX;
	}
	return -ENOENT;
}

void itp_modules_free(struct itp_modules *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		itp_module_free(t->v[i]);
	free(t->v);
	itp_map_free(&t->by_base);
	*t = (struct itp_modules){0};
}

/* ---------------------------------------------------------------- */
/* the offline index                                                 */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the slot holding address a, or SIZE_MAX when no module range reaches it */
static size_t slot_of(const struct itp_modindex *x, uint64_t a)
{
	size_t lo = 0, hi = x->npts;

	if (!x->npts || a < x->pts[0] || a >= x->pts[x->npts - 1])
		return SIZE_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->pts[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* the index of bound a in pts (a is one) */
static size_t point_of(const struct itp_modindex *x, uint64_t a)
{
	size_t lo = 0, hi = x->npts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->pts[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* set the nodes that cover slots [l, r) to val */
static void assign(uint64_t *tree, size_t leaves, size_t l, size_t r, uint64_t val)
{
	for (l += leaves, r += leaves; l < r; l >>= 1, r >>= 1) {
		if (l & 1)
			tree[l++] = val;
		if (r & 1)
			tree[--r] = val;
	}
}

/* the nodes that cover slots [l, r) keep the newer of their module and k (index + 1) */
static void keep_newest(uint32_t *tree, const struct itp_modules *t, size_t leaves, size_t l,
			size_t r, uint32_t k)
{
	uint64_t seq = t->v[k - 1]->seq_add;

	for (l += leaves, r += leaves; l < r; l >>= 1, r >>= 1) {
		if ((l & 1) && (!tree[l] || t->v[tree[l] - 1]->seq_add <= seq))
			tree[l] = k;
		l += l & 1;
		if (r & 1) {
			r--;
			if (!tree[r] || t->v[tree[r] - 1]->seq_add <= seq)
				tree[r] = k;
		}
	}
}

int itp_modindex_build(struct itp_modindex *x, const struct itp_modules *t)
{
	size_t i, n = 0, k;

	*x = (struct itp_modindex){0};
	x->pts = malloc((2 * t->n + 1) * sizeof(*x->pts));
	if (!x->pts)
		return -ENOMEM;
	for (i = 0; i < t->n; i++)
		if (t->v[i]->lo < t->v[i]->hi) {
			x->pts[n++] = t->v[i]->lo;
			x->pts[n++] = t->v[i]->hi;
		}
	qsort(x->pts, n, sizeof(*x->pts), u64_cmp);
	for (i = 0, k = 0; i < n; i++)
		if (!k || x->pts[k - 1] != x->pts[i])
			x->pts[k++] = x->pts[i];
	x->npts = k;
	for (x->leaves = 1; x->leaves < k; x->leaves <<= 1)
		;
	x->live = calloc(2 * x->leaves, sizeof(*x->live));
	x->ever = calloc(2 * x->leaves, sizeof(*x->ever));
	if (!x->live || !x->ever) {
		itp_modindex_free(x);
		return -ENOMEM;
	}
	/* the newest module (by MODULE sequence number) that ever covered a slot */
	for (i = 0; i < t->n && k >= 2; i++) {
		const struct itp_module *m = t->v[i];

		if (m->lo >= m->hi)
			continue;
		keep_newest(x->ever, t, x->leaves, point_of(x, m->lo), point_of(x, m->hi),
			    (uint32_t)i + 1);
	}
	return 0;
}

/* a MODULE (del 0) or MODULE_DEL (del 1) event of the sweep */
struct sweep_ev {
	uint64_t seq;
	uint32_t del, mod;
};

static int ev_cmp(const void *a, const void *b)
{
	const struct sweep_ev *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	/* at one number a removal goes first: the module added there is loaded at it */
	if (x->del != y->del)
		return x->del > y->del ? -1 : 1;
	return x->mod < y->mod ? -1 : x->mod > y->mod;
}

static int q_cmp(const void *a, const void *b)
{
	const struct itp_modq *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
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

/* the packed (stamp, module + 1) along the path of slot s with the newest stamp */
static uint64_t path_max(const uint64_t *tree, size_t leaves, size_t s)
{
	uint64_t best = 0;
	size_t nd;

	for (nd = s + leaves; nd; nd >>= 1)
		if (tree[nd] > best)
			best = tree[nd];
	return best;
}

static uint32_t path_newest(const struct itp_modindex *x, const struct itp_modules *t, size_t s)
{
	uint32_t best = 0;
	size_t nd;

	for (nd = s + x->leaves; nd; nd >>= 1)
		if (x->ever[nd] && (!best || t->v[x->ever[nd] - 1]->seq_add > t->v[best - 1]->seq_add))
			best = x->ever[nd];
	return best;
}

int itp_modindex_resolve(struct itp_modindex *x, const struct itp_modules *t, struct itp_modq *q,
			 size_t nq, volatile sig_atomic_t *stop)
{
	struct sweep_ev *ev;
	size_t nev = 0, i, e = 0;
	uint64_t stamp = 0;

	for (i = 0; i < nq; i++)
		q[i].mod = -1;
	if (x->npts < 2 || !nq)
		return 0;
	ev = malloc(2 * t->n * sizeof(*ev) + 1);
	if (!ev)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		/* an empty range, or removed by the number it was added at: never loaded */
		if (t->v[i]->lo >= t->v[i]->hi || t->v[i]->seq_del <= t->v[i]->seq_add)
			continue;
		ev[nev++] = (struct sweep_ev){.seq = t->v[i]->seq_add, .del = 0, .mod = (uint32_t)i};
		if (t->v[i]->seq_del != UINT64_MAX)
			ev[nev++] = (struct sweep_ev){.seq = t->v[i]->seq_del, .del = 1, .mod = (uint32_t)i};
	}
	qsort(ev, nev, sizeof(*ev), ev_cmp);
	qsort(q, nq, sizeof(*q), q_cmp);
	for (i = 0; i < nq; i++) {
		size_t s = slot_of(x, q[i].ip);
		uint64_t live;
		uint32_t k;

		if (stop && *stop >= 2)
			break;
		/* a module is loaded for seq_add <= seq < seq_del */
		for (; e < nev && ev[e].seq <= q[i].seq; e++) {
			const struct itp_module *m = t->v[ev[e].mod];
			uint64_t val = (++stamp << 32) | (ev[e].del ? 0 : (uint64_t)ev[e].mod + 1);

			assign(x->live, x->leaves, point_of(x, m->lo), point_of(x, m->hi), val);
		}
		if (s == SIZE_MAX)
			continue;
		live = path_max(x->live, x->leaves, s);
		k = (uint32_t)live;
		if (k && covers(t->v[k - 1], q[i].ip)) {
			q[i].mod = (long)k - 1;
			continue;
		}
		k = path_newest(x, t, s);
		if (k && covers(t->v[k - 1], q[i].ip))
			q[i].mod = (long)k - 1;
	}
	free(ev);
	return 0;
}

void itp_modindex_free(struct itp_modindex *x)
{
	free(x->pts);
	free(x->live);
	free(x->ever);
	*x = (struct itp_modindex){0};
}
