/* report/pprof_export.c - a recording's analysis as a pprof heap profile (heaptap report --format pprof) */
/* SPDX-License-Identifier: MIT */
/*
 * Feeds the builder of report/pprof.c from struct rpt_data:
 *
 *   module i      -> mapping (path, [base, base + size), build-id as hex)
 *   ip i          -> location (address, mapping, one line per symbol chain
 *                    link, innermost first: the inlined functions, then the
 *                    real one), made on first use
 *   foreign ip i  -> location without mapping or address, one line: the
 *                    frame's name, file and line; the function's
 *                    system_name is the name with its marker ("name
 *                    [java, compiled]", "name [python]")
 *   trace t       -> sample: its ip and its callers' ips, leaf first;
 *                    values alloc_objects = calls, alloc_space = bytes,
 *                    inuse_objects = leaked_calls, inuse_space = leaked
 *
 * "inuse" is what was still allocated at the end of the recording (at the
 * detach for an attached one), not at the heap peak: that is what a
 * pprof heap profile taken at that moment would show. A sampled recording's
 * costs are already estimates (sums of weights); the profile also gets the
 * period (sample_bytes) and a comment saying so.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

struct export {
	const struct rpt_data *d;
	struct rpt_pprof *p;
	uint64_t *map_of; /* per module: mapping id */
	uint64_t *loc_of; /* per ip: location id, 0 = not made yet */
	uint64_t unknown_loc; /* the location of a trace without a valid ip */
	struct rpt_pprof_line *lines;
	size_t caplines;
	uint64_t *stack;
	char marked[WIRE_XFRAME_MAX_NAME + 64]; /* a foreign frame's system_name */
};

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

static int64_t i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* one mapping per module; flags say what the locations in it carry */
static int mappings(struct export *x)
{
	const struct rpt_data *d = x->d;
	int *fn = calloc(d->nmodules + 1, sizeof(*fn) * 3);
	size_t i;

	if (!fn)
		return -ENOMEM;
	for (i = 0; i < d->nips; i++) {
		const struct rec_ip *ip = &d->ips[i];

		if (ip->module >= d->nmodules || ip->frame >= d->nframes)
			continue;
		fn[3 * ip->module] = 1;
		if (d->frames[ip->frame].file)
			fn[3 * ip->module + 1] = 1;
		if (d->frames[ip->frame].line)
			fn[3 * ip->module + 2] = 1;
	}
	for (i = 0; i < d->nmodules; i++) {
		const struct rec_module *m = &d->modules[i];
		struct rpt_pprof_map pm = {
			.start = m->base,
			.limit = m->size > UINT64_MAX - m->base ? UINT64_MAX : m->base + m->size,
			.path = m->path,
			.build_id = m->build_id,
			.build_id_len = m->build_id_len,
			.has_functions = fn[3 * i],
			.has_filenames = fn[3 * i + 1],
			.has_line_numbers = fn[3 * i + 2],
			.has_inline_frames = fn[3 * i],
		};

		x->map_of[i] = rpt_pprof_mapping(x->p, &pm);
		if (!x->map_of[i]) {
			int rc = -errno;

			free(fn);
			return rc;
		}
	}
	free(fn);
	return 0;
}

/* the location of ip index ipi (made on first use); 0 and errno on failure */
static uint64_t location(struct export *x, uint32_t ipi)
{
	const struct rpt_data *d = x->d;
	const struct rec_ip *ip;
	uint32_t link;
	size_t n = 0, steps = 0;

	if (ipi >= d->nips) {
		if (!x->unknown_loc)
			x->unknown_loc = rpt_pprof_location(x->p, 0, 0, NULL, 0);
		return x->unknown_loc;
	}
	if (x->loc_of[ipi])
		return x->loc_of[ipi];
	ip = &d->ips[ipi];
	/* the reader bounds every link; steps bounds a cycle too */
	for (link = ip->frame; link < d->nframes && steps++ <= d->nframes; link = d->frames[link].outer) {
		const struct rec_frame *fr = &d->frames[link];

		if (n == x->caplines) {
			size_t cap = x->caplines ? x->caplines * 2 : 16;
			void *v = realloc(x->lines, cap * sizeof(*x->lines));

			if (!v) {
				errno = ENOMEM;
				return 0;
			}
			x->lines = v;
			x->caplines = cap;
		}
		x->lines[n++] = (struct rpt_pprof_line){
			.function = nonempty(rec_string(d->r, fr->function)),
			.file = nonempty(rec_string(d->r, fr->file)),
			.line = fr->line,
		};
	}
	if (ip->xframe) {
		/* not an address: no mapping, address 0; the marker in the system name */
		const char *k = rpt_xkind_mark(ip->xkind);

		if (n && x->lines[0].function) {
			snprintf(x->marked, sizeof(x->marked), "%.*s [%s%s%s]", WIRE_XFRAME_MAX_NAME,
				 x->lines[0].function, rpt_lang_name(ip->lang), k ? ", " : "", k ? k : "");
			x->lines[0].system_name = x->marked;
		}
		x->loc_of[ipi] = rpt_pprof_location(x->p, 0, 0, x->lines, n);
		return x->loc_of[ipi];
	}
	/* an unsymbolized ip gets no line: pprof shows its address */
	x->loc_of[ipi] = rpt_pprof_location(x->p, ip->module < d->nmodules ? x->map_of[ip->module] : 0,
					    ip->ip, x->lines, n);
	return x->loc_of[ipi];
}

/* one sample per trace with a cost */
static int samples(struct export *x)
{
	const struct rpt_data *d = x->d;

	for (uint32_t t = 0; t < d->ntraces; t++) {
		const struct rpt_costs *c = &d->trace_cost[t];
		int64_t v[RPT_PPROF_HEAP_NVALUES];
		size_t n = 0;
		uint32_t u = t;
		int rc;

		if (!c->calls && !c->bytes && !c->leaked && !c->leaked_calls)
			continue;
		/* parent < own index (reader-checked), so the walk ends; n <= ntraces */
		while (u != 0 && u < d->ntraces) {
			x->stack[n] = location(x, d->traces[u].ip);
			if (!x->stack[n])
				return -errno;
			n++;
			if (d->traces[u].parent >= u)
				break;
			u = d->traces[u].parent;
		}
		v[RPT_PPROF_ALLOC_OBJECTS] = i64(c->calls);
		v[RPT_PPROF_ALLOC_SPACE] = i64(c->bytes);
		v[RPT_PPROF_INUSE_OBJECTS] = i64(c->leaked_calls);
		v[RPT_PPROF_INUSE_SPACE] = i64(c->leaked);
		rc = rpt_pprof_sample(x->p, v, RPT_PPROF_HEAP_NVALUES, x->stack, n);
		if (rc)
			return rc;
	}
	return 0;
}

/* time, period and comments from the summary and meta */
static int describe(struct export *x)
{
	const struct rpt_summary *s = &x->d->sum;
	const char *start = rec_meta(x->d->r, "start_realtime_ns");
	char buf[512];
	int rc;

	rpt_pprof_time(x->p, start ? strtoull(start, NULL, 10) : 0, s->duration_ns);
	snprintf(buf, sizeof(buf), "heaptap recording of: %.400s", s->command);
	rc = rpt_pprof_comment(x->p, buf);
	if (!rc)
		rc = rpt_pprof_comment(x->p, s->attached ? "inuse_*: not freed at detach (attached recording)"
							 : "inuse_*: not freed at the end of the recording");
	if (!rc && s->sampled) {
		snprintf(buf, sizeof(buf),
			 "sampled recording: values are estimates (one sample per %" PRIu64
			 " bytes allocated on average)",
			 s->sample_bytes);
		rc = rpt_pprof_comment(x->p, buf);
		if (!rc && s->sample_bytes)
			rc = rpt_pprof_period(x->p, "space", "bytes", s->sample_bytes);
	}
	if (!rc && s->truncated)
		rc = rpt_pprof_comment(x->p, "the recording is truncated: this is what it holds");
	return rc;
}

int rpt_write_pprof(FILE *f, const struct rpt_data *d)
{
	struct export x = { .d = d };
	int rc = -ENOMEM;

	x.p = rpt_pprof_new();
	x.map_of = calloc(d->nmodules + 1, sizeof(*x.map_of));
	x.loc_of = calloc(d->nips + 1, sizeof(*x.loc_of));
	x.stack = calloc(d->ntraces + 1, sizeof(*x.stack));
	if (!x.p || !x.map_of || !x.loc_of || !x.stack)
		goto out_free;
	rc = rpt_pprof_heap_types(x.p);
	if (!rc)
		rc = describe(&x);
	if (!rc)
		rc = mappings(&x);
	if (!rc)
		rc = samples(&x);
	if (!rc)
		rc = rpt_pprof_write(x.p, f, 1);
	if (rc == -EFBIG)
		rc = -ENOMEM; /* documented returns: a profile past 1 GiB is out of memory for us */
out_free:
	free(x.lines);
	free(x.stack);
	free(x.loc_of);
	free(x.map_of);
	rpt_pprof_free(x.p);
	return rc;
}
