/* report/sites.c - merge traces into call sites, sort them, expand backtraces */
/* SPDX-License-Identifier: MIT */
/*
 * A call site is the innermost ip of a trace (the node a trace index names;
 * its parents are the outer frames). Every trace with the same ip index
 * merges into one site; the empty trace (0) and traces whose ip is unknown
 * share one site with ip REC_NONE. site_first/site_traces list each site's
 * traces (compressed rows: site s owns site_traces[site_first[s] ..
 * site_first[s + 1])).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

static int has_cost(const struct rpt_costs *c)
{
	return c->calls || c->bytes || c->temporary || c->peak || c->leaked;
}

/* ip index of trace t, or nips for "unknown" */
static size_t site_key(const struct rpt_data *d, size_t t)
{
	uint32_t ip;

	if (t == 0 || t >= d->ntraces)
		return d->nips;
	ip = d->traces[t].ip;
	return ip < d->nips ? ip : d->nips;
}

/* Costliest by c first; ties: more calls, more bytes, then lower index. */
static int cmp_costs(const struct rpt_costs *a, const struct rpt_costs *b, enum rpt_cost c)
{
	uint64_t x = rpt_cost_field(a, c), y = rpt_cost_field(b, c);

	if (x != y)
		return x > y ? -1 : 1;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return 0;
}

static int cmp_site(const void *pa, const void *pb, void *arg)
{
	const struct rpt_site *a = *(const struct rpt_site *const *)pa;
	const struct rpt_site *b = *(const struct rpt_site *const *)pb;
	int r = cmp_costs(&a->cost, &b->cost, *(enum rpt_cost *)arg);

	if (r)
		return r;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

struct trace_cmp {
	const struct rpt_data *d;
	enum rpt_cost c;
};

static int cmp_trace(const void *pa, const void *pb, void *arg)
{
	const struct trace_cmp *tc = arg;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	int r = cmp_costs(&tc->d->trace_cost[a], &tc->d->trace_cost[b], tc->c);

	if (r)
		return r;
	return a < b ? -1 : a > b;
}

int rpt_sites_build(struct rpt_data *d)
{
	uint32_t *site_of = NULL, *fill = NULL;
	size_t t, s, c, nused = 0;
	int ret = -ENOMEM;

	site_of = malloc((d->nips + 1) * sizeof(*site_of));
	if (!site_of)
		goto out;
	for (s = 0; s <= d->nips; s++)
		site_of[s] = REC_NONE;
	/* Number the sites in the order their first trace appears. */
	for (t = 0; t < d->ntraces; t++) {
		size_t key;

		if (!has_cost(&d->trace_cost[t]))
			continue;
		key = site_key(d, t);
		if (site_of[key] == REC_NONE)
			site_of[key] = (uint32_t)d->nsites++;
		nused++;
	}
	d->sites = calloc(d->nsites + 1, sizeof(*d->sites));
	d->site_first = calloc(d->nsites + 2, sizeof(*d->site_first));
	d->site_traces = calloc(nused + 1, sizeof(*d->site_traces));
	fill = calloc(d->nsites + 1, sizeof(*fill));
	if (!d->sites || !d->site_first || !d->site_traces || !fill)
		goto out;
	for (t = 0; t < d->ntraces; t++) {
		size_t key;
		struct rpt_site *site;

		if (!has_cost(&d->trace_cost[t]))
			continue;
		key = site_key(d, t);
		site = &d->sites[site_of[key]];
		site->ip = key < d->nips ? (uint32_t)key : REC_NONE;
		site->ntraces++;
		rpt_costs_add(&site->cost, &d->trace_cost[t]);
	}
	for (s = 0; s < d->nsites; s++)
		d->site_first[s + 1] = d->site_first[s] + d->sites[s].ntraces;
	for (t = 0; t < d->ntraces; t++) {
		uint32_t si;

		if (!has_cost(&d->trace_cost[t]))
			continue;
		si = site_of[site_key(d, t)];
		d->site_traces[d->site_first[si] + fill[si]++] = (uint32_t)t;
	}

	for (c = 0; c < RPT_COST_MAX; c++) {
		enum rpt_cost cost = (enum rpt_cost)c;
		size_t n = 0;

		d->top[c] = calloc(d->nsites + 1, sizeof(*d->top[c]));
		if (!d->top[c])
			goto out;
		for (s = 0; s < d->nsites; s++)
			if (rpt_cost_field(&d->sites[s].cost, cost))
				d->top[c][n++] = &d->sites[s];
		qsort_r(d->top[c], n, sizeof(*d->top[c]), cmp_site, &cost);
		d->ntop[c] = n;
	}
	ret = 0;
out:
	free(site_of);
	free(fill);
	return ret;
}

const struct rpt_site *const *rpt_top_sites(const struct rpt_data *d, enum rpt_cost c, size_t *n)
{
	if ((unsigned)c >= RPT_COST_MAX) {
		*n = 0;
		return NULL;
	}
	*n = d->ntop[c];
	return d->top[c];
}

/* Insert t into the sorted top list out[0..*k) of at most max entries. */
static void top_insert(const struct trace_cmp *tc, uint32_t *out, size_t *k, size_t max, uint32_t t)
{
	size_t i = *k;

	if (i == max) {
		if (cmp_trace(&t, &out[max - 1], (void *)tc) >= 0)
			return;
		i = max - 1;
	} else {
		(*k)++;
	}
	while (i > 0 && cmp_trace(&t, &out[i - 1], (void *)tc) < 0) {
		out[i] = out[i - 1];
		i--;
	}
	out[i] = t;
}

size_t rpt_site_traces(const struct rpt_data *d, const struct rpt_site *s, enum rpt_cost c,
		       uint32_t *out, size_t max, size_t *total)
{
	struct trace_cmp tc = { d, c };
	size_t si, n = 0, i, first, end, k = 0;
	uint32_t *tmp;

	if (total)
		*total = 0;
	if (s < d->sites || s >= d->sites + d->nsites || max == 0)
		return 0;
	si = (size_t)(s - d->sites);
	first = d->site_first[si];
	end = d->site_first[si + 1];
	if (max <= 64) {
		/* A few of many: keep a sorted top list, no full sort. */
		for (i = first; i < end; i++) {
			uint32_t t = d->site_traces[i];

			if (!rpt_cost_field(&d->trace_cost[t], c))
				continue;
			n++;
			top_insert(&tc, out, &k, max, t);
		}
		if (total)
			*total = n;
		return k;
	}
	tmp = malloc((end - first + 1) * sizeof(*tmp));
	if (!tmp)
		return 0;
	for (i = first; i < end; i++)
		if (rpt_cost_field(&d->trace_cost[d->site_traces[i]], c))
			tmp[n++] = d->site_traces[i];
	if (total)
		*total = n;
	qsort_r(tmp, n, sizeof(*tmp), cmp_trace, &tc);
	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		out[i] = tmp[i];
	free(tmp);
	return n;
}

static void put_frame(struct rpt_frame *out, size_t max, size_t *count, const struct rpt_frame *f)
{
	if (*count < max)
		out[*count] = *f;
	(*count)++;
}

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

size_t rpt_backtrace(const struct rpt_data *d, uint32_t t, struct rpt_frame *out, size_t max)
{
	size_t count = 0;

	while (t != 0 && t < d->ntraces) {
		struct rpt_frame f;
		uint32_t ipi = d->traces[t].ip;
		uint32_t parent = d->traces[t].parent;

		memset(&f, 0, sizeof(f));
		if (ipi < d->nips) {
			const struct rec_ip *ip = &d->ips[ipi];
			uint32_t link = ip->frame;
			size_t steps = 0;

			f.ip = ip->ip;
			f.xframe = ip->xframe;
			f.lang = ip->lang;
			f.xkind = ip->xkind;
			if (ip->module < d->nmodules && !ip->xframe) {
				f.module = nonempty(d->modules[ip->module].path);
				f.offset = ip->ip - d->modules[ip->module].base;
			}
			if (link >= d->nframes) {
				put_frame(out, max, &count, &f);
			}
			/* The reader bounds every link; steps bounds a cycle too. */
			while (link < d->nframes && steps++ <= d->nframes) {
				const struct rec_frame *fr = &d->frames[link];

				f.function = nonempty(rec_string(d->r, fr->function));
				f.file = nonempty(rec_string(d->r, fr->file));
				f.line = fr->line;
				f.inlined = fr->outer < d->nframes;
				put_frame(out, max, &count, &f);
				link = fr->outer;
			}
		} else {
			put_frame(out, max, &count, &f);
		}
		if (parent >= t)
			break;
		t = parent;
	}
	return count;
}
