/* tests/unit/check_recfile.c - unit tests of the recording writer and reader */
/* SPDX-License-Identifier: MIT */
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
#include "recfile/internal.h"
#include "recfile/recfile.h"
#include "util/hash.h"

/* ------------------------------------------------------------------ */
/* A small recording with a bit of everything; its expected contents.  */

static const uint8_t bid[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };

#define SMALL_EVENTS 40

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
static uint64_t check_events(const struct rec_reader *r)
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

static void check_small(const struct rec_reader *r)
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

static void make_small(const char *path, int flush_between)
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

/* the tables of a cut reader must be prefixes of the whole recording's */
static void check_prefix(const struct rec_reader *cut, const struct rec_reader *full)
{
	size_t n, m;

	rec_modules(cut, &n);
	rec_modules(full, &m);
	CK_REQUIRE((n) <= (m));
	for (size_t i = 0; i < n; i++) {
		CK_REQUIRE(!strcmp(rec_modules(cut, &n)[i].path, rec_modules(full, &m)[i].path));
		CK_REQUIRE((rec_modules(cut, &n)[i].base) == (rec_modules(full, &m)[i].base));
	}
	const struct rec_trace *tc = rec_traces(cut, &n), *tf = rec_traces(full, &m);
	CK_REQUIRE((n) >= (1));
	CK_REQUIRE((n) <= (m));
	for (size_t i = 0; i < n; i++) {
		CK_REQUIRE((tc[i].parent) == (tf[i].parent));
		CK_REQUIRE((tc[i].ip) == (tf[i].ip));
	}
	const struct rec_allocinfo *ac = rec_allocinfos(cut, &n), *af = rec_allocinfos(full, &m);
	CK_REQUIRE((n) <= (m));
	for (size_t i = 0; i < n; i++) {
		CK_REQUIRE((ac[i].size) == (af[i].size));
		CK_REQUIRE((ac[i].trace) == (af[i].trace));
	}
	CK_REQUIRE((rec_nevents(cut)) <= (rec_nevents(full)));
	/* the writer's order means nothing written refers forward */
	CK_REQUIRE((rec_fixed_refs(cut)) == (0));
	if (rec_nevents(cut))
		CK_REQUIRE((check_events(cut)) == (rec_nevents(cut)));
	CK_REQUIRE((rec_dropped_events(cut)) == (0));
}

START_TEST(test_truncated_every_offset)
{
	struct rec_reader *full, *r;
	uint8_t *buf;
	size_t len;
	int err, opened = 0;

	make_small(ck_tmppath("t.htap"), 1);
	buf = ck_slurp(ck_tmppath("t.htap"), &len);
	full = rec_open_mem(buf, len, &err);
	ck_assert_ptr_nonnull(full);
	ck_assert_uint_gt(rec_nevent_chunks(full), 1);
	for (size_t cut = 0; cut < len; cut++) {
		r = rec_open_mem(buf, cut, &err);
		if (!r) {
			CK_REQUIRE((cut) < (REC_FILE_HDR));
			CK_REQUIRE((err) == (REC_E_TRUNCATED));
			continue;
		}
		opened++;
		CK_REQUIRE((cut) >= (REC_FILE_HDR));
		CK_REQUIRE((rec_truncated(r)) == (REC_E_TRUNCATED));
		check_prefix(r, full);
		rec_close(r);
	}
	CK_REQUIRE((size_t)(opened) == (len - REC_FILE_HDR));
	/* and on disk: a file cut with truncate(2) */
	CK_REQUIRE((truncate(ck_tmppath("t.htap"), len - 1)) == (0));
	r = rec_open(ck_tmppath("t.htap"), &err);
	ck_assert_ptr_nonnull(r);
	CK_REQUIRE((rec_truncated(r)) == (REC_E_TRUNCATED));
	/* only the END chunk was lost */
	CK_REQUIRE((rec_nevents(r)) == (SMALL_EVENTS));
	rec_close(r);
	rec_close(full);
	free(buf);
}
END_TEST

START_TEST(test_flipped_bytes)
{
	struct rec_reader *full, *r;
	uint8_t *buf;
	size_t len;
	int err;

	make_small(ck_tmppath("f.htap"), 1);
	buf = ck_slurp(ck_tmppath("f.htap"), &len);
	full = rec_open_mem(buf, len, &err);
	ck_assert_ptr_nonnull(full);
	for (size_t off = 0; off < len; off++) {
		for (int bit = 0; bit < 8; bit += 3) {
			buf[off] ^= (uint8_t)(1u << bit);
			r = rec_open_mem(buf, len, &err);
			if (!r) {
				/* only a damaged file header makes the open fail */
				CK_REQUIRE((off) < (REC_FILE_HDR));
				ck_assert(err == REC_E_MAGIC || err == REC_E_VERSION);
			} else {
				/*
				 * anything else is seen by a header or frame
				 * checksum: at open, or for an event chunk's
				 * payload when it is decoded. A few bits of a
				 * zstd frame (padding, unused table bits) do
				 * not change its content: then all must be
				 * read exactly as written.
				 */
				int bad = rec_truncated(r) != 0;

				for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
					struct rec_event *ev;
					size_t n;
					uint64_t first;

					if (rec_event_chunk(r, c, &ev, &n, &first) == 0)
						free(ev);
					else
						bad = 1;
				}
				if (off >= REC_FILE_HDR && !bad)
					check_small(r);
				rec_close(r);
			}
			buf[off] ^= (uint8_t)(1u << bit);
		}
	}
	rec_close(full);
	free(buf);
}
END_TEST

START_TEST(test_bad_header)
{
	uint8_t *buf;
	size_t len;
	int err;

	make_small(ck_tmppath("h.htap"), 0);
	buf = ck_slurp(ck_tmppath("h.htap"), &len);
	buf[0] = 'X';
	ck_assert_ptr_null(rec_open_mem(buf, len, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	buf[0] = 'H';
	rec_le32(buf + 8, REC_VERSION + 1);
	ck_assert_ptr_null(rec_open_mem(buf, len, &err));
	ck_assert_int_eq(err, REC_E_VERSION);
	rec_le32(buf + 8, 0);
	ck_assert_ptr_null(rec_open_mem(buf, len, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	rec_le32(buf + 8, REC_VERSION);
	/* unknown file flags are ignored */
	rec_le32(buf + 12, 0x80000000u);
	{
		struct rec_reader *r = rec_open_mem(buf, len, &err);

		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(rec_truncated(r), 0);
		rec_close(r);
	}
	ck_assert_ptr_null(rec_open_mem("HEAPTA", 6, &err));
	ck_assert_int_eq(err, REC_E_TRUNCATED);
	ck_assert_ptr_null(rec_open_mem("HEAPTAX", 7, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	ck_assert_ptr_null(rec_open_mem("", 0, &err));
	ck_assert_int_eq(err, REC_E_TRUNCATED);
	ck_assert_ptr_null(rec_open_mem("<html>not a recording at all</html>", 35, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hand-made chunks: what the writer would never produce.              */

struct craft {
	uint8_t buf[8192];
	size_t len;
};

static void craft_init(struct craft *c)
{
	memcpy(c->buf, REC_MAGIC, REC_MAGIC_LEN);
	rec_le32(c->buf + 8, REC_VERSION);
	rec_le32(c->buf + 12, 0);
	c->len = REC_FILE_HDR;
}

static void craft_chunk(struct craft *c, int sec, uint64_t first, uint32_t count, const uint8_t *p,
			size_t n)
{
	struct rec_chunk_hdr h = { .section = sec, .first = first, .count = count };
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cs = 0;

	ck_assert_ptr_nonnull(cc);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	if (n || sec != REC_SEC_END) {
		cs = ZSTD_compress2(cc, c->buf + c->len + REC_CHUNK_HDR,
				    sizeof(c->buf) - c->len - REC_CHUNK_HDR, p, n);
		ck_assert(!ZSTD_isError(cs));
	}
	ZSTD_freeCCtx(cc);
	h.csize = cs;
	h.usize = n;
	rec_chunk_encode(c->buf + c->len, &h);
	c->len += REC_CHUNK_HDR + cs;
}

/* one_chunk_corrupt - a file of one crafted chunk opens, and is marked corrupt */
static int one_chunk_corrupt(int sec, uint64_t first, uint32_t count, const uint8_t *p, size_t n)
{
	struct craft c;
	struct rec_reader *r;
	int err, corrupt;

	craft_init(&c);
	craft_chunk(&c, sec, first, count, p, n);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	corrupt = rec_truncated(r) == REC_E_CORRUPT;
	rec_close(r);
	return corrupt;
}

START_TEST(test_dangling)
{
	/* module path string 7, ip with module 5, trace ip 9, allocinfo trace 8, event info 3 */
	static const uint8_t mods[] = { 7, 0, 0, 0 };
	static const uint8_t ips[] = { 2 };
	static const uint8_t syms[] = { 0, 6, 1, 50, 51, 0 };
	static const uint8_t traces[] = { 1, 18 };
	/* sizes 8, 8; then zigzag(8) << 4 | 1 = 257 (trace 8), 1 (trace 8 again) */
	static const uint8_t infos[] = { 8, 8, 0x81, 0x02, 1 };
	/* RECENT mode; ops alloc, free, free-temp; infos 0, 3 (dangling), 1 */
	static const uint8_t evs[] = { REC_EVM_RECENT, 0 | 1 << 2 | 2 << 4, 0, 4, 0 };
	static const uint8_t ticks[] = { 2, 9, 2 };
	struct craft c;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t n;
	uint64_t first;
	int err;

	craft_init(&c);
	craft_chunk(&c, REC_SEC_MODULES, 0, 1, mods, sizeof(mods));
	craft_chunk(&c, REC_SEC_IPS, 0, 1, ips, sizeof(ips));
	craft_chunk(&c, REC_SEC_SYMBOLS, 0, 1, syms, sizeof(syms));
	craft_chunk(&c, REC_SEC_TRACES, 1, 1, traces, sizeof(traces));
	craft_chunk(&c, REC_SEC_ALLOCINFOS, 0, 2, infos, sizeof(infos));
	craft_chunk(&c, REC_SEC_EVENTS, 0, 3, evs, sizeof(evs));
	craft_chunk(&c, REC_SEC_TICKS, 0, 1, ticks, sizeof(ticks));
	craft_chunk(&c, 77, 0, 0, (const uint8_t *)"future", 6); /* unknown: skipped */
	craft_chunk(&c, REC_SEC_END, 3, 0, NULL, 0);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_str_eq(rec_modules(r, &n)[0].path, "");
	ck_assert_uint_eq(rec_ips(r, &n)[0].ip, 1);
	ck_assert_uint_eq(rec_ips(r, &n)[0].module, REC_NONE);
	ck_assert_uint_eq(rec_frames(r, &n)[0].function, 0);
	ck_assert_uint_eq(rec_frames(r, &n)[0].file, 0);
	ck_assert_uint_eq(rec_traces(r, &n)[1].ip, REC_NONE);
	ck_assert_uint_eq(rec_allocinfos(r, &n)[0].trace, 0);
	ck_assert_uint_eq(rec_allocinfos(r, &n)[1].trace, 0);
	ck_assert_uint_eq(rec_ticks(r, &n)[0].event_index, 3);
	/* path, module, function, file, trace ip, 2 x allocinfo trace, tick */
	ck_assert_uint_eq(rec_fixed_refs(r), 8);
	ck_assert_int_eq(rec_event_chunk(r, 0, &ev, &n, &first), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ev[1].info, 1);
	ck_assert_uint_eq(ev[1].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(rec_dropped_events(r), 1);
	free(ev);
	ck_assert_int_eq(rec_event_chunk(r, 1, &ev, &n, &first), -REC_E_RANGE);
	rec_close(r);
}
END_TEST

START_TEST(test_crafted_corrupt)
{
	static const uint8_t bad_parent[] = { 2, 0 }; /* trace 1 with parent -1 */
	static const uint8_t trailing[] = { 1, 0, 5 };
	static const uint8_t evs[] = { 0, 0 };
	struct craft c;
	struct rec_reader *r;
	size_t n;
	int err;

	/* a trace whose parent is not below it ends the walk there */
	craft_init(&c);
	craft_chunk(&c, REC_SEC_META, 0, 1, (const uint8_t *)"\1k\1v", 4);
	craft_chunk(&c, REC_SEC_TRACES, 1, 1, bad_parent, sizeof(bad_parent));
	craft_chunk(&c, REC_SEC_END, 0, 0, NULL, 0);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_CORRUPT);
	ck_assert_str_eq(rec_meta(r, "k"), "v");
	rec_traces(r, &n);
	ck_assert_uint_eq(n, 1);
	rec_close(r);

	/* bytes left over after the announced records */
	ck_assert(one_chunk_corrupt(REC_SEC_TRACES, 1, 1, trailing, sizeof(trailing)));

	/* a table chunk that does not start where the table ends (one was lost) */
	ck_assert(one_chunk_corrupt(REC_SEC_TRACES, 2, 1, trailing, 2));

	/* an event chunk with a wrong first index or count */
	craft_init(&c);
	craft_chunk(&c, REC_SEC_EVENTS, 5, 2, evs, sizeof(evs));
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_CORRUPT);
	ck_assert_uint_eq(rec_nevent_chunks(r), 0);
	rec_close(r);
	ck_assert(one_chunk_corrupt(REC_SEC_EVENTS, 0, 3, evs, sizeof(evs)));

	/* END must carry the event total */
	ck_assert(one_chunk_corrupt(REC_SEC_END, 1, 0, NULL, 0));

	/* an uncompressed size over the limit */
	craft_init(&c);
	craft_chunk(&c, REC_SEC_META, 0, 1, (const uint8_t *)"\1k\1v", 4);
	rec_le32(c.buf + REC_FILE_HDR + 12, REC_MAX_CHUNK + 1);
	rec_le32(c.buf + REC_FILE_HDR + 28, rec_fnv32(c.buf + REC_FILE_HDR, 28));
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_CORRUPT);
	rec_close(r);

	/* a usize that disagrees with the zstd frame */
	craft_init(&c);
	craft_chunk(&c, REC_SEC_META, 0, 1, (const uint8_t *)"\1k\1v", 4);
	rec_le32(c.buf + REC_FILE_HDR + 12, 5);
	rec_le32(c.buf + REC_FILE_HDR + 28, rec_fnv32(c.buf + REC_FILE_HDR, 28));
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_ZSTD);
	ck_assert_ptr_null(rec_meta(r, "k"));
	rec_close(r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Big recordings: several event chunks, crash, abort.                 */

#define BIG_INFOS 1000

static void write_big(struct rec_writer *w, uint64_t nev)
{
	uint32_t ip, t = 0, a;

	for (uint32_t i = 0; i < BIG_INFOS; i++) {
		CK_REQUIRE((rec_put_ip(w, 0x400000 + i * 16, &ip)) == (0));
		CK_REQUIRE((rec_put_trace(w, i % 3 ? t : 0, ip, &t)) == (0));
		CK_REQUIRE((rec_put_allocinfo(w, i * 8, t, 1, &a)) == (0));
	}
	for (uint64_t k = 0; k < nev; k++) {
		if (k % 3 == 2)
			CK_REQUIRE((rec_put_free(w, (k * 7919) % BIG_INFOS, k & 8)) == (0));
		else
			CK_REQUIRE((rec_put_alloc(w, (k * 7919) % BIG_INFOS, 0)) == (0));
		if (k % 100000 == 0)
			CK_REQUIRE((rec_put_tick(w, k * 1000, k * 4096)) == (0));
	}
}

static void check_big_chunk(const struct rec_reader *r, size_t c, uint64_t *total)
{
	struct rec_event *ev;
	size_t n;
	uint64_t first;

	CK_REQUIRE((rec_event_chunk(r, c, &ev, &n, &first)) == (0));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = first + i;

		CK_REQUIRE((ev[i].info) == ((k * 7919) % BIG_INFOS));
		CK_REQUIRE((ev[i].op) == (k % 3 == 2 ? (k & 8 ? REC_EV_FREE_TEMP : REC_EV_FREE) : REC_EV_ALLOC));
	}
	free(ev);
	__atomic_fetch_add(total, n, __ATOMIC_RELAXED);
}

struct par {
	const struct rec_reader *r;
	size_t from, step;
	uint64_t *total;
};

static void *par_decode(void *arg)
{
	struct par *p = arg;

	for (size_t c = p->from; c < rec_nevent_chunks(p->r); c += p->step)
		check_big_chunk(p->r, c, p->total);
	return NULL;
}

START_TEST(test_big_parallel)
{
	const uint64_t nev = 3000000;
	struct rec_writer *w;
	struct rec_reader *r;
	pthread_t th[3];
	struct par p[3];
	uint64_t total = 0;
	int err;

	w = rec_writer_create(ck_tmppath("big.htap"), &err);
	ck_assert_ptr_nonnull(w);
	write_big(w, nev);
	ck_assert_uint_gt(rec_writer_bytes(w), 0); /* chunks went out before close */
	ck_assert_int_eq(rec_writer_close(w), 0);
	r = rec_open(ck_tmppath("big.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), nev);
	ck_assert_uint_gt(rec_nevent_chunks(r), 2);
	for (int i = 0; i < 3; i++) {
		p[i] = (struct par){ .r = r, .from = i, .step = 3, .total = &total };
		ck_assert_int_eq(pthread_create(&th[i], NULL, par_decode, &p[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(total, nev);
	{
		size_t n;
		const struct rec_tick *tk = rec_ticks(r, &n);

		ck_assert_uint_eq(n, nev / 100000);
		ck_assert_uint_eq(tk[n - 1].event_index, (n - 1) * 100000 + 1); /* after event k */
		ck_assert_uint_eq(tk[n - 1].rss, (n - 1) * 100000 * 4096);
	}
	rec_close(r);
}
END_TEST

/* _i = 1: the same with the chunk thread, which writes what was handed over before the file is closed */
START_TEST(test_abort_keeps_flushed)
{
	struct rec_writer *w;
	struct rec_reader *r;
	uint32_t a, ip, t;
	int err;

	w = rec_writer_create(ck_tmppath("ab.htap"), &err);
	ck_assert_ptr_nonnull(w);
	if (_i)
		ck_assert_int_eq(rec_writer_thread(w), 0);
	ck_assert_int_eq(rec_put_ip(w, 1, &ip), 0);
	ck_assert_int_eq(rec_put_trace(w, 0, ip, &t), 0);
	ck_assert_int_eq(rec_put_allocinfo(w, 8, t, 1, &a), 0);
	ck_assert_int_eq(rec_put_alloc(w, a, 0), 0);
	ck_assert_int_eq(rec_put_meta(w, "state", "flushed"), 0);
	ck_assert_int_eq(rec_writer_flush(w), 0);
	ck_assert_int_eq(rec_put_free(w, a, 0), 0);
	ck_assert_int_eq(rec_put_meta(w, "state", "lost"), 0);
	rec_writer_abort(w);
	r = rec_open(ck_tmppath("ab.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED);
	ck_assert_uint_eq(rec_nevents(r), 1);
	ck_assert_str_eq(rec_meta(r, "state"), "flushed");
	rec_close(r);
}
END_TEST

START_TEST(test_crash_mid_chunk)
{
	/* a child writes a big recording and dies without closing */
	struct rec_reader *r;
	pid_t pid;
	int err, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rec_writer *w = rec_writer_create(ck_tmppath("crash.htap"), &err);

		if (!w)
			_exit(1);
		write_big(w, 1500000);
		_exit(0); /* no close: pending buffers are lost */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	r = rec_open(ck_tmppath("crash.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED);
	ck_assert_uint_gt(rec_nevents(r), 0);
	ck_assert_uint_lt(rec_nevents(r), 1500000);
	{
		uint64_t total = 0;

		for (size_t c = 0; c < rec_nevent_chunks(r); c++)
			check_big_chunk(r, c, &total);
		ck_assert_uint_eq(total, rec_nevents(r));
	}
	ck_assert_uint_eq(rec_fixed_refs(r), 0);
	rec_close(r);
}
END_TEST

/*
 * _i = 0: the writer writes inline; 1: on its chunk thread, whose failure
 * comes back at a later hand-over.
 */
START_TEST(test_write_error_sticky)
{
	/* a child whose files may not grow past 1 MiB: writes fail with EFBIG */
	struct rec_reader *r;
	pid_t pid;
	int err, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 1 << 20, .rlim_max = 1 << 20 };
		struct rec_writer *w;
		uint32_t idx;
		int ret = 0;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(10);
		w = rec_writer_create(ck_tmppath("efbig.htap"), &err);
		if (!w || (_i && rec_writer_thread(w)))
			_exit(11);
		/* incompressible strings: the STRINGS buffer fills and is written */
		for (int i = 0; i < (_i ? 4000000 : 1000000) && !ret; i++) {
			char s[64];

			snprintf(s, sizeof(s), "%08x-%d", (unsigned)(i * 2654435761u), i);
			ret = rec_put_string(w, s, &idx);
		}
		if (ret != -REC_E_IO)
			_exit(12);
		/* sticky: every later call says the same, close too */
		if (rec_put_ip(w, 1, &idx) != -REC_E_IO || rec_writer_flush(w) != -REC_E_IO)
			_exit(13);
		if (rec_writer_bytes(w) > 1 << 20)
			_exit(14);
		_exit(rec_writer_close(w) == -REC_E_IO ? 0 : 15);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* what got out whole is readable */
	r = rec_open(ck_tmppath("efbig.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED);
	if (!_i)
		ck_assert_str_eq(rec_string(r, 50000), "14d0609f-49999");
	ck_assert_str_eq(rec_string(r, 1), "00000000-0");
	rec_close(r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Event modes: each pattern must round-trip, whatever mode it gets.   */

/* the mode byte of every event chunk of path, or'ed into a bit set */
static unsigned modes_used(const char *path)
{
	struct rec_chunk_hdr h;
	unsigned seen = 0;
	uint8_t *buf;
	size_t len, off = REC_FILE_HDR;

	buf = ck_slurp(path, &len);
	while (len - off >= REC_CHUNK_HDR && !rec_chunk_decode(buf + off, &h)) {
		if (h.section == REC_SEC_EVENTS) {
			uint8_t *u = malloc(h.usize);

			ck_assert_ptr_nonnull(u);
			ck_assert_uint_eq(ZSTD_decompress(u, h.usize, buf + off + REC_CHUNK_HDR, h.csize),
					  h.usize);
			/* the writer keeps allocs' and frees' codes apart in every chunk */
			ck_assert_uint_ne(u[0] & REC_EVF_SPLIT, 0);
			seen |= 1u << (u[0] & ~REC_EVF_SPLIT);
			free(u);
		}
		off += REC_CHUNK_HDR + h.csize;
	}
	free(buf);
	return seen;
}

enum pattern { PAT_FEW_RANDOM, PAT_NEW_INFOS, PAT_SEQUENTIAL, PAT_FIFO_HINTED, PAT_NUM };

#define PAT_EVENTS 1200000

/* the info and op of event k of pattern pat; the writer and the check share it */
static void pattern_event(int pat, uint64_t k, uint32_t *info, uint32_t *op, uint64_t *weight)
{
	uint64_t x = util_fmix64(k + 1); /* k alone must not predict x */
	uint64_t a = k / 2;		 /* allocs before this event, or its alloc's number */

	*weight = 0;
	*op = k % 2 ? REC_EV_FREE : REC_EV_ALLOC;
	switch (pat) {
	case PAT_FEW_RANDOM: /* 50 infos, random: ranks */
		*info = (uint32_t)((x >> 40) % 50);
		if (k % 10 == 4)
			*weight = 4096 + k; /* and a few sampled allocs */
		break;
	case PAT_NEW_INFOS: /* every alloc a new info, frees random old ones */
		*info = k % 2 ? (uint32_t)((x >> 40) % (a + 1)) : (uint32_t)a;
		break;
	case PAT_SEQUENTIAL: /* infos counting up, FIFO frees of 1000 back */
		*info = (uint32_t)((k % 2 ? (a >= 1000 ? a - 1000 : 0) : a) % 60000);
		break;
	default: /* FIFO over 2000 live allocs of 300 random infos */
		if (k % 2)
			a = a >= 2000 ? a - 2000 : 0;
		*info = (uint32_t)(((a * 0x9e3779b97f4a7c15ull) >> 40) % 300);
		if (k % 16 == 7)
			*op = REC_EV_FREE_TEMP;
		break;
	}
}

START_TEST(test_event_modes)
{
	struct rec_writer *w;
	struct rec_reader *r;
	uint32_t ip, t, idx, ninfo = 0;
	uint64_t next = 0;
	unsigned modes;
	char name[32];
	int err;

	snprintf(name, sizeof(name), "modes%d.htap", _i);
	w = rec_writer_create(ck_tmppath(name), &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rec_put_ip(w, 0x1000, &ip), 0);
	ck_assert_int_eq(rec_put_trace(w, 0, ip, &t), 0);
	for (uint64_t k = 0; k < PAT_EVENTS; k++) {
		uint32_t info, op;
		uint64_t wt, a = k / 2;

		pattern_event(_i, k, &info, &op, &wt);
		while (ninfo <= info) {
			CK_REQUIRE(rec_put_allocinfo(w, 8 + ninfo % 100, t, 1, &idx) == 0);
			CK_REQUIRE(idx == ninfo);
			ninfo++;
		}
		if (op == REC_EV_ALLOC) {
			CK_REQUIRE(rec_writer_nallocs(w) == a);
			CK_REQUIRE(rec_put_alloc(w, info, wt) == 0);
		} else if (_i == PAT_FIFO_HINTED) {
			CK_REQUIRE(rec_put_free_of(w, info, op == REC_EV_FREE_TEMP,
						a >= 2000 ? a - 2000 : UINT64_MAX) == 0);
		} else {
			CK_REQUIRE(rec_put_free(w, info, op == REC_EV_FREE_TEMP) == 0);
		}
	}
	/* a hint naming an alloc not made yet is ignored, not an error */
	ck_assert_int_eq(rec_put_free_of(w, 0, 0, UINT64_MAX - 1), 0);
	ck_assert_int_eq(rec_put_free_of(w, ninfo, 0, 0), -REC_E_RANGE);
	ck_assert_int_eq(rec_writer_close(w), 0);

	r = rec_open(ck_tmppath(name), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), PAT_EVENTS + 1);
	ck_assert_uint_gt(rec_nevent_chunks(r), 1);
	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev;
		size_t n;
		uint64_t first;

		ck_assert_int_eq(rec_event_chunk(r, c, &ev, &n, &first), 0);
		CK_REQUIRE(first == next);
		for (size_t i = 0; i < n && first + i < PAT_EVENTS; i++) {
			uint32_t info, op;
			uint64_t wt;

			pattern_event(_i, first + i, &info, &op, &wt);
			CK_REQUIRE(ev[i].info == info);
			CK_REQUIRE(ev[i].op == op);
			CK_REQUIRE(ev[i].weight == wt);
		}
		next += n;
		free(ev);
	}
	ck_assert_uint_eq(next, PAT_EVENTS + 1);
	ck_assert_uint_eq(rec_dropped_events(r), 0);
	rec_close(r);

	/* the writer chose what suits each pattern */
	modes = modes_used(ck_tmppath(name));
	switch (_i) {
	case PAT_FEW_RANDOM:
		ck_assert_uint_ne(modes & (1u << REC_EVM_RANKED | 1u << (REC_EVM_RANKED | REC_EVF_AGE)), 0);
		break;
	case PAT_NEW_INFOS:
		ck_assert_uint_eq(modes & (1u << REC_EVM_RANKED | 1u << (REC_EVM_RANKED | REC_EVF_AGE)), 0);
		break;
	case PAT_FIFO_HINTED:
		ck_assert_uint_eq(modes & 0xffffu, 0); /* every chunk codes frees by age */
		break;
	default:
		break;
	}
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
	tcase_add_test(tc, test_truncated_every_offset);
	tcase_add_test(tc, test_flipped_bytes);
	tcase_add_test(tc, test_bad_header);
	tcase_add_test(tc, test_dangling);
	tcase_add_test(tc, test_crafted_corrupt);
	tcase_add_test(tc, test_big_parallel);
	tcase_add_loop_test(tc, test_abort_keeps_flushed, 0, 2);
	tcase_add_test(tc, test_crash_mid_chunk);
	tcase_add_loop_test(tc, test_write_error_sticky, 0, 2);
	tcase_add_loop_test(tc, test_event_modes, 0, PAT_NUM);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(recfile_suite());
}
