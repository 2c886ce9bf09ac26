/* report/replay.c - replay ranges of event chunks, in parallel threads */
/* SPDX-License-Identifier: MIT */
/*
 * Each worker owns one struct rpt_range and writes only into it; the reader
 * allows concurrent rec_event_chunk() calls. A range stops at the first
 * chunk that does not decode (the analysis then ignores every later range).
 * Passes A and B also note the heap after each allocation and free for the
 * heap curve (rpt_curve_note, curve.c): the events are decoded once for it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "report/internal.h"

static void note_heap(struct rpt_range *g, int64_t heap, size_t chunk, size_t i)
{
	if (!g->has_max || heap > g->max_prefix) {
		g->has_max = 1;
		g->max_prefix = heap;
		g->max_events = g->events;
		g->max_pos.chunk = chunk;
		g->max_pos.index = i;
	}
}

/* Pass A: counts per info; heap assuming a free takes its info's size. */
static void pass_count(struct rpt_range *g, const struct rec_event *ev, size_t n, size_t chunk,
		       int64_t *heap)
{
	const struct rec_allocinfo *infos = g->d->infos;
	struct rpt_curve_part *cv = &g->curve;
	struct rpt_curve_fill f = cv->fill;
	uint64_t first = g->chunk_first;
	size_t ninfos = g->d->ninfos;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct rec_event *e = &ev[i];
		uint64_t size;
		struct rpt_acc *a;

		g->events++;
		/* the reader promises a valid index; a bad one is skipped, not trusted */
		if (e->info >= ninfos)
			continue;
		size = infos[e->info].size;
		a = &g->acc[e->info];

		if (e->op == REC_EV_ALLOC) {
			uint64_t w = e->weight ? e->weight : size;

			a->allocs++;
			a->weight += w;
			if (e->weight) {
				uint64_t c = rec_weight_calls(w, size);

				g->weighted++;
				a->calls += c;
				a->wbytes += w;
				a->wcalls += c;
			} else {
				a->calls++;
			}
			*heap += (int64_t)w;
			note_heap(g, *heap, chunk, i);
			rpt_curve_note(cv, &f, first + i, *heap);
		} else if (e->op == REC_EV_FREE || e->op == REC_EV_FREE_TEMP) {
			a->frees++;
			if (e->op == REC_EV_FREE_TEMP)
				a->temps++;
			g->frees++;
			*heap -= (int64_t)size;
			rpt_curve_note(cv, &f, first + i, *heap);
		}
	}
	cv->fill = f;
}

/* Pass B: the heap again, a free taking the mean weight of its info. */
static void pass_heap(struct rpt_range *g, const struct rec_event *ev, size_t n, size_t chunk,
		      int64_t *heap)
{
	const uint64_t *fb = g->d->free_bytes;
	struct rpt_curve_part *cv = &g->curve;
	struct rpt_curve_fill f = cv->fill;
	uint64_t first = g->chunk_first;
	size_t ninfos = g->d->ninfos;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct rec_event *e = &ev[i];

		g->events++;
		if (e->info >= ninfos)
			continue;
		if (e->op == REC_EV_ALLOC) {
			*heap += (int64_t)rpt_alloc_bytes(g->d, e);
			note_heap(g, *heap, chunk, i);
			rpt_curve_note(cv, &f, first + i, *heap);
		} else if (e->op == REC_EV_FREE || e->op == REC_EV_FREE_TEMP) {
			*heap -= (int64_t)fb[e->info];
			rpt_curve_note(cv, &f, first + i, *heap);
		}
	}
	cv->fill = f;
}

/* Pass C: live bytes and allocations per info, up to and including stop_at. */
static int pass_snapshot(struct rpt_range *g, const struct rec_event *ev, size_t n, size_t chunk)
{
	const uint64_t *fb = g->d->free_bytes;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct rec_event *e = &ev[i];

		if (e->info >= g->d->ninfos)
			goto next;
		if (e->op == REC_EV_ALLOC) {
			g->live_bytes[e->info] += (int64_t)rpt_alloc_bytes(g->d, e);
			g->live_count[e->info]++;
		} else if (e->op == REC_EV_FREE || e->op == REC_EV_FREE_TEMP) {
			g->live_bytes[e->info] -= (int64_t)fb[e->info];
			g->live_count[e->info]--;
		}
next:
		if (chunk == g->stop_at.chunk && i == g->stop_at.index)
			return 1;
	}
	return 0;
}

void *rpt_replay_range(void *arg)
{
	struct rpt_range *g = arg;
	int64_t heap = 0;
	size_t c;

	g->stop_chunk = g->end_chunk;
	g->err = 0;
	g->events = 0;
	g->frees = 0;
	g->weighted = 0;
	g->has_max = 0;
	g->max_prefix = 0;
	if (g->pass != RPT_PASS_SNAPSHOT)
		rpt_curve_start(&g->curve);
	for (c = g->first_chunk; c < g->end_chunk; c++) {
		struct rec_event *ev = NULL;
		size_t n = 0;
		uint64_t first = 0;
		int ret, done = 0;

		ret = rec_event_chunk(g->d->r, c, &ev, &n, &first);
		if (ret < 0) {
			free(ev);
			g->stop_chunk = c;
			g->err = -ret;
			break;
		}
		g->chunk_first = first;
		switch (g->pass) {
		case RPT_PASS_COUNT:
			pass_count(g, ev, n, c, &heap);
			break;
		case RPT_PASS_HEAP:
			pass_heap(g, ev, n, c, &heap);
			break;
		case RPT_PASS_SNAPSHOT:
			done = pass_snapshot(g, ev, n, c);
			break;
		}
		free(ev);
		if (done)
			break;
	}
	if (g->pass != RPT_PASS_SNAPSHOT)
		rpt_curve_end(&g->curve);
	g->delta = heap;
	return NULL;
}

void rpt_replay(struct rpt_range *ranges, size_t nranges, int pass)
{
	pthread_t tid[RPT_MAX_THREADS];
	size_t started = 1, i;

	for (i = 0; i < nranges; i++)
		ranges[i].pass = pass;
	/*
	 * The caller's thread takes range 0, the others get a thread each; if
	 * a thread cannot be made, the caller runs the rest itself.
	 */
	for (i = 1; i < nranges && i < RPT_MAX_THREADS; i++) {
		if (pthread_create(&tid[i], NULL, rpt_replay_range, &ranges[i]))
			break;
		started = i + 1;
	}
	rpt_replay_range(&ranges[0]);
	for (i = started; i < nranges; i++)
		rpt_replay_range(&ranges[i]);
	for (i = 1; i < started; i++)
		pthread_join(tid[i], NULL);
}
