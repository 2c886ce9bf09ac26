/* report/curve.c - the heap over the event stream, kept during the analysis replay */
/* SPDX-License-Identifier: MIT */
/*
 * The curve is made by the passes that compute the heap anyway (replay.c):
 * pass A, and for a sampled recording pass B, which starts it over with a
 * free taking its info's mean weight. So the curve uses exactly the
 * analysis' arithmetic and reaches the reported peak heap at the reported
 * peak event, and the events are decoded once for it and the analysis.
 *
 * The stream of E events is cut into n = min(E, RPT_CURVE_POINTS)
 * stretches of equal length: event i belongs to stretch i * n / E. Each
 * point keeps the highest heap after an allocation or free of its stretch
 * and the first event that reached it. While a range is replayed, only the
 * stretch being filled is tracked (rpt_curve_note, inline in internal.h:
 * a compare with the stretch's end and one with its highest heap per
 * event); when an event of a later stretch comes, the finished one is
 * written to its point (rpt_curve_advance).
 *
 * Each range's points are relative to its own start. The ranges are added
 * up in order:
 *
 *   heap(point k) = max over ranges g touching k of (Σ delta(ranges < g) + max_g(k))
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

/* The stretch of event idx. */
static size_t stretch_of(const struct rpt_curve_part *c, uint64_t idx)
{
	if (idx >= c->nevents)
		return c->n - 1;
	return (size_t)((unsigned __int128)idx * c->n / c->nevents);
}

/* The first event index of stretch k (k <= n): the least i with i * n >= k * E. */
static uint64_t stretch_start(const struct rpt_curve_part *c, size_t k)
{
	return (uint64_t)(((unsigned __int128)k * c->nevents + c->n - 1) / c->n);
}

int rpt_curve_part_init(struct rpt_curve_part *c, uint64_t nevents)
{
	size_t n = nevents < RPT_CURVE_POINTS ? (size_t)nevents : RPT_CURVE_POINTS;

	memset(c, 0, sizeof(*c));
	if (!n)
		return 0;
	c->max = calloc(n, sizeof(*c->max));
	c->at = calloc(n, sizeof(*c->at));
	c->has = calloc(n, 1);
	if (!c->max || !c->at || !c->has) {
		rpt_curve_part_free(c);
		return -ENOMEM;
	}
	c->n = n;
	c->nevents = nevents;
	return 0;
}

void rpt_curve_part_free(struct rpt_curve_part *c)
{
	free(c->max);
	free(c->at);
	free(c->has);
	memset(c, 0, sizeof(*c));
}

/* Write the stretch being filled to its point, if one of its events was seen. */
static void flush(struct rpt_curve_part *c)
{
	size_t k = c->k;

	if (c->fill.m_at == UINT64_MAX)
		return;
	if (!c->has[k] || c->fill.m > c->max[k]) {
		c->has[k] = 1;
		c->max[k] = c->fill.m;
		c->at[k] = c->fill.m_at;
	}
}

void rpt_curve_start(struct rpt_curve_part *c)
{
	if (c->n) {
		memset(c->has, 0, c->n);
		c->fill.next = 0; /* the first event opens its stretch */
	} else {
		c->fill.next = UINT64_MAX; /* nothing kept */
	}
	c->k = 0;
	c->fill.m = INT64_MIN;
	c->fill.m_at = UINT64_MAX;
}

void rpt_curve_advance(struct rpt_curve_part *c, uint64_t idx)
{
	flush(c);
	c->k = stretch_of(c, idx);
	c->fill.next = c->k + 1 < c->n ? stretch_start(c, c->k + 1) : UINT64_MAX;
	c->fill.m = INT64_MIN;
	c->fill.m_at = UINT64_MAX;
}

void rpt_curve_end(struct rpt_curve_part *c)
{
	if (c->n)
		flush(c);
	c->fill.m_at = UINT64_MAX;
}

int rpt_curve_merge(struct rpt_data *d, const struct rpt_range *ranges, size_t nvalid)
{
	size_t n = nvalid ? ranges[0].curve.n : 0, i, k, out = 0;
	int64_t base = 0, *heap;
	uint8_t *set;
	int ret = -ENOMEM;

	free(d->curve_event);
	free(d->curve_heap);
	d->curve_event = NULL;
	d->curve_heap = NULL;
	d->ncurve = 0;
	if (!n)
		return 0;
	heap = calloc(n, sizeof(*heap));
	set = calloc(n, 1);
	d->curve_event = calloc(n, sizeof(*d->curve_event));
	d->curve_heap = calloc(n, sizeof(*d->curve_heap));
	if (!heap || !set || !d->curve_event || !d->curve_heap)
		goto out_free;
	for (k = 0; k < nvalid; k++) {
		const struct rpt_curve_part *c = &ranges[k].curve;

		for (i = 0; i < n && i < c->n; i++) {
			if (!c->has[i])
				continue;
			if (!set[i] || base + c->max[i] > heap[i]) {
				set[i] = 1;
				heap[i] = base + c->max[i];
				d->curve_event[i] = c->at[i];
			}
		}
		base += ranges[k].delta;
	}
	/* keep only the points some range reached, in order */
	for (i = 0; i < n; i++) {
		if (!set[i])
			continue;
		d->curve_event[out] = d->curve_event[i];
		d->curve_heap[out] = heap[i] > 0 ? (uint64_t)heap[i] : 0;
		out++;
	}
	d->ncurve = out;
	ret = 0;
out_free:
	if (ret < 0) {
		free(d->curve_event);
		free(d->curve_heap);
		d->curve_event = NULL;
		d->curve_heap = NULL;
	}
	free(heap);
	free(set);
	return ret;
}
