/* tests/unit/check_recfile_events.c - event chunks: split, lanes, version 1 chunks, edge cases */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* program_invocation_short_name, nftw (tests/lib/check_fixture.h) */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/check_craft.h"
#include "tests/lib/check_fixture.h"
#include "recfile/internal.h"
#include "recfile/recfile.h"

/* ------------------------------------------------------------------ */
/* Hand-made files: a version 1 chunk, a split chunk, damaged splits.  */

/* the file header of version and two allocation infos of the root trace: sizes 8 and 16, kind 1 */
static void craft_init(struct ck_craft *c, uint32_t version)
{
	static const uint8_t infos[] = { 8, 1, 16, 1 };

	ck_craft_init(c, version);
	ck_craft_chunk(c, REC_SEC_ALLOCINFOS, 0, 2, infos, sizeof(infos));
}

/* decode the one event chunk of a crafted file: rec_event_chunk's result */
static int decode_one(uint32_t version, const uint8_t *p, size_t n, uint32_t count,
		      struct rec_event *out)
{
	struct ck_craft c;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t got;
	uint64_t first;
	int err, ret;

	craft_init(&c, version);
	ck_craft_chunk(&c, REC_SEC_EVENTS, 0, count, p, n);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED); /* no END chunk */
	ck_assert_uint_eq(rec_nevent_chunks(r), 1);
	ret = rec_event_chunk(r, 0, &ev, &got, &first);
	if (!ret) {
		ck_assert_uint_eq(got, count);
		memcpy(out, ev, got * sizeof(*ev));
		free(ev);
	}
	rec_close(r);
	return ret;
}

/* alloc info 0, free info 1, weighted alloc info 0 (weight 9), as RECENT codes 0, 0, 3 */
#define OPS (REC_EV_ALLOC | REC_EV_FREE << 2 | REC_EV_WEIGHTED << 4)

static void check_three(const struct rec_event *ev)
{
	ck_assert_uint_eq(ev[0].info, 0);
	ck_assert_uint_eq(ev[0].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[1].info, 1);
	ck_assert_uint_eq(ev[1].op, REC_EV_FREE);
	ck_assert_uint_eq(ev[2].info, 0);
	ck_assert_uint_eq(ev[2].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[2].weight, 9);
}

START_TEST(test_version1_chunk)
{
	/* one column, as version 1 writers made it: still read, in either file version */
	static const uint8_t v1[] = { REC_EVM_RECENT, OPS, 0, 0, 3, 9 };
	struct rec_event ev[3];

	ck_assert_int_eq(decode_one(1, v1, sizeof(v1), 3, ev), 0);
	check_three(ev);
	memset(ev, 0, sizeof(ev));
	ck_assert_int_eq(decode_one(REC_VERSION, v1, sizeof(v1), 3, ev), 0);
	check_three(ev);
}
END_TEST

START_TEST(test_split_chunk)
{
	/* the allocs' codes (0, 3) after a u32 length, then the frees' (0), then the weight */
	static const uint8_t ok[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 2, 0, 0, 0, 0, 3, 0, 9 };
	/* the allocs' column claims the free's byte: its codes are left over */
	static const uint8_t long_a[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 3, 0, 0, 0, 0, 3, 0, 9 };
	/* the allocs' column runs past the payload */
	static const uint8_t past[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 200, 0, 0, 0, 0, 3, 0, 9 };
	static const uint8_t huge[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 0xff, 0xff, 0xff, 0xff, 0, 3, 0, 9 };
	/* the length itself cut short */
	static const uint8_t cut[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 2, 0, 0 };
	/* no frees' column: the weight is read as the free's code, then missing */
	static const uint8_t no_f[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 2, 0, 0, 0, 0, 3, 9 };
	/* a short allocs' column: the second alloc's code is missing from it */
	static const uint8_t short_a[] = { REC_EVM_RECENT | REC_EVF_SPLIT, OPS, 1, 0, 0, 0, 0, 3, 0, 9 };
	/* an unknown mode flag */
	static const uint8_t flag[] = { REC_EVM_RECENT | 0x80, OPS, 0, 0, 3, 9 };
	struct rec_event ev[3];

	ck_assert_int_eq(decode_one(REC_VERSION, ok, sizeof(ok), 3, ev), 0);
	check_three(ev);
	ck_assert_int_eq(decode_one(REC_VERSION, long_a, sizeof(long_a), 3, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, past, sizeof(past), 3, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, huge, sizeof(huge), 3, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, cut, sizeof(cut), 3, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, no_f, sizeof(no_f), 3, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, short_a, sizeof(short_a), 3, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, flag, sizeof(flag), 3, ev), -REC_E_CORRUPT);
}
END_TEST

/* lane l's op byte (REC_EVF_LANES) */
#define LOP(op, l) ((op) | (l) << 2)
#define LANES_MODE (REC_EVM_RECENT | REC_EVF_AGE | REC_EVF_SPLIT | REC_EVF_LANES)

START_TEST(test_lanes_chunk)
{
	/*
	 * lane 0 allocs info 0, lane 1 info 1, then each lane frees at age 1
	 * (code 0) in its own lane: infos 0 and 1. As one lane, the first free
	 * would be of info 1, the latest alloc.
	 */
	static const uint8_t ok[] = { LANES_MODE, LOP(0, 0), LOP(0, 1), LOP(1, 0), LOP(2, 1),
				      2, 0, 0, 0, 0, 0, 0, 0 };
	/* the same codes with one lane: the frees are of the latest alloc, then of it again */
	static const uint8_t one[] = { LANES_MODE, LOP(0, 0), LOP(0, 0), LOP(1, 0), LOP(2, 0),
				       2, 0, 0, 0, 0, 0, 0, 0 };
	/* a free in lane 63, which has no allocs */
	static const uint8_t empty[] = { LANES_MODE, LOP(0, 0), LOP(0, 1), LOP(1, 63), LOP(2, 1),
					 2, 0, 0, 0, 0, 0, 0, 0 };
	/* lane 1's free at age 2 (code 2 * zigzag(1) + 2): the lane has one alloc */
	static const uint8_t old[] = { LANES_MODE, LOP(0, 0), LOP(0, 1), LOP(1, 0), LOP(2, 1),
				       2, 0, 0, 0, 0, 0, 0, 6 };
	/* the ops' column cut short: a byte per op, not 2 bits */
	static const uint8_t cut[] = { LANES_MODE, LOP(0, 0), LOP(0, 1), LOP(1, 0) };
	/* lanes without AGE: a weighted alloc in lane 5 (weight 7), its free (RECENT: hw - 0) */
	static const uint8_t wt[] = { REC_EVM_RECENT | REC_EVF_SPLIT | REC_EVF_LANES,
				      LOP(REC_EV_WEIGHTED, 5), LOP(1, 5), 1, 0, 0, 0, 0, 1, 7 };
	struct rec_event ev[4];

	ck_assert_int_eq(decode_one(REC_VERSION, ok, sizeof(ok), 4, ev), 0);
	ck_assert_uint_eq(ev[0].info, 0);
	ck_assert_uint_eq(ev[1].info, 1);
	ck_assert_uint_eq(ev[2].info, 0);
	ck_assert_uint_eq(ev[2].op, REC_EV_FREE);
	ck_assert_uint_eq(ev[3].info, 1);
	ck_assert_uint_eq(ev[3].op, REC_EV_FREE_TEMP);
	ck_assert_int_eq(decode_one(REC_VERSION, one, sizeof(one), 4, ev), 0);
	ck_assert_uint_eq(ev[2].info, 1);
	ck_assert_uint_eq(ev[3].info, 1);
	ck_assert_int_eq(decode_one(REC_VERSION, empty, sizeof(empty), 4, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, old, sizeof(old), 4, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, cut, sizeof(cut), 4, ev), -REC_E_CORRUPT);
	ck_assert_int_eq(decode_one(REC_VERSION, wt, sizeof(wt), 2, ev), 0);
	ck_assert_uint_eq(ev[0].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[0].weight, 7);
	ck_assert_uint_eq(ev[1].op, REC_EV_FREE);
	ck_assert_uint_eq(ev[1].info, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Round trips through the writer: chunks of one class, old allocs.    */

#define NINFOS 700	/* more than 255: RANKED escapes */
#define PHASE (600 * 1024) /* more than a chunk of allocs alone, then of frees alone */

struct expect {
	struct rec_event *ev;
	size_t n, cap;
};

static void expect(struct expect *x, uint32_t info, uint32_t op, uint64_t weight)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 1 << 20;
		x->ev = realloc(x->ev, x->cap * sizeof(*x->ev));
		ck_assert_ptr_nonnull(x->ev);
	}
	x->ev[x->n++] = (struct rec_event){ .info = info, .op = op, .weight = weight };
}

static uint32_t info_of(uint64_t k)
{
	return (uint32_t)(((k * 0x9e3779b97f4a7c15ull) >> 40) % NINFOS);
}

/*
 * allocs only (chunks with an empty frees' column), then frees only of
 * them in FIFO order with hints naming allocs of earlier chunks (an empty
 * allocs' column), flushes cutting chunks at odd places, then a mix:
 * a free and an alloc of the same info (realloc, an address reused), weights
 * up to UINT64_MAX, and a hint naming an alloc not made yet
 */
static void write_edges(struct rec_writer *w, struct expect *x)
{
	uint32_t ip, t, idx;

	CK_REQUIRE(rec_put_ip(w, 0x1000, &ip) == 0);
	CK_REQUIRE(rec_put_trace(w, 0, ip, &t) == 0);
	for (uint32_t i = 0; i < NINFOS; i++) {
		CK_REQUIRE(rec_put_allocinfo(w, i % 2 ? UINT64_MAX - i : (uint64_t)1 << (i % 64), t,
					     i % 20, &idx) == 0);
		CK_REQUIRE(idx == i);
	}
	for (uint64_t k = 0; k < PHASE; k++) {
		CK_REQUIRE(rec_put_alloc(w, info_of(k), 0) == 0);
		expect(x, info_of(k), REC_EV_ALLOC, 0);
	}
	for (uint64_t k = 0; k < PHASE; k++) {
		CK_REQUIRE(rec_put_free_of(w, info_of(k), k % 7 == 0, k) == 0);
		expect(x, info_of(k), k % 7 ? REC_EV_FREE : REC_EV_FREE_TEMP, 0);
		if (k % 99991 == 17)
			CK_REQUIRE(rec_writer_flush(w) == 0);
	}
	for (uint64_t k = 0; k < 200000; k++) {
		uint64_t no = rec_writer_nallocs(w);
		uint32_t info = info_of(k + 5);
		uint64_t wt = k % 3 ? 0 : UINT64_MAX - k;

		CK_REQUIRE(rec_put_alloc(w, info, wt) == 0);
		expect(x, info, REC_EV_ALLOC, wt);
		if (k % 2) {
			CK_REQUIRE(rec_put_free_of(w, info, 1, no) == 0); /* realloc: freed at once */
			expect(x, info, REC_EV_FREE_TEMP, 0);
			CK_REQUIRE(rec_put_alloc(w, info, 0) == 0);	   /* the address reused */
			expect(x, info, REC_EV_ALLOC, 0);
		} else {
			CK_REQUIRE(rec_put_free_of(w, info_of(k), 0, no + 5) == 0); /* not made yet */
			expect(x, info_of(k), REC_EV_FREE, 0);
		}
	}
}

START_TEST(test_edges_round_trip)
{
	struct expect x = { 0 };
	struct rec_writer *w;
	struct rec_reader *r;
	uint64_t next = 0;
	int err;

	w = rec_writer_create(ck_tmppath("edges.htap"), &err);
	ck_assert_ptr_nonnull(w);
	if (_i)
		ck_assert_int_eq(rec_writer_thread(w), 0);
	write_edges(w, &x);
	ck_assert_int_eq(rec_writer_close(w), 0);

	r = rec_open(ck_tmppath("edges.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), x.n);
	ck_assert_uint_gt(rec_nevent_chunks(r), 4);
	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev;
		size_t n;
		uint64_t first;

		ck_assert_int_eq(rec_event_chunk(r, c, &ev, &n, &first), 0);
		CK_REQUIRE(first == next);
		CK_REQUIRE(n <= x.n - first);
		for (size_t i = 0; i < n; i++) {
			CK_REQUIRE(ev[i].info == x.ev[first + i].info);
			CK_REQUIRE(ev[i].op == x.ev[first + i].op);
			CK_REQUIRE(ev[i].weight == x.ev[first + i].weight);
		}
		next += n;
		free(ev);
	}
	ck_assert_uint_eq(next, x.n);
	ck_assert_uint_eq(rec_dropped_events(r), 0);
	rec_close(r);
	free(x.ev);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Lanes: threads interleaved, each freeing its own allocs in order.   */

#define NTHREADS 70 /* more than REC_EV_LANES: some share a lane */
#define DEPTH 40    /* each thread's allocs alive at once */
#define LANE_STEPS 700000

/* the thread numbers: small ones, and some far past the lanes */
static uint32_t thread_no(uint32_t t)
{
	return t % 3 ? t : UINT32_MAX - t;
}

/*
 * NTHREADS threads, two at a time in a pseudo-random interleaving (as on
 * two cores), each allocating infos
 * of its own and freeing the oldest of its DEPTH live ones (hinted, as the
 * interpreter does); every 97th free is another thread's (a cross-thread
 * free), every 5th alloc weighted; with lanes, rec_put_lane names each
 * event's thread
 */
static void write_threads(struct rec_writer *w, struct expect *x, int lanes)
{
	static uint64_t live[NTHREADS][DEPTH];
	static uint32_t live_info[NTHREADS][DEPTH];
	uint32_t nlive[NTHREADS] = { 0 }, head[NTHREADS] = { 0 }, ip, t, idx, th, run[2] = { 0, 1 };
	uint64_t r = 0x2545f4914f6cdd1dull;

	CK_REQUIRE(rec_put_ip(w, 0x1000, &ip) == 0);
	CK_REQUIRE(rec_put_trace(w, 0, ip, &t) == 0);
	for (uint32_t i = 0; i < NINFOS; i++)
		CK_REQUIRE(rec_put_allocinfo(w, 16 + i, t, 1, &idx) == 0);
	for (uint64_t k = 0; k < LANE_STEPS; k++) {
		uint32_t f;

		/* two threads run at once (two cores), now and then another one takes over */
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		if (r % 4096 == 0)
			run[(r >> 12) & 1] = (uint32_t)(r >> 16) % NTHREADS;
		th = run[(r >> 5) & 1];
		if (lanes)
			rec_put_lane(w, thread_no(th));
		if (nlive[th] < DEPTH) {
			uint32_t info = info_of(k) % 32;
			uint64_t wt = k % 5 ? 0 : 4096;
			uint32_t slot = (head[th] + nlive[th]++) % DEPTH;

			live[th][slot] = rec_writer_nallocs(w);
			live_info[th][slot] = info;
			CK_REQUIRE(rec_put_alloc(w, info, wt) == 0);
			expect(x, info, REC_EV_ALLOC, wt);
			continue;
		}
		/* the oldest of its own, or of the next thread's */
		f = k % 97 ? th : (th + 1) % NTHREADS;
		if (!nlive[f])
			f = th;
		CK_REQUIRE(rec_put_free_of(w, live_info[f][head[f]], 0, live[f][head[f]]) == 0);
		expect(x, live_info[f][head[f]], REC_EV_FREE, 0);
		head[f] = (head[f] + 1) % DEPTH;
		nlive[f]--;
	}
}

/* read path back: every event as x has it; returns the file's size */
static size_t check_events(const char *path, const struct expect *x)
{
	struct rec_reader *r;
	uint64_t next = 0;
	struct stat sb;
	int err;

	r = rec_open(path, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), x->n);
	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev;
		size_t n;
		uint64_t first;

		ck_assert_int_eq(rec_event_chunk(r, c, &ev, &n, &first), 0);
		CK_REQUIRE(first == next && n <= x->n - first);
		for (size_t i = 0; i < n; i++) {
			CK_REQUIRE(ev[i].info == x->ev[first + i].info);
			CK_REQUIRE(ev[i].op == x->ev[first + i].op);
			CK_REQUIRE(ev[i].weight == x->ev[first + i].weight);
		}
		next += n;
		free(ev);
	}
	ck_assert_uint_eq(next, x->n);
	ck_assert_uint_eq(rec_dropped_events(r), 0);
	rec_close(r);
	ck_assert_int_eq(stat(path, &sb), 0);
	return (size_t)sb.st_size;
}

START_TEST(test_lanes_round_trip)
{
	struct expect x[2] = { { 0 }, { 0 } };
	const char *names[2] = { "one.htap", "lanes.htap" };
	size_t size[2];
	int err;

	for (int lanes = 0; lanes < 2; lanes++) {
		struct rec_writer *w = rec_writer_create(ck_tmppath(names[lanes]), &err);

		ck_assert_ptr_nonnull(w);
		if (_i)
			ck_assert_int_eq(rec_writer_thread(w), 0);
		write_threads(w, &x[lanes], lanes);
		ck_assert_int_eq(rec_writer_close(w), 0);
		size[lanes] = check_events(ck_tmppath(names[lanes]), &x[lanes]);
		free(x[lanes].ev);
	}
	/* the same events: each thread's frees cost next to nothing in its own lane (-15 %) */
	ck_assert_msg(size[1] * 10 < size[0] * 9, "lanes %zu bytes, one lane %zu", size[1], size[0]);
}
END_TEST

static Suite *recfile_events_suite(void)
{
	Suite *s = suite_create("recfile_events");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_version1_chunk);
	tcase_add_test(tc, test_split_chunk);
	tcase_add_loop_test(tc, test_edges_round_trip, 0, 2);
	tcase_add_test(tc, test_lanes_chunk);
	tcase_add_loop_test(tc, test_lanes_round_trip, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(recfile_events_suite());
}
