/* report/json.c - the report as one JSON object */
/* SPDX-License-Identifier: MIT */
/*
 * Schema (stable key names; heaptap-report(1) and docs/report.md document
 * it). Bytes and counts are integers; times are nanoseconds.
 *
 *   { "format": "heaptap-report", "version": 1, "file": ...,
 *     "summary": { ... },
 *     "functions": { "malloc": costs, "calloc": costs, ... },
 *     "allocations": [site...],  "peak": [site...],
 *     "leaked": [site...],       "temporary": [site...] }
 *
 *   costs: calls bytes peak peak_calls leaked leaked_calls temporary
 *          temporary_bytes
 *   site:  costs + "ip" + "traces" + "frames" + "backtraces"
 *   frame: ip function file line module offset inlined [lang kind [tier]]
 *          (lang and kind only for a foreign frame: "java", "python" or
 *          "foreign"; "interpreted", "compiled", "inlined", "native" or null;
 *          tier "C1" or "C2" for a compiled or inlined frame whose JIT is known)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "report/internal.h"

/* Length of a valid UTF-8 sequence at s, 0 if s does not start one. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if (s[0] == 0xe0 && s[1] < 0xa0)
			return 0; /* overlong */
		if (s[0] == 0xed && s[1] > 0x9f)
			return 0; /* surrogate */
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

/* 1 for a byte that goes out as it is */
static int plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/*
 * s as a JSON string (NULL as null); bytes that are not UTF-8 become
 * U+FFFD. Runs of plain bytes go out in one fwrite (putc per byte was most
 * of the time of a big report).
 */
void rpt_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	putc('"', f);
	while (*p) {
		const unsigned char *run = p;
		unsigned char c;
		size_t n;

		while (plain(*p))
			p++;
		if (p > run)
			fwrite(run, 1, (size_t)(p - run), f);
		c = *p;
		if (!c)
			break;
		if (c == '"' || c == '\\') {
			putc('\\', f);
			putc(c, f);
			p++;
		} else if (c == '\n') {
			fputs("\\n", f);
			p++;
		} else if (c == '\t') {
			fputs("\\t", f);
			p++;
		} else if (c < 0x80) {
			fprintf(f, "\\u%04x", c);
			p++;
		} else if ((n = utf8_len(p)) != 0) {
			fwrite(p, 1, n, f);
			p += n;
		} else {
			fputs("\\ufffd", f);
			p++;
		}
	}
	putc('"', f);
}

static void costs(FILE *f, const struct rpt_costs *c)
{
	fprintf(f,
		"\"calls\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"peak\": %" PRIu64
		", \"peak_calls\": %" PRIu64 ", \"leaked\": %" PRIu64 ", \"leaked_calls\": %" PRIu64
		", \"temporary\": %" PRIu64 ", \"temporary_bytes\": %" PRIu64,
		c->calls, c->bytes, c->peak, c->peak_calls, c->leaked, c->leaked_calls, c->temporary,
		c->temporary_bytes);
}

static int frames(FILE *f, const struct rpt_data *d, uint32_t t)
{
	struct rpt_frame stack[64], *fr = stack;
	size_t n, i;

	n = rpt_backtrace(d, t, stack, 64);
	if (n > 64) {
		fr = calloc(n, sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		n = rpt_backtrace(d, t, fr, n);
	}
	fputs("\"frames\": [", f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s{\"ip\": \"0x%" PRIx64 "\", \"function\": ", i ? ", " : "", fr[i].ip);
		rpt_json_string(f, fr[i].function);
		fputs(", \"file\": ", f);
		rpt_json_string(f, fr[i].file);
		fprintf(f, ", \"line\": %u, \"module\": ", fr[i].line);
		rpt_json_string(f, fr[i].module);
		fprintf(f, ", \"offset\": %" PRIu64 ", \"inlined\": %s", fr[i].module ? fr[i].offset : 0,
			fr[i].inlined ? "true" : "false");
		if (fr[i].xframe) {
			/* a foreign frame: its language and kind (null: not known) */
			fprintf(f, ", \"lang\": \"%s\", \"kind\": ", rpt_lang_name(fr[i].lang));
			rpt_json_string(f, rpt_xkind_name(fr[i].xkind));
			if (rpt_xkind_tier(fr[i].xkind))
				fprintf(f, ", \"tier\": \"%s\"", rpt_xkind_tier(fr[i].xkind));
		}
		fputs("}", f);
	}
	fputs("]", f);
	if (fr != stack)
		free(fr);
	return 0;
}

static int site(FILE *f, const struct rpt_data *d, const struct rpt_site *s, enum rpt_cost c,
		size_t nbt)
{
	uint32_t *bt;
	size_t n, i;
	int ret = 0;

	if (nbt > s->ntraces)
		nbt = s->ntraces;
	bt = calloc(nbt + 1, sizeof(*bt));
	if (!bt)
		return -ENOMEM;
	n = rpt_site_traces(d, s, c, bt, nbt, NULL);
	fputs("    {", f);
	if (s->ip < d->nips)
		fprintf(f, "\"ip\": \"0x%" PRIx64 "\", ", d->ips[s->ip].ip);
	else
		fputs("\"ip\": null, ", f);
	costs(f, &s->cost);
	fprintf(f, ", \"traces\": %u, ", s->ntraces);
	ret = frames(f, d, n ? bt[0] : 0);
	if (ret < 0)
		goto out;
	fputs(", \"backtraces\": [", f);
	for (i = 0; i < n; i++) {
		fputs(i ? ", {" : "{", f);
		costs(f, &d->trace_cost[bt[i]]);
		fputs(", ", f);
		ret = frames(f, d, bt[i]);
		if (ret < 0)
			goto out;
		fputs("}", f);
	}
	fputs("]}", f);
out:
	free(bt);
	return ret;
}

static int list(FILE *f, const struct rpt_data *d, const char *key, enum rpt_cost c,
		const struct rpt_print_options *p, int last)
{
	const struct rpt_site *const *top;
	size_t n, i;
	int ret;

	top = rpt_top_sites(d, c, &n);
	if (n > p->top)
		n = p->top;
	fprintf(f, "  \"%s\": [", key);
	for (i = 0; i < n; i++) {
		fputs(i ? ",\n" : "\n", f);
		ret = site(f, d, top[i], c, p->backtraces ? p->backtraces : 1);
		if (ret < 0)
			return ret;
	}
	fprintf(f, "%s]%s\n", n ? "\n  " : "", last ? "" : ",");
	return 0;
}

static void summary(FILE *f, const struct rpt_data *d)
{
	const struct rpt_summary *s = &d->sum;
	double secs = (double)s->duration_ns / 1e9;

	fputs("  \"summary\": {\"command\": ", f);
	rpt_json_string(f, s->command);
	fputs(", \"exe\": ", f);
	rpt_json_string(f, s->exe);
	fprintf(f, ", \"pid\": %" PRIu64 ",\n    \"duration_ns\": %" PRIu64 ", \"events\": %" PRIu64
		", \"dropped_events\": %" PRIu64 ", \"frees\": %" PRIu64 ",\n    ",
		s->pid, s->duration_ns, s->events, s->dropped_events, s->frees);
	costs(f, &s->total);
	fprintf(f, ",\n    \"calls_per_second\": %.1f, \"temporary_percent\": %.2f,\n",
		secs > 0 ? (double)s->total.calls / secs : 0.0,
		s->total.calls ? 100.0 * (double)s->total.temporary / (double)s->total.calls : 0.0);
	fprintf(f, "    \"peak_heap\": %" PRIu64 ", \"peak_event\": %" PRIu64 ", \"peak_time_ns\": ",
		s->total.peak, s->peak_event);
	if (s->peak_time_known)
		fprintf(f, "%" PRIu64, s->peak_time_ns);
	else
		fputs("null", f);
	fprintf(f, ", \"peak_heap_stderr\": %" PRIu64 ", \"peak_rss\": %" PRIu64 ",\n", s->peak_stderr,
		s->peak_rss);
	fprintf(f, "    \"attached\": %s, \"truncated\": %s, \"truncated_reason\": ",
		s->attached ? "true" : "false", s->truncated ? "true" : "false");
	rpt_json_string(f, s->truncated ? rec_strerror(s->truncated) : NULL);
	fputs(", \"end_reason\": ", f);
	rpt_json_string(f, s->end_reason);
	fprintf(f, ", \"sampled\": %s, \"estimated\": %s, \"sample_bytes\": %" PRIu64 ",\n",
		s->sampled ? "true" : "false", s->estimated ? "true" : "false", s->sample_bytes);
	fprintf(f, "    \"site_counts\": %s, \"exact_calls\": %" PRIu64 ", \"exact_bytes\": %" PRIu64
		",\n", s->site_counts ? "true" : "false", s->exact_calls, s->exact_bytes);
	fprintf(f, "    \"cut_traces\": %" PRIu64 ", \"cut_calls\": %" PRIu64 "},\n", d->cut_traces,
		d->cut_calls);
}

int rpt_write_json(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
{
	unsigned k;
	int ret, first = 1;

	fputs("{\n  \"format\": \"heaptap-report\", \"version\": 1, \"file\": ", f);
	rpt_json_string(f, p->path);
	fputs(",\n", f);
	summary(f, d);
	fputs("  \"functions\": {", f);
	for (k = 1; k <= WIRE_KIND_MAX + 1; k++) {
		unsigned kind = k <= WIRE_KIND_MAX ? k : 0;
		const struct rpt_costs *c = &d->funcs[kind];

		/* kind 0 ("unknown") only when some allocation had it */
		if (kind == 0 && !c->calls && !c->bytes)
			continue;
		fprintf(f, "%s\n    \"%s\": {", first ? "" : ",", rpt_function_name(kind));
		costs(f, c);
		fputs("}", f);
		first = 0;
	}
	fputs("\n  },\n", f);
	ret = list(f, d, "allocations", RPT_COST_CALLS, p, 0);
	if (!ret)
		ret = list(f, d, "peak", RPT_COST_PEAK, p, 0);
	if (!ret)
		ret = list(f, d, "leaked", RPT_COST_LEAKED, p, 0);
	if (!ret)
		ret = list(f, d, "temporary", RPT_COST_TEMPORARY, p, 1);
	fputs("}\n", f);
	if (ret < 0)
		return ret;
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
