/* interpret/apply.c - apply one event, in order, to the maps and the recording */
/* SPDX-License-Identifier: MIT */
/*
 * Called by order.c for every event once every event with a smaller
 * sequence number was applied or skipped. Whatever the target got wrong
 * (a free of an unknown pointer, an allocation naming an unknown trace node)
 * is counted in res->warn and does not end the stream: attached sessions
 * see frees of memory allocated before the attach. Only a writer failure or
 * a table growing past its cap ends it.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/order_internal.h"

static int table_fail(struct itp_ctx *c, int rc, const char *what)
{
	if (rc == -E2BIG)
		return itp_fail(c, ITP_E_CORRUPT, "too many %s (more than %u)", what,
				ITP_MAX_TABLE);
	if (rc == -EDQUOT)
		return itp_fail(c, ITP_E_BUDGET, "the memory budget of %llu MiB is used up (by %s)",
				(unsigned long long)((c->opt->max_memory ? c->opt->max_memory : c->mem.limit) >> 20),
				what);
	return itp_fail(c, ITP_E_NOMEM, "out of memory tracking %s", what);
}

int itp_apply_alloc(struct itp_ctx *c, uint32_t slot, struct itp_ev *e)
{
	uint64_t bytes = e->d ? e->d : e->a, alloc_no;
	uint32_t trace = 0, kind = e->kind, info;
	int created, replaced, rc;

	if (!e->c) {
		c->res->warn.null_allocs++;
		return 0;
	}
	if (kind > WIRE_KIND_MAX) {
		c->res->warn.bad_kinds++;
		kind = 0;
	}
	if (e->b && !itp_nodes_get(&c->nodes, e->b, &trace)) {
		c->res->warn.unknown_traces++;
		trace = 0;
	}
	/* the inline lookup first: a new info (the call) is the rare case */
	created = 0;
	if (!itp_infos_get(&c->infos, e->a, trace, kind, &info)) {
		rc = itp_infos_find(&c->infos, e->a, trace, kind, &info, &created);
		if (rc)
			return table_fail(c, rc, "allocation infos");
	}
	if (created) {
		uint32_t idx;

		rc = rec_put_allocinfo(c->w, e->a, trace, kind, &idx);
		if (rc)
			return itp_out_fail(c, rc, "allocation info");
	}
	/*
	 * which allocation a later free frees lets the writer code frees by
	 * age: the writer's count of allocations (rec_writer_nallocs), kept
	 * here too (every rec_put_alloc is below), a call less per event
	 */
	alloc_no = c->nallocs;
	rc = itp_ptrmap_set(&c->ptrs, e->c, bytes, alloc_no, info, slot, &replaced);
	if (rc)
		return table_fail(c, rc, "live pointers");
	if (replaced)
		c->res->warn.reused_ptrs++;
	if (c->opt->snapshot) {
		rc = itp_agg_alloc(c, info, trace, e->a, bytes, e->d != 0);
		if (rc)
			return rc;
	}
	rec_put_lane(c->w, slot);
	rc = rec_put_alloc(c->w, info, e->d);
	if (rc)
		return itp_out_fail(c, rc, "allocation");
	c->nallocs++;
	c->threads[slot].last_alloc_no = alloc_no;
	c->st.alloc_calls++;
	c->st.heap_bytes += bytes;
	if (c->st.heap_bytes > c->st.peak_bytes)
		c->st.peak_bytes = c->st.heap_bytes;
	return 0;
}

int itp_apply_free(struct itp_ctx *c, uint32_t slot, struct itp_ev *e)
{
	struct itp_ptr p;
	int temp, rc;

	c->st.free_calls++;
	if (!e->c)
		return 0;
	if (!itp_ptrmap_take(&c->ptrs, e->c, &p)) {
		c->res->warn.unknown_frees++;
		return 0;
	}
	/* temporary: its thread allocated nothing else in between */
	temp = c->threads[p.slot].last_alloc_no == p.alloc_no;
	rec_put_lane(c->w, slot); /* the freeing thread's */
	rc = rec_put_free_of(c->w, p.info, temp, p.alloc_no);
	if (rc)
		return itp_out_fail(c, rc, "free");
	c->st.heap_bytes = c->st.heap_bytes > p.bytes ? c->st.heap_bytes - p.bytes : 0;
	if (c->opt->snapshot)
		itp_agg_free(c, p.info, p.bytes, temp);
	return 0;
}

int itp_ip_index(struct itp_ctx *c, uint64_t ip, uint64_t seq, uint32_t *idx)
{
	int rc;

	if (itp_map_get(&c->ipmap, ip, idx))
		return 0;
	if (c->nips >= ITP_MAX_TABLE)
		return table_fail(c, -E2BIG, "instruction pointers");
	if (c->nips == c->ips_cap) {
		size_t ncap = c->ips_cap ? c->ips_cap * 2 : 4096;
		struct itp_ipinfo *v;

		if (itp_mem_take(&c->mem, (ncap - c->ips_cap) * sizeof(*v)))
			return table_fail(c, -EDQUOT, "instruction pointers");
		v = realloc(c->ips, ncap * sizeof(*v));
		if (!v)
			return table_fail(c, -ENOMEM, "instruction pointers");
		c->ips = v;
		c->ips_cap = ncap;
	}
	rc = rec_put_ip(c->w, ip, idx);
	if (rc)
		return itp_out_fail(c, rc, "instruction pointer");
	if (*idx != c->nips)
		return itp_fail(c, ITP_E_OUTPUT, "recording gave ip index %u, expected %zu", *idx,
				c->nips);
	rc = itp_map_put(&c->ipmap, ip, *idx);
	if (rc)
		return table_fail(c, rc, "instruction pointers");
	c->ips[c->nips++] = (struct itp_ipinfo){.ip = ip, .seq = seq};
	return itp_agg_ip(c, *idx, ip);
}

static int apply_node(struct itp_ctx *c, const struct itp_ev *e)
{
	uint32_t parent = 0, ip, idx;
	int rc;

	if (!e->a || itp_nodes_get(&c->nodes, e->a, &idx)) {
		c->res->warn.bad_nodes++;
		return 0;
	}
	if (c->st.traces >= ITP_MAX_TABLE)
		return table_fail(c, -E2BIG, "trace nodes");
	if (e->b && !itp_nodes_get(&c->nodes, e->b, &parent)) {
		c->res->warn.unknown_parents++;
		parent = 0;
	}
	rc = itp_ip_index(c, e->c, e->seq, &ip);
	if (rc)
		return rc;
	rc = rec_put_trace(c->w, parent, ip, &idx);
	if (rc)
		return itp_out_fail(c, rc, "trace node");
	rc = itp_nodes_put(&c->nodes, e->a, idx);
	if (rc)
		return table_fail(c, rc, "trace nodes");
	rc = itp_agg_trace(c, idx, parent, ip);
	if (rc)
		return rc;
	c->st.traces++;
	return 0;
}

static int apply_module(struct itp_ctx *c, struct itp_module *m)
{
	int rc;

	/* the module, its strings and segments, its slot and its hash entry */
	rc = itp_mem_take(&c->mem, sizeof(*m) + strlen(m->path) + 1 + m->build_id_len +
					m->nseg * sizeof(*m->seg) + 2 * sizeof(m) + 32);
	if (rc) {
		itp_module_free(m);
		return table_fail(c, rc, "modules");
	}
	rc = rec_put_module(c->w, m->path, m->base, m->hi > m->base ? m->hi - m->base : 0,
			    m->build_id, m->build_id_len, &m->rec_idx);
	if (rc) {
		itp_module_free(m);
		return itp_out_fail(c, rc, "module");
	}
	rc = itp_modules_add(&c->mods, m);
	if (rc) {
		itp_module_free(m);
		return table_fail(c, rc, "modules");
	}
	itp_pin_module(c, (uint32_t)(c->mods.n - 1));
	return 0;
}

int itp_apply(struct itp_ctx *c, uint32_t slot, struct itp_ev *e)
{
	switch (e->op) {
	case WIRE_EV_ALLOC:
	case WIRE_EV_ALLOC_W:
		return itp_apply_alloc(c, slot, e);
	case WIRE_EV_FREE:
		return itp_apply_free(c, slot, e);
	case WIRE_EV_NODE:
		return apply_node(c, e);
	case WIRE_EV_MODULE:
		return apply_module(c, (struct itp_module *)(uintptr_t)e->a);
	case WIRE_EV_MODULE_DEL:
		if (itp_modules_del(&c->mods, e->a, e->seq))
			c->res->warn.unknown_module_dels++;
		return 0;
	default:
		return 0;
	}
}
