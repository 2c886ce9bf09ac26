/* tests/sample/check_sample_report.c - the analysis calibrates a sampled recording to its exact site counts */
/* SPDX-License-Identifier: MIT */
/*
 * A recording written with recfile's writer: two stacks end at site A
 * (exact: 10000 calls, 131072 bytes), whose four samples weigh 65536 bytes
 * (4096 calls) each; site B (exact: 3 calls, 4096 bytes) has no sample; one
 * unweighted allocation of 100 bytes (full tracing) at a third site. After
 * rpt_analyze:
 *   - site A's calls and bytes are its exact ones, shared 1:3 by its stacks;
 *   - site B is a site with one trace of its own (parent: the root) and its
 *     exact calls and bytes, nothing at the peak;
 *   - the unweighted allocation is unchanged;
 *   - the heap curve uses the calibrated weights (peak 98304, not 196608),
 *     and the peak carries the ratio estimate's standard error;
 *   - the same recording without site counts keeps the raw estimates.
 */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "recfile/recfile.h"
#include "report/report.h"

#define OK(x) ck_assert_int_eq((x), 0)

static char path[sizeof(ck_tmpdir) + 32];

static void write_rec(int with_sites)
{
	struct rec_writer *w;
	uint32_t ip_a, ip_b, ip_main, ip_other, ip_full, t1, t2, t3, t4, t5, i0, i1, i2;
	int err = 0;

	snprintf(path, sizeof(path), "%s/s%d.htap", ck_tmpdir, with_sites);
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_meta(w, "exe", "/usr/bin/prog"));
	OK(rec_put_meta(w, "sample_bytes", "65536"));
	OK(rec_put_meta(w, "sampled", "1"));
	OK(rec_put_ip(w, 0x401234, &ip_a));
	OK(rec_put_ip(w, 0x405678, &ip_b));
	OK(rec_put_ip(w, 0x400100, &ip_main));
	OK(rec_put_ip(w, 0x400200, &ip_other));
	OK(rec_put_ip(w, 0x407000, &ip_full));
	OK(rec_put_trace(w, 0, ip_main, &t1));
	OK(rec_put_trace(w, t1, ip_a, &t2));
	OK(rec_put_trace(w, 0, ip_other, &t3));
	OK(rec_put_trace(w, t3, ip_a, &t4));
	OK(rec_put_trace(w, t1, ip_full, &t5));
	OK(rec_put_allocinfo(w, 16, t2, 1, &i0));
	OK(rec_put_allocinfo(w, 16, t4, 1, &i1));
	OK(rec_put_allocinfo(w, 100, t5, 1, &i2));
	OK(rec_put_alloc(w, i0, 65536));
	OK(rec_put_free(w, i0, 0));
	OK(rec_put_alloc(w, i1, 65536));
	OK(rec_put_alloc(w, i1, 65536));
	OK(rec_put_alloc(w, i1, 65536));
	OK(rec_put_free(w, i1, 0));
	OK(rec_put_alloc(w, i2, 0));
	if (with_sites) {
		OK(rec_put_site_count(w, ip_a, 6000, 100000));
		OK(rec_put_site_count(w, ip_b, 3, 4096));
		OK(rec_put_site_count(w, ip_a, 4000, 31072)); /* a site may come twice: added */
	}
	OK(rec_writer_close(w));
}

/* The site whose innermost frame is at address ip, from the list sorted by calls. */
static const struct rpt_site *site_at(const struct rpt_data *d, uint64_t ip)
{
	size_t n, i;
	const struct rpt_site *const *s = rpt_top_sites(d, RPT_COST_CALLS, &n);
	struct rpt_frame f;

	for (i = 0; i < n; i++) {
		uint32_t t;
		size_t total;

		if (rpt_site_traces(d, s[i], RPT_COST_CALLS, &t, 1, &total) != 1)
			continue;
		if (rpt_backtrace(d, t, &f, 1) >= 1 && f.ip == ip)
			return s[i];
	}
	return NULL;
}

static struct rpt_data *analyze(struct rec_reader **r)
{
	struct rpt_data *d = NULL;
	struct rpt_options opt = { .threads = 1 };
	int err = 0;

	*r = rec_open(path, &err);
	ck_assert_msg(*r, "rec_open: %s", rec_strerror(err));
	OK(rpt_analyze(*r, &opt, &d));
	return d;
}

START_TEST(calibrated)
{
	struct rec_reader *r;
	struct rpt_data *d;
	const struct rpt_summary *s;
	const struct rpt_site *a, *b, *full;
	uint32_t tr[4];
	size_t n, total;
	struct rpt_frame f[4];
	double se;

	write_rec(1);
	d = analyze(&r);
	s = rpt_get_summary(d);
	ck_assert(s->estimated);
	a = site_at(d, 0x401234);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->cost.bytes, 131072);
	ck_assert_uint_eq(a->cost.calls, 10000);
	ck_assert_uint_eq(a->ntraces, 2);
	n = rpt_site_traces(d, a, RPT_COST_CALLS, tr, 4, &total);
	ck_assert_uint_eq(n, 2);
	/* the stack with three samples first */
	ck_assert_uint_eq(rpt_trace_costs(d, tr[0])->bytes, 98304);
	ck_assert_uint_eq(rpt_trace_costs(d, tr[0])->calls, 7500);
	ck_assert_uint_eq(rpt_trace_costs(d, tr[1])->bytes, 32768);
	ck_assert_uint_eq(rpt_trace_costs(d, tr[1])->calls, 2500);
	/* two of three blocks of the second stack live at the end */
	ck_assert_uint_eq(rpt_trace_costs(d, tr[0])->leaked, 65536);

	b = site_at(d, 0x405678);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(b->cost.calls, 3);
	ck_assert_uint_eq(b->cost.bytes, 4096);
	ck_assert_uint_eq(b->cost.peak, 0);
	ck_assert_uint_eq(b->ntraces, 1);
	ck_assert_uint_eq(rpt_site_traces(d, b, RPT_COST_CALLS, tr, 1, &total), 1);
	ck_assert_uint_eq(rpt_backtrace(d, tr[0], f, 4), 1); /* the site alone */

	full = site_at(d, 0x407000);
	ck_assert_ptr_nonnull(full);
	ck_assert_uint_eq(full->cost.bytes, 100);
	ck_assert_uint_eq(full->cost.calls, 1);

	ck_assert_uint_eq(s->total.bytes, 131072 + 4096 + 100);
	ck_assert_uint_eq(s->total.calls, 10000 + 3 + 1);
	ck_assert_uint_eq(s->total.peak, 3 * 32768);
	/*
	 * the ratio estimate's error: site A has 3 of its 4 samples (32768
	 * calibrated bytes, 16 each) live at the peak, R = 3/4:
	 * sqrt(w (w - 16) (3 (1 - R)^2 + 1 R^2))
	 */
	se = sqrt(32768.0 * (32768 - 16) * (3 * 0.0625 + 0.5625));
	ck_assert_uint_ge(s->peak_stderr, (uint64_t)(se - 2));
	ck_assert_uint_le(s->peak_stderr, (uint64_t)(se + 2));
	rpt_free(d);
	rec_close(r);
}
END_TEST

START_TEST(raw_without_site_counts)
{
	struct rec_reader *r;
	struct rpt_data *d;
	const struct rpt_site *a;
	const struct rpt_summary *s;

	write_rec(0);
	d = analyze(&r);
	s = rpt_get_summary(d);
	a = site_at(d, 0x401234);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->cost.bytes, 4 * 65536);
	ck_assert_uint_eq(a->cost.calls, 4 * 4096);
	ck_assert_ptr_null(site_at(d, 0x405678));
	ck_assert_uint_eq(s->total.peak, 3 * 65536);
	/* the plain estimate's error: three live samples, sqrt(3 w (w - 16)) */
	ck_assert_uint_eq(s->peak_stderr, (uint64_t)(sqrt(3.0 * 65536 * (65536 - 16)) + 0.5));
	rpt_free(d);
	rec_close(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sample_report");
	TCase *tc = tcase_create("calibration");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, calibrated);
	tcase_add_test(tc, raw_without_site_counts);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
