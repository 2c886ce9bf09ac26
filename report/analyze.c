/* report/analyze.c - rpt_analyze: replay the recording in passes, then merge */
/* SPDX-License-Identifier: MIT */
/*
 * The passes (see enum rpt_pass):
 *
 *   A  every range in parallel: counts per allocinfo, and the heap curve
 *      of the range relative to its start (a free takes its info's size);
 *      then, for a sampled recording with exact site counts, the
 *      calibration of every info's weights (report/calibrate.c);
 *   B  only for sampled recordings, every range in parallel again: the heap
 *      curve with a free taking the mean weight of its info (known only
 *      after A);
 *   C  one thread, only the range holding the global peak, up to the peak:
 *      live bytes per info at the peak; the ranges before it contribute
 *      their counts from A without being read again.
 *
 * The global peak is found by adding the ranges' curves up in order:
 * peak = max over ranges k of (sum of deltas of ranges < k) + max_prefix(k).
 *
 * Passes A and B also keep each range's part of the heap curve the HTML
 * report draws (curve.c); B, when it runs, starts it over, so the curve
 * always has the arithmetic of the peak search. It is added up like the peak.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/internal.h"

static size_t pick_threads(const struct rpt_options *opt, size_t nchunks)
{
	long cpus;
	size_t n;

	if (opt && opt->threads) {
		n = opt->threads;
	} else {
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 0 ? (size_t)cpus : 1;
	}
	if (n > RPT_MAX_THREADS)
		n = RPT_MAX_THREADS;
	if (n > nchunks)
		n = nchunks;
	return n ? n : 1;
}

static void free_ranges(struct rpt_range *ranges, size_t n)
{
	size_t i;

	if (!ranges)
		return;
	for (i = 0; i < n; i++) {
		free(ranges[i].acc);
		rpt_curve_part_free(&ranges[i].curve);
	}
	free(ranges);
}

/* The global peak over the first nvalid ranges; returns its range or -1. */
static long find_peak(struct rpt_data *d, struct rpt_range *ranges, size_t nvalid, struct rpt_pos *pos)
{
	int64_t base = 0, peak = 0;
	uint64_t before = 0;
	long at = -1;
	size_t k;

	for (k = 0; k < nvalid; k++) {
		const struct rpt_range *g = &ranges[k];

		if (g->has_max && base + g->max_prefix > peak) {
			peak = base + g->max_prefix;
			at = (long)k;
			*pos = g->max_pos;
			d->sum.peak_event = before + g->max_events;
		}
		base += g->delta;
		before += g->events;
	}
	d->sum.total.peak = (uint64_t)peak;
	return at;
}

/* Live bytes and allocations per info at the global peak (pass C). */
static int snapshot(struct rpt_data *d, struct rpt_range *ranges, long at, struct rpt_pos pos,
		    int64_t *live_b, int64_t *live_c)
{
	struct rpt_range g;
	long k;
	size_t i;

	if (at < 0)
		return 0;
	for (k = 0; k < at; k++) {
		const struct rpt_acc *acc = ranges[k].acc;

		for (i = 0; i < d->ninfos; i++) {
			live_b[i] += (int64_t)(acc[i].weight - acc[i].frees * d->free_bytes[i]);
			live_c[i] += (int64_t)(acc[i].allocs - acc[i].frees);
		}
	}
	g = ranges[at];
	g.pass = RPT_PASS_SNAPSHOT;
	g.live_bytes = live_b;
	g.live_count = live_c;
	g.stop_at = pos;
	rpt_replay_range(&g);
	return 0;
}

struct rpt_data *rpt_data_new(const struct rec_reader *r)
{
	struct rpt_data *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->r = r;
	d->infos = rec_allocinfos(r, &d->ninfos);
	d->traces = rec_traces(r, &d->ntraces);
	d->ips = rec_ips(r, &d->nips);
	d->frames = rec_frames(r, &d->nframes);
	d->modules = rec_modules(r, &d->nmodules);
	d->nchunks = rec_nevent_chunks(r);
	if (!d->infos)
		d->ninfos = 0;
	if (!d->traces)
		d->ntraces = 0;
	if (!d->ips)
		d->nips = 0;
	if (!d->frames)
		d->nframes = 0;
	if (!d->modules)
		d->nmodules = 0;
	d->sum.truncated = rec_truncated(r);
	return d;
}

int rpt_analyze(const struct rec_reader *r, const struct rpt_options *opt, struct rpt_data **out)
{
	struct rpt_range *ranges = NULL;
	struct rpt_acc *total = NULL;
	int64_t *live_b = NULL, *live_c = NULL;
	struct rpt_data *d;
	struct rpt_pos pos = { 0, 0 };
	size_t nranges = 0, nvalid, k, i;
	uint64_t weighted = 0;
	long at;
	int ret = -ENOMEM;

	*out = NULL;
	d = rpt_data_new(r);
	if (!d)
		return -ENOMEM;
	if (!(opt && opt->native_all) && rpt_fold_interp(d) < 0)
		goto out_free;

	/* calloc(0) may give NULL: allocate at least one element everywhere. */
	d->free_bytes = calloc(d->ninfos + 1, sizeof(*d->free_bytes));
	total = calloc(d->ninfos + 1, sizeof(*total));
	live_b = calloc(d->ninfos + 1, sizeof(*live_b));
	live_c = calloc(d->ninfos + 1, sizeof(*live_c));
	if (!d->free_bytes || !total || !live_b || !live_c)
		goto out_free;

	nranges = d->nchunks ? pick_threads(opt, d->nchunks) : 0;
	ranges = calloc(nranges + 1, sizeof(*ranges));
	if (!ranges)
		goto out_free;
	for (k = 0; k < nranges; k++) {
		ranges[k].d = d;
		ranges[k].first_chunk = k * d->nchunks / nranges;
		ranges[k].end_chunk = (k + 1) * d->nchunks / nranges;
		ranges[k].acc = calloc(d->ninfos + 1, sizeof(*ranges[k].acc));
		if (!ranges[k].acc || rpt_curve_part_init(&ranges[k].curve, rec_nevents(r)) < 0)
			goto out_free;
	}

	/* Pass A */
	if (nranges)
		rpt_replay(ranges, nranges, RPT_PASS_COUNT);
	nvalid = nranges;
	for (k = 0; k < nranges; k++) {
		if (ranges[k].err) {
			if (!d->sum.truncated)
				d->sum.truncated = ranges[k].err;
			nvalid = k + 1;
			break;
		}
	}
	for (k = 0; k < nvalid; k++) {
		const struct rpt_acc *acc = ranges[k].acc;

		for (i = 0; i < d->ninfos; i++) {
			total[i].allocs += acc[i].allocs;
			total[i].weight += acc[i].weight;
			total[i].calls += acc[i].calls;
			total[i].frees += acc[i].frees;
			total[i].temps += acc[i].temps;
			total[i].wbytes += acc[i].wbytes;
			total[i].wcalls += acc[i].wcalls;
		}
		d->sum.events += ranges[k].events;
		d->sum.frees += ranges[k].frees;
		weighted += ranges[k].weighted;
	}
	/* Sampled: estimates calibrated to the exact site counts (may add trace nodes). */
	ret = rpt_calibrate(d, total);
	if (ret < 0)
		goto out_free;
	ret = -ENOMEM;
	d->trace_cost = calloc(d->ntraces + 1, sizeof(*d->trace_cost));
	rpt_want_huge_pages(d->trace_cost, (d->ntraces + 1) * sizeof(*d->trace_cost));
	if (!d->trace_cost)
		goto out_free;
	for (i = 0; i < d->ninfos; i++)
		d->free_bytes[i] = total[i].allocs ? total[i].weight / total[i].allocs : d->infos[i].size;

	/* Pass B, only when a free's bytes differ from its info's size */
	if (weighted && nvalid)
		rpt_replay(ranges, nvalid, RPT_PASS_HEAP);

	/* the heap curve of the HTML report, made by pass A or B (curve.c) */
	if (rpt_curve_merge(d, ranges, nvalid) < 0)
		goto out_free;
	at = find_peak(d, ranges, nvalid, &pos);
	/* Pass C */
	ret = snapshot(d, ranges, at, pos, live_b, live_c);
	if (ret < 0)
		goto out_free;

	d->sum.sampled = weighted != 0;
	rpt_costs_compute(d, total, live_b, live_c);
	rpt_calibrate_costs(d);
	ret = rpt_summary_meta(d);
	if (ret < 0)
		goto out_free;
	ret = rpt_sites_build(d);
	if (ret < 0)
		goto out_free;
	d->sum.dropped_events = rec_dropped_events(r);
	*out = d;
	d = NULL;
	ret = 0;
out_free:
	free_ranges(ranges, nranges);
	free(total);
	free(live_b);
	free(live_c);
	rpt_free(d);
	return ret;
}

void rpt_free(struct rpt_data *d)
{
	size_t c;

	if (!d)
		return;
	for (c = 0; c < RPT_COST_MAX; c++)
		free(d->top[c]);
	free(d->sites);
	free(d->site_first);
	free(d->site_traces);
	free(d->free_bytes);
	free(d->trace_cost);
	free(d->curve_event);
	free(d->curve_heap);
	free(d->scale_bytes);
	free(d->scale_calls);
	free(d->own_traces);
	free(d->fold_traces);
	free(d->fold_infos);
	free(d->extra_cost);
	free(d->command);
	free(d);
}

const struct rpt_summary *rpt_get_summary(const struct rpt_data *d)
{
	return &d->sum;
}
