/* tests/unit/check_report.c - unit.report: report computations on recordings made here */
/* SPDX-License-Identifier: MIT */
/*
 * Each recording is written with the recfile writer from known events, so
 * every expected number below is worked out by hand in the comments.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_recs.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

#define OK(x) ck_assert_int_eq((x), 0)

/*
 * The basic recording.
 *
 *   module /usr/bin/prog at base 0x1000
 *   ips:  I0 0x1100 -> inl_fn a.c:10 (inlined into) fnA a.c:20
 *         I1 0x1200 -> fnB b.c:5
 *         I2 0x1300 -> main m.c:1
 *         I3 0x5555 -> no module, no symbol
 *   traces: T1 = main          T2 = I0 <- T1      T3 = I1 <- T1
 *           T4 = I0 <- T3      T5 = I3 (root)
 *   infos: A0 (100, T2, malloc)  A1 (200, T4, calloc)  A2 (50, T3, malloc)
 *          A3 (1000, T5, realloc) A4 (8, T2, posix_memalign)
 *
 *   events                      heap after
 *    1 alloc A0                  100
 *    2 alloc A0                  200
 *    3 alloc A0                  300
 *    4 free-temp A0              200
 *    5 alloc A1                  400
 *    6 alloc A1                  600
 *    7 alloc A2                  650
 *      tick 1000 ns, rss 4096, index 7
 *    8 alloc A3                 1650   <- peak (8 events applied)
 *    9 free A3                   650
 *   10 free A1                   450
 *   11 free A0                   350
 *   12 alloc A4                  358
 *      tick 2000 ns, rss 8192, index 12
 *
 * flush_every > 0 flushes the writer after that many events, so the
 * events span several chunks (and so several replay ranges).
 */
static void write_basic(const char *path, int flush_every, int close_it)
{
	static const uint8_t bid[] = { 0xde, 0xad, 0xbe, 0xef };
	struct rec_sym a_chain[] = { { "inl_fn", "a.c", 10 }, { "fnA", "a.c", 20 } };
	struct rec_sym b_chain[] = { { "fnB", "b.c", 5 } };
	struct rec_sym m_chain[] = { { "main", "m.c", 1 } };
	uint32_t mod, i0, i1, i2, i3, t1, t2, t3, t4, t5, a[5];
	struct rec_writer *w;
	int err = 0, nev = 0;
	const char *p;

	w = rec_writer_create(path, &err);
	ck_assert_msg(w != NULL, "create: %s", rec_strerror(err));
	OK(rec_put_meta(w, "exe", "/usr/bin/prog"));
	OK(rec_put_meta(w, "command", "/usr/bin/prog --flag"));
	OK(rec_put_meta(w, "pid", "4242"));
	OK(rec_put_meta(w, "attached", "0"));
	OK(rec_put_meta(w, "sample_bytes", "0"));
	OK(rec_put_meta(w, "end_reason", "exit"));
	OK(rec_put_module(w, "/usr/bin/prog", 0x1000, 0x4000, bid, sizeof(bid), &mod));
	OK(rec_put_ip(w, 0x1100, &i0));
	OK(rec_put_ip(w, 0x1200, &i1));
	OK(rec_put_ip(w, 0x1300, &i2));
	OK(rec_put_ip(w, 0x5555, &i3));
	OK(rec_put_symbol(w, i0, mod, a_chain, 2));
	OK(rec_put_symbol(w, i1, mod, b_chain, 1));
	OK(rec_put_symbol(w, i2, mod, m_chain, 1));
	OK(rec_put_symbol(w, i3, REC_NONE, NULL, 0));
	OK(rec_put_trace(w, 0, i2, &t1));
	OK(rec_put_trace(w, t1, i0, &t2));
	OK(rec_put_trace(w, t1, i1, &t3));
	OK(rec_put_trace(w, t3, i0, &t4));
	OK(rec_put_trace(w, 0, i3, &t5));
	ck_assert_uint_eq(t1, 1);
	ck_assert_uint_eq(t5, 5);
	OK(rec_put_allocinfo(w, 100, t2, WIRE_KIND_MALLOC, &a[0]));
	OK(rec_put_allocinfo(w, 200, t4, WIRE_KIND_CALLOC, &a[1]));
	OK(rec_put_allocinfo(w, 50, t3, WIRE_KIND_MALLOC, &a[2]));
	OK(rec_put_allocinfo(w, 1000, t5, WIRE_KIND_REALLOC, &a[3]));
	OK(rec_put_allocinfo(w, 8, t2, WIRE_KIND_POSIX_MEMALIGN, &a[4]));
	/*
	 * The table above, one letter per step: a..e = alloc A0..A4,
	 * F = free-temp A0, f/g/h = free A3/A1/A0, P/T = the two ticks.
	 */
	for (p = "aaaFbbcPdfgheT"; *p; p++) {
		int ev = 1;

		switch (*p) {
		case 'a': case 'b': case 'c': case 'd': case 'e':
			OK(rec_put_alloc(w, a[*p - 'a'], 0));
			break;
		case 'F':
			OK(rec_put_free(w, a[0], 1));
			break;
		case 'f':
			OK(rec_put_free(w, a[3], 0));
			break;
		case 'g':
			OK(rec_put_free(w, a[1], 0));
			break;
		case 'h':
			OK(rec_put_free(w, a[0], 0));
			break;
		case 'P':
			OK(rec_put_tick(w, 1000, 4096));
			ev = 0;
			break;
		case 'T':
			OK(rec_put_tick(w, 2000, 8192));
			ev = 0;
			break;
		}
		nev += ev;
		if (ev && flush_every > 0 && nev % flush_every == 0)
			OK(rec_writer_flush(w));
	}
	if (close_it) {
		OK(rec_writer_close(w));
	} else {
		OK(rec_writer_flush(w));
		rec_writer_abort(w);
	}
}

static struct rpt_data *analyze(struct rec_reader *r, unsigned threads)
{
	struct rpt_options o = { .threads = threads };
	struct rpt_data *d = NULL;

	OK(rpt_analyze(r, &o, &d));
	ck_assert_ptr_nonnull(d);
	return d;
}

static struct rec_reader *open_rec(const char *path)
{
	int err = 0;
	struct rec_reader *r = rec_open(path, &err);

	ck_assert_msg(r != NULL, "open %s: %s", path, rec_strerror(err));
	return r;
}

/*
 * write_basic(flush_every) into ck_tmpdir/name, opened into *r; returns its
 * analysis by threads. The caller frees both (rpt_free, rec_close).
 */
static struct rpt_data *basic_data(const char *name, int flush_every, unsigned threads,
				   struct rec_reader **r)
{
	char path[512];

	ck_tmpdir_path(path, sizeof(path), name);
	write_basic(path, flush_every, 1);
	*r = open_rec(path);
	return analyze(*r, threads);
}

static void check_costs(const struct rpt_costs *c, uint64_t calls, uint64_t bytes, uint64_t peak,
			uint64_t leaked, uint64_t temporary)
{
	ck_assert_uint_eq(c->calls, calls);
	ck_assert_uint_eq(c->bytes, bytes);
	ck_assert_uint_eq(c->peak, peak);
	ck_assert_uint_eq(c->leaked, leaked);
	ck_assert_uint_eq(c->temporary, temporary);
}

/* The ip value of a site */
static uint64_t site_ip(struct rec_reader *r, const struct rpt_site *s)
{
	size_t n;
	const struct rec_ip *ips = rec_ips(r, &n);

	if (s->ip >= n)
		return 0;
	return ips[s->ip].ip;
}

static void check_basic(struct rec_reader *r, struct rpt_data *d)
{
	const struct rpt_summary *s = rpt_get_summary(d);
	const struct rpt_site *const *top;
	size_t n;

	ck_assert_str_eq(s->command, "/usr/bin/prog --flag");
	ck_assert_str_eq(s->exe, "/usr/bin/prog");
	ck_assert_uint_eq(s->pid, 4242);
	ck_assert_int_eq(s->attached, 0);
	ck_assert_int_eq(s->sampled, 0);
	ck_assert_int_eq(s->estimated, 0);
	ck_assert_uint_eq(s->events, 12);
	ck_assert_uint_eq(s->frees, 4);
	/* calls 3+2+1+1+1, bytes 300+400+50+1000+8, leaked A0 100 + A1 200 + A2 50 + A4 8 */
	check_costs(&s->total, 8, 1758, 1650, 358, 1);
	ck_assert_uint_eq(s->total.leaked_calls, 4);
	ck_assert_uint_eq(s->total.temporary_bytes, 100);
	ck_assert_uint_eq(s->total.peak_calls, 6); /* A0 x2, A1 x2, A2, A3 */
	ck_assert_uint_eq(s->peak_event, 8);
	ck_assert_int_eq(s->peak_time_known, 1);
	ck_assert_uint_eq(s->peak_time_ns, 2000); /* first tick at/after event 8 */
	ck_assert_uint_eq(s->peak_rss, 8192);
	ck_assert_uint_eq(s->duration_ns, 2000);

	/* per function */
	check_costs(rpt_function(d, WIRE_KIND_MALLOC), 4, 350, 250, 150, 1);
	check_costs(rpt_function(d, WIRE_KIND_CALLOC), 2, 400, 400, 200, 0);
	check_costs(rpt_function(d, WIRE_KIND_REALLOC), 1, 1000, 1000, 0, 0);
	check_costs(rpt_function(d, WIRE_KIND_POSIX_MEMALIGN), 1, 8, 0, 8, 0);
	check_costs(rpt_function(d, WIRE_KIND_ALIGNED_ALLOC), 0, 0, 0, 0, 0);
	ck_assert_ptr_null(rpt_function(d, WIRE_KIND_MAX + 1));

	/*
	 * Sites: I0 merges T2 (A0, A4) and T4 (A1): calls 6, bytes 708,
	 * peak 200 + 400, leaked 100 + 8 + 200, temporary 1.
	 * I1 (T3: A2): 1, 50, 50, 50, 0. I3 (T5: A3): 1, 1000, 1000, 0, 0.
	 */
	top = rpt_top_sites(d, RPT_COST_CALLS, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(site_ip(r, top[0]), 0x1100);
	check_costs(&top[0]->cost, 6, 708, 600, 308, 1);
	ck_assert_uint_eq(top[0]->ntraces, 2);
	/* tie on calls (1): more bytes first */
	ck_assert_uint_eq(site_ip(r, top[1]), 0x5555);
	check_costs(&top[1]->cost, 1, 1000, 1000, 0, 0);
	ck_assert_uint_eq(site_ip(r, top[2]), 0x1200);
	check_costs(&top[2]->cost, 1, 50, 50, 50, 0);

	top = rpt_top_sites(d, RPT_COST_PEAK, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(site_ip(r, top[0]), 0x5555);
	ck_assert_uint_eq(site_ip(r, top[1]), 0x1100);
	ck_assert_uint_eq(site_ip(r, top[2]), 0x1200);

	top = rpt_top_sites(d, RPT_COST_LEAKED, &n);
	ck_assert_uint_eq(n, 2); /* the realloc site freed everything */
	ck_assert_uint_eq(site_ip(r, top[0]), 0x1100);
	ck_assert_uint_eq(top[0]->cost.leaked, 308);
	ck_assert_uint_eq(site_ip(r, top[1]), 0x1200);

	top = rpt_top_sites(d, RPT_COST_TEMPORARY, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(site_ip(r, top[0]), 0x1100);
}

START_TEST(test_basic_numbers)
{
	struct rec_reader *r;
	struct rpt_data *d = basic_data("basic.htap", 0, 1, &r);

	ck_assert_int_eq(rec_truncated(r), 0);
	check_basic(r, d);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* Several chunks, replayed by 1..4 threads: the same numbers every time. */
START_TEST(test_parallel_ranges)
{
	char path[512];
	struct rec_reader *r;
	unsigned th;

	ck_tmpdir_path(path, sizeof(path), "chunks.htap");
	write_basic(path, _i, 1);
	r = open_rec(path);
	if (_i == 1)
		ck_assert_uint_ge(rec_nevent_chunks(r), 4);
	for (th = 1; th <= 4; th++) {
		struct rpt_data *d = analyze(r, th);

		check_basic(r, d);
		rpt_free(d);
	}
	rec_close(r);
}
END_TEST

START_TEST(test_traces_and_backtrace)
{
	struct rec_reader *r;
	struct rpt_data *d = basic_data("bt.htap", 0, 2, &r);
	const struct rpt_site *const *top;
	struct rpt_frame fr[8];
	uint32_t bt[4];
	size_t n, m;

	top = rpt_top_sites(d, RPT_COST_CALLS, &n);
	/* by calls: T2 (A0 x3 + A4 = 4 calls) before T4 (A1 x2) */
	m = rpt_site_traces(d, top[0], RPT_COST_CALLS, bt, 4, &n);
	ck_assert_uint_eq(m, 2);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(bt[0], 2);
	ck_assert_uint_eq(bt[1], 4);
	ck_assert_uint_eq(rpt_trace_costs(d, 2)->calls, 4);
	ck_assert_uint_eq(rpt_trace_costs(d, 4)->calls, 2);
	/* by leaked: T4 (200) before T2 (108) */
	m = rpt_site_traces(d, top[0], RPT_COST_LEAKED, bt, 1, &n);
	ck_assert_uint_eq(m, 1);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(bt[0], 4);
	/* by temporary: only T2 has any */
	m = rpt_site_traces(d, top[0], RPT_COST_TEMPORARY, bt, 4, &n);
	ck_assert_uint_eq(m, 1);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(bt[0], 2);

	/* T4: I0 (inl_fn inlined, fnA), I1 fnB, I2 main */
	n = rpt_backtrace(d, 4, fr, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(fr[0].function, "inl_fn");
	ck_assert_str_eq(fr[0].file, "a.c");
	ck_assert_uint_eq(fr[0].line, 10);
	ck_assert_int_eq(fr[0].inlined, 1);
	ck_assert_uint_eq(fr[0].ip, 0x1100);
	ck_assert_str_eq(fr[0].module, "/usr/bin/prog");
	ck_assert_uint_eq(fr[0].offset, 0x100);
	ck_assert_str_eq(fr[1].function, "fnA");
	ck_assert_uint_eq(fr[1].line, 20);
	ck_assert_int_eq(fr[1].inlined, 0);
	ck_assert_str_eq(fr[2].function, "fnB");
	ck_assert_str_eq(fr[3].function, "main");
	ck_assert_int_eq(fr[3].inlined, 0);
	/* a short buffer still gives the full count */
	ck_assert_uint_eq(rpt_backtrace(d, 4, fr, 1), 4);
	/* T5: unsymbolized, no module */
	n = rpt_backtrace(d, 5, fr, 8);
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_null(fr[0].function);
	ck_assert_ptr_null(fr[0].module);
	ck_assert_uint_eq(fr[0].ip, 0x5555);
	ck_assert_uint_eq(rpt_backtrace(d, 0, fr, 8), 0);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* A tiny JSON syntax checker: returns the end of one value, or NULL. */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				int i;

				for (i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		int obj = *p == '{';

		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = json_string(json_ws(p));
				if (!p)
					return NULL;
				p = json_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = json_value(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == ',') {
				p++;
				continue;
			}
			return *p == close ? p + 1 : NULL;
		}
	}
	if (*p == '"')
		return json_string(p);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;

		strtod(p, &end);
		return end;
	}
	return NULL;
}

static void check_json_valid(const char *s)
{
	const char *end = json_value(s);

	ck_assert_msg(end != NULL, "invalid JSON:\n%s", s);
	ck_assert_msg(*json_ws(end) == '\0', "trailing bytes after JSON");
}

static char *render(struct rpt_data *d, int json, size_t top)
{
	struct rpt_print_options po = { .path = "x.htap", .top = top, .backtraces = 5, .max_frames = 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	if (json)
		OK(rpt_write_json(f, d, &po));
	else
		OK(rpt_write_text(f, d, &po));
	fclose(f);
	return buf;
}

START_TEST(test_json)
{
	struct rec_reader *r;
	struct rpt_data *d = basic_data("json.htap", 3, 2, &r);
	char *js = render(d, 1, 10);

	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"format\": \"heaptap-report\""));
	ck_assert_ptr_nonnull(strstr(js, "\"command\": \"/usr/bin/prog --flag\""));
	ck_assert_ptr_nonnull(strstr(js, "\"calls\": 8, \"bytes\": 1758, \"peak\": 1650, "
					 "\"peak_calls\": 6, \"leaked\": 358, \"leaked_calls\": 4, "
					 "\"temporary\": 1, \"temporary_bytes\": 100"));
	ck_assert_ptr_nonnull(strstr(js, "\"peak_heap\": 1650, \"peak_event\": 8, \"peak_time_ns\": 2000"));
	ck_assert_ptr_nonnull(strstr(js, "\"malloc\": {\"calls\": 4, \"bytes\": 350,"));
	ck_assert_ptr_nonnull(strstr(js, "\"calloc\": {\"calls\": 2, \"bytes\": 400,"));
	ck_assert_ptr_nonnull(strstr(js, "\"pvalloc\": {\"calls\": 0,"));
	ck_assert_ptr_null(strstr(js, "\"unknown\""));
	/* the first site of "allocations" is 0x1100 with 6 calls, 2 traces */
	ck_assert_ptr_nonnull(strstr(js, "\"allocations\": [\n    {\"ip\": \"0x1100\", \"calls\": 6, "
					 "\"bytes\": 708, \"peak\": 600"));
	ck_assert_ptr_nonnull(strstr(js, "\"traces\": 2, \"frames\": [{\"ip\": \"0x1100\", "
					 "\"function\": \"inl_fn\", \"file\": \"a.c\", \"line\": 10, "
					 "\"module\": \"/usr/bin/prog\", \"offset\": 256, \"inlined\": true}"));
	ck_assert_ptr_nonnull(strstr(js, "{\"ip\": \"0x5555\", \"function\": null, \"file\": null, "
					 "\"line\": 0, \"module\": null, \"offset\": 0, \"inlined\": false}"));
	ck_assert_ptr_nonnull(strstr(js, "\"attached\": false, \"truncated\": false"));
	ck_assert_ptr_nonnull(strstr(js, "\"end_reason\": \"exit\""));
	ck_assert_ptr_nonnull(strstr(js, "{\"ip\": \"0x1200\", \"calls\": 1, \"bytes\": 50"));
	free(js);

	/* -n 1: one site per list */
	js = render(d, 1, 1);
	check_json_valid(js);
	ck_assert_ptr_null(strstr(js, "{\"ip\": \"0x1200\", \"calls\""));
	free(js);
	/* -n 0: empty lists, still valid */
	js = render(d, 1, 0);
	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"allocations\": []"));
	free(js);
	rpt_free(d);
	rec_close(r);
}
END_TEST

START_TEST(test_text)
{
	struct rec_reader *r;
	struct rpt_data *d = basic_data("text.htap", 0, 1, &r);
	char *tx = render(d, 0, 10);

	ck_assert_ptr_nonnull(strstr(tx, "allocation calls       8 "));
	ck_assert_ptr_nonnull(strstr(tx, "recording state        complete, session end: exit\n"));
	ck_assert_ptr_nonnull(strstr(tx, "peak heap              1.6 KiB at 0.000 s"));
	ck_assert_ptr_nonnull(strstr(tx, "temporary allocations  1 (12.5% of calls)"));
	ck_assert_ptr_nonnull(strstr(tx, "leaked at exit         358 B in 4 allocations"));
	ck_assert_ptr_nonnull(strstr(tx, "peak RSS               8.0 KiB"));
	ck_assert_ptr_nonnull(strstr(tx, " 1. 6 calls, 708 B allocated\n    at inl_fn\n"));
	ck_assert_ptr_nonnull(strstr(tx, "inl_fn  a.c:10  (inlined)\n"));
	ck_assert_ptr_nonnull(strstr(tx, "0x5555\n"));
	ck_assert_ptr_nonnull(strstr(tx, "MOST TEMPORARY ALLOCATIONS\n 1. 1 temporary of 6 calls"));
	free(tx);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/*
 * Sampled: one info of size 10; samples of weight 1000 and 500 stand for
 * 100 and 50 calls; one free takes the mean weight 750.
 */
START_TEST(test_sampled)
{
	char path[512];
	struct rec_reader *r;
	struct rpt_data *d;
	const struct rpt_summary *s;

	ck_tmpdir_path(path, sizeof(path), "sampled.htap");
	ck_rec_sampled(path, 5000);
	r = open_rec(path);
	d = analyze(r, 2);
	s = rpt_get_summary(d);
	ck_assert_int_eq(s->sampled, 1);
	ck_assert_int_eq(s->estimated, 1);
	ck_assert_uint_eq(s->sample_bytes, 512);
	ck_assert_uint_eq(s->total.calls, 150);
	ck_assert_uint_eq(s->total.bytes, 1500);
	ck_assert_uint_eq(s->total.peak, 1500);
	ck_assert_uint_eq(s->total.leaked, 750);
	ck_assert_uint_eq(s->total.leaked_calls, 75);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/*
 * Sampled, over several chunks and threads: weights 1000, 500, 300 of one
 * info of size 10 (100 + 50 + 30 calls), three frees of the mean weight
 * 600. Heap: 1000 1500 900 1200 600 0, so the peak is 1500 after event 2,
 * with 2 of 3 samples live (120 calls). Nothing leaks.
 */
START_TEST(test_sampled_ranges)
{
	char path[512];
	struct rec_writer *w;
	struct rec_reader *r;
	uint32_t ip, t, info, mod;
	unsigned th;
	int err = 0;

	ck_tmpdir_path(path, sizeof(path), "sampled2.htap");
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_meta(w, "sample_bytes", "256"));
	OK(rec_put_module(w, "/lib/x.so", 0x10000, 0x1000, NULL, 0, &mod));
	OK(rec_put_ip(w, 0x10010, &ip));
	OK(rec_put_symbol(w, ip, mod, NULL, 0));
	OK(rec_put_trace(w, 0, ip, &t));
	OK(rec_put_allocinfo(w, 10, t, WIRE_KIND_CALLOC, &info));
	OK(rec_put_alloc(w, info, 1000));
	OK(rec_writer_flush(w));
	OK(rec_put_alloc(w, info, 500));
	OK(rec_writer_flush(w));
	OK(rec_put_free(w, info, 0));
	OK(rec_writer_flush(w));
	OK(rec_put_alloc(w, info, 300));
	OK(rec_writer_flush(w));
	OK(rec_put_free(w, info, 1));
	OK(rec_writer_flush(w));
	OK(rec_put_free(w, info, 0));
	OK(rec_writer_close(w));

	r = open_rec(path);
	ck_assert_uint_ge(rec_nevent_chunks(r), 3);
	for (th = 1; th <= 3; th++) {
		struct rpt_data *d = analyze(r, th);
		const struct rpt_summary *s = rpt_get_summary(d);

		ck_assert_int_eq(s->estimated, 1);
		ck_assert_uint_eq(s->total.calls, 180);
		ck_assert_uint_eq(s->total.bytes, 1800);
		ck_assert_uint_eq(s->total.peak, 1500);
		ck_assert_uint_eq(s->peak_event, 2);
		ck_assert_uint_eq(s->total.peak_calls, 120);
		ck_assert_uint_eq(s->total.leaked, 0);
		ck_assert_uint_eq(s->total.leaked_calls, 0);
		ck_assert_uint_eq(s->total.temporary, 60);
		ck_assert_uint_eq(s->total.temporary_bytes, 600);
		ck_assert_uint_eq(rpt_function(d, WIRE_KIND_CALLOC)->calls, 180);
		rpt_free(d);
	}
	rec_close(r);
}
END_TEST

/* Names with quotes, control bytes and bad UTF-8 still give valid JSON. */
START_TEST(test_json_escaping)
{
	char path[512];
	struct rec_writer *w;
	struct rec_reader *r;
	struct rpt_data *d;
	struct rec_sym sym = { "f\"q\\b\nn\tt\x01x\x7f \xc3\xa9 \xff\xc3 end", "dir/\"x\".c", 3 };
	uint32_t ip, t, info, mod;
	int err = 0;
	char *js;

	ck_tmpdir_path(path, sizeof(path), "esc.htap");
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_meta(w, "command", "prog \"arg\""));
	OK(rec_put_module(w, "/lib/\xe2\x82\xac.so", 0x1000, 0x1000, NULL, 0, &mod));
	OK(rec_put_ip(w, 0x1010, &ip));
	OK(rec_put_symbol(w, ip, mod, &sym, 1));
	OK(rec_put_trace(w, 0, ip, &t));
	OK(rec_put_allocinfo(w, 10, t, WIRE_KIND_MALLOC, &info));
	OK(rec_put_alloc(w, info, 0));
	OK(rec_writer_close(w));
	r = open_rec(path);
	d = analyze(r, 1);
	js = render(d, 1, 10);
	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"command\": \"prog \\\"arg\\\"\""));
	ck_assert_ptr_nonnull(strstr(js, "\"function\": \"f\\\"q\\\\b\\nn\\tt\\u0001x\\u007f \xc3\xa9 "
					 "\\ufffd\\ufffd end\""));
	ck_assert_ptr_nonnull(strstr(js, "\"file\": \"dir/\\\"x\\\".c\""));
	ck_assert_ptr_nonnull(strstr(js, "\"module\": \"/lib/\xe2\x82\xac.so\""));
	free(js);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* Empty recording: no events, no ticks. */
START_TEST(test_empty)
{
	char path[512];
	struct rec_writer *w;
	struct rec_reader *r;
	struct rpt_data *d;
	const struct rpt_summary *s;
	size_t n;
	int err = 0;
	char *js, *tx;

	ck_tmpdir_path(path, sizeof(path), "empty.htap");
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_writer_close(w));
	r = open_rec(path);
	d = analyze(r, 0);
	s = rpt_get_summary(d);
	ck_assert_uint_eq(s->total.calls, 0);
	ck_assert_uint_eq(s->total.peak, 0);
	ck_assert_int_eq(s->peak_time_known, 0);
	ck_assert_str_eq(s->command, "");
	rpt_top_sites(d, RPT_COST_CALLS, &n);
	ck_assert_uint_eq(n, 0);
	js = render(d, 1, 10);
	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"peak_time_ns\": null"));
	tx = render(d, 0, 10);
	ck_assert_ptr_nonnull(strstr(tx, "(none)"));
	free(js);
	free(tx);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* Analyze and render whatever opens; must never crash (ASan watches). */
static int try_buffer(const void *buf, size_t len)
{
	struct rec_reader *r;
	struct rpt_data *d = NULL;
	struct rpt_options o = { .threads = 2 };
	int err = 0, truncated;
	char *js, *tx;

	r = rec_open_mem(buf, len, &err);
	if (!r)
		return -1;
	OK(rpt_analyze(r, &o, &d));
	truncated = rpt_get_summary(d)->truncated;
	js = render(d, 1, 10);
	check_json_valid(js);
	tx = render(d, 0, 10);
	free(js);
	free(tx);
	rpt_free(d);
	rec_close(r);
	return truncated;
}

/* A recording cut at every length: truncated or refused, never a crash. */
START_TEST(test_truncated)
{
	char path[512];
	char *buf;
	size_t len, cut;
	int truncated_seen = 0, refused = 0;

	ck_tmpdir_path(path, sizeof(path), "cut.htap");
	write_basic(path, 2, 1);
	buf = (char *)ck_slurp(path, &len);
	ck_assert_int_eq(try_buffer(buf, len), 0);
	for (cut = 0; cut < len; cut++) {
		int t = try_buffer(buf, cut);

		if (t > 0)
			truncated_seen++;
		else if (t < 0)
			refused++;
	}
	ck_assert_int_gt(truncated_seen, 0);
	ck_assert_int_gt(refused, 0); /* at least the empty file */
	free(buf);
}
END_TEST

/* Bytes flipped all over a valid recording. */
START_TEST(test_corrupt)
{
	char path[512];
	unsigned char *buf, *copy;
	size_t len, i;
	unsigned seed = 12345;

	ck_tmpdir_path(path, sizeof(path), "flip.htap");
	write_basic(path, 2, 1);
	buf = (unsigned char *)ck_slurp(path, &len);
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	for (i = 0; i < 3000; i++) {
		size_t k, flips = 1 + (i % 4);

		memcpy(copy, buf, len);
		for (k = 0; k < flips; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % len] ^= (unsigned char)(1u << ((seed >> 4) & 7));
		}
		try_buffer(copy, len);
	}
	/* garbage is not a recording */
	memset(copy, 'x', len);
	ck_assert_int_lt(try_buffer(copy, len), 0);
	free(copy);
	free(buf);
}
END_TEST

START_TEST(test_format_size)
{
	char b[32];

	ck_assert_str_eq(rpt_format_size(0, b, sizeof(b)), "0 B");
	ck_assert_str_eq(rpt_format_size(1023, b, sizeof(b)), "1023 B");
	ck_assert_str_eq(rpt_format_size(1024, b, sizeof(b)), "1.0 KiB");
	ck_assert_str_eq(rpt_format_size(1536, b, sizeof(b)), "1.5 KiB");
	ck_assert_str_eq(rpt_format_size(1048575, b, sizeof(b)), "1.0 MiB");
	ck_assert_str_eq(rpt_format_size(10ull << 20, b, sizeof(b)), "10.0 MiB");
	ck_assert_str_eq(rpt_format_size(5ull << 30, b, sizeof(b)), "5.0 GiB");
	ck_assert_str_eq(rpt_format_size(3ull << 40, b, sizeof(b)), "3.0 TiB");
	ck_assert_str_eq(rpt_function_name(WIRE_KIND_REALLOCARRAY), "reallocarray");
	ck_assert_str_eq(rpt_function_name(WIRE_KIND_PVALLOC), "pvalloc");
	ck_assert_str_eq(rpt_function_name(99), "unknown");
}
END_TEST

static Suite *report_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("report", "core", &tc);

	tcase_add_test(tc, test_basic_numbers);
	tcase_add_loop_test(tc, test_parallel_ranges, 1, 5);
	tcase_add_test(tc, test_traces_and_backtrace);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_json_escaping);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_sampled);
	tcase_add_test(tc, test_sampled_ranges);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_format_size);
	tcase_set_timeout(tc, 120);
	return s;
}

int main(void)
{
	return ck_run_suite(report_suite());
}
