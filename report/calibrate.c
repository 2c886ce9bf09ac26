/* report/calibrate.c - calibrate a sampled recording's estimates to its exact per-call-site counts */
/* SPDX-License-Identifier: MIT */
/*
 * A sampled recording has two kinds of numbers (docs/report.md "Sampled
 * recordings"):
 *   - samples: whole stacks, each with a weight (bytes it stands for) that
 *     makes sums of weights unbiased estimates (Horvitz-Thompson);
 *   - exact counts per immediate call site (return address, no unwind):
 *     every allocation made while sampling, its calls and bytes.
 *
 * The exact counts are auxiliary information about the very population the
 * samples were drawn from, so the estimates are post-stratified on them (a
 * ratio estimator per stratum): the strata are the immediate call sites
 * (the innermost ip of a sample's trace is the site's return address - 1),
 * and every weighted allocation of a site is multiplied by
 *
 *     exact bytes of the site / sum of the weights of its samples
 *
 * (calls likewise with calls). A site's bytes and calls then equal its exact
 * totals, and the samples only distribute them over stacks, over live and
 * freed, and over time. Peak, leaked and temporary bytes of a site scale by
 * the same factor: the ratio estimator of "live bytes / allocated bytes"
 * taken from its samples, times its exact allocated bytes.
 *
 *   site key          exact counts    samples       factor
 *   ip of a leaf      yes             yes           exact / sampled
 *   ip of a leaf      no              yes           stratum "other" (below)
 *   ip of a site      yes             no            none: one extra trace node
 *                                                   (parent 0, that ip) carries
 *                                                   the exact calls and bytes
 *   REC_NONE (other)  the library's "other" slot (sites past its table)
 *                     and samples with no exact entry form one stratum.
 *
 * An extra node has no allocation info and no events: it shows calls and
 * bytes allocated, nothing live, leaked or temporary (not known), under the
 * allocation function "unknown". Allocations without a weight (a session
 * switched to full tracing for a while) are exact already and unchanged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

struct stratum {
	uint64_t ecalls, ebytes;       /* exact */
	long double scalls, sbytes;    /* sums of the samples' calls and weights */
	int exact;		       /* the recording has counts for this key */
};

/* Stratum key of trace t: its innermost ip index, nips for none. */
static size_t leaf_key(const struct rpt_data *d, uint32_t t)
{
	uint32_t ip;

	if (t == 0 || t >= d->ntraces)
		return d->nips;
	ip = d->traces[t].ip;
	return ip < d->nips ? ip : d->nips;
}

static uint64_t times(uint64_t x, double f)
{
	long double v = (long double)x * f + 0.5L;

	if (v <= 0)
		return 0;
	return v >= 1.8e19L ? UINT64_MAX / 2 : (uint64_t)v;
}

/* The stratum of info i's weighted allocations. */
static size_t info_key(const struct rpt_data *d, const struct stratum *st, size_t i)
{
	size_t key = leaf_key(d, d->infos[i].trace);

	return st[key].exact ? key : d->nips;
}

/* Add the extra nodes of the sites without samples; 0 or -ENOMEM. */
static int add_extra(struct rpt_data *d, const struct stratum *st)
{
	size_t key, nx = 0, x = 0;

	for (key = 0; key <= d->nips; key++)
		if (st[key].exact && st[key].sbytes == 0 && (st[key].ecalls || st[key].ebytes))
			nx++;
	if (!nx)
		return 0;
	d->own_traces = malloc((d->ntraces + nx) * sizeof(*d->own_traces));
	d->extra_cost = calloc(nx, sizeof(*d->extra_cost));
	if (!d->own_traces || !d->extra_cost)
		return -ENOMEM;
	memcpy(d->own_traces, d->traces, d->ntraces * sizeof(*d->own_traces));
	for (key = 0; key <= d->nips; key++) {
		if (!st[key].exact || st[key].sbytes != 0 || !(st[key].ecalls || st[key].ebytes))
			continue;
		d->own_traces[d->ntraces + x] = (struct rec_trace){
			.parent = 0,
			.ip = key < d->nips ? (uint32_t)key : REC_NONE,
		};
		d->extra_cost[x].calls = st[key].ecalls;
		d->extra_cost[x].bytes = st[key].ebytes;
		x++;
	}
	d->traces = d->own_traces;
	d->ntraces += nx;
	d->nextra = nx;
	return 0;
}

int rpt_calibrate(struct rpt_data *d, struct rpt_acc *total)
{
	size_t n = 0, i, key;
	const struct rec_site_count *sc = rec_site_counts(d->r, &n);
	struct stratum *st;
	uint64_t weighted = 0;
	int ret = -ENOMEM;

	for (i = 0; i < d->ninfos; i++)
		weighted += total[i].wbytes;
	if (!sc || !n || !weighted)
		return 0;
	st = calloc(d->nips + 1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		key = sc[i].ip < d->nips ? sc[i].ip : d->nips;
		/* sums of an untrusted file may wrap; they only feed estimates */
		st[key].ecalls += sc[i].calls;
		st[key].ebytes += sc[i].bytes;
		st[key].exact = 1;
	}
	for (i = 0; i < d->ninfos; i++) {
		if (!total[i].wbytes)
			continue;
		key = info_key(d, st, i);
		st[key].sbytes += total[i].wbytes;
		st[key].scalls += total[i].wcalls;
	}
	d->scale_bytes = malloc((d->ninfos + 1) * sizeof(*d->scale_bytes));
	d->scale_calls = malloc((d->ninfos + 1) * sizeof(*d->scale_calls));
	if (!d->scale_bytes || !d->scale_calls)
		goto out;
	for (i = 0; i < d->ninfos; i++) {
		struct rpt_acc *a = &total[i];
		const struct stratum *s;
		uint64_t wb, wc;

		d->scale_bytes[i] = d->scale_calls[i] = 1.0;
		if (!a->wbytes)
			continue;
		s = &st[info_key(d, st, i)];
		if (!s->exact || s->sbytes <= 0)
			continue; /* samples of unknown sites and no "other" counts: as sampled */
		d->scale_bytes[i] = (double)((long double)s->ebytes / s->sbytes);
		if (s->scalls > 0)
			d->scale_calls[i] = (double)((long double)s->ecalls / s->scalls);
		wb = times(a->wbytes, d->scale_bytes[i]);
		wc = times(a->wcalls, d->scale_calls[i]);
		a->weight = a->weight - a->wbytes + wb;
		a->calls = a->calls - a->wcalls + wc;
		a->wbytes = wb;
		a->wcalls = wc;
	}
	ret = add_extra(d, st);
out:
	free(st);
	return ret;
}

void rpt_calibrate_costs(struct rpt_data *d)
{
	size_t x;

	for (x = 0; x < d->nextra; x++) {
		size_t t = d->ntraces - d->nextra + x;

		rpt_costs_add(&d->trace_cost[t], &d->extra_cost[x]);
		rpt_costs_add(&d->funcs[0], &d->extra_cost[x]);
		rpt_costs_add(&d->sum.total, &d->extra_cost[x]);
	}
}
