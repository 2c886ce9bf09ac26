/* tests/unit/check_report_exports.c - unit.report_exports: heaptrack, folded-stack, massif writers, escapes */
/* SPDX-License-Identifier: MIT */
/*
 * One small recording written here, so every line of each export is known:
 *
 *   module /usr/lib/libx.so at base 0x1000; meta command "prog\n--x"
 *   ips:  I0 0x1100 -> "inl;fn" a.c:10 (inlined into) "fn#A" a.c:20
 *         I1 0x1200 -> main m.c:1
 *         I2 0x1234 -> in the module, no symbol
 *   traces: T1 = I1   T2 = I0 <- T1   T3 = I2 <- T1
 *   infos: A0 (100, T2, malloc)  A1 (30, T3, malloc)
 *
 *   events         heap after
 *    alloc A0        100
 *    alloc A0        200
 *    alloc A1        230   <- peak
 *    free A0         130
 *    free A1         100
 *    tick 2 ms, rss 8192, index 5
 *
 * calls 3, bytes 230, peak 230, leaked 100 (one A0).
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "tests/lib/check_fixture.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

#define OK(x) ck_assert_int_eq((x), 0)

static void write_rec(const char *path, int events)
{
	struct rec_sym i0[] = { { "inl;fn", "a.c", 10 }, { "fn#A", "a.c", 20 } };
	struct rec_sym i1[] = { { "main", "m.c", 1 } };
	struct rec_writer *w;
	uint32_t m, ip0, ip1, ip2, t1, t2, t3, a0, a1;
	int err;

	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_meta(w, "command", "prog\n--x"));
	OK(rec_put_module(w, "/usr/lib/libx.so", 0x1000, 0x1000, NULL, 0, &m));
	OK(rec_put_ip(w, 0x1100, &ip0));
	OK(rec_put_ip(w, 0x1200, &ip1));
	OK(rec_put_ip(w, 0x1234, &ip2));
	OK(rec_put_symbol(w, ip0, m, i0, 2));
	OK(rec_put_symbol(w, ip1, m, i1, 1));
	OK(rec_put_symbol(w, ip2, m, NULL, 0));
	OK(rec_put_trace(w, 0, ip1, &t1));
	OK(rec_put_trace(w, t1, ip0, &t2));
	OK(rec_put_trace(w, t1, ip2, &t3));
	OK(rec_put_allocinfo(w, 100, t2, WIRE_KIND_MALLOC, &a0));
	OK(rec_put_allocinfo(w, 30, t3, WIRE_KIND_MALLOC, &a1));
	if (events) {
		OK(rec_put_alloc(w, a0, 0));
		OK(rec_put_alloc(w, a0, 0));
		OK(rec_put_alloc(w, a1, 0));
		OK(rec_put_free(w, a0, 0));
		OK(rec_put_free(w, a1, 0));
		OK(rec_put_tick(w, 2000000, 8192));
	}
	OK(rec_writer_close(w));
}

struct fixture {
	struct rec_reader *r;
	struct rpt_data *d;
};

static void load(struct fixture *fx, int events)
{
	char path[512];
	int err = 0;

	snprintf(path, sizeof(path), "%s/rec%d.htap", ck_tmpdir, events);
	write_rec(path, events);
	fx->r = rec_open(path, &err);
	ck_assert_ptr_nonnull(fx->r);
	OK(rpt_analyze(fx->r, NULL, &fx->d));
	ck_assert_uint_eq(rpt_get_summary(fx->d)->total.peak, events ? 230 : 0);
}

static void unload(struct fixture *fx)
{
	rpt_free(fx->d);
	rec_close(fx->r);
}

/* Run one writer into memory: 0 = collapsed by cost c, 1 = massif, 2 = heaptrack (compressed). */
static char *render(struct rpt_data *d, int which, enum rpt_fold_cost c, size_t *len)
{
	struct rpt_print_options po = { .path = "rec.htap" };
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	ck_assert_ptr_nonnull(f);
	if (which == 0)
		OK(rpt_write_collapsed(f, d, c));
	else if (which == 1)
		OK(rpt_write_massif(f, d, &po));
	else
		OK(rpt_write_heaptrack(f, d));
	ck_assert_int_eq(fclose(f), 0);
	*len = n;
	return buf;
}

static char *unzstd(const char *in, size_t len)
{
	ZSTD_DCtx *z = ZSTD_createDCtx();
	ZSTD_inBuffer ib = { in, len, 0 };
	size_t cap = 1 << 16, ret;
	char *out = malloc(cap + 1);
	ZSTD_outBuffer ob = { out, cap, 0 };

	do {
		ret = ZSTD_decompressStream(z, &ob, &ib);
		ck_assert(!ZSTD_isError(ret));
		ck_assert_uint_lt(ob.pos, cap); /* the test's file is small */
	} while (ret != 0 && ib.pos < ib.size);
	ck_assert_uint_eq(ret, 0); /* a whole frame */
	out[ob.pos] = '\0';
	ZSTD_freeDCtx(z);
	return out;
}

START_TEST(test_collapsed)
{
	/* outer to inner; the inlined function after its host; ';' in a name becomes ':' */
	static const struct {
		enum rpt_fold_cost cost;
		const char *want;
	} cases[] = {
		{ RPT_FOLD_CALLS, "main;fn#A;inl:fn 2\nmain;libx.so+0x234 1\n" },
		{ RPT_FOLD_BYTES, "main;fn#A;inl:fn 200\nmain;libx.so+0x234 30\n" },
		{ RPT_FOLD_PEAK, "main;fn#A;inl:fn 200\nmain;libx.so+0x234 30\n" },
		{ RPT_FOLD_LEAKED, "main;fn#A;inl:fn 100\n" },
		{ RPT_FOLD_TEMPORARY, "" },
	};
	struct fixture fx;
	size_t n;
	char *s;

	load(&fx, 1);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		s = render(fx.d, 0, cases[k].cost, &n);
		ck_assert_msg(!strcmp(s, cases[k].want), "cost %d: got \"%s\", want \"%s\"",
			      (int)cases[k].cost, s, cases[k].want);
		free(s);
	}
	unload(&fx);
}
END_TEST

START_TEST(test_massif)
{
	static const char peak_tree[] =
		"heap_tree=peak\n"
		"n2: 230 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
		" n1: 200 0x1100: inl;fn (a.c:10)\n"
		"  n1: 200 0x1100: fn_A (a.c:20)\n"
		"   n0: 200 0x1200: main (m.c:1)\n"
		" n1: 30 0x1234: ??? (in /usr/lib/libx.so)\n"
		"  n0: 30 0x1200: main (m.c:1)\n";
	static const char end_tree[] =
		"mem_heap_B=100\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=detailed\n"
		"n1: 100 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n"
		" n1: 100 0x1100: inl;fn (a.c:10)\n"
		"  n1: 100 0x1100: fn_A (a.c:20)\n"
		"   n0: 100 0x1200: main (m.c:1)\n";
	struct fixture fx;
	const char *p;
	size_t n;
	char *s;

	load(&fx, 1);
	s = render(fx.d, 1, 0, &n);
	ck_assert_ptr_eq(strstr(s, "desc: heaptap report --format massif rec.htap\ncmd: prog --x\ntime_unit: ms\n"),
			 s);
	ck_assert_ptr_nonnull(strstr(s, "mem_heap_B=230\nmem_heap_extra_B=0\nmem_stacks_B=0\n" "heap_tree=peak\n"));
	ck_assert_ptr_nonnull(strstr(s, peak_tree));
	p = strstr(s, end_tree);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p + strlen(end_tree), ""); /* the end snapshot is the last */
	/* 60 plain snapshots, the peak and the end; the last at the last tick's 2 ms */
	ck_assert_ptr_nonnull(strstr(s, "snapshot=61\n#-----------\ntime=2\nmem_heap_B=100\n"));
	ck_assert_ptr_null(strstr(s, "snapshot=62\n"));
	free(s);
	unload(&fx);
}
END_TEST

START_TEST(test_heaptrack)
{
	static const char want[] =
		"v 10400 3\n"
		"X prog --x\n"
		"I 1000 0\n"
		"s 10 /usr/lib/libx.so\n"
		"s 6 inl;fn\n"
		"s 3 a.c\n"
		"s 4 fn#A\n"
		"i 1100 1 2 3 a 4 3 14\n"
		"s 4 main\n"
		"s 3 m.c\n"
		"i 1200 1 5 6 1\n"
		"i 1234 1\n"
		"t 2 0\n"
		"t 1 1\n"
		"t 3 1\n"
		"a 64 2\n"
		"a 1e 3\n"
		"+ 0\n+ 0\n+ 1\n- 0\n- 1\n"
		"c 2\n"
		"R 2\n";
	struct fixture fx;
	size_t n;
	char *z, *s;

	load(&fx, 1);
	z = render(fx.d, 2, 0, &n);
	ck_assert_uint_gt(n, 4);
	ck_assert_uint_eq((unsigned char)z[0], 0x28); /* zstd frame magic, little-endian 0xFD2FB528 */
	s = unzstd(z, n);
	ck_assert_str_eq(s, want);
	free(s);
	free(z);
	rpt_free(fx.d);
	/* the light load (no replay) gives the same file */
	OK(rpt_load_for_heaptrack(fx.r, NULL, &fx.d));
	z = render(fx.d, 2, 0, &n);
	s = unzstd(z, n);
	ck_assert_str_eq(s, want);
	free(s);
	free(z);
	unload(&fx);
}
END_TEST

START_TEST(test_no_events)
{
	struct fixture fx;
	size_t n;
	char *s, *z;

	load(&fx, 0);
	s = render(fx.d, 0, RPT_FOLD_CALLS, &n);
	ck_assert_str_eq(s, "");
	free(s);
	s = render(fx.d, 1, 0, &n);
	ck_assert_ptr_null(strstr(s, "heap_tree=peak"));
	ck_assert_ptr_nonnull(strstr(s, "heap_tree=detailed\nn0: 0 (heap allocation functions)"));
	free(s);
	z = render(fx.d, 2, 0, &n);
	s = unzstd(z, n);
	ck_assert_ptr_nonnull(strstr(s, "a 1e 3\n"));
	ck_assert_ptr_null(strchr(s, '+'));
	free(s);
	free(z);
	unload(&fx);
}
END_TEST

/* rpt_escape: what a terminal may show passes, every control is \xNN, cut at a whole escape */
START_TEST(test_escape)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "plain text 1+2", "plain text 1+2" },
		{ "a\x1b[31mb", "a\\x1b[31mb" },		/* ESC */
		{ "t\x1b]0;x\x07", "t\\x1b]0;x\\x07" },	/* OSC title, BEL */
		{ "cr\rlf\ntab\tdel\x7f", "cr\\x0dlf\\x0atab\\x09del\\x7f" },
		{ "back\\slash", "back\\\\slash" },
		{ "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac" },	/* UTF-8 passes */
		{ "c1\xc2\x9b" "2J", "c1\\xc2\\x9b2J" },	/* 8-bit CSI */
		{ "bidi\xe2\x80\xae", "bidi\\xe2\\x80\\xae" },	/* RIGHT-TO-LEFT OVERRIDE */
		{ "bad\xc3(", "bad\\xc3(" },			/* cut sequence */
		{ "over\xc0\xaf", "over\\xc0\\xaf" },		/* overlong '/' */
	};
	char out[64];
	size_t i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = rpt_escape(out, sizeof(out), cases[i].in, strlen(cases[i].in));
		ck_assert_str_eq(out, cases[i].want);
		ck_assert_uint_eq(n, strlen(cases[i].want));
	}
	/* no room for a whole escape: cut before it, never inside */
	n = rpt_escape(out, 6, "ab\x1b", 3);
	ck_assert_str_eq(out, "ab");
	ck_assert_uint_eq(n, 2);
	n = rpt_escape(out, 7, "ab\x1b", 3);
	ck_assert_str_eq(out, "ab\\x1b");
	/* a NUL byte inside the range is escaped too */
	n = rpt_escape(out, sizeof(out), "a\0b", 3);
	ck_assert_str_eq(out, "a\\x00b");
}
END_TEST

static Suite *exports_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("report_exports", "core", &tc);

	tcase_add_test(tc, test_collapsed);
	tcase_add_test(tc, test_massif);
	tcase_add_test(tc, test_heaptrack);
	tcase_add_test(tc, test_no_events);
	tcase_add_test(tc, test_escape);
	return s;
}

int main(void)
{
	return ck_run_suite(exports_suite());
}
