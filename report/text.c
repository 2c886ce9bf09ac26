/* report/text.c - the report for people */
/* SPDX-License-Identifier: MIT */
/*
 * Layout:
 *
 *   summary block (aligned "name  value" lines)
 *   allocation functions table
 *   four lists of call sites, each site followed by its costliest
 *   backtraces (innermost frame first, inlined frames marked) and
 *   "and N other backtraces"
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "report/internal.h"

#define SZ 32

static const char *const list_title[RPT_COST_MAX] = {
	[RPT_COST_CALLS] = "MOST ALLOCATION CALLS",
	[RPT_COST_PEAK] = "PEAK MEMORY (live at the heap peak)",
	[RPT_COST_LEAKED] = "LEAKED MEMORY (not freed at the end)",
	[RPT_COST_TEMPORARY] = "MOST TEMPORARY ALLOCATIONS",
};

/* "s" unless n is 1 */
static const char *pl(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void summary(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
{
	const struct rpt_summary *s = &d->sum;
	double secs = (double)s->duration_ns / 1e9;
	const char *est = s->estimated ? " (estimated)" : "";
	char a[SZ], b[SZ];

	if (p->path) {
		fputs("recording              ", f);
		rpt_fputs_escaped(p->path, f);
		fputs("\n", f);
	}
	fputs("command                ", f);
	rpt_fputs_escaped(*s->command ? s->command : "(unknown)", f);
	fputs("\n", f);
	if (s->pid)
		fprintf(f, "process                %" PRIu64 ", %s\n", s->pid,
			s->attached ? "attached" : "launched");
	fprintf(f, "recording state        %s%s%s%s", s->truncated ? "truncated: " : "complete",
		s->truncated ? rec_strerror(s->truncated) : "",
		s->attached && !s->pid ? ", attached" : "", s->end_reason ? ", session end: " : "");
	rpt_fputs_escaped(s->end_reason ? s->end_reason : "", f);
	fputs("\n", f);
	if (s->sampled)
		fprintf(f, "sampling               every %" PRIu64 " bytes on average, numbers estimated\n",
			s->sample_bytes);
	if (s->site_counts)
		fprintf(f, "exact totals           %" PRIu64 " calls, %s allocated while sampling (counted "
			"per call site)\n", s->exact_calls, rpt_format_size(s->exact_bytes, a, SZ));
	fprintf(f, "duration               %.3f s\n", secs);
	fprintf(f, "allocation calls       %" PRIu64 "%s (%.0f/s)\n", s->total.calls, est,
		secs > 0 ? (double)s->total.calls / secs : 0.0);
	fprintf(f, "temporary allocations  %" PRIu64 " (%.1f%% of calls)\n", s->total.temporary,
		pct(s->total.temporary, s->total.calls));
	fprintf(f, "peak heap              %s", rpt_format_size(s->total.peak, a, SZ));
	if (s->peak_time_known)
		fprintf(f, " at %.3f s", (double)s->peak_time_ns / 1e9);
	if (s->peak_stderr)
		fprintf(f, " (estimated, standard error %s)", rpt_format_size(s->peak_stderr, a, SZ));
	fputs("\n", f);
	fprintf(f, "peak RSS               %s\n", rpt_format_size(s->peak_rss, a, SZ));
	fprintf(f, "total allocated        %s\n", rpt_format_size(s->total.bytes, a, SZ));
	/* attached: the program goes on, so "not freed yet" rather than leaked */
	fprintf(f, "%s%s in %" PRIu64 " allocation%s%s\n",
		s->attached ? "not freed at detach   " : "leaked at exit         ",
		rpt_format_size(s->total.leaked, b, SZ), s->total.leaked_calls,
		pl(s->total.leaked_calls), est);
	if (s->dropped_events)
		fprintf(f, "invalid events         %" PRIu64 " (ignored)\n", s->dropped_events);
	if (d->cut_traces)
		fprintf(f, "frames cut             %" PRIu64 " stack%s (%" PRIu64 " call%s%s) end in code "
			"without unwind info\n", d->cut_traces, pl(d->cut_traces), d->cut_calls,
			pl(d->cut_calls), est);
}

static void functions(FILE *f, const struct rpt_data *d)
{
	char a[SZ], b[SZ];
	unsigned k;

	fprintf(f, "\nALLOCATION FUNCTIONS\n  %-16s %12s %12s %12s\n", "function", "calls", "bytes",
		d->sum.attached ? "not freed" : "leaked");
	for (k = 1; k <= WIRE_KIND_MAX + 1; k++) {
		unsigned kind = k <= WIRE_KIND_MAX ? k : 0;
		const struct rpt_costs *c = &d->funcs[kind];

		if (!c->calls && !c->bytes)
			continue;
		fprintf(f, "  %-16s %12" PRIu64 " %12s %12s\n", rpt_function_name(kind), c->calls,
			rpt_format_size(c->bytes, a, SZ), rpt_format_size(c->leaked, b, SZ));
	}
}

/* "N calls, X" etc.: the costs of a site or trace for list c */
static void cost_line(FILE *f, const struct rpt_costs *k, enum rpt_cost c, int attached)
{
	char a[SZ], b[SZ];

	switch (c) {
	case RPT_COST_CALLS:
		fprintf(f, "%" PRIu64 " call%s, %s allocated", k->calls, pl(k->calls),
			rpt_format_size(k->bytes, a, SZ));
		break;
	case RPT_COST_PEAK:
		fprintf(f, "%s at peak in %" PRIu64 " allocation%s (%" PRIu64 " call%s, %s in total)",
			rpt_format_size(k->peak, a, SZ), k->peak_calls, pl(k->peak_calls), k->calls,
			pl(k->calls), rpt_format_size(k->bytes, b, SZ));
		break;
	case RPT_COST_LEAKED:
		fprintf(f, "%s %s in %" PRIu64 " allocation%s (%" PRIu64 " call%s, %s in total)",
			rpt_format_size(k->leaked, a, SZ), attached ? "not freed" : "leaked",
			k->leaked_calls, pl(k->leaked_calls),
			k->calls, pl(k->calls), rpt_format_size(k->bytes, b, SZ));
		break;
	case RPT_COST_TEMPORARY:
		fprintf(f, "%" PRIu64 " temporary of %" PRIu64 " call%s (%.1f%%), %s",
			k->temporary, k->calls, pl(k->calls), pct(k->temporary, k->calls),
			rpt_format_size(k->temporary_bytes, a, SZ));
		break;
	case RPT_COST_MAX:
		break;
	}
}

static void frame_line(FILE *f, const struct rpt_frame *fr, const char *indent)
{
	/* names, files and modules come from the target: escaped (rpt_escape) */
	fputs(indent, f);
	if (fr->function)
		rpt_fputs_escaped(fr->function, f);
	else
		fprintf(f, "0x%" PRIx64, fr->ip);
	if (fr->file) {
		fputs("  ", f);
		rpt_fputs_escaped(fr->file, f);
		if (fr->line || !fr->xframe)
			fprintf(f, ":%u", fr->line);
	}
	if (fr->xframe) {
		/* a Java or Python frame: "[java, compiled]", "[python]" */
		const char *k = rpt_xkind_mark(fr->xkind);

		fprintf(f, " [%s%s%s]", rpt_lang_name(fr->lang), k ? ", " : "", k ? k : "");
	}
	if (fr->inlined)
		fputs("  (inlined)", f);
	if (fr->module && (!fr->function || !fr->file)) {
		fputs("  in ", f);
		rpt_fputs_escaped(fr->module, f);
		fprintf(f, "+0x%" PRIx64, fr->offset);
	}
	fputs("\n", f);
}

static int backtrace(FILE *f, const struct rpt_data *d, uint32_t t, size_t max_frames)
{
	struct rpt_frame stack[64], *fr = stack;
	size_t n, shown, i;

	n = rpt_backtrace(d, t, stack, 64);
	shown = max_frames && n > max_frames ? max_frames : n;
	if (shown > 64) {
		fr = calloc(shown, sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		rpt_backtrace(d, t, fr, shown);
	}
	if (!n)
		fputs("      (no backtrace)\n", f);
	for (i = 0; i < shown; i++)
		frame_line(f, &fr[i], "      ");
	if (shown < n)
		fprintf(f, "      ... %zu more frames\n", n - shown);
	if (fr != stack)
		free(fr);
	return 0;
}

static const char *site_name(const struct rpt_data *d, const struct rpt_site *s, char *buf, size_t len)
{
	struct rpt_frame fr;
	uint32_t t;

	if (!rpt_site_traces(d, s, RPT_COST_CALLS, &t, 1, NULL) || !rpt_backtrace(d, t, &fr, 1))
		return "(unknown call site)";
	if (fr.function)
		return fr.function;
	if (fr.module)
		snprintf(buf, len, "0x%" PRIx64 " in %s+0x%" PRIx64, fr.ip, fr.module, fr.offset);
	else
		snprintf(buf, len, "0x%" PRIx64, fr.ip);
	return buf;
}

static int list(FILE *f, const struct rpt_data *d, enum rpt_cost c, const struct rpt_print_options *p)
{
	const struct rpt_site *const *top;
	size_t n, total, i, j, nbt, all;
	uint32_t *bt = NULL;
	char name[512];
	int ret = 0;

	top = rpt_top_sites(d, c, &total);
	n = total < p->top ? total : p->top;
	if (c == RPT_COST_LEAKED && d->sum.attached)
		fputs("\nNOT FREED AT DETACH (allocated while attached, still live)\n", f);
	else
		fprintf(f, "\n%s\n", list_title[c]);
	if (!n)
		fputs("  (none)\n", f);
	for (i = 0; i < n && !ret; i++) {
		const struct rpt_site *s = top[i];
		size_t m;

		nbt = p->backtraces ? p->backtraces : 1;
		if (nbt > s->ntraces)
			nbt = s->ntraces;
		bt = calloc(nbt + 1, sizeof(*bt));
		if (!bt)
			return -ENOMEM;
		m = rpt_site_traces(d, s, c, bt, nbt, &all);

		fprintf(f, "%2zu. ", i + 1);
		cost_line(f, &s->cost, c, d->sum.attached);
		fputs("\n    at ", f);
		rpt_fputs_escaped(site_name(d, s, name, sizeof(name)), f);
		fputs("\n", f);
		for (j = 0; j < m && !ret; j++) {
			fputs("    ", f);
			cost_line(f, &d->trace_cost[bt[j]], c, d->sum.attached);
			fputs(" from:\n", f);
			ret = backtrace(f, d, bt[j], p->max_frames);
		}
		if (all > m)
			fprintf(f, "    and %zu other backtrace%s\n", all - m, all - m > 1 ? "s" : "");
		free(bt);
		bt = NULL;
	}
	if (total > n)
		fprintf(f, "  ... and %zu other call sites\n", total - n);
	return ret;
}

int rpt_write_text(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
{
	unsigned c;
	int ret = 0;

	summary(f, d, p);
	functions(f, d);
	for (c = 0; c < RPT_COST_MAX && !ret; c++)
		ret = list(f, d, (enum rpt_cost)c, p);
	if (ret < 0)
		return ret;
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
