/* tests/unit/check_report.c - unit.report: report computations on recordings made here */
/* SPDX-License-Identifier: MIT */
/*
 * Each recording is written with the recfile writer from known events, so
 * every expected number below is worked out by hand in the comments (the
 * basic recording: check_report.h). Suite "report" here: the numbers,
 * sites, traces and backtraces, sampled estimates; suite "report-render"
 * (check_report_render.c): JSON and text, empty, cut and corrupt
 * recordings, size and function names.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_recs.h"
#include "tests/unit/check_report.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

Suite *report_render_suite(void);

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

static Suite *report_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("report", "core", &tc);

	tcase_add_test(tc, test_basic_numbers);
	tcase_add_loop_test(tc, test_parallel_ranges, 1, 5);
	tcase_add_test(tc, test_traces_and_backtrace);
	tcase_add_test(tc, test_sampled);
	tcase_add_test(tc, test_sampled_ranges);
	tcase_set_timeout(tc, 120);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(report_suite());

	srunner_add_suite(sr, report_render_suite());
	return ck_run(sr);
}
