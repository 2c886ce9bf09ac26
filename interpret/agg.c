/* interpret/agg.c - running heap totals per trace for periodic snapshots (heaptap attach --snapshot-every) */
/* SPDX-License-Identifier: MIT */
/*
 * Only when itp_options.snapshot is set. Nothing per event is kept: per
 * recording trace index the bytes and objects in use and allocated since
 * the last snapshot, per allocation info its trace and size (a free finds
 * its info in the pointer map), per ip index its address. Memory grows with
 * distinct stacks and allocation infos, never with time. Every
 * snapshot_ns the read loop hands the callback a view (struct
 * itp_snapshot) and the "since the last snapshot" sums start again.
 *
 * Objects of a sampled allocation are its weight over its size (rounded,
 * at least 1): the estimate the report uses too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/internal.h"

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 1024;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
	*v = nv;
	*cap = ncap;
	return 0;
}

int itp_agg_trace(struct itp_ctx *c, uint32_t idx, uint32_t parent, uint32_t ip)
{
	struct itp_agg *g = &c->agg;

	if (!c->opt->snapshot)
		return 0;
	if (grow((void **)&g->t, &g->cap_t, (size_t)idx + 1, sizeof(*g->t)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot traces");
	g->t[idx].parent = parent;
	g->t[idx].ip = ip;
	if (idx >= g->nt)
		g->nt = (size_t)idx + 1;
	return 0;
}

int itp_agg_ip(struct itp_ctx *c, uint32_t idx, uint64_t ip)
{
	struct itp_agg *g = &c->agg;

	if (!c->opt->snapshot)
		return 0;
	if (grow((void **)&g->ips, &g->cap_ips, (size_t)idx + 1, sizeof(*g->ips)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot ips");
	g->ips[idx] = ip;
	if (idx >= g->nips)
		g->nips = (size_t)idx + 1;
	return 0;
}

static int64_t objects(uint64_t size, uint64_t bytes)
{
	uint64_t n;

	if (!size || bytes <= size)
		return 1;
	n = (bytes + size / 2) / size;
	return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

int itp_agg_alloc(struct itp_ctx *c, uint32_t info, uint32_t trace, uint64_t size, uint64_t bytes)
{
	struct itp_agg *g = &c->agg;
	struct itp_snap_trace *t;
	int64_t n = objects(size, bytes);

	if (!c->opt->snapshot)
		return 0;
	if (grow((void **)&g->info, &g->cap_info, (size_t)info + 1, sizeof(*g->info)) ||
	    grow((void **)&g->t, &g->cap_t, (size_t)trace + 1, sizeof(*g->t)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot sums");
	g->info[info].trace = trace;
	g->info[info].size = size;
	if (trace >= g->nt)
		g->nt = (size_t)trace + 1;
	t = &g->t[trace];
	t->inuse_objects += n;
	t->inuse_bytes += (int64_t)bytes;
	t->alloc_objects += (uint64_t)n;
	t->alloc_bytes += bytes;
	return 0;
}

void itp_agg_free(struct itp_ctx *c, uint32_t info, uint64_t bytes)
{
	struct itp_agg *g = &c->agg;
	struct itp_snap_trace *t;

	if (!c->opt->snapshot || info >= g->cap_info || g->info[info].trace >= g->nt)
		return;
	t = &g->t[g->info[info].trace];
	t->inuse_objects -= objects(g->info[info].size, bytes);
	t->inuse_bytes -= (int64_t)bytes;
}

void itp_agg_snapshot(struct itp_ctx *c, uint64_t now_ns)
{
	struct itp_agg *g = &c->agg;
	struct itp_snapshot s;
	struct itp_snap_module *mods = NULL;
	size_t i, n = 0;

	if (!c->opt->snapshot || !c->have_header)
		return;
	/* modules loaded now (a removed one keeps its slot in c->mods with seq_del set) */
	if (c->mods.n)
		mods = calloc(c->mods.n, sizeof(*mods));
	for (i = 0; mods && i < c->mods.n; i++) {
		const struct itp_module *m = c->mods.v[i];

		if (m->seq_del != UINT64_MAX)
			continue;
		mods[n++] = (struct itp_snap_module){ .path = m->path, .base = m->base, .lo = m->lo,
						       .hi = m->hi, .build_id = m->build_id,
						       .build_id_len = m->build_id_len };
	}
	memset(&s, 0, sizeof(s));
	s.start_realtime_ns = c->hdr.start_realtime_ns;
	s.since_ns = g->last_ns;
	s.elapsed_ns = c->st.elapsed_ns;
	s.sample_bytes = c->hdr.sample_bytes;
	s.traces = g->t;
	s.ntraces = g->nt;
	s.ips = g->ips;
	s.nips = g->nips;
	s.mods = mods;
	s.nmods = n;
	c->opt->snapshot(&s, c->opt->snapshot_arg);
	free(mods);
	/* "allocated since the last snapshot" starts again */
	for (i = 0; i < g->nt; i++)
		g->t[i].alloc_objects = g->t[i].alloc_bytes = 0;
	g->last_ns = s.elapsed_ns;
	(void)now_ns;
}

void itp_agg_free_all(struct itp_agg *g)
{
	free(g->t);
	free(g->ips);
	free(g->info);
	memset(g, 0, sizeof(*g));
}
