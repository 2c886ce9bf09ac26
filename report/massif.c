/* report/massif.c - rpt_write_massif: valgrind massif's output file (ms_print, massif-visualizer) */
/* SPDX-License-Identifier: MIT */
/*
 * The file massif writes (valgrind's docs/massif "The Output File", and
 * what ms_print parses):
 *
 *   desc: ...                         free text
 *   cmd: COMMAND
 *   time_unit: ms
 *   #-----------
 *   snapshot=K                        K from 0, times never decrease
 *   #-----------
 *   time=T
 *   mem_heap_B=BYTES
 *   mem_heap_extra_B=0                heaptap does not see allocator overhead
 *   mem_stacks_B=0
 *   heap_tree=empty|detailed|peak
 *   n2: BYTES (heap allocation functions) malloc/new/new[], --alloc-fns, etc.
 *    n1: BYTES 0xIP: function (file:line)      children indented one space
 *     n0: BYTES 0xIP: main (file:line)          more each, costliest first
 *    n0: BYTES in 3 places, all below massif's threshold (1.00%)
 *
 * The tree goes from the allocating frame outwards (callers are children),
 * one node per frame: an ip with inlined code gives a chain of nodes, the
 * innermost inlined function first. Siblings under 1% of the snapshot's
 * heap are merged into one "below threshold" node, as massif does, which
 * bounds the size of the file.
 *
 * Snapshots: the heap at SNAPSHOTS evenly spaced points of the event
 * stream (one replay, frees take their info's fb(i) as in docs/report.md),
 * plus the global peak as the "peak" snapshot with the tree of what was
 * live then (rpt_costs.peak per trace), plus the end of the recording,
 * detailed with what was never freed (rpt_costs.leaked). Times come from
 * the ticks, interpolated between the ticks around an event, in whole
 * milliseconds (massif writes integers). '#' starts a comment for ms_print:
 * it becomes '_' in names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

#define SNAPSHOTS 60		/* evenly spaced ones, besides the peak and the end */
#define THRESHOLD_PERMILLE 10	/* 1.00%, massif's default --threshold */
#define MAX_DEPTH 200		/* tree levels written (massif's --depth is 30) */

struct item {
	uint32_t at;	/* trace node at the current depth (0: the path ended) */
	uint32_t ip;	/* its ip index, REC_NONE when the path ended or the ip is unknown */
	uint64_t bytes; /* what the trace the item came from costs */
};

struct group {
	size_t first, n;
	uint64_t bytes;
	uint32_t ip;
};

struct mtree {
	FILE *f;
	const struct rpt_data *d;
	uint64_t total; /* the snapshot's heap: base of the threshold */
	int err;
};

/* A name or path with '#' (ms_print's comment) and newlines replaced. */
static void put_clean(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == '#' ? '_' : *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static int cmp_item_ip(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;

	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

static int cmp_group(const void *pa, const void *pb)
{
	const struct group *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->ip < b->ip ? -1 : a->ip > b->ip;
}

/* " 0xIP: function (file:line)" for frame k of ip (k REC_NONE: no symbol). */
static void put_location(FILE *f, const struct rpt_data *d, uint32_t ip, uint32_t k)
{
	const struct rec_ip *p = &d->ips[ip];
	const char *fn = k != REC_NONE ? rec_string(d->r, d->frames[k].function) : "";
	const char *file = k != REC_NONE ? rec_string(d->r, d->frames[k].file) : "";

	fprintf(f, " 0x%" PRIx64 ": ", p->ip);
	put_clean(f, fn[0] ? fn : "???");
	if (file[0]) {
		fputs(" (", f);
		put_clean(f, file);
		fprintf(f, ":%u)", d->frames[k].line);
	} else if (p->module < d->nmodules && d->modules[p->module].path &&
		   d->modules[p->module].path[0]) {
		fputs(" (in ", f);
		put_clean(f, d->modules[p->module].path);
		fputc(')', f);
	}
}

/* Move every item one trace node outwards. */
static void step_out(const struct rpt_data *d, struct item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t t = it[i].at && it[i].at < d->ntraces ? d->traces[it[i].at].parent : 0;

		it[i].at = t;
		it[i].ip = t && d->traces[t].ip < d->nips ? d->traces[t].ip : REC_NONE;
	}
}

/*
 * Group it[0..n) by ip (sorting it), costliest group first, into *out.
 * Returns how many groups there are, -1 on -ENOMEM. *insig_bytes and
 * *ninsig get the groups under the threshold (they stay at the end).
 */
static long group_items(struct mtree *m, struct item *it, size_t n, struct group **out,
			uint64_t *insig_bytes, size_t *ninsig)
{
	struct group *g;
	size_t ng = 0, k, nsig = 0;

	*out = NULL;
	*insig_bytes = 0;
	*ninsig = 0;
	qsort(it, n, sizeof(*it), cmp_item_ip);
	g = malloc((n + 1) * sizeof(*g));
	if (!g)
		return -1;
	for (k = 0; k < n; k++) {
		if (it[k].ip == REC_NONE)
			continue; /* the path ended here */
		if (ng == 0 || g[ng - 1].ip != it[k].ip)
			g[ng++] = (struct group){ .first = k, .n = 0, .bytes = 0, .ip = it[k].ip };
		g[ng - 1].n++;
		g[ng - 1].bytes += it[k].bytes;
	}
	qsort(g, ng, sizeof(*g), cmp_group);
	for (k = 0; k < ng; k++) {
		if (g[k].bytes * 1000 >= m->total * THRESHOLD_PERMILLE && m->total)
			nsig++;
		else
			*insig_bytes += g[k].bytes;
	}
	*ninsig = ng - nsig;
	*out = g;
	return (long)nsig;
}

/*
 * The node of ip with bytes (all of it[0..n) sit at ip), at depth: one line
 * per frame of ip, then its callers. Returns 0 or -ENOMEM.
 */
static int put_node(struct mtree *m, uint32_t ip, uint64_t bytes, struct item *it, size_t n,
		    unsigned depth)
{
	uint32_t fr[64];
	size_t nf = 0, ninsig = 0;
	uint64_t insig = 0;
	struct group *g = NULL;
	long nsig = 0;
	int ret = 0;

	for (uint32_t k = m->d->ips[ip].frame; k != REC_NONE && k < m->d->nframes && nf < 64;
	     k = m->d->frames[k].outer)
		fr[nf++] = k;
	if (nf == 0)
		fr[nf++] = REC_NONE;
	if (depth + nf < MAX_DEPTH) {
		step_out(m->d, it, n);
		nsig = group_items(m, it, n, &g, &insig, &ninsig);
		if (nsig < 0)
			return -ENOMEM;
	}
	for (size_t k = 0; k < nf; k++) {
		size_t kids = k + 1 < nf ? 1 : (size_t)nsig + (ninsig ? 1 : 0);

		fprintf(m->f, "%*sn%zu: %" PRIu64, (int)(depth + k), "", kids, bytes);
		put_location(m->f, m->d, ip, fr[k]);
		fputc('\n', m->f);
	}
	depth += (unsigned)nf;
	for (long k = 0; k < nsig && !ret; k++)
		ret = put_node(m, g[k].ip, g[k].bytes, it + g[k].first, g[k].n, depth);
	if (ninsig)
		fprintf(m->f, "%*sn0: %" PRIu64 " in %zu place%s, all below massif's threshold (1.00%%)\n",
			(int)depth, "", insig, ninsig, ninsig == 1 ? "" : "s");
	free(g);
	return ret;
}

/* The tree of a detailed snapshot: per trace, the cost c of rpt_trace_costs. */
static int put_tree(FILE *f, const struct rpt_data *d, uint64_t total, int peak)
{
	struct mtree m = { .f = f, .d = d, .total = total };
	struct item *it;
	struct group *g = NULL;
	size_t n = 0, ninsig = 0;
	uint64_t insig = 0;
	long nsig;
	int ret = 0;

	it = malloc((d->ntraces + 1) * sizeof(*it));
	if (!it)
		return -ENOMEM;
	for (uint32_t t = 0; t < d->ntraces; t++) {
		uint64_t b = peak ? d->trace_cost[t].peak : d->trace_cost[t].leaked;

		if (!b)
			continue;
		it[n].at = t;
		it[n].ip = t && d->traces[t].ip < d->nips ? d->traces[t].ip : REC_NONE;
		it[n++].bytes = b;
	}
	nsig = group_items(&m, it, n, &g, &insig, &ninsig);
	if (nsig < 0) {
		free(it);
		return -ENOMEM;
	}
	fprintf(f, "n%zu: %" PRIu64 " (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n",
		(size_t)nsig + (ninsig ? 1 : 0), total);
	for (long k = 0; k < nsig && !ret; k++)
		ret = put_node(&m, g[k].ip, g[k].bytes, it + g[k].first, g[k].n, 1);
	if (ninsig)
		fprintf(f, " n0: %" PRIu64 " in %zu place%s, all below massif's threshold (1.00%%)\n", insig,
			ninsig, ninsig == 1 ? "" : "s");
	free(g);
	free(it);
	return ret;
}

enum snap_kind { SNAP_PLAIN = 0, SNAP_PEAK, SNAP_END };

struct snap {
	uint64_t event; /* events applied */
	int kind;
	int64_t heap;
};

static int cmp_snap(const void *pa, const void *pb)
{
	const struct snap *a = pa, *b = pb;

	if (a->event != b->event)
		return a->event < b->event ? -1 : 1;
	return a->kind - b->kind;
}

/* The heap after s[k].event events, for every snapshot (sorted by event). */
static void replay_heap(const struct rpt_data *d, struct snap *s, size_t ns)
{
	int64_t heap = 0;
	uint64_t ev = 0;
	size_t next = 0;

	while (next < ns && s[next].event == 0)
		s[next++].heap = 0;
	for (size_t c = 0; c < d->nchunks && next < ns; c++) {
		struct rec_event *e = NULL;
		size_t n = 0;
		uint64_t first = 0;

		if (rec_event_chunk(d->r, c, &e, &n, &first) < 0)
			break;
		for (size_t k = 0; k < n && next < ns; k++) {
			uint32_t i = e[k].info;

			if (e[k].op == REC_EV_ALLOC)
				heap += (int64_t)rpt_alloc_bytes(d, &e[k]);
			else
				heap -= (int64_t)d->free_bytes[i];
			ev++;
			while (next < ns && s[next].event <= ev)
				s[next++].heap = heap;
		}
		free(e);
	}
	while (next < ns)
		s[next++].heap = heap;
}

/* Time of the moment after event ev, interpolated between the ticks around it. */
static uint64_t time_of(const struct rec_tick *t, size_t nt, uint64_t ev, size_t *hint)
{
	uint64_t t0 = 0, e0 = 0;
	size_t i = *hint;

	while (i < nt && t[i].event_index <= ev)
		i++;
	*hint = i;
	if (i > 0) {
		t0 = t[i - 1].time_ns;
		e0 = t[i - 1].event_index;
	}
	if (i == nt || t[i].event_index == e0 || t[i].time_ns < t0)
		return t0;
	return t0 + (uint64_t)((double)(t[i].time_ns - t0) * (double)(ev - e0) /
			       (double)(t[i].event_index - e0));
}

int rpt_write_massif(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
{
	const struct rpt_summary *sum = &d->sum;
	struct snap s[SNAPSHOTS + 2];
	const struct rec_tick *ticks;
	size_t ns = 0, nt = 0, hint = 0;
	uint64_t last_ms = 0;
	int ret = 0;

	for (size_t k = 0; k < SNAPSHOTS; k++)
		s[ns++] = (struct snap){ .event = sum->events * k / SNAPSHOTS, .kind = SNAP_PLAIN };
	if (sum->total.peak)
		s[ns++] = (struct snap){ .event = sum->peak_event, .kind = SNAP_PEAK };
	s[ns++] = (struct snap){ .event = sum->events, .kind = SNAP_END };
	qsort(s, ns, sizeof(s[0]), cmp_snap);
	replay_heap(d, s, ns);
	ticks = rec_ticks(d->r, &nt);
	if (!ticks)
		nt = 0;

	fputs("desc: heaptap report --format massif", f);
	if (p && p->path) {
		fputc(' ', f);
		put_clean(f, p->path);
	}
	fputs("\ncmd: ", f);
	put_clean(f, sum->command);
	fputs("\ntime_unit: ms\n", f);
	for (size_t k = 0; k < ns && !ret; k++) {
		uint64_t heap;
		uint64_t ms = time_of(ticks, nt, s[k].event, &hint) / 1000000;

		if (s[k].kind == SNAP_END && ms < sum->duration_ns / 1000000)
			ms = sum->duration_ns / 1000000;
		if (ms < last_ms)
			ms = last_ms;
		last_ms = ms;
		/* the detailed ones show exactly what their tree adds up to */
		if (s[k].kind == SNAP_PEAK)
			heap = sum->total.peak;
		else if (s[k].kind == SNAP_END)
			heap = sum->total.leaked;
		else
			heap = s[k].heap > 0 ? (uint64_t)s[k].heap : 0;
		if (heap > sum->total.peak && s[k].kind == SNAP_PLAIN)
			heap = sum->total.peak;
		fprintf(f,
			"#-----------\nsnapshot=%zu\n#-----------\ntime=%" PRIu64 "\nmem_heap_B=%" PRIu64
			"\nmem_heap_extra_B=0\nmem_stacks_B=0\n",
			k, ms, heap);
		if (s[k].kind == SNAP_PLAIN) {
			fputs("heap_tree=empty\n", f);
			continue;
		}
		fputs(s[k].kind == SNAP_PEAK ? "heap_tree=peak\n" : "heap_tree=detailed\n", f);
		ret = put_tree(f, d, heap, s[k].kind == SNAP_PEAK);
	}
	if (!ret && (fflush(f) || ferror(f)))
		ret = -EIO;
	return ret;
}
