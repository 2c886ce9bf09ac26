/* report/internal.h - layouts shared by the files of report/ */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_REPORT_INTERNAL_H
#define HEAPTAP_REPORT_INTERNAL_H

#include <stdint.h>
#include <sys/mman.h>

#include "report/report.h"
#include "track/wire.h"

#define RPT_MAX_THREADS 8

/* What one replay range saw of one allocation info. */
struct rpt_acc {
	uint64_t allocs; /* allocation events */
	uint64_t weight; /* bytes they stand for (size, or the sample weight) */
	uint64_t calls;	 /* calls they stand for (1 each, or weight/size) */
	uint64_t frees;	 /* free events (both kinds) */
	uint64_t temps;	 /* REC_EV_FREE_TEMP events */
	uint64_t wbytes; /* the part of weight from weighted (sampled) events */
	uint64_t wcalls; /* the part of calls from weighted events */
};

/* Where in the event stream: chunk index and position inside it. */
struct rpt_pos {
	size_t chunk;
	size_t index;
};

/* Points of the heap curve at most (report/curve.c). */
#define RPT_CURVE_POINTS 2000

/* The stretch of the heap curve being filled (a replay keeps it in locals). */
struct rpt_curve_fill {
	uint64_t next; /* the stretch ends before this event index */
	int64_t m;     /* its highest heap so far (INT64_MIN: none yet) */
	uint64_t m_at; /* the event that reached m (UINT64_MAX: none yet) */
};

/*
 * One range's part of the heap curve (report/curve.c). The stream of E
 * events is cut into n = min(E, RPT_CURVE_POINTS) stretches of equal
 * length; point k is the highest heap (relative to the range start) after
 * an allocation or free of stretch k, and the first event that reached it.
 */
struct rpt_curve_part {
	size_t n;	  /* points of the whole curve; 0: no curve */
	uint64_t nevents; /* events of the whole stream */
	int64_t *max;	  /* per point */
	uint64_t *at;	  /* per point: the event that reached max */
	uint8_t *has;	  /* per point: 1 once an event of it was applied here */
	size_t k;	  /* the stretch being filled */
	struct rpt_curve_fill fill;
};

/*
 * One worker's contiguous range of event chunks [first_chunk, end_chunk).
 * The heap numbers are relative: the range starts from heap 0, and the
 * analysis adds the ranges up in order.
 *
 *   chunks:  | 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 |
 *   ranges:  |<-- range 0 -->|<-- range 1 -->|   (one per worker)
 */
struct rpt_range {
	const struct rpt_data *d;
	size_t first_chunk, end_chunk;
	size_t stop_chunk;	/* first chunk that failed to decode, else end_chunk */
	int err;		/* its enum rec_err (positive), 0 if none */
	int pass;		/* enum rpt_pass this worker runs */
	struct rpt_acc *acc;	/* per allocinfo (pass A) */
	uint64_t events;	/* events replayed */
	uint64_t frees;
	uint64_t weighted;	/* allocation events that carried a weight */
	int64_t delta;		/* heap change over the range */
	int64_t max_prefix;	/* highest heap seen, relative to the range start */
	int has_max;		/* 0 until an allocation was seen */
	uint64_t max_events;	/* events of the range applied at max_prefix */
	struct rpt_pos max_pos; /* the event that reached it */
	/* pass C: live bytes / allocations per allocinfo up to a position */
	int64_t *live_bytes;
	int64_t *live_count;
	struct rpt_pos stop_at;
	/* passes A and B: the range's part of the heap curve (curve.c) */
	struct rpt_curve_part curve;
	uint64_t chunk_first; /* event index of the first event of the chunk being replayed */
};

enum rpt_pass {
	RPT_PASS_COUNT = 0, /* A: counts per info, heap assuming frees of `size` bytes */
	RPT_PASS_HEAP,	    /* B: heap again with the mean weight per free (sampled) */
	RPT_PASS_SNAPSHOT,  /* C: live bytes per info up to the global peak */
};

struct rpt_data {
	const struct rec_reader *r;
	const struct rec_allocinfo *infos;
	size_t ninfos;
	const struct rec_trace *traces;
	size_t ntraces;
	const struct rec_ip *ips;
	size_t nips;
	const struct rec_frame *frames;
	size_t nframes;
	const struct rec_module *modules;
	size_t nmodules;
	size_t nchunks;

	struct rpt_summary sum;
	char *command; /* owned; sum.command points here or into the reader */

	uint64_t *free_bytes;	  /* per info: bytes one free takes away */
	/*
	 * Sampled recordings with exact site counts (report/calibrate.c): per
	 * info, the factor a weighted allocation's bytes and calls are
	 * multiplied by so each call site's estimate equals its exact totals;
	 * NULL when there is nothing to calibrate. traces may then be an owned
	 * copy (own_traces) with one extra node per call site that got no
	 * sample (extra_cost, from trace index ntraces - nextra on).
	 */
	double *scale_bytes, *scale_calls;
	struct rec_trace *own_traces;
	/* traces and infos with the interpreter's frames folded (fold.c); NULL when not folded */
	struct rec_trace *fold_traces;
	struct rec_allocinfo *fold_infos;
	size_t nextra;
	struct rpt_costs *extra_cost;
	struct rpt_costs *trace_cost; /* per trace */
	struct rpt_costs funcs[WIRE_KIND_MAX + 1];
	uint64_t cut_traces;	/* traces with calls whose stack ends in WIRE_IP_CUT */
	uint64_t cut_calls;	/* their allocation calls */

	struct rpt_site *sites; /* sites with any cost */
	size_t nsites;
	uint32_t *site_first;	/* per site: first index into site_traces; nsites + 1 entries */
	uint32_t *site_traces;	/* trace indices grouped by site */
	const struct rpt_site **top[RPT_COST_MAX];
	size_t ntop[RPT_COST_MAX];

	/* The heap curve (curve.c): point k is the highest heap of its stretch and the event reaching it. */
	size_t ncurve;
	uint64_t *curve_event;
	uint64_t *curve_heap;
};

/* analyze.c: a new rpt_data with the reader's tables in place and no costs yet; NULL on ENOMEM. */
struct rpt_data *rpt_data_new(const struct rec_reader *r);

/*
 * rpt_fold_interp - fold CPython's evaluation-loop frames where Python
 * frames stand for them (fold.c): d->traces and d->infos are replaced by
 * folded copies. Before the replay. 0 (also when there is nothing to fold)
 * or -ENOMEM (d unchanged).
 */
int rpt_fold_interp(struct rpt_data *d);

/* replay.c: run one pass over one range (the pthread entry point). */
void *rpt_replay_range(void *range);

/* replay.c: run pass on every range, in threads when there are several. */
void rpt_replay(struct rpt_range *ranges, size_t nranges, int pass);

/*
 * rpt_want_huge_pages - ask for transparent huge pages for the whole 2 MiB
 * pages inside a large array (bytes at p) that is about to be filled. A
 * fresh array is otherwise faulted in 4 KiB at a time (twice for calloc'd
 * memory read before it is written), which took longer than the work on it
 * (deep bench workload: 27,000 page faults for a text report, 15,000 with
 * this hint on the trace costs). A hint only,
 * for arrays of 8 MiB or more; when it fails, nothing changes.
 */
static inline void rpt_want_huge_pages(void *p, size_t bytes)
{
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
	uintptr_t e = ((uintptr_t)p + bytes) & ~(huge - 1);

	if (p && bytes >= 4 * huge && e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
}

/* curve.c: give range g its part of the heap curve of a stream of nevents events. Returns 0 or -ENOMEM. */
int rpt_curve_part_init(struct rpt_curve_part *c, uint64_t nevents);
void rpt_curve_part_free(struct rpt_curve_part *c);

/*
 * curve.c: start a pass; end it (replay.c, per range). In between, a chunk
 * copies c->fill to a local f, calls rpt_curve_note(c, &f, ...) after each
 * allocation and free, and stores f back (a local stays in registers).
 */
void rpt_curve_start(struct rpt_curve_part *c);
void rpt_curve_end(struct rpt_curve_part *c);
void rpt_curve_advance(struct rpt_curve_part *c, uint64_t idx);

static inline void rpt_curve_note(struct rpt_curve_part *c, struct rpt_curve_fill *f, uint64_t idx,
				  int64_t heap)
{
	if (idx >= f->next) {
		c->fill = *f;
		rpt_curve_advance(c, idx);
		*f = c->fill;
	}
	if (heap > f->m) {
		f->m = heap;
		f->m_at = idx;
	}
}

/* curve.c: add the first nvalid ranges' parts up in order into d's curve. Returns 0 or -ENOMEM. */
int rpt_curve_merge(struct rpt_data *d, const struct rpt_range *ranges, size_t nvalid);

/*
 * calibrate.c: from the merged counts of pass A (total, per info) and the
 * exact site counts, set scale_bytes/scale_calls, rescale total's weighted
 * parts and add the nodes of unsampled sites. Returns 0 or -ENOMEM.
 */
int rpt_calibrate(struct rpt_data *d, struct rpt_acc *total);

/* calibrate.c: add the unsampled sites' exact totals to trace, function and total costs. */
void rpt_calibrate_costs(struct rpt_data *d);

/* The bytes an allocation event e adds to the heap: size, weight, or calibrated weight. */
static inline uint64_t rpt_alloc_bytes(const struct rpt_data *d, const struct rec_event *e)
{
	double b;

	if (!e->weight)
		return e->info < d->ninfos ? d->infos[e->info].size : 0;
	if (!d->scale_bytes || e->info >= d->ninfos)
		return e->weight;
	b = (double)e->weight * d->scale_bytes[e->info] + 0.5;
	return b >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)b;
}

/* costs.c: per info, trace and function costs from the merged counts and the snapshot. */
void rpt_costs_compute(struct rpt_data *d, const struct rpt_acc *acc, const int64_t *live_bytes,
		       const int64_t *live_count);

/* sites.c: merge traces into call sites and sort the top lists. Returns 0 or -ENOMEM. */
int rpt_sites_build(struct rpt_data *d);

/* summary.c: fill the parts of d->sum taken from meta and ticks. Returns 0 or -ENOMEM. */
int rpt_summary_meta(struct rpt_data *d);

/* The field of k that c sorts by (rpt_cost_of, inlined for the sorts). */
static inline uint64_t rpt_cost_field(const struct rpt_costs *k, enum rpt_cost c)
{
	switch (c) {
	case RPT_COST_CALLS:
		return k->calls;
	case RPT_COST_PEAK:
		return k->peak;
	case RPT_COST_LEAKED:
		return k->leaked;
	case RPT_COST_TEMPORARY:
		return k->temporary;
	case RPT_COST_MAX:
		break;
	}
	return 0;
}

/* costs.c: add every field of b to a. */
void rpt_costs_add(struct rpt_costs *a, const struct rpt_costs *b);

/* json.c helpers used by the JSON writer */
void rpt_json_string(FILE *f, const char *s);

#endif /* HEAPTAP_REPORT_INTERNAL_H */
