/* report/html_timeline.c - the heap over the event stream, downsampled for the HTML chart */
/* SPDX-License-Identifier: MIT */
/*
 * One more replay of the events, computing the running heap exactly as the
 * analysis does (an allocation adds its size or weight, a free takes the
 * bytes one free of its info takes away, rpt_data.free_bytes), so the curve
 * reaches the reported peak heap at the reported peak event.
 *
 * The stream of E events is cut into n = min(E, HTML_POINTS) stretches of
 * equal length; each point keeps the highest heap of its stretch and the
 * event that reached it. The chunks are split into one range per thread as
 * in analyze.c; each range computes its stretches relative to its own start
 * and its net change, and the ranges are then added up in order:
 *
 *   heap(point k) = max over ranges g touching k of (Σ delta(ranges < g) + max_g(k))
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/html_internal.h"

struct range {
	const struct rpt_data *d;
	size_t first_chunk, end_chunk;
	uint64_t nevents; /* of the whole stream (for the stretch of an event) */
	size_t n;	  /* points */
	int64_t *max;	  /* per point, relative to the range start */
	uint64_t *at;	  /* per point, the event that reached max */
	uint8_t *has;	  /* per point, 1 once an event of it was seen here */
	int64_t delta;
	int err;	  /* a chunk did not decode: the range stops there */
};

static void *replay(void *arg)
{
	struct range *g = arg;
	const struct rpt_data *d = g->d;
	int64_t heap = 0;
	size_t c;

	for (c = g->first_chunk; c < g->end_chunk; c++) {
		struct rec_event *ev = NULL;
		uint64_t first = 0;
		size_t n = 0, i;

		if (rec_event_chunk(d->r, c, &ev, &n, &first) < 0) {
			free(ev);
			g->err = 1;
			break;
		}
		for (i = 0; i < n; i++) {
			const struct rec_event *e = &ev[i];
			uint64_t idx = first + i;
			size_t k;

			if (e->info >= d->ninfos)
				continue;
			if (e->op == REC_EV_ALLOC)
				heap += (int64_t)(e->weight ? e->weight : d->infos[e->info].size);
			else if (e->op == REC_EV_FREE || e->op == REC_EV_FREE_TEMP)
				heap -= (int64_t)d->free_bytes[e->info];
			else
				continue;
			/* idx < nevents for a sound file; clamp for one that is not */
			k = idx < g->nevents ? (size_t)(idx * g->n / g->nevents) : g->n - 1;
			if (!g->has[k] || heap > g->max[k]) {
				g->has[k] = 1;
				g->max[k] = heap;
				g->at[k] = idx;
			}
		}
		free(ev);
	}
	g->delta = heap;
	return NULL;
}

static size_t pick_threads(size_t nchunks)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = cpus > 0 ? (size_t)cpus : 1;

	if (n > RPT_MAX_THREADS)
		n = RPT_MAX_THREADS;
	if (n > nchunks)
		n = nchunks;
	return n ? n : 1;
}

static void free_ranges(struct range *g, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(g[i].max);
		free(g[i].at);
		free(g[i].has);
	}
	free(g);
}

int html_timeline_build(const struct rpt_data *d, struct html_timeline *t)
{
	pthread_t tid[RPT_MAX_THREADS];
	uint64_t nevents = rec_nevents(d->r);
	size_t nr, n, k, i, started = 1, out = 0;
	struct range *g;
	int64_t base = 0, *heap;
	uint8_t *set;
	int ret = -ENOMEM;

	memset(t, 0, sizeof(*t));
	if (!nevents || !d->nchunks)
		return 0;
	n = nevents < HTML_POINTS ? (size_t)nevents : HTML_POINTS;
	nr = pick_threads(d->nchunks);
	g = calloc(nr, sizeof(*g));
	heap = calloc(n, sizeof(*heap));
	set = calloc(n, 1);
	t->event = calloc(n, sizeof(*t->event));
	t->heap = calloc(n, sizeof(*t->heap));
	if (!g || !heap || !set || !t->event || !t->heap)
		goto out_free;
	for (k = 0; k < nr; k++) {
		g[k].d = d;
		g[k].first_chunk = k * d->nchunks / nr;
		g[k].end_chunk = (k + 1) * d->nchunks / nr;
		g[k].nevents = nevents;
		g[k].n = n;
		g[k].max = calloc(n, sizeof(*g[k].max));
		g[k].at = calloc(n, sizeof(*g[k].at));
		g[k].has = calloc(n, 1);
		if (!g[k].max || !g[k].at || !g[k].has)
			goto out_free;
	}
	/* the caller's thread takes range 0; a thread that cannot start is run here */
	for (k = 1; k < nr; k++) {
		if (pthread_create(&tid[k], NULL, replay, &g[k]))
			break;
		started = k + 1;
	}
	replay(&g[0]);
	for (k = started; k < nr; k++)
		replay(&g[k]);
	for (k = 1; k < started; k++)
		pthread_join(tid[k], NULL);

	/* add the ranges up in order; a range that failed ends the curve */
	for (k = 0; k < nr; k++) {
		for (i = 0; i < n; i++) {
			if (!g[k].has[i])
				continue;
			if (!set[i] || base + g[k].max[i] > heap[i]) {
				set[i] = 1;
				heap[i] = base + g[k].max[i];
				t->event[i] = g[k].at[i];
			}
		}
		base += g[k].delta;
		if (g[k].err)
			break;
	}
	/* keep only the points some range reached, in order */
	for (i = 0; i < n; i++) {
		if (!set[i])
			continue;
		t->event[out] = t->event[i];
		t->heap[out] = heap[i] > 0 ? (uint64_t)heap[i] : 0;
		out++;
	}
	t->n = out;
	ret = 0;
out_free:
	if (g)
		free_ranges(g, nr);
	free(heap);
	free(set);
	if (ret < 0)
		html_timeline_free(t);
	return ret;
}

void html_timeline_free(struct html_timeline *t)
{
	free(t->event);
	free(t->heap);
	memset(t, 0, sizeof(*t));
}
