/* tests/unit/check_interpret.c - Check suite for interpret/: crafted streams in, recordings out */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a stream with check_interpret_wire.c, writes it into one
 * end of a socketpair from a thread, runs itp_run on the other end, then
 * opens the recording with rec_open and asserts on its tables and events
 * (check_interpret_harness.h).
 *
 * `check_interpret --write-seeds DIR` writes the fuzz seed corpus instead
 * (tests/data/stream/, see its README); --bench, --bench-gen and --bench-run
 * time the interpreter on a synthetic stream (check_interpret_tools.c).
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
#include "check_interpret_tools.h"
#include "interpret/internal.h"

/* ---- tests --------------------------------------------------------- */

START_TEST(test_basic)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_trace *tr;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n;

	header(&s);
	ck_begin(&c, 100, 0);
	ck_node(&c, 0, 5, 0, 0x401000);
	ck_node(&c, 1, 9, 5, 0x402000);
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 24, 9, P1);
	ck_alloc(&c, 3, WIRE_KIND_CALLOC, 100, 5, P2);
	ck_free(&c, 4, P2);
	ck_end(&s, &c);
	sb_tick(&s, 5000000, 1 << 20, 5);
	sb_end(&s, 5, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_str_eq(res.detail, "");
	ck_assert_uint_eq(res.pid, 4242);
	ck_assert_str_eq(res.exe, "/usr/bin/prog");
	ck_assert_int_eq(res.end_reason, WIRE_END_EXIT);
	ck_assert_uint_eq(res.final.alloc_calls, 2);
	ck_assert_uint_eq(res.final.free_calls, 1);
	ck_assert_uint_eq(res.final.heap_bytes, 24);
	ck_assert_uint_eq(res.final.peak_bytes, 124);
	ck_assert_uint_eq(res.final.traces, 2);
	ck_assert_uint_eq(res.final.rss_bytes, 1 << 20);
	ck_assert_uint_eq(res.slots_restored, 3);

	r = open_rec();
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_str_eq(rec_meta(r, "exe"), "/usr/bin/prog");
	ck_assert_str_eq(rec_meta(r, "command"), "prog -x arg");
	ck_assert_str_eq(rec_meta(r, "pid"), "4242");
	ck_assert_str_eq(rec_meta(r, "attached"), "0");
	ck_assert_str_eq(rec_meta(r, "end_reason"), "exit");
	ck_assert_str_eq(rec_meta(r, "unknown_frees"), "0");
	ck_assert_str_eq(rec_meta(r, "peak_rss"), "1048576");
	ck_assert_str_eq(rec_meta(r, "duration_ns"), "5000000");
	ck_assert_ptr_nonnull(rec_meta(r, "heaptap_version"));
	tr = rec_traces(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(tr[1].parent, 0);
	ck_assert_uint_eq(tr[2].parent, 1);
	ck_assert_uint_eq(rec_ips(r, &n)[tr[2].ip].ip, 0x402000);
	ck_assert_uint_eq(n, 2);
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ai[0].size, 24);
	ck_assert_uint_eq(ai[0].trace, 2);
	ck_assert_uint_eq(ai[0].kind, WIRE_KIND_MALLOC);
	ck_assert_uint_eq(ai[1].size, 100);
	ck_assert_uint_eq(ai[1].trace, 1);
	ck_assert_uint_eq(ai[1].kind, WIRE_KIND_CALLOC);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ev[0].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[0].info, 0);
	ck_assert_uint_eq(ev[1].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[1].info, 1);
	ck_assert_uint_eq(ev[2].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(ev[2].info, 1);
	ck_assert_uint_eq(rec_ticks(r, &n)[0].event_index, 3);
	ck_assert_uint_eq(n, 1);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/*
 * Pointers as zigzag distances (WIRE_EV_ALLOC_D / FREE_D): each chunk counts
 * from 0, absolute ALLOC/FREE between them leave the base alone, distances
 * go both ways and wrap, and a chunk parked for later (seq order) decodes
 * the same. Wrong pointers would show as unknown frees and a wrong heap.
 */
START_TEST(test_ptr_delta)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n;

	header(&s);
	/* thread 2's chunk first: parked until seq 4 */
	ck_begin(&c, 2, 4);
	ck_alloc_d(&c, 4, WIRE_KIND_MALLOC, 32, 0, P1);		  /* P1 reused after thread 1's free */
	ck_free(&c, 5, P4);					  /* absolute: base stays P1 */
	ck_alloc_d(&c, 6, WIRE_KIND_MALLOC, 64, 0, 0x10);	  /* far down */
	ck_alloc_d(&c, 7, WIRE_KIND_MALLOC, 128, 0, UINT64_MAX); /* far up */
	ck_free_d(&c, 8, 0x10);					  /* wraps */
	ck_free_d(&c, 9, UINT64_MAX);
	ck_end(&s, &c);
	ck_begin(&c, 1, 0);
	ck_alloc_d(&c, 0, WIRE_KIND_MALLOC, 16, 0, P1);
	ck_alloc_d(&c, 1, WIRE_KIND_MALLOC, 48, 0, P2);
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 0, P4);
	ck_free_d(&c, 3, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 10);
	ck_free_d(&c, 10, P1); /* a new chunk: from 0 again */
	ck_end(&s, &c);
	sb_end(&s, 11, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_str_eq(res.detail, "");
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.reused_ptrs, 0);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.final.alloc_calls, 6);
	ck_assert_uint_eq(res.final.free_calls, 5);
	ck_assert_uint_eq(res.final.heap_bytes, 48);

	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 11);
	ck_assert_uint_eq(ev[3].op, REC_EV_FREE);
	ck_assert_uint_eq(ai[ev[3].info].size, 16);
	ck_assert_uint_eq(ai[ev[4].info].size, 32);
	ck_assert_uint_eq(ai[ev[5].info].size, 8);
	ck_assert_uint_eq(ai[ev[8].info].size, 64);
	ck_assert_uint_eq(ai[ev[9].info].size, 128);
	ck_assert_uint_eq(ai[ev[10].info].size, 32);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_temporary)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t n;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_free(&c, 1, P1); /* temporary */
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 8, 0, P3);
	ck_free(&c, 4, P2); /* not: P3 came between */
	ck_alloc(&c, 5, WIRE_KIND_MALLOC, 8, 0, P4);
	ck_end(&s, &c);
	ck_begin(&c, 2, 6);
	ck_alloc(&c, 6, WIRE_KIND_MALLOC, 8, 0, P1); /* another thread's alloc */
	ck_free(&c, 7, P4);			     /* temporary: thread 1 did nothing since */
	ck_end(&s, &c);
	sb_end(&s, 8, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	ev = events(r, &n);
	ck_assert_uint_eq(n, 8);
	ck_assert_uint_eq(ev[1].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(ev[4].op, REC_EV_FREE);
	ck_assert_uint_eq(ev[7].op, REC_EV_FREE_TEMP);
	/* equal (size, trace, kind): one allocinfo for all */
	rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 1);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_frees)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	size_t n;

	sb_header(&s, 7, WIRE_F_ATTACHED, "/bin/x", "x", 1);
	ck_begin(&c, 1, 0);
	ck_free(&c, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_free(&c, 2, P3);
	ck_free(&c, 3, P2);
	ck_free(&c, 4, P2); /* double free */
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_STOP);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_frees, 3);
	ck_assert_uint_eq(res.final.free_calls, 4);
	r = open_rec();
	ck_assert_str_eq(rec_meta(r, "unknown_frees"), "3");
	ck_assert_str_eq(rec_meta(r, "attached"), "1");
	ck_assert_str_eq(rec_meta(r, "end_reason"), "stop");
	ck_assert_uint_eq(rec_nevents(r), 2);
	rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 1);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_dedup_allocinfos)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	size_t n, i;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 1, 0, 0x1000);
	ck_node(&c, 1, 2, 0, 0x2000);
	for (i = 0; i < 300; i++) /* 3 sizes x 2 traces x 2 kinds, repeated */
		ck_alloc(&c, 2 + i, i % 4 < 2 ? WIRE_KIND_MALLOC : WIRE_KIND_REALLOC, 8 << (i % 3),
			 1 + i % 2, 0x100000 + i * 16);
	ck_end(&s, &c);
	sb_end(&s, 302, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 12);
	for (i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ck_assert(ai[i].size != ai[j].size || ai[i].trace != ai[j].trace ||
				  ai[i].kind != ai[j].kind);
	ck_assert_uint_eq(rec_nevents(r), 300);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_weighted)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t n;

	sb_header(&s, 1, WIRE_F_SAMPLED, "/bin/x", "", 0);
	ck_begin(&c, 1, 0);
	ck_alloc_w(&c, 0, 16, 0, P1, 4096);
	ck_alloc_w(&c, 1, 8000, 0, P2, 8000);
	ck_free(&c, 2, P1);
	ck_end(&s, &c);
	sb_end(&s, 3, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.final.peak_bytes, 12096);
	ck_assert_uint_eq(res.final.heap_bytes, 8000);
	r = open_rec();
	ck_assert_str_eq(rec_meta(r, "sampled"), "1");
	ck_assert_str_eq(rec_meta(r, "command"), "");
	ev = events(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ev[0].weight, 4096);
	ck_assert_uint_eq(ev[1].weight, 8000);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_parent_and_trace)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_trace *tr;
	const struct rec_allocinfo *ai;
	size_t n;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 10, 77, 0x1000); /* parent never sent */
	ck_node(&c, 1, 11, 10, 0x2000);
	ck_node(&c, 2, 11, 10, 0x3000);		      /* index sent twice */
	ck_node(&c, 3, 0, 0, 0x3000);		      /* index 0 */
	ck_alloc(&c, 4, WIRE_KIND_MALLOC, 1, 99, P1); /* unknown trace */
	ck_alloc(&c, 5, WIRE_KIND_MALLOC, 2, 11, P2);
	ck_alloc(&c, 6, 200, 2, 11, P3); /* no such kind: stored as 0 */
	ck_end(&s, &c);
	sb_end(&s, 7, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.bad_kinds, 1);
	ck_assert_uint_eq(res.warn.unknown_parents, 1);
	ck_assert_uint_eq(res.warn.unknown_traces, 1);
	ck_assert_uint_eq(res.warn.bad_nodes, 2);
	r = open_rec();
	tr = rec_traces(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(tr[1].parent, 0);
	ck_assert_uint_eq(tr[2].parent, 1);
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ai[0].trace, 0);
	ck_assert_uint_eq(ai[1].trace, 2);
	ck_assert_uint_eq(ai[2].kind, 0);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* without a final tick, the duration comes from the clock (start_mono_ns) */
START_TEST(test_duration_by_clock)
{
	struct sbuf s = {0};
	struct itp_result res;
	uint64_t start;
	struct rec_reader *r;
	size_t n;

	header(&s);
	start = util_mono_ns() - 2000000000ull;
	memcpy(s.p + offsetof(struct wire_header, start_mono_ns), &start, 8);
	sb_tick(&s, 1000, 4096, 0);
	sb_end(&s, 0, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_ge(res.final.elapsed_ns, 2000000000ull);
	ck_assert_uint_lt(res.final.elapsed_ns, 60000000000ull);
	r = open_rec();
	ck_assert_uint_ge(strtoull(rec_meta(r, "duration_ns"), NULL, 10), 2000000000ull);
	ck_assert_uint_eq(rec_ticks(r, &n)[0].time_ns, 1000);
	ck_assert_uint_eq(n, 1);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* raw node indices: dense ones and arbitrary 64-bit ones mixed */
START_TEST(test_sparse_node_indices)
{
	static const uint64_t raw[] = {1, 2, 1ull << 40, UINT64_MAX, 3, 200000, 70000};
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_trace *tr;
	const struct rec_allocinfo *ai;
	size_t n, i, k = sizeof(raw) / sizeof(raw[0]);

	header(&s);
	ck_begin(&c, 1, 0);
	for (i = 0; i < k; i++)
		ck_node(&c, i, raw[i], i ? raw[i - 1] : 0, 0x1000 + i);
	for (i = 0; i < k; i++)
		ck_alloc(&c, k + i, WIRE_KIND_MALLOC, i + 1, raw[i], 0x100000 + i * 16);
	ck_end(&s, &c);
	sb_end(&s, 2 * k, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_parents, 0);
	ck_assert_uint_eq(res.warn.unknown_traces, 0);
	r = open_rec();
	tr = rec_traces(r, &n);
	ck_assert_uint_eq(n, k + 1);
	for (i = 1; i <= k; i++)
		ck_assert_uint_eq(tr[i].parent, i - 1);
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, k);
	for (i = 0; i < k; i++)
		ck_assert_uint_eq(ai[i].trace, i + 1);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/*
 * The live-pointer table against a plain array: pointers that all share
 * one home slot (long runs), page-strided and random ones, inserts that
 * grow the table, replacements, and removals in random order (backward
 * shift must keep every other entry reachable and leave no stale one).
 */
START_TEST(test_ptrmap_churn)
{
	enum { N = 6000 };
	static uint64_t keys[N];
	static int live[N];
	struct itp_ptrmap m = {0};
	struct itp_ptr e, out;
	uint64_t rnd = 88172645463325252ull;
	size_t i, k, n = 0, nlive = 0;
	int replaced;

	/* 1000 keys whose home is slot 0 of the first (256-slot) table */
	for (uint64_t p = 16; n < 1000; p += 16)
		if ((((p * 0x9e3779b97f4a7c15ULL) >> 20) & 255) == 0)
			keys[n++] = p;
	for (i = 0; i < 2000; i++)
		keys[n++] = 0x7f0000000000ull + i * 4096;
	while (n < N) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		keys[n++] = (rnd | 1) & ~(1ull << 63); /* random, nonzero, distinct from the above */
	}
	for (int round = 0; round < 4; round++) {
		for (i = 0; i < N; i++) {
			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			k = rnd % N;
			if (rnd >> 63 && live[k]) {
				ck_assert_int_eq(itp_ptrmap_take(&m, keys[k], &out), 1);
				ck_assert_uint_eq(out.ptr, keys[k]);
				ck_assert_uint_eq(out.alloc_no, k * 7 + (uint64_t)live[k]);
				ck_assert_uint_eq(out.info, (uint32_t)k);
				live[k] = 0;
				nlive--;
			} else {
				e = (struct itp_ptr){.ptr = keys[k], .bytes = k, .info = (uint32_t)k,
						     .alloc_no = k * 7 + (uint64_t)(round + 1)};
				ck_assert_int_eq(itp_ptrmap_put(&m, &e, &replaced), 0);
				ck_assert_int_eq(replaced, live[k] != 0);
				nlive += !live[k];
				live[k] = round + 1;
			}
		}
		ck_assert_uint_eq(m.n, nlive);
		for (k = 0; k < N; k++) {
			int found = itp_ptrmap_take(&m, keys[k], &out);

			ck_assert_int_eq(found, live[k] != 0);
			if (found) {
				ck_assert_uint_eq(out.bytes, k);
				ck_assert_uint_eq(out.alloc_no, k * 7 + (uint64_t)live[k]);
				/* put it back for the next round */
				ck_assert_int_eq(itp_ptrmap_put(&m, &out, &replaced), 0);
				ck_assert_int_eq(replaced, 0);
			}
		}
	}
	ck_assert_int_eq(itp_ptrmap_take(&m, 0, &out), 0);
	itp_ptrmap_free(&m);
}
END_TEST

/* allocation infos: equal triples share an index, any differing field makes a new one */
START_TEST(test_infos_dedup_many)
{
	struct itp_infos t = {0};
	uint32_t idx;
	int created;
	size_t n = 0;

	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		for (uint64_t size = 0; size < 40; size++)
			for (uint32_t trace = 0; trace < 50; trace++)
				for (uint32_t kind = 0; kind < 3; kind++) {
					ck_assert_int_eq(itp_infos_find(&t, size << 40 | size, trace,
									kind, &idx, &created),
							 0);
					ck_assert_int_eq(created, pass == 0);
					ck_assert_uint_eq(idx, n);
					n++;
				}
	}
	ck_assert_uint_eq(t.n, n);
	itp_infos_free(&t);
}
END_TEST

/* ---- suite ----------------------------------------------------------------- */

static Suite *interpret_suite(void)
{
	Suite *s = suite_create("interpret");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_basic);
	tcase_add_test(tc, test_ptr_delta);
	tcase_add_test(tc, test_temporary);
	tcase_add_test(tc, test_unknown_frees);
	tcase_add_test(tc, test_dedup_allocinfos);
	tcase_add_test(tc, test_weighted);
	tcase_add_test(tc, test_unknown_parent_and_trace);
	tcase_add_test(tc, test_duration_by_clock);
	tcase_add_test(tc, test_sparse_node_indices);
	tcase_add_test(tc, test_ptrmap_churn);
	tcase_add_test(tc, test_infos_dedup_many);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
		return write_seeds(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--bench"))
		return bench_stream(strtoull(argv[2], NULL, 0), NULL);
	if (argc == 4 && !strcmp(argv[1], "--bench-gen"))
		return bench_stream(strtoull(argv[2], NULL, 0), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--bench-run"))
		return bench_file(argv[2]);
	return ck_run_suite(interpret_suite());
}
