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
	run_refused(&s, &res, ITP_E_CORRUPT, "repeated");
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

/* ---- parked chunks come back exactly (order.c, "Packed events") ---- */

struct rec_copy {
	struct itp_result res;
	struct rec_allocinfo *ai;
	struct rec_event *ev;
	struct rec_trace *tr;
	struct rec_ip *ips;
	size_t nai, nev, ntr, nips, nmods;
	uint64_t mod_base;
};

static void *dup_mem(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(q);
	memcpy(q, p, n);
	return q;
}

/* run s with a reorder window of limit bytes (0: the default), copy what the recording holds */
static void run_copy(const struct sbuf *s, size_t limit, struct rec_copy *o)
{
	struct itp_options opt = {.reorder_limit = limit};
	struct rec_reader *r;
	const struct rec_module *m;

	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(run_feed(s, &opt, &o->res, NULL), 0);
	r = open_rec();
	{
		const struct rec_allocinfo *ai = rec_allocinfos(r, &o->nai);
		const struct rec_trace *tr = rec_traces(r, &o->ntr);
		const struct rec_ip *ips = rec_ips(r, &o->nips);

		o->ai = dup_mem(ai, o->nai * sizeof(*ai));
		o->tr = dup_mem(tr, o->ntr * sizeof(*tr));
		o->ips = dup_mem(ips, o->nips * sizeof(*ips));
	}
	m = rec_modules(r, &o->nmods);
	o->mod_base = o->nmods ? m[o->nmods - 1].base : 0;
	o->ev = events(r, &o->nev);
	rec_close(r);
}

static void copy_free(struct rec_copy *o)
{
	free(o->ai);
	free(o->ev);
	free(o->tr);
	free(o->ips);
}

/*
 * Thread 2's chunk (every op: nodes, a module and its removal, ALLOC,
 * ALLOC_W, ALLOC_D and FREE_D with distances across 0 and 2^64, pointers
 * and sizes of every length) waits for seq 0 of thread 1. Sent after it,
 * the chunk is applied as it is decoded; sent before it, the whole chunk is
 * parked: decoded with the default window, packed with a window of 1 MiB
 * (more than a sixteenth of it pending: the chunk's 4096 decoded events
 * take 192 KiB). The recordings must be the same in every table and event.
 */
static void same_rec(const struct rec_copy *x, const struct rec_copy *y)
{
	ck_assert_uint_eq(x->res.warn.late_events + y->res.warn.late_events, 0);
	ck_assert_uint_eq(x->res.warn.skipped_seqs + y->res.warn.skipped_seqs, 0);
	ck_assert_uint_eq(x->res.warn.unknown_frees + y->res.warn.unknown_frees, 0);
	ck_assert_uint_eq(x->res.final.alloc_calls, y->res.final.alloc_calls);
	ck_assert_uint_eq(x->res.final.heap_bytes, y->res.final.heap_bytes);
	ck_assert_uint_eq(x->res.final.peak_bytes, y->res.final.peak_bytes);
	ck_assert_int_eq(memcmp(&x->res.warn, &y->res.warn, sizeof(x->res.warn)), 0);
	ck_assert_uint_eq(x->nmods, 1);
	ck_assert_uint_eq(y->nmods, 1);
	ck_assert_uint_eq(x->mod_base, y->mod_base);
	ck_assert_uint_eq(x->nai, y->nai);
	ck_assert_uint_eq(x->nev, y->nev);
	ck_assert_uint_eq(x->ntr, 3);
	ck_assert_uint_eq(x->ntr, y->ntr);
	ck_assert_uint_eq(x->nips, y->nips);
	ck_assert_int_eq(memcmp(x->ai, y->ai, x->nai * sizeof(*x->ai)), 0);
	ck_assert_int_eq(memcmp(x->ev, y->ev, x->nev * sizeof(*x->ev)), 0);
	ck_assert_int_eq(memcmp(x->tr, y->tr, x->ntr * sizeof(*x->tr)), 0);
	ck_assert_int_eq(memcmp(x->ips, y->ips, x->nips * sizeof(*x->ips)), 0);
}

START_TEST(test_parked_exact)
{
	enum { N = 3000 };
	static const uint64_t segs[] = {0, 0x2000, 5};
	struct sbuf in_order = {0}, parked = {0};
	struct chunkb a, b;
	struct rec_copy x, y;
	uint64_t live[64] = {0}, seq = 1, rnd = 88172645463325252ull;
	int k;

	ck_begin(&a, 1, 0);
	ck_alloc(&a, 0, WIRE_KIND_MALLOC, 7, 0, P1);
	ck_begin(&b, 2, 1);
	ck_module(&b, seq++, 0x400000, 1, segs, (const uint8_t *)"\x01\x02", 2, "/usr/bin/prog");
	ck_node(&b, seq++, 1, 0, 0x401000);
	ck_node(&b, seq++, 2, 1, 0x401234);
	ck_alloc(&b, seq++, WIRE_KIND_CALLOC, 1ull << 40, 2, 0xfffffffffffff000ull);
	ck_alloc_d(&b, seq++, WIRE_KIND_MALLOC, 16, 1, 0x10); /* across 2^64 */
	ck_free_d(&b, seq++, 0xfffffffffffff000ull);
	ck_free(&b, seq++, 0x10);
	ck_alloc_w(&b, seq++, 100, 2, P2, 1ull << 50);
	for (k = 0; k < N; k++) {
		uint64_t ptr, size;
		int slot;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		slot = (int)(rnd % 64);
		if (live[slot]) {
			ck_free_d(&b, seq++, live[slot]);
			live[slot] = 0;
			continue;
		}
		/* pointers of 1 to 8 bytes (the slot in the low bits: all live ones differ), sizes of 1 to 5 */
		ptr = (rnd >> (8 * (rnd % 8)) & ~(uint64_t)0xfff) | (uint64_t)(slot + 1) << 4;
		size = (rnd >> 20) >> (7 * (rnd % 7) + 20);
		ck_alloc_d(&b, seq++, (uint8_t)(1 + k % 4), size, 1 + (uint64_t)(k % 2), ptr);
		live[slot] = ptr;
	}
	ck_module_del(&b, seq++, 0x400000);
	ck_alloc(&b, seq++, WIRE_KIND_MALLOC, 1, 0, P3);

	header(&in_order);
	header(&parked);
	/* the same two chunks, in either order */
	{
		struct sbuf ca = {0}, cb = {0};

		sb_record(&ca, WIRE_REC_CHUNK, &a.b);
		sb_record(&cb, WIRE_REC_CHUNK, &b.b);
		sb_bytes(&in_order, ca.p, ca.len);
		sb_bytes(&in_order, cb.p, cb.len);
		sb_bytes(&parked, cb.p, cb.len);
		sb_bytes(&parked, ca.p, ca.len);
		sb_free(&ca);
		sb_free(&cb);
		sb_free(&a.b);
		sb_free(&b.b);
	}
	sb_end(&in_order, seq, WIRE_END_EXIT);
	sb_end(&parked, seq, WIRE_END_EXIT);

	run_copy(&in_order, 0, &x);
	ck_assert_uint_eq(x.nev, seq - 4); /* all but the module, its removal and the nodes */
	run_copy(&parked, 0, &y);
	same_rec(&x, &y);
	copy_free(&y);
	run_copy(&in_order, 1 << 20, &y);
	same_rec(&x, &y);
	copy_free(&y);
	run_copy(&parked, 1 << 20, &y);
	same_rec(&x, &y);
	copy_free(&y);
	copy_free(&x);
	sb_free(&in_order);
	sb_free(&parked);
}
END_TEST

static Suite *interpret_order_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("interpret_order", "stream", &tc);

	tcase_add_test(tc, test_reorder_across_chunks);
	tcase_add_test(tc, test_reorder_many);
	tcase_add_test(tc, test_seq_repeated);
	tcase_add_test(tc, test_gap_at_end);
	tcase_add_test(tc, test_reorder_limit);
	tcase_add_test(tc, test_tick_order);
	tcase_add_test(tc, test_parked_exact);
	return s;
}

int main(void)
{
	return ck_run_suite(interpret_order_suite());
}
