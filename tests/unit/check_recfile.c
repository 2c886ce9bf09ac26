/* tests/unit/check_recfile.c - unit tests of the recording writer and reader */
/* SPDX-License-Identifier: MIT */
/*
 * unit.recfile is one program of three files, one test case ("core"):
 * round trips of a small recording here, damaged and hand-made files in
 * check_recfile_damage.c, big recordings (several chunks, crash, abort,
 * write errors) and the event modes in check_recfile_big.c; the small
 * recording they share is declared in check_recfile.h.
 */
#define _GNU_SOURCE /* program_invocation_short_name, nftw (tests/lib/check_fixture.h) */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "tests/lib/check_fixture.h"
#include "check_recfile.h"
#include "recfile/internal.h"
#include "recfile/recfile.h"
#include "util/hash.h"

/* ------------------------------------------------------------------ */
/* A small recording with a bit of everything; its expected contents.  */

static const uint8_t bid[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };

static void write_small(struct rec_writer *w, int flush_between)
{
	struct rec_sym chain[3] = {
		{ "inlined_fn", "a.c", 10 },
		{ "outer_fn", "a.c", 20 },
		{ NULL, NULL, 0 },
	};
	uint32_t idx, m0, m1, ip[4], t[4], a[4];

	ck_assert_int_eq(rec_put_meta(w, "exe", "/bin/first"), 0);
	ck_assert_int_eq(rec_put_string(w, "hello", &idx), 0);
	ck_assert_uint_eq(idx, 1);
	ck_assert_int_eq(rec_put_module(w, "/bin/prog", 0x400000, 0x1000, bid, sizeof(bid), &m0), 0);
	ck_assert_int_eq(rec_put_module(w, "/lib/libc.so.6", 0x7f0000000000ull, 0x200000, NULL, 0, &m1),
			 0);
	ck_assert_uint_eq(m0, 0);
	ck_assert_uint_eq(m1, 1);
	ck_assert_int_eq(rec_put_ip(w, 0x401000, &ip[0]), 0);
	ck_assert_int_eq(rec_put_ip(w, 0x400f00, &ip[1]), 0);
	ck_assert_int_eq(rec_put_ip(w, 0x7f0000001234ull, &ip[2]), 0);
	ck_assert_int_eq(rec_put_ip(w, UINT64_MAX, &ip[3]), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip[0], m0, chain, 3), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip[2], m1, chain + 1, 1), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip[3], REC_NONE, NULL, 0), 0);
	if (flush_between)
		ck_assert_int_eq(rec_writer_flush(w), 0);
	ck_assert_int_eq(rec_put_trace(w, 0, ip[0], &t[0]), 0);
	ck_assert_int_eq(rec_put_trace(w, t[0], ip[1], &t[1]), 0);
	ck_assert_int_eq(rec_put_trace(w, t[1], ip[2], &t[2]), 0);
	ck_assert_int_eq(rec_put_trace(w, t[0], ip[3], &t[3]), 0);
	ck_assert_uint_eq(t[0], 1);
	ck_assert_uint_eq(t[3], 4);
	ck_assert_int_eq(rec_put_allocinfo(w, 16, t[2], 1, &a[0]), 0);
	ck_assert_int_eq(rec_put_allocinfo(w, 1ull << 40, t[3], 3, &a[1]), 0);
	ck_assert_int_eq(rec_put_allocinfo(w, 0, 0, 100, &a[2]), 0);
	ck_assert_int_eq(rec_put_allocinfo(w, 24, t[1], 15, &a[3]), 0);
	ck_assert_int_eq(rec_put_tick(w, 1000, 4096), 0);
	for (int i = 0; i < SMALL_EVENTS / 4; i++) {
		ck_assert_int_eq(rec_put_alloc(w, a[i % 4], 0), 0);
		ck_assert_int_eq(rec_put_alloc(w, a[(i + 1) % 4], 1000 + i), 0);
		ck_assert_int_eq(rec_put_free(w, a[i % 4], 0), 0);
		ck_assert_int_eq(rec_put_free(w, a[(i + 1) % 4], 1), 0);
		if (flush_between && i == SMALL_EVENTS / 8)
			ck_assert_int_eq(rec_writer_flush(w), 0);
	}
	ck_assert_int_eq(rec_put_tick(w, 500, 8192), 0); /* time may step back */
	ck_assert_int_eq(rec_put_meta(w, "exe", "/bin/second"), 0);
	ck_assert_int_eq(rec_put_meta(w, "empty", ""), 0);
}

static void expect_event(const struct rec_event *e, uint64_t k)
{
	uint64_t i = k / 4;
	uint32_t info[4] = { i % 4, (i + 1) % 4, i % 4, (i + 1) % 4 };
	uint32_t op[4] = { REC_EV_ALLOC, REC_EV_ALLOC, REC_EV_FREE, REC_EV_FREE_TEMP };
	uint64_t wt[4] = { 0, 1000 + i, 0, 0 };

	CK_REQUIRE((e->info) == (info[k % 4]));
	CK_REQUIRE((e->op) == (op[k % 4]));
	CK_REQUIRE((e->weight) == (wt[k % 4]));
}

/* every event of r, in order; returns how many */
uint64_t check_events(const struct rec_reader *r)
{
	uint64_t next = 0;

	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev;
		size_t n;
		uint64_t first;

		CK_REQUIRE((rec_event_chunk(r, c, &ev, &n, &first)) == (0));
		CK_REQUIRE((first) == (next));
		for (size_t k = 0; k < n; k++)
			expect_event(&ev[k], first + k);
		next += n;
		free(ev);
	}
	CK_REQUIRE((next) == (rec_nevents(r)));
	return next;
}

void check_small(const struct rec_reader *r)
{
	const struct rec_module *m;
	const struct rec_ip *ip;
	const struct rec_frame *f;
	const struct rec_trace *t;
	const struct rec_allocinfo *a;
	const struct rec_tick *tk;
	size_t n;

	ck_assert_str_eq(rec_meta(r, "exe"), "/bin/second");
	ck_assert_str_eq(rec_meta(r, "empty"), "");
	ck_assert_ptr_null(rec_meta(r, "nope"));
	ck_assert_str_eq(rec_string(r, 0), "");
	ck_assert_str_eq(rec_string(r, 1), "hello");
	ck_assert_str_eq(rec_string(r, 1000000), "");
	ck_assert_str_eq(rec_string(r, REC_NONE), "");

	m = rec_modules(r, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(m[0].path, "/bin/prog");
	ck_assert_uint_eq(m[0].base, 0x400000);
	ck_assert_uint_eq(m[0].size, 0x1000);
	ck_assert_uint_eq(m[0].build_id_len, sizeof(bid));
	ck_assert_mem_eq(m[0].build_id, bid, sizeof(bid));
	ck_assert_str_eq(m[1].path, "/lib/libc.so.6");
	ck_assert_uint_eq(m[1].base, 0x7f0000000000ull);
	ck_assert_uint_eq(m[1].build_id_len, 0);

	ip = rec_ips(r, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(ip[0].ip, 0x401000);
	ck_assert_uint_eq(ip[1].ip, 0x400f00);
	ck_assert_uint_eq(ip[2].ip, 0x7f0000001234ull);
	ck_assert_uint_eq(ip[3].ip, UINT64_MAX);
	ck_assert_uint_eq(ip[0].module, 0);
	ck_assert_uint_eq(ip[1].module, REC_NONE);
	ck_assert_uint_eq(ip[1].frame, REC_NONE);
	ck_assert_uint_eq(ip[2].module, 1);
	ck_assert_uint_eq(ip[3].module, REC_NONE);
	ck_assert_uint_eq(ip[3].frame, REC_NONE);

	f = rec_frames(r, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(rec_string(r, f[ip[0].frame].function), "inlined_fn");
	ck_assert_str_eq(rec_string(r, f[ip[0].frame].file), "a.c");
	ck_assert_uint_eq(f[ip[0].frame].line, 10);
	{
		uint32_t o = f[ip[0].frame].outer;

		ck_assert_uint_ne(o, REC_NONE);
		ck_assert_str_eq(rec_string(r, f[o].function), "outer_fn");
		ck_assert_uint_eq(f[o].line, 20);
		/* same strings are shared */
		ck_assert_uint_eq(f[o].file, f[ip[0].frame].file);
		o = f[o].outer;
		ck_assert_uint_ne(o, REC_NONE);
		ck_assert_uint_eq(f[o].function, 0);
		ck_assert_uint_eq(f[o].file, 0);
		ck_assert_uint_eq(f[o].line, 0);
		ck_assert_uint_eq(f[o].outer, REC_NONE);
	}
	ck_assert_str_eq(rec_string(r, f[ip[2].frame].function), "outer_fn");
	ck_assert_uint_eq(f[ip[2].frame].outer, REC_NONE);

	t = rec_traces(r, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(t[0].parent, 0);
	ck_assert_uint_eq(t[0].ip, REC_NONE);
	ck_assert_uint_eq(t[1].parent, 0);
	ck_assert_uint_eq(t[1].ip, 0);
	ck_assert_uint_eq(t[2].parent, 1);
	ck_assert_uint_eq(t[2].ip, 1);
	ck_assert_uint_eq(t[3].parent, 2);
	ck_assert_uint_eq(t[3].ip, 2);
	ck_assert_uint_eq(t[4].parent, 1);
	ck_assert_uint_eq(t[4].ip, 3);

	a = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(a[0].size, 16);
	ck_assert_uint_eq(a[0].trace, 3);
	ck_assert_uint_eq(a[0].kind, 1);
	ck_assert_uint_eq(a[1].size, 1ull << 40);
	ck_assert_uint_eq(a[1].trace, 4);
	ck_assert_uint_eq(a[1].kind, 3);
	ck_assert_uint_eq(a[2].size, 0);
	ck_assert_uint_eq(a[2].trace, 0);
	ck_assert_uint_eq(a[2].kind, 100);
	ck_assert_uint_eq(a[3].trace, 2);
	ck_assert_uint_eq(a[3].kind, 15);

	tk = rec_ticks(r, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(tk[0].time_ns, 1000);
	ck_assert_uint_eq(tk[0].event_index, 0);
	ck_assert_uint_eq(tk[0].rss, 4096);
	ck_assert_uint_eq(tk[1].time_ns, 500);
	ck_assert_uint_eq(tk[1].event_index, SMALL_EVENTS);
	ck_assert_uint_eq(tk[1].rss, 8192);

	ck_assert_uint_eq(rec_nevents(r), SMALL_EVENTS);
	ck_assert_uint_eq(check_events(r), SMALL_EVENTS);
	ck_assert_uint_eq(rec_dropped_events(r), 0);
	ck_assert_uint_eq(rec_fixed_refs(r), 0);
}

void make_small(const char *path, int flush_between)
{
	struct rec_writer *w;
	int err = -1;

	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(err, 0);
	write_small(w, flush_between);
	ck_assert_int_eq(rec_writer_close(w), 0);
}

START_TEST(test_round_trip)
{
	struct rec_reader *r;
	int err = -1;

	make_small(ck_tmppath("small.htap"), _i);
	r = rec_open(ck_tmppath("small.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(rec_truncated(r), 0);
	check_small(r);
	rec_close(r);
}
END_TEST

START_TEST(test_round_trip_mem)
{
	struct rec_reader *r;
	uint8_t *buf;
	size_t len;
	int err = -1;

	make_small(ck_tmppath("small.htap"), _i);
	buf = ck_slurp(ck_tmppath("small.htap"), &len);
	r = rec_open_mem(buf, len, &err);
	free(buf); /* the reader copied it */
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	check_small(r);
	rec_close(r);
}
END_TEST

START_TEST(test_string_dedup)
{
	struct rec_writer *w;
	struct rec_reader *r;
	uint32_t a, b, c, e, m;
	char big[3000];
	int err;

	w = rec_writer_create(ck_tmppath("s.htap"), &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rec_put_string(w, "x", &a), 0);
	ck_assert_int_eq(rec_put_string(w, "y", &b), 0);
	ck_assert_int_eq(rec_put_string(w, "x", &c), 0);
	ck_assert_int_eq(rec_put_string(w, "", &e), 0);
	ck_assert_uint_eq(a, c);
	ck_assert_uint_ne(a, b);
	ck_assert_uint_eq(e, 0);
	ck_assert_int_eq(rec_put_string(w, NULL, &e), -REC_E_RANGE);
	/* a module path is interned too */
	ck_assert_int_eq(rec_put_module(w, "y", 0, 0, NULL, 0, &m), 0);
	/* enough distinct strings to grow the hash table several times */
	for (int i = 0; i < 20000; i++) {
		uint32_t i1, i2;

		snprintf(big, sizeof(big), "string number %d", i);
		CK_REQUIRE((rec_put_string(w, big, &i1)) == (0));
		CK_REQUIRE((rec_put_string(w, big, &i2)) == (0));
		CK_REQUIRE((i1) == (i2));
		CK_REQUIRE((i1) == (uint32_t)(3 + i));
	}
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(rec_put_string(w, big, &c), 0);
	ck_assert_int_eq(rec_writer_close(w), 0);

	r = rec_open(ck_tmppath("s.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(rec_string(r, a), "x");
	ck_assert_str_eq(rec_string(r, b), "y");
	ck_assert_str_eq(rec_string(r, 3 + 12345), "string number 12345");
	ck_assert_str_eq(rec_string(r, c), big);
	ck_assert_str_eq(rec_modules(r, &(size_t){ 0 })[0].path, "y");
	ck_assert_str_eq(rec_string(r, c + 1), "");
	rec_close(r);
}
END_TEST

START_TEST(test_writer_range)
{
	struct rec_writer *w;
	struct rec_sym s = { "f", "f.c", 1 };
	uint32_t ip, t, a, m, idx;
	char *huge;
	int err;

	w = rec_writer_create(ck_tmppath("range.htap"), &err);
	ck_assert_ptr_nonnull(w);
	/* nothing exists yet */
	ck_assert_int_eq(rec_put_trace(w, 0, 0, &t), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_symbol(w, 0, REC_NONE, NULL, 0), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_alloc(w, 0, 0), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_free(w, 0, 0), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_allocinfo(w, 1, 1, 1, &a), -REC_E_RANGE);
	/* the root trace exists from the start */
	ck_assert_int_eq(rec_put_allocinfo(w, 1, 0, 1, &a), 0);
	ck_assert_int_eq(rec_put_ip(w, 0x1234, &ip), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip, 0, &s, 1), -REC_E_RANGE); /* no module 0 */
	ck_assert_int_eq(rec_put_symbol(w, ip, REC_NONE, NULL, 1), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_symbol(w, ip, REC_NONE, &s, REC_MAX_CHAIN + 1), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_module(w, "m", 0, 0, NULL, 4, &m), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_module(w, "m", 0, 0, bid, REC_MAX_BUILD_ID + 1, &m), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_module(w, "m", 0, 0, NULL, 0, &m), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip, m, &s, 1), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip, m, &s, 1), -REC_E_RANGE); /* second time */
	ck_assert_int_eq(rec_put_symbol(w, ip + 1, m, &s, 1), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_trace(w, 1, ip, &t), -REC_E_RANGE); /* parent not yet */
	ck_assert_int_eq(rec_put_trace(w, 0, ip + 1, &t), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_trace(w, 0, ip, &t), 0);
	ck_assert_int_eq(rec_put_trace(w, t, ip, &t), 0);
	ck_assert_int_eq(rec_put_trace(w, t + 1, ip, &idx), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_allocinfo(w, 1, t + 1, 1, &a), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_allocinfo(w, 1, t, 1, &a), 0);
	ck_assert_int_eq(rec_put_alloc(w, a + 1, 0), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_alloc(w, a, 0), 0);
	ck_assert_int_eq(rec_put_meta(w, NULL, "v"), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_meta(w, "k", NULL), -REC_E_RANGE);
	huge = malloc(REC_MAX_STRING + 2);
	ck_assert_ptr_nonnull(huge);
	memset(huge, 'a', REC_MAX_STRING + 1);
	huge[REC_MAX_STRING + 1] = 0;
	ck_assert_int_eq(rec_put_string(w, huge, &idx), -REC_E_RANGE);
	ck_assert_int_eq(rec_put_meta(w, "k", huge), -REC_E_RANGE);
	free(huge);
	/* refused calls left nothing behind: the file reads back clean */
	ck_assert_int_eq(rec_writer_close(w), 0);
	{
		struct rec_reader *r = rec_open(ck_tmppath("range.htap"), &err);
		size_t n;

		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(rec_truncated(r), 0);
		rec_traces(r, &n);
		ck_assert_uint_eq(n, 3);
		rec_allocinfos(r, &n);
		ck_assert_uint_eq(n, 2);
		ck_assert_uint_eq(rec_nevents(r), 1);
		ck_assert_uint_eq(rec_fixed_refs(r), 0);
		ck_assert_uint_eq(rec_ips(r, &n)[0].module, 0);
		rec_close(r);
	}
}
END_TEST

START_TEST(test_excl)
{
	struct rec_writer *w;
	struct rec_reader *r;
	int err = 0;

	w = rec_writer_create(ck_tmppath("x.htap"), &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_null(rec_writer_create(ck_tmppath("x.htap"), &err));
	ck_assert_int_eq(err, REC_E_EXISTS);
	ck_assert_int_eq(rec_writer_close(w), 0);
	/* still not overwritten once closed */
	ck_assert_ptr_null(rec_writer_create(ck_tmppath("x.htap"), &err));
	ck_assert_int_eq(err, REC_E_EXISTS);
	r = rec_open(ck_tmppath("x.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	rec_close(r);
	ck_assert_ptr_null(rec_writer_create(ck_tmppath("no/such/dir.htap"), &err));
	ck_assert_int_eq(err, REC_E_IO);
	ck_assert_ptr_null(rec_open(ck_tmppath("missing.htap"), &err));
	ck_assert_int_eq(err, REC_E_IO);
	ck_assert_int_eq(rec_writer_close(NULL), 0);
	rec_writer_abort(NULL);
	rec_close(NULL);
}
END_TEST

START_TEST(test_strerror)
{
	for (int e = 0; e < REC_E_MAX; e++) {
		const char *s = rec_strerror(e);

		ck_assert_ptr_nonnull(s);
		ck_assert_str_eq(s, rec_strerror(-e));
		ck_assert_str_ne(s, rec_strerror(REC_E_MAX));
		for (int o = 0; o < e; o++)
			ck_assert_str_ne(s, rec_strerror(o));
	}
	ck_assert_ptr_nonnull(rec_strerror(REC_E_MAX));
	ck_assert_ptr_nonnull(rec_strerror(INT_MIN));
	ck_assert_ptr_nonnull(rec_strerror(INT_MAX));
	ck_assert_str_eq(rec_strerror(-REC_E_TRUNCATED), "recording cut short");
}
END_TEST

static Suite *recfile_suite(void)
{
	Suite *s = suite_create("recfile");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_strerror);
	tcase_add_loop_test(tc, test_round_trip, 0, 2);
	tcase_add_loop_test(tc, test_round_trip_mem, 0, 2);
	tcase_add_test(tc, test_string_dedup);
	tcase_add_test(tc, test_writer_range);
	tcase_add_test(tc, test_excl);
	recfile_damage_add(tc); /* check_recfile_damage.c */
	recfile_big_add(tc); /* check_recfile_big.c */
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(recfile_suite());
}
