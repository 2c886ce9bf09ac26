/* tests/unit/check_interpret_order.c - interpret/ puts events of many threads back in sequence order */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a stream with check_interpret_wire.c, writes it into one
 * end of a socketpair from a thread, runs itp_run on the other end, then
 * opens the recording with rec_open and asserts on its tables and events
 * (check_interpret_harness.h).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_harness.h"
#include "interpret/internal.h"

/* ---- tests --------------------------------------------------------- */

/*
 * Thread 1 frees P1 (seq 2), thread 2's malloc then returns P1 (seq 3); the
 * chunk of thread 2 is sent first. Applied in arrival order, the free would
 * hit the new block; in seq order both blocks pair up.
 */
START_TEST(test_reorder_across_chunks)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n;

	header(&s);
	ck_begin(&c, 2, 3);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 32, 0, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 16, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 48, 0, P2);
	ck_free(&c, 2, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 4);
	ck_free(&c, 4, P1);
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.reused_ptrs, 0);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.final.heap_bytes, 48);

	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 3);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(ai[ev[0].info].size, 16);
	ck_assert_uint_eq(ai[ev[1].info].size, 48);
	ck_assert_uint_eq(ev[2].op, REC_EV_FREE);
	ck_assert_uint_eq(ai[ev[2].info].size, 16);
	ck_assert_uint_eq(ev[3].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ai[ev[3].info].size, 32);
	ck_assert_uint_eq(ev[4].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(ai[ev[4].info].size, 32);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* many threads, chunks sent in reverse: every event still in seq order */
START_TEST(test_reorder_many)
{
	enum { T = 8, PER = 50 };
	struct sbuf s = {0};
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n, i;
	int t, k;

	header(&s);
	/* thread t owns seqs t, t+T, t+2T, ...: seq q allocates size q+1 */
	for (t = T - 1; t >= 0; t--) {
		for (k = PER / 10 - 1; k >= 0; k--) {
			struct chunkb c;
			int j;

			ck_begin(&c, 1000 + t, (uint64_t)(k * 10 * T + t));
			for (j = 0; j < 10; j++) {
				uint64_t q = (uint64_t)((k * 10 + j) * T + t);

				ck_alloc(&c, q, WIRE_KIND_MALLOC, q + 1, 0, 0x10000 + q * 16);
			}
			ck_end(&s, &c);
		}
	}
	sb_end(&s, T * PER, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.final.alloc_calls, T * PER);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.warn.skipped_seqs, 0);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ev = events(r, &n);
	ck_assert_uint_eq(n, T * PER);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(ai[ev[i].info].size, i + 1);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_seq_repeated)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_nop(&c, 0);
	ck_nop(&c, 0);
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "repeated"));
	sb_free(&s);
}
END_TEST

/* seq 2 never arrives: at the end the gap is skipped, nothing is lost */
START_TEST(test_gap_at_end)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 8, 0, P3);
	ck_end(&s, &c);
	sb_tick(&s, 10, 4096, 4);
	sb_end(&s, 5, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.skipped_seqs, 2); /* seq 2 and seq 4 */
	r = open_rec();
	ck_assert_uint_eq(rec_nevents(r), 3);
	ck_assert_str_eq(rec_meta(r, "skipped_seqs"), "2");
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* a small reorder window: a missing seq is given up on, later ones flow */
START_TEST(test_reorder_limit)
{
	struct sbuf s = {0};
	struct itp_options opt = {.reorder_limit = 4096};
	struct itp_result res;
	struct rec_reader *r;
	struct rec_event *ev;
	const struct rec_allocinfo *ai;
	size_t n, i;
	int k;

	header(&s);
	/* seq 0 is missing; 40 chunks of 10 events each follow */
	for (k = 0; k < 40; k++) {
		struct chunkb c;
		int j;

		ck_begin(&c, 1, (uint64_t)(1 + k * 10));
		for (j = 0; j < 10; j++) {
			uint64_t q = (uint64_t)(1 + k * 10 + j);

			ck_alloc(&c, q, WIRE_KIND_MALLOC, q, 0, 0x10000 + q * 16);
		}
		ck_end(&s, &c);
	}
	{
		struct chunkb c;

		ck_begin(&c, 2, 0); /* the missing event, far too late */
		ck_alloc(&c, 0, WIRE_KIND_MALLOC, 1000, 0, P1);
		ck_end(&s, &c);
	}
	sb_end(&s, 401, WIRE_END_EXIT);
	ck_assert_int_eq(run_feed(&s, &opt, &res, NULL), 0);
	ck_assert_uint_eq(res.warn.gap_skips, 1);
	ck_assert_uint_eq(res.warn.skipped_seqs, 1);
	ck_assert_uint_eq(res.warn.late_events, 1);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 401);
	for (i = 0; i < 400; i++)
		ck_assert_uint_eq(ai[ev[i].info].size, i + 1);
	ck_assert_uint_eq(ai[ev[400].info].size, 1000);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* a tick says "every event below seq 3 happened before me": it waits for them */
START_TEST(test_tick_order)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_tick *tk;
	size_t n;

	header(&s);
	sb_tick(&s, 100, 1000, 0);
	ck_begin(&c, 2, 1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 8, 0, P3);
	ck_end(&s, &c);
	sb_tick(&s, 200, 2000, 3);
	sb_tick(&s, 300, 3000, 4);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 0, P4);
	ck_end(&s, &c);
	sb_end(&s, 4, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	tk = rec_ticks(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(tk[0].event_index, 0);
	ck_assert_uint_eq(tk[1].event_index, 3);
	ck_assert_uint_eq(tk[1].rss, 2000);
	ck_assert_uint_eq(tk[2].event_index, 4);
	ck_assert_uint_eq(tk[2].time_ns, 300);
	ck_assert_str_eq(rec_meta(r, "peak_rss"), "3000");
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* ---- suite ----------------------------------------------------------------- */

static Suite *interpret_order_suite(void)
{
	Suite *s = suite_create("interpret_order");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_reorder_across_chunks);
	tcase_add_test(tc, test_reorder_many);
	tcase_add_test(tc, test_seq_repeated);
	tcase_add_test(tc, test_gap_at_end);
	tcase_add_test(tc, test_reorder_limit);
	tcase_add_test(tc, test_tick_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(interpret_order_suite());
}
