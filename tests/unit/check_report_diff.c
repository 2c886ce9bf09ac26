/* tests/unit/check_report_diff.c - unit.report_diff: matching call sites of two recordings */
/* SPDX-License-Identifier: MIT */
/*
 * Two recordings of "the same program" written here, loaded at different
 * bases (as ASLR does), with known costs per site, so every change below is
 * worked out by hand.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

#define OK(x) ck_assert_int_eq((x), 0)

/*
 * A recording of module /x/prog at base:
 *   ip base+0x100: grow() g.c:10     allocates n_grow x 100 bytes, all leaked
 *   ip base+0x180: grow() g.c:10     (a second call on the same line) 1 x 100, freed
 *   ip base+0x200: same() s.c:5      2 x 50, freed
 *   ip base+0x300: no symbol         n_raw x 10, freed
 *   only_old: ip base+0x400 old() o.c:1, 1 x 7, leaked
 */
static void write_rec(const char *path, uint64_t base, int n_grow, int n_raw, int only_old)
{
	struct rec_sym g = { "grow", "g.c", 10 }, s = { "same", "s.c", 5 }, o = { "old", "o.c", 1 };
	uint32_t mod, ig, ig2, is, ir, io, tg, tg2, ts, tr, to, ag, ag2, as, ar, ao;
	struct rec_writer *w;
	int err = 0, i;

	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_module(w, "/x/prog", base, 0x1000, NULL, 0, &mod));
	OK(rec_put_ip(w, base + 0x100, &ig));
	OK(rec_put_ip(w, base + 0x180, &ig2));
	OK(rec_put_ip(w, base + 0x200, &is));
	OK(rec_put_ip(w, base + 0x300, &ir));
	OK(rec_put_ip(w, base + 0x400, &io));
	OK(rec_put_symbol(w, ig, mod, &g, 1));
	OK(rec_put_symbol(w, ig2, mod, &g, 1));
	OK(rec_put_symbol(w, is, mod, &s, 1));
	OK(rec_put_symbol(w, ir, mod, NULL, 0));
	OK(rec_put_symbol(w, io, mod, &o, 1));
	OK(rec_put_trace(w, 0, ig, &tg));
	OK(rec_put_trace(w, 0, ig2, &tg2));
	OK(rec_put_trace(w, 0, is, &ts));
	OK(rec_put_trace(w, 0, ir, &tr));
	OK(rec_put_trace(w, 0, io, &to));
	OK(rec_put_allocinfo(w, 100, tg, WIRE_KIND_MALLOC, &ag));
	OK(rec_put_allocinfo(w, 100, tg2, WIRE_KIND_MALLOC, &ag2));
	OK(rec_put_allocinfo(w, 50, ts, WIRE_KIND_MALLOC, &as));
	OK(rec_put_allocinfo(w, 10, tr, WIRE_KIND_MALLOC, &ar));
	OK(rec_put_allocinfo(w, 7, to, WIRE_KIND_MALLOC, &ao));
	for (i = 0; i < n_grow; i++)
		OK(rec_put_alloc(w, ag, 0));
	OK(rec_put_alloc(w, ag2, 0));
	OK(rec_put_free(w, ag2, 0));
	for (i = 0; i < 2; i++) {
		OK(rec_put_alloc(w, as, 0));
		OK(rec_put_free(w, as, 0));
	}
	for (i = 0; i < n_raw; i++) {
		OK(rec_put_alloc(w, ar, 0));
		OK(rec_put_free(w, ar, 0));
	}
	if (only_old)
		OK(rec_put_alloc(w, ao, 0));
	OK(rec_writer_close(w));
}

struct side {
	struct rec_reader *r;
	struct rpt_data *d;
};

static void load(struct side *s, const char *name, uint64_t base, int n_grow, int n_raw, int only_old)
{
	struct rpt_options o = { .threads = 1 };
	char path[512];
	int err = 0;

	snprintf(path, sizeof(path), "%s/%s", ck_tmpdir, name);
	write_rec(path, base, n_grow, n_raw, only_old);
	s->r = rec_open(path, &err);
	ck_assert_ptr_nonnull(s->r);
	OK(rpt_analyze(s->r, &o, &s->d));
}

static void unload(struct side *s)
{
	rpt_free(s->d);
	rec_close(s->r);
}

START_TEST(test_match_and_sort)
{
	struct side o, n;
	struct rpt_diff *df = NULL;
	const struct rpt_diff_site *const *g, *const *s;
	size_t ng, ns;

	/* old: grow 2 (+1 freed on the same line), raw 5, old() present; new: grow 6, raw 1 */
	load(&o, "old.htap", 0x555500000000, 2, 5, 1);
	load(&n, "new.htap", 0x7f0000000000, 6, 1, 0);
	OK(rpt_diff_new(o.d, n.d, RPT_DIFF_BYTES, &df));
	g = rpt_diff_grew(df, &ng);
	s = rpt_diff_shrank(df, &ns);

	/* grow(): both ips of g.c:10 add up: 3 -> 7 calls, 300 -> 700 bytes, 200 -> 600 leaked */
	ck_assert_uint_eq(ng, 1);
	ck_assert_str_eq(g[0]->function, "grow");
	ck_assert_str_eq(g[0]->file, "g.c");
	ck_assert_uint_eq(g[0]->line, 10);
	ck_assert_str_eq(g[0]->module, "/x/prog");
	ck_assert_int_eq(g[0]->in_old && g[0]->in_new, 1);
	ck_assert_uint_eq(g[0]->old.calls, 3);
	ck_assert_uint_eq(g[0]->new.calls, 7);
	ck_assert_uint_eq(g[0]->old.bytes, 300);
	ck_assert_uint_eq(g[0]->new.bytes, 700);
	ck_assert_uint_eq(g[0]->old.leaked, 200);
	ck_assert_uint_eq(g[0]->new.leaked, 600);

	/* shrank, largest decrease first: the unsymbolized site (offset 0x300: -40), then old() (-7) */
	ck_assert_uint_eq(ns, 2);
	ck_assert_ptr_null(s[0]->function);
	ck_assert_uint_eq(s[0]->offset, 0x300);
	ck_assert_uint_eq(s[0]->old.bytes, 50);
	ck_assert_uint_eq(s[0]->new.bytes, 10);
	ck_assert_int_eq(s[0]->in_old && s[0]->in_new, 1);
	ck_assert_str_eq(s[1]->function, "old");
	ck_assert_int_eq(s[1]->in_old, 1);
	ck_assert_int_eq(s[1]->in_new, 0);
	ck_assert_uint_eq(s[1]->old.bytes, 7);
	ck_assert_uint_eq(s[1]->new.bytes, 0);
	rpt_diff_free(df);

	/* by leaked: grow() grew by 400, old() shrank by 7, the unsymbolized site leaks nothing */
	OK(rpt_diff_new(o.d, n.d, RPT_DIFF_LEAKED, &df));
	g = rpt_diff_grew(df, &ng);
	s = rpt_diff_shrank(df, &ns);
	ck_assert_uint_eq(ng, 1);
	ck_assert_str_eq(g[0]->function, "grow");
	ck_assert_uint_eq(ns, 1);
	ck_assert_str_eq(s[0]->function, "old");
	rpt_diff_free(df);

	/* a recording against itself: nothing changed */
	OK(rpt_diff_new(o.d, o.d, RPT_DIFF_CALLS, &df));
	rpt_diff_grew(df, &ng);
	rpt_diff_shrank(df, &ns);
	ck_assert_uint_eq(ng + ns, 0);
	rpt_diff_free(df);
	ck_assert_int_eq(rpt_diff_new(o.d, n.d, RPT_DIFF_BY_MAX, &df), -EINVAL);
	ck_assert_ptr_null(df);
	rpt_diff_free(NULL);
	unload(&o);
	unload(&n);
}
END_TEST

/* the JSON diff parses as far as this test looks, and holds the summary change */
START_TEST(test_write)
{
	struct rpt_diff_print p = { "old.htap", "new \"x\".htap", 10 };
	struct side o, n;
	struct rpt_diff *df = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	load(&o, "old.htap", 0x1000, 2, 5, 1);
	load(&n, "new.htap", 0x9000, 6, 1, 0);
	OK(rpt_diff_new(o.d, n.d, RPT_DIFF_BYTES, &df));
	f = open_memstream(&buf, &len);
	OK(rpt_write_diff_json(f, df, &p));
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\"format\": \"heaptap-diff\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"new\": \"new \\\"x\\\".htap\""));
	/* totals: old 457 bytes in 11 calls (200 + 100 + 100 + 50 + 7), new 810 in 10: +353, -1 */
	ck_assert_ptr_nonnull(strstr(buf, "\"change\": {\"calls\": -1, \"bytes\": 353,"));
	ck_assert_ptr_nonnull(strstr(buf, "\"grew_total\": 1"));
	ck_assert_ptr_nonnull(strstr(buf, "\"shrank_total\": 2"));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	OK(rpt_write_diff_text(f, df, &p));
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "GREW (by bytes allocated): 1 call site"));
	ck_assert_ptr_nonnull(strstr(buf, "grow (g.c:10) in prog"));
	ck_assert_ptr_nonnull(strstr(buf, "prog+0x300"));
	ck_assert_ptr_nonnull(strstr(buf, "old (o.c:1) in prog [gone]"));
	free(buf);
	rpt_diff_free(df);
	unload(&o);
	unload(&n);
}
END_TEST

static Suite *diff_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("report_diff", "diff", &tc);

	tcase_add_test(tc, test_match_and_sort);
	tcase_add_test(tc, test_write);
	return s;
}

int main(void)
{
	return ck_run_suite(diff_suite());
}
