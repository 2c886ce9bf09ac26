/* report/costs.c - costs per allocation info, trace and allocation function */
/* SPDX-License-Identifier: MIT */
/*
 * From the merged counts of pass A and the snapshot of pass C. For a sampled
 * info, counts of events are turned into estimated calls by the ratio of
 * its estimated calls to its allocation events. A free never takes away
 * more than was allocated: frees past the allocations of an info (a stream
 * that started late) are ignored.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

/* x allocation events of an info expressed in calls. */
static uint64_t scale(uint64_t x, const struct rpt_acc *a)
{
	if (!a->allocs || a->calls == a->allocs)
		return x;
	return (uint64_t)((long double)x * (long double)a->calls / (long double)a->allocs + 0.5L);
}

void rpt_costs_add(struct rpt_costs *a, const struct rpt_costs *b)
{
	a->calls += b->calls;
	a->bytes += b->bytes;
	a->peak += b->peak;
	a->peak_calls += b->peak_calls;
	a->leaked += b->leaked;
	a->leaked_calls += b->leaked_calls;
	a->temporary += b->temporary;
	a->temporary_bytes += b->temporary_bytes;
}

/*
 * is_cut - whether trace t's stack was cut in the target (track/wire.h
 * WIRE_IP_CUT: code without unwind info). The marker is the outermost
 * node, so only the child of the root is looked at. Parents have smaller
 * indices (rec_traces), so the walk ends; the step bound guards the rest.
 */
static int is_cut(const struct rpt_data *d, uint32_t t)
{
	size_t steps = 0;

	while (t && t < d->ntraces && steps++ < d->ntraces) {
		uint32_t parent = d->traces[t].parent;

		if (parent == 0 || parent >= t) {
			uint32_t ip = d->traces[t].ip;

			return ip < d->nips && d->ips[ip].ip == WIRE_IP_CUT;
		}
		t = parent;
	}
	return 0;
}

/* cut_counts - traces (with calls) cut in the target, and their calls. */
static void cut_counts(struct rpt_data *d)
{
	size_t t;

	d->cut_traces = d->cut_calls = 0;
	for (t = 1; t < d->ntraces; t++) {
		if (!d->trace_cost[t].calls || !is_cut(d, (uint32_t)t))
			continue;
		d->cut_traces++;
		d->cut_calls += d->trace_cost[t].calls;
	}
}

/* Leaf ip index of info i's trace (nips: none): the call site the calibration groups by. */
static size_t leaf_key(const struct rpt_data *d, size_t i)
{
	uint32_t t = d->infos[i].trace, ip;

	if (t == 0 || t >= d->ntraces)
		return d->nips;
	ip = d->traces[t].ip;
	return ip < d->nips ? ip : d->nips;
}

/*
 * peak_stderr - standard error of the estimated heap at the peak. Each
 * block is sampled on its own with probability p = size / weight. Without
 * calibration the estimate is a sum of weights (Horvitz-Thompson); its
 * variance, sum size^2 (1 - p) / p over the live blocks, is estimated by the
 * sum of w (w - size) over the live samples. With calibration each site's
 * live bytes are a ratio estimate, exact bytes x R with R = live / all of
 * the site's weights; its (linearized) variance is estimated by the sum over
 * all of the site's samples of w (w - size) (live - R)^2, live being 1 for
 * a sample live at the peak, else 0. So a site whose samples are all live
 * (or all freed) at the peak adds nothing: its exact bytes say it all. Per
 * info the mean (calibrated) weight stands for each sample's; unsampled
 * infos add nothing.
 */
static uint64_t peak_stderr(const struct rpt_data *d, const struct rpt_acc *acc, const int64_t *live_b,
			    const int64_t *live_c)
{
	long double var = 0, *lb = NULL, *wt = NULL;
	size_t i;

	if (d->scale_bytes) {
		lb = calloc(d->nips + 1, sizeof(*lb));
		wt = calloc(d->nips + 1, sizeof(*wt));
		if (lb && wt) {
			for (i = 0; i < d->ninfos; i++) {
				size_t k = leaf_key(d, i);

				lb[k] += live_b[i] > 0 ? (long double)live_b[i] : 0;
				wt[k] += (long double)acc[i].weight;
			}
		} else {
			free(lb);
			free(wt);
			lb = wt = NULL; /* out of memory: the plain estimate's error, larger */
		}
	}
	for (i = 0; i < d->ninfos; i++) {
		long double w = (long double)d->free_bytes[i], s = (long double)d->infos[i].size;
		long double r = 0, nl = live_c[i] > 0 ? (long double)live_c[i] : 0, nd;

		if (w <= s)
			continue;
		if (lb) {
			size_t k = leaf_key(d, i);

			r = wt[k] > 0 ? lb[k] / wt[k] : 0;
			r = r > 1 ? 1 : r;
		}
		nd = (long double)acc[i].allocs > nl ? (long double)acc[i].allocs - nl : 0;
		var += w * (w - s) * (nl * (1 - r) * (1 - r) + (lb ? nd * r * r : 0));
	}
	free(lb);
	free(wt);
	return var > 0 ? (uint64_t)(sqrtl(var) + 0.5L) : 0;
}

void rpt_costs_compute(struct rpt_data *d, const struct rpt_acc *acc, const int64_t *live_b,
		       const int64_t *live_c)
{
	uint64_t peak = d->sum.total.peak;
	size_t i;

	memset(&d->sum.total, 0, sizeof(d->sum.total));
	for (i = 0; i < d->ninfos; i++) {
		const struct rpt_acc *a = &acc[i];
		struct rpt_costs cost, *c = &cost;
		uint64_t fb = d->free_bytes[i];
		uint64_t fr = a->frees < a->allocs ? a->frees : a->allocs;
		uint64_t tp = a->temps < a->allocs ? a->temps : a->allocs;
		uint32_t t = d->infos[i].trace;
		uint32_t kind = d->infos[i].kind;

		memset(c, 0, sizeof(*c));
		c->calls = a->calls;
		c->bytes = a->weight;
		c->leaked_calls = scale(a->allocs - fr, a);
		/* fr * fb <= allocs * (weight / allocs) <= weight */
		c->leaked = fr == a->allocs ? 0 : a->weight - fr * fb;
		c->temporary = scale(tp, a);
		c->temporary_bytes = tp * fb;
		if (live_c[i] > 0) {
			c->peak_calls = scale((uint64_t)live_c[i], a);
			c->peak = live_b[i] > 0 ? (uint64_t)live_b[i] : 0;
		}
		if (t >= d->ntraces)
			t = 0;
		if (kind > WIRE_KIND_MAX)
			kind = 0;
		rpt_costs_add(&d->trace_cost[t], c);
		rpt_costs_add(&d->funcs[kind], c);
		rpt_costs_add(&d->sum.total, c);
	}
	/* The replay's peak is the reference; the per-info sums match it
	 * exactly when nothing is sampled. */
	d->sum.total.peak = peak;
	d->sum.peak_stderr = peak_stderr(d, acc, live_b, live_c);
	cut_counts(d);
}

uint64_t rpt_cost_of(const struct rpt_costs *k, enum rpt_cost c)
{
	return rpt_cost_field(k, c);
}

const struct rpt_costs *rpt_function(const struct rpt_data *d, unsigned kind)
{
	if (kind > WIRE_KIND_MAX)
		return NULL;
	return &d->funcs[kind];
}

const struct rpt_costs *rpt_trace_costs(const struct rpt_data *d, uint32_t t)
{
	if (t >= d->ntraces)
		return NULL;
	return &d->trace_cost[t];
}

static const char *const kind_names[WIRE_KIND_MAX + 1] = {
	[0] = "unknown",
	[WIRE_KIND_MALLOC] = "malloc",
	[WIRE_KIND_CALLOC] = "calloc",
	[WIRE_KIND_REALLOC] = "realloc",
	[WIRE_KIND_REALLOCARRAY] = "reallocarray",
	[WIRE_KIND_POSIX_MEMALIGN] = "posix_memalign",
	[WIRE_KIND_ALIGNED_ALLOC] = "aligned_alloc",
	[WIRE_KIND_MEMALIGN] = "memalign",
	[WIRE_KIND_VALLOC] = "valloc",
	[WIRE_KIND_PVALLOC] = "pvalloc",
};

const char *rpt_function_name(unsigned kind)
{
	if (kind > WIRE_KIND_MAX || !kind_names[kind])
		return "unknown";
	return kind_names[kind];
}
