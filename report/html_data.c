/* report/html_data.c - the one JSON object the HTML report's JS renders */
/* SPDX-License-Identifier: MIT */
/*
 * Everything aggregated: no event is written one by one, so the page stays
 * small whatever the recording's size (docs/report.md gives numbers).
 *
 *   { "version": 1, "file": ..., "summary": { same keys as the JSON report's },
 *     "functions": [[name, calls, bytes, peak, leaked], ...],
 *     "heap": { "t": [ns...] or null, "e": [event...], "v": [bytes...],
 *               "peak_t": ns or null },
 *     "rss":  { "t": [ns...], "v": [bytes...] },
 *     "flame": { "names": [...], "nodes": [parent, name, calls, bytes, peak, leaked, ...],
 *                "langs": [node, "java" | "python" | "foreign", ...] (foreign frames only) },
 *     "top": { "calls": [site...], "peak": [...], "leaked": [...], "temporary": [...] },
 *     "leaks": [site + "backtrace": [[function, location, module, inlined], ...], ...] }
 *
 *   site: { "function", "location", "module", "calls", "bytes", "peak",
 *           "leaked", "leaked_calls", "temporary", "traces" }
 *
 * Heap points get their time by linear interpolation between the ticks
 * around the count of events applied at them (a tick's event index counts
 * the events before it) ("t" is null when the recording has no ticks;
 * the page then uses event numbers).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_internal.h"

#define LEAKS_MAX 100	  /* call sites in the leak list */
#define LEAK_FRAMES 24	  /* frames of each leak's backtrace */

/* Time of event index e from the ticks (sorted by event index); 0 if none. */
static uint64_t event_time(const struct rec_tick *tk, size_t n, uint64_t e)
{
	size_t lo = 0, hi = n;
	uint64_t e0 = 0, t0 = 0, e1, t1;

	if (!n)
		return 0;
	/* first tick with event_index >= e */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tk[mid].event_index < e)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		return tk[n - 1].time_ns;
	if (lo > 0) {
		e0 = tk[lo - 1].event_index;
		t0 = tk[lo - 1].time_ns;
	}
	e1 = tk[lo].event_index;
	t1 = tk[lo].time_ns;
	if (e1 <= e0 || t1 < t0)
		return t1;
	return t0 + (uint64_t)((long double)(t1 - t0) * (long double)(e - e0) / (long double)(e1 - e0));
}

static void summary(FILE *f, const struct rpt_data *d)
{
	const struct rpt_summary *s = rpt_get_summary(d);
	const struct rpt_costs *c = &s->total;
	double secs = (double)s->duration_ns / 1e9;

	fputs("\"summary\": {\"command\": ", f);
	rpt_json_string(f, s->command);
	fputs(", \"exe\": ", f);
	rpt_json_string(f, s->exe);
	fprintf(f,
		", \"pid\": %" PRIu64 ", \"duration_ns\": %" PRIu64 ", \"events\": %" PRIu64
		", \"dropped_events\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"calls\": %" PRIu64
		", \"bytes\": %" PRIu64 ", \"peak_calls\": %" PRIu64 ", \"leaked\": %" PRIu64
		", \"leaked_calls\": %" PRIu64 ", \"temporary\": %" PRIu64
		", \"temporary_bytes\": %" PRIu64 ", \"calls_per_second\": %.1f"
		", \"temporary_percent\": %.2f, \"peak_heap\": %" PRIu64 ", \"peak_event\": %" PRIu64
		", \"peak_time_ns\": ",
		s->pid, s->duration_ns, s->events, s->dropped_events, s->frees, c->calls, c->bytes,
		c->peak_calls, c->leaked, c->leaked_calls, c->temporary, c->temporary_bytes,
		secs > 0 ? (double)c->calls / secs : 0.0,
		c->calls ? 100.0 * (double)c->temporary / (double)c->calls : 0.0, c->peak,
		s->peak_event);
	if (s->peak_time_known)
		fprintf(f, "%" PRIu64, s->peak_time_ns);
	else
		fputs("null", f);
	fprintf(f, ", \"peak_rss\": %" PRIu64 ", \"attached\": %s, \"truncated\": %s, \"truncated_reason\": ",
		s->peak_rss, s->attached ? "true" : "false", s->truncated ? "true" : "false");
	rpt_json_string(f, s->truncated ? rec_strerror(s->truncated) : NULL);
	fputs(", \"end_reason\": ", f);
	rpt_json_string(f, s->end_reason);
	fprintf(f, ", \"sampled\": %s, \"estimated\": %s, \"sample_bytes\": %" PRIu64 "},\n",
		s->sampled ? "true" : "false", s->estimated ? "true" : "false", s->sample_bytes);
}

static void functions(FILE *f, const struct rpt_data *d)
{
	unsigned k;
	int first = 1;

	fputs("\"functions\": [", f);
	for (k = 1; k <= WIRE_KIND_MAX + 1; k++) {
		unsigned kind = k <= WIRE_KIND_MAX ? k : 0;
		const struct rpt_costs *c = rpt_function(d, kind);

		if (!c || (!c->calls && !c->bytes))
			continue;
		fprintf(f, "%s[\"%s\", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 "]",
			first ? "" : ", ", rpt_function_name(kind), c->calls, c->bytes, c->peak,
			c->leaked);
		first = 0;
	}
	fputs("],\n", f);
}

static void timeline(FILE *f, const struct rpt_data *d)
{
	const struct rec_tick *tk;
	size_t ntk = 0, i, n;
	uint64_t maxr;

	tk = rec_ticks(d->r, &ntk);
	if (!tk)
		ntk = 0;
	fputs("\"heap\": {\"t\": ", f);
	if (ntk) {
		fputc('[', f);
		for (i = 0; i < d->ncurve; i++)
			fprintf(f, "%s%" PRIu64, i ? "," : "", event_time(tk, ntk, d->curve_event[i] + 1));
		fputc(']', f);
	} else {
		fputs("null", f);
	}
	fputs(", \"e\": [", f);
	for (i = 0; i < d->ncurve; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", d->curve_event[i]);
	fputs("], \"v\": [", f);
	for (i = 0; i < d->ncurve; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", d->curve_heap[i]);
	fputs("], \"peak_t\": ", f);
	if (ntk && rpt_get_summary(d)->peak_event)
		fprintf(f, "%" PRIu64, event_time(tk, ntk, rpt_get_summary(d)->peak_event));
	else
		fputs("null", f);
	/* RSS: every tick, or the highest of each stretch when there are many */
	fputs("},\n\"rss\": {\"t\": [", f);
	n = ntk < HTML_POINTS ? ntk : HTML_POINTS;
	for (i = 0; i < n; i++) {
		size_t a = i * ntk / n, b = (i + 1) * ntk / n, j, at = a;

		for (j = a, maxr = 0; j < b; j++)
			if (tk[j].rss >= maxr) {
				maxr = tk[j].rss;
				at = j;
			}
		fprintf(f, "%s%" PRIu64, i ? "," : "", tk[at].time_ns);
	}
	fputs("], \"v\": [", f);
	for (i = 0; i < n; i++) {
		size_t a = i * ntk / n, b = (i + 1) * ntk / n, j;

		for (j = a, maxr = 0; j < b; j++)
			if (tk[j].rss > maxr)
				maxr = tk[j].rss;
		fprintf(f, "%s%" PRIu64, i ? "," : "", maxr);
	}
	fputs("]},\n", f);
}

static void flame(FILE *f, const struct html_flame *fl)
{
	size_t i, n = 0;

	fputs("\"flame\": {\"names\": [", f);
	for (i = 0; i < fl->nnames; i++) {
		if (i)
			fputc(',', f);
		rpt_json_string(f, fl->names[i]);
	}
	fputs("],\n\"nodes\": [", f);
	for (i = 0; i < fl->n; i++) {
		const struct html_flame_node *v = &fl->nodes[i];

		fprintf(f, "%s%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			i ? "," : "", v->parent, v->name, v->calls, v->bytes, v->peak, v->leaked);
	}
	/* foreign frames: node, language ("java", "python", "foreign") pairs, for their colours */
	fputs("],\n\"langs\": [", f);
	for (i = 0; i < fl->n; i++) {
		if (fl->nodes[i].xframe) {
			fprintf(f, "%s%zu,\"%s\"", n++ ? "," : "", i, rpt_lang_name(fl->nodes[i].lang));
		}
	}
	fputs("]},\n", f);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* "file:line", "file", or "module+0xoffset" into buf; "" if nothing is known. */
static const char *location(const struct rpt_frame *fr, char *buf, size_t len)
{
	if (fr->file && fr->line)
		snprintf(buf, len, "%s:%u", fr->file, fr->line);
	else if (fr->file)
		snprintf(buf, len, "%s", fr->file);
	else if (fr->module)
		snprintf(buf, len, "%s+0x%" PRIx64, base_name(fr->module), fr->offset);
	else
		buf[0] = '\0';
	return buf;
}

/* The function of a frame, or "[module]", or "0xip". */
static const char *function(const struct rpt_frame *fr, char *buf, size_t len)
{
	if (fr->function)
		return fr->function;
	if (fr->module)
		snprintf(buf, len, "[%s]", base_name(fr->module));
	else if (fr->ip)
		snprintf(buf, len, "0x%" PRIx64, fr->ip);
	else
		snprintf(buf, len, "[no stack]");
	return buf;
}

/* The module of a frame (its file name), a foreign frame's marker ("[java, compiled]"), or "". */
static const char *module_word(const struct rpt_frame *fr, char *buf, size_t len)
{
	const char *k;

	if (!fr->xframe)
		return fr->module ? base_name(fr->module) : "";
	k = rpt_xkind_mark(fr->xkind);
	snprintf(buf, len, "[%s%s%s]", rpt_lang_name(fr->lang), k ? ", " : "", k ? k : "");
	return buf;
}

/* Frames of trace t into a malloc'd array; *n gets how many (0 for the empty stack). */
static struct rpt_frame *frames_of(const struct rpt_data *d, uint32_t t, size_t *n)
{
	struct rpt_frame *fr;
	size_t total = rpt_backtrace(d, t, NULL, 0);

	fr = calloc(total + 1, sizeof(*fr));
	if (!fr)
		return NULL;
	*n = rpt_backtrace(d, t, fr, total);
	return fr;
}

/* One site as a JSON object; with_bt: its costliest backtrace (for c) too. */
static int site(FILE *f, const struct rpt_data *d, const struct rpt_site *s, enum rpt_cost c,
		int with_bt)
{
	const struct rpt_costs *k = &s->cost;
	struct rpt_frame *fr, none;
	char fb[64], lb[4096], mb[48];
	uint32_t t = 0;
	size_t n = 0, i;

	rpt_site_traces(d, s, c, &t, 1, NULL);
	fr = frames_of(d, t, &n);
	if (!fr)
		return -ENOMEM;
	memset(&none, 0, sizeof(none));
	fputs("{\"function\": ", f);
	rpt_json_string(f, function(n ? &fr[0] : &none, fb, sizeof(fb)));
	fputs(", \"location\": ", f);
	rpt_json_string(f, location(n ? &fr[0] : &none, lb, sizeof(lb)));
	fputs(", \"module\": ", f);
	rpt_json_string(f, n ? module_word(&fr[0], mb, sizeof(mb)) : "");
	fprintf(f,
		", \"calls\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"peak\": %" PRIu64
		", \"leaked\": %" PRIu64 ", \"leaked_calls\": %" PRIu64 ", \"temporary\": %" PRIu64
		", \"traces\": %" PRIu32,
		k->calls, k->bytes, k->peak, k->leaked, k->leaked_calls, k->temporary, s->ntraces);
	if (with_bt) {
		fputs(", \"backtrace\": [", f);
		for (i = 0; i < n && i < LEAK_FRAMES; i++) {
			fputs(i ? ", [" : "[", f);
			rpt_json_string(f, function(&fr[i], fb, sizeof(fb)));
			fputc(',', f);
			rpt_json_string(f, location(&fr[i], lb, sizeof(lb)));
			fputc(',', f);
			rpt_json_string(f, module_word(&fr[i], mb, sizeof(mb)));
			fprintf(f, ", %d]", fr[i].inlined ? 1 : 0);
		}
		fprintf(f, "], \"more_frames\": %zu", n > LEAK_FRAMES ? n - LEAK_FRAMES : 0);
	}
	fputc('}', f);
	free(fr);
	return 0;
}

static int list(FILE *f, const struct rpt_data *d, const char *key, enum rpt_cost c, size_t max,
		int with_bt)
{
	const struct rpt_site *const *top;
	size_t n, i;
	int ret;

	top = rpt_top_sites(d, c, &n);
	if (n > max)
		n = max;
	fprintf(f, "\"%s\": [", key);
	for (i = 0; i < n; i++) {
		fputs(i ? ",\n" : "\n", f);
		ret = site(f, d, top[i], c, with_bt);
		if (ret < 0)
			return ret;
	}
	fputs("]", f);
	return 0;
}

int html_data_write(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p,
		    const struct html_flame *fl)
{
	size_t top = p->top ? p->top : 10;
	int ret;

	fputs("{\"version\": 1, \"file\": ", f);
	rpt_json_string(f, p->path);
	fputs(",\n", f);
	summary(f, d);
	functions(f, d);
	timeline(f, d);
	flame(f, fl);
	fputs("\"top\": {", f);
	ret = list(f, d, "calls", RPT_COST_CALLS, top, 0);
	if (!ret) {
		fputs(",\n", f);
		ret = list(f, d, "peak", RPT_COST_PEAK, top, 0);
	}
	if (!ret) {
		fputs(",\n", f);
		ret = list(f, d, "leaked", RPT_COST_LEAKED, top, 0);
	}
	if (!ret) {
		fputs(",\n", f);
		ret = list(f, d, "temporary", RPT_COST_TEMPORARY, top, 0);
	}
	if (!ret) {
		fputs("},\n", f);
		ret = list(f, d, "leaks", RPT_COST_LEAKED, top > LEAKS_MAX ? top : LEAKS_MAX, 1);
	}
	fputs("}\n", f);
	return ret;
}
