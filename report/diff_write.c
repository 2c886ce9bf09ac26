/* report/diff_write.c - the diff of two recordings as text and as JSON */
/* SPDX-License-Identifier: MIT */
/*
 * Text:
 *
 *   old / new           the two files and their commands
 *   summary table       old, new, change (calls, bytes, peak heap, leaked, ...)
 *   GREW, SHRANK        per call site: the change of bytes, calls, peak and
 *                       leaked with old -> new, then what the site is
 *
 * JSON (stable keys; heaptap-report(1)):
 *
 *   { "format": "heaptap-diff", "version": 1, "old": path, "new": path,
 *     "sorted_by": "bytes", "summary": {"old": {...}, "new": {...}, "change": {...}},
 *     "grew": [site...], "grew_total": N, "shrank": [site...], "shrank_total": N }
 *   site: function file line module offset key [lang kind] in_old in_new old new change
 *         (lang, kind: a foreign frame's, as in the report's frames)
 *
 * Changes are signed integers (new - old); sizes in bytes, times in ns.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/diff_internal.h"
#include "report/internal.h"

#define SZ 32

static const char *const by_name[RPT_DIFF_BY_MAX] = {
	[RPT_DIFF_BYTES] = "bytes",
	[RPT_DIFF_CALLS] = "calls",
	[RPT_DIFF_PEAK] = "peak",
	[RPT_DIFF_LEAKED] = "leaked",
};

static const char *const by_title[RPT_DIFF_BY_MAX] = {
	[RPT_DIFF_BYTES] = "bytes allocated",
	[RPT_DIFF_CALLS] = "allocation calls",
	[RPT_DIFF_PEAK] = "memory at the heap peak",
	[RPT_DIFF_LEAKED] = "leaked memory",
};

/* new - old as a signed number (saturated) */
static int64_t delta(uint64_t old, uint64_t new)
{
	if (new >= old)
		return new - old > INT64_MAX ? INT64_MAX : (int64_t)(new - old);
	return old - new > INT64_MAX ? -INT64_MAX : -(int64_t)(old - new);
}

/* "+1.5 KiB", "-200 B", "0 B" */
static char *signed_size(int64_t d, char *buf, size_t len)
{
	char tmp[SZ - 8]; /* room for the sign: rpt_format_size needs at most 12 */

	rpt_format_size(d < 0 ? (uint64_t)-d : (uint64_t)d, tmp, sizeof(tmp));
	snprintf(buf, len, "%s%s", d > 0 ? "+" : d < 0 ? "-" : "", tmp);
	return buf;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p;
}

static void text_row_size(FILE *f, const char *name, uint64_t o, uint64_t n)
{
	char a[SZ], b[SZ], c[SZ];

	fprintf(f, "%-22s %14s %14s %14s\n", name, rpt_format_size(o, a, SZ), rpt_format_size(n, b, SZ),
		signed_size(delta(o, n), c, SZ));
}

static void text_row_count(FILE *f, const char *name, uint64_t o, uint64_t n)
{
	fprintf(f, "%-22s %14" PRIu64 " %14" PRIu64 " %+14" PRId64 "\n", name, o, n, delta(o, n));
}

static void text_summary(FILE *f, const struct rpt_diff *df, const struct rpt_diff_print *p)
{
	const struct rpt_summary *o = &rpt_diff_side(df, 0)->sum, *n = &rpt_diff_side(df, 1)->sum;

	fputs("old                    ", f);
	rpt_fputs_escaped(p->old_path ? p->old_path : "-", f);
	fputs(" (", f);
	rpt_fputs_escaped(o->command, f);
	fputs(")\nnew                    ", f);
	rpt_fputs_escaped(p->new_path ? p->new_path : "-", f);
	fputs(" (", f);
	rpt_fputs_escaped(n->command, f);
	fputs(")\n", f);
	if (o->estimated || n->estimated)
		fputs("sampling               numbers of a sampled recording are estimates\n", f);
	fprintf(f, "\n%-22s %14s %14s %14s\n", "", "old", "new", "change");
	text_row_count(f, "allocation calls", o->total.calls, n->total.calls);
	text_row_size(f, "total allocated", o->total.bytes, n->total.bytes);
	text_row_size(f, "peak heap", o->total.peak, n->total.peak);
	text_row_size(f, "leaked", o->total.leaked, n->total.leaked);
	text_row_count(f, "leaked allocations", o->total.leaked_calls, n->total.leaked_calls);
	text_row_count(f, "temporary allocations", o->total.temporary, n->total.temporary);
	text_row_size(f, "peak RSS", o->peak_rss, n->peak_rss);
	fprintf(f, "%-22s %12.3f s %12.3f s %+12.3f s\n", "duration", (double)o->duration_ns / 1e9,
		(double)n->duration_ns / 1e9,
		((double)n->duration_ns - (double)o->duration_ns) / 1e9);
}

static void text_site(FILE *f, const struct rpt_diff_site *s)
{
	char a[SZ], b[SZ], c[SZ];

	fprintf(f, "  bytes %s (%s -> %s), calls %+" PRId64 " (%" PRIu64 " -> %" PRIu64 ")",
		signed_size(delta(s->old.bytes, s->new.bytes), a, SZ), rpt_format_size(s->old.bytes, b, SZ),
		rpt_format_size(s->new.bytes, c, SZ), delta(s->old.calls, s->new.calls), s->old.calls,
		s->new.calls);
	fprintf(f, ", peak %s", signed_size(delta(s->old.peak, s->new.peak), a, SZ));
	fprintf(f, ", leaked %s\n", signed_size(delta(s->old.leaked, s->new.leaked), a, SZ));
	/* names come from the targets: escaped (rpt_escape) */
	fputs("      ", f);
	if (s->function) {
		rpt_fputs_escaped(s->function, f);
	} else if (s->module) {
		rpt_fputs_escaped(base_name(s->module), f);
		fprintf(f, "+0x%" PRIx64, s->offset);
	} else {
		rpt_fputs_escaped(s->key, f);
	}
	if (s->file) {
		fputs(" (", f);
		rpt_fputs_escaped(s->file, f);
		fprintf(f, ":%u)", s->line);
	}
	if (s->function && s->module) {
		fputs(" in ", f);
		rpt_fputs_escaped(base_name(s->module), f);
	}
	if (s->xframe) {
		const char *k = rpt_xkind_mark(s->xkind);

		fprintf(f, " [%s%s%s]", rpt_lang_name(s->lang), k ? ", " : "", k ? k : "");
	}
	if (!s->in_old)
		fputs(" [new]", f);
	else if (!s->in_new)
		fputs(" [gone]", f);
	fputs("\n", f);
}

static void text_list(FILE *f, const char *title, enum rpt_diff_by by,
		      const struct rpt_diff_site *const *v, size_t n, size_t top)
{
	fprintf(f, "\n%s (by %s): %zu call site%s\n", title, by_title[by], n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n && i < top; i++)
		text_site(f, v[i]);
	if (n > top)
		fprintf(f, "  and %zu more\n", n - top);
}

int rpt_write_diff_text(FILE *f, const struct rpt_diff *df, const struct rpt_diff_print *p)
{
	const struct rpt_diff_site *const *v;
	enum rpt_diff_by by = rpt_diff_sorted_by(df);
	size_t n;

	text_summary(f, df, p);
	v = rpt_diff_grew(df, &n);
	text_list(f, "GREW", by, v, n, p->top);
	v = rpt_diff_shrank(df, &n);
	text_list(f, "SHRANK", by, v, n, p->top);
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

static void json_costs(FILE *f, const struct rpt_costs *c)
{
	fprintf(f,
		"{\"calls\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"peak\": %" PRIu64
		", \"peak_calls\": %" PRIu64 ", \"leaked\": %" PRIu64 ", \"leaked_calls\": %" PRIu64
		", \"temporary\": %" PRIu64 ", \"temporary_bytes\": %" PRIu64 "}",
		c->calls, c->bytes, c->peak, c->peak_calls, c->leaked, c->leaked_calls, c->temporary,
		c->temporary_bytes);
}

static void json_change(FILE *f, const struct rpt_costs *o, const struct rpt_costs *n)
{
	fprintf(f,
		"{\"calls\": %" PRId64 ", \"bytes\": %" PRId64 ", \"peak\": %" PRId64
		", \"peak_calls\": %" PRId64 ", \"leaked\": %" PRId64 ", \"leaked_calls\": %" PRId64
		", \"temporary\": %" PRId64 ", \"temporary_bytes\": %" PRId64,
		delta(o->calls, n->calls), delta(o->bytes, n->bytes), delta(o->peak, n->peak),
		delta(o->peak_calls, n->peak_calls), delta(o->leaked, n->leaked),
		delta(o->leaked_calls, n->leaked_calls), delta(o->temporary, n->temporary),
		delta(o->temporary_bytes, n->temporary_bytes));
}

static void json_side(FILE *f, const struct rpt_summary *s)
{
	fputs("{\"command\": ", f);
	rpt_json_string(f, s->command);
	fprintf(f, ", \"duration_ns\": %" PRIu64 ", \"peak_rss\": %" PRIu64 ", \"estimated\": %s, \"costs\": ",
		s->duration_ns, s->peak_rss, s->estimated ? "true" : "false");
	json_costs(f, &s->total);
	fputs("}", f);
}

static void json_site(FILE *f, const struct rpt_diff_site *s)
{
	fputs("    {\"function\": ", f);
	rpt_json_string(f, s->function);
	fputs(", \"file\": ", f);
	rpt_json_string(f, s->file);
	fprintf(f, ", \"line\": %u, \"module\": ", s->line);
	rpt_json_string(f, s->module);
	fprintf(f, ", \"offset\": %" PRIu64 ", \"key\": ", s->module ? s->offset : 0);
	rpt_json_string(f, s->key);
	if (s->xframe) {
		fprintf(f, ", \"lang\": \"%s\", \"kind\": ", rpt_lang_name(s->lang));
		rpt_json_string(f, rpt_xkind_name(s->xkind));
	}
	fprintf(f, ", \"in_old\": %s, \"in_new\": %s,\n      \"old\": ", s->in_old ? "true" : "false",
		s->in_new ? "true" : "false");
	json_costs(f, &s->old);
	fputs(",\n      \"new\": ", f);
	json_costs(f, &s->new);
	fputs(",\n      \"change\": ", f);
	json_change(f, &s->old, &s->new);
	fputs("}}", f);
}

static void json_list(FILE *f, const char *key, const struct rpt_diff_site *const *v, size_t n,
		      size_t top)
{
	size_t i;

	fprintf(f, "  \"%s\": [", key);
	for (i = 0; i < n && i < top; i++) {
		fputs(i ? ",\n" : "\n", f);
		json_site(f, v[i]);
	}
	fprintf(f, "%s],\n  \"%s_total\": %zu", i ? "\n  " : "", key, n);
}

int rpt_write_diff_json(FILE *f, const struct rpt_diff *df, const struct rpt_diff_print *p)
{
	const struct rpt_summary *o = &rpt_diff_side(df, 0)->sum, *n = &rpt_diff_side(df, 1)->sum;
	const struct rpt_diff_site *const *v;
	size_t nv;

	fputs("{\n  \"format\": \"heaptap-diff\", \"version\": 1, \"old\": ", f);
	rpt_json_string(f, p->old_path);
	fputs(", \"new\": ", f);
	rpt_json_string(f, p->new_path);
	fprintf(f, ", \"sorted_by\": \"%s\",\n  \"summary\": {\n    \"old\": ", by_name[rpt_diff_sorted_by(df)]);
	json_side(f, o);
	fputs(",\n    \"new\": ", f);
	json_side(f, n);
	fputs(",\n    \"change\": ", f);
	json_change(f, &o->total, &n->total);
	fprintf(f, ", \"peak_rss\": %" PRId64 ", \"duration_ns\": %" PRId64 "}},\n",
		delta(o->peak_rss, n->peak_rss), delta(o->duration_ns, n->duration_ns));
	v = rpt_diff_grew(df, &nv);
	json_list(f, "grew", v, nv, p->top);
	fputs(",\n", f);
	v = rpt_diff_shrank(df, &nv);
	json_list(f, "shrank", v, nv, p->top);
	fputs("\n}\n", f);
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
