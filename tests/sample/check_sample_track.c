/* tests/sample/check_sample_track.c - track/'s sampling mode over a socketpair */
/* SPDX-License-Identifier: MIT */
/*
 * Real sessions inside the test process (the hooks are called directly, as
 * inject/'s GOT slots would), the stream decoded with wire.h only
 * (tests/lib/check_decode.h). Test case "sessions", here:
 *   - sampled from the start (CTL_SAMPLE waiting before trk_start): only
 *     ALLOC_W, weights per call site estimate its bytes, frees only of
 *     sampled pointers, SITES totals exact;
 *   - switched to full tracing and back on the live session;
 *   - the sampled-pointer set against a reference under churn;
 *   - a session without sampling is unchanged (plain ALLOC, every free);
 *   - the start rate from trk_config (preload/'s HEAPTAP_SAMPLE) gives the
 *     same samples as the same rate and seed sent as CTL_SAMPLE; an attach
 *     start (sample_wait_ms) waits for a CTL_SAMPLE that comes late;
 *   - threads sampling at once.
 * Test case "hot_path" (check_sample_hot.c):
 *   - the hot path's counts stay exact with more call sites than slots
 *     (probing, the "other" slot), through realloc and past the packed
 *     counters' guards, and a reader never sees them torn;
 *   - the hot path stays off with the guard held, after the end and in a
 *     fork child; the sampled set grows from its small start and the next
 *     session begins small again.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/sample/check_sample_stream.h"
#include "track/internal.h"
#include "track/sample_internal.h"
#include "track/track.h"
#include "track/wire.h"

/* the hot path's test case, check_sample_hot.c */
TCase *sample_hot_tcase(void);

#define N_SMALL 400000
#define N_MID 40000
#define N_BIG 40

START_TEST(sampled_from_start)
{
	static void *keep[N_SMALL + N_MID + N_BIG];
	uint64_t true_small = 0, true_mid = 0, true_big = 0, est[3] = { 0 };
	uint64_t site_calls = 0, site_bytes = 0, nw = 0, nfree = 0;
	struct ck_reader r;
	struct ck_dec s;
	size_t k = 0, live_max = 0;
	struct ck_ev *v;
	uint64_t *live;
	size_t nlive = 0;

	start(&r, 64 * 1024, 12345);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 64 * 1024);
	ck_assert_int_eq(trk_smp_filtering(), 1);
	for (int i = 0; i < N_SMALL; i++) {
		keep[k++] = site_small();
		true_small += 48;
		if (i % 10 == 0) {
			size_t n = 1000 + (size_t)(i % 7) * 1000;

			keep[k++] = site_mid(n);
			true_mid += n;
		}
		if (i % 10000 == 0) {
			keep[k++] = site_big();
			true_big += 3 << 20;
		}
	}
	for (size_t i = 0; i < k; i++)
		trk_free(keep[i]);
	finish(&r, &s);

	/* only weighted allocations; frees only of sampled, live pointers */
	v = ck_dec_by_seq(&s);
	ck_assert_ptr_nonnull(v);
	live = calloc(s.nev + 1, sizeof(*live));
	for (size_t i = 0; i < s.nev; i++) {
		ck_assert_int_ne(v[i].op, WIRE_EV_ALLOC);
		if (v[i].op == WIRE_EV_ALLOC_W) {
			ck_assert_uint_ge(v[i].weight, v[i].size);
			nw++;
			live[nlive++] = v[i].ptr;
			if (nlive > live_max)
				live_max = nlive;
			if (v[i].size == 48)
				est[0] += v[i].weight;
			else if (v[i].size == (3u << 20))
				est[2] += v[i].weight;
			else
				est[1] += v[i].weight;
		} else if (v[i].op == WIRE_EV_FREE) {
			size_t j;

			nfree++;
			for (j = 0; j < nlive && live[j] != v[i].ptr; j++)
				;
			ck_assert_msg(j < nlive, "free of a pointer that was not sampled");
			live[j] = live[--nlive];
		}
	}
	ck_assert_uint_eq(nfree, nw);
	ck_assert_uint_eq(nlive, 0);
	/* about (19.2 + 18.4 + 125.8) MB / 64 KiB = 2500 samples, not 440,000 events */
	ck_assert_uint_gt(nw, 1500);
	ck_assert_uint_lt(nw, 4000);
	/* estimates of each site's bytes (small: ~290 samples -> 6 % sd; 20 % is 3 sd) */
	ck_assert_msg(fabs((double)est[0] / (double)true_small - 1) < 0.2, "small %lu vs %lu",
		      (unsigned long)est[0], (unsigned long)true_small);
	ck_assert_msg(fabs((double)est[1] / (double)true_mid - 1) < 0.2, "mid %lu vs %lu",
		      (unsigned long)est[1], (unsigned long)true_mid);
	/* 3 MiB blocks at a 64 KiB mean are always sampled, weight = size */
	ck_assert_uint_eq(est[2], true_big);
	/* the exact counts per call site */
	ck_assert_uint_ge(s.nsites_records, 1);
	ck_assert_uint_eq(s.nsites, 3);
	for (size_t i = 0; i < s.nsites; i++) {
		site_calls += s.sites[i].calls;
		site_bytes += s.sites[i].bytes;
		ck_assert_uint_ne(s.sites[i].ip, 0);
	}
	ck_assert_uint_eq(site_calls, k);
	ck_assert_uint_eq(site_bytes, true_small + true_mid + true_big);
	free(live);
	free(v);
	ck_dec_free(&s);
}
END_TEST

/* the same seed gives the same samples (main thread: tid == pid) */
START_TEST(fixed_seed_repeats)
{
	uint64_t sum[2] = { 0 }, n[2] = { 0 };

	for (int run = 0; run < 2; run++) {
		struct ck_reader r;
		struct ck_dec s;

		start(&r, 4096, 777);
		for (int i = 0; i < 20000; i++)
			trk_free(site_mid(100 + (size_t)(i % 50)));
		finish(&r, &s);
		for (size_t i = 0; i < s.nev; i++)
			if (s.ev[i].op == WIRE_EV_ALLOC_W) {
				n[run]++;
				sum[run] += s.ev[i].size * 1000003u + s.ev[i].weight;
			}
		ck_dec_free(&s);
	}
	ck_assert_uint_gt(n[0], 100);
	ck_assert_uint_eq(n[0], n[1]);
	ck_assert_uint_eq(sum[0], sum[1]);
}
END_TEST

/* the start rate from trk_config: sampling from the first allocation, the same samples as CTL_SAMPLE */
START_TEST(rate_from_config)
{
	uint64_t sum[2] = { 0 }, n[2] = { 0 }, frees[2] = { 0 };

	for (int run = 0; run < 2; run++) {
		struct ck_reader r;
		struct ck_dec s;

		if (run == 0) {
			start_cfg(&r, 4096, 777, 0, 0);
			/* no control record was sent: the rate is there at once */
			ck_assert_uint_eq(atomic_load(&trk_smp.rate), 4096);
			ck_assert_int_eq(trk_smp_filtering(), 1);
		} else {
			start(&r, 4096, 777);
		}
		for (int i = 0; i < 20000; i++)
			trk_free(site_mid(100 + (size_t)(i % 50)));
		finish(&r, &s);
		for (size_t i = 0; i < s.nev; i++) {
			ck_assert_int_ne(s.ev[i].op, WIRE_EV_ALLOC);
			if (s.ev[i].op == WIRE_EV_ALLOC_W) {
				n[run]++;
				sum[run] += s.ev[i].size * 1000003u + s.ev[i].weight;
			}
			frees[run] += s.ev[i].op == WIRE_EV_FREE;
		}
		ck_assert_uint_eq(frees[run], n[run]);
		ck_dec_free(&s);
	}
	ck_assert_uint_gt(n[0], 100);
	ck_assert_uint_eq(n[0], n[1]);
	ck_assert_uint_eq(sum[0], sum[1]);
}
END_TEST

/* an attach start waits for heaptap's first CTL_SAMPLE, which comes late: sampling from the start */
START_TEST(attach_waits_for_rate)
{
	struct ck_reader r;
	struct ck_dec s;
	uint64_t w = 0, f = 0;

	start_cfg(&r, 8192, 3, 10000, 200);
	/* set before trk_start returned (so before any hook is installed) */
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 8192);
	ck_assert_int_eq(trk_smp_filtering(), 1);
	for (int i = 0; i < 5000; i++)
		trk_free(site_mid(300));
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		ck_assert_int_ne(s.ev[i].op, WIRE_EV_ALLOC);
		w += s.ev[i].op == WIRE_EV_ALLOC_W;
		f += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_gt(w, 50);
	ck_assert_uint_eq(f, w);
	ck_dec_free(&s);
}
END_TEST

START_TEST(switch_full_and_back)
{
	struct ck_reader r;
	struct ck_dec s;
	uint64_t plain = 0, weighted = 0, frees = 0;
	void *a[1000];

	start(&r, 1 << 20, 1);
	/* sampled: 1000 x 64 bytes at 1 MiB is almost never sampled */
	for (int i = 0; i < 1000; i++)
		a[i] = site_mid(64);
	send_sample(r.fd, 0, 0);
	wait_rate(0);
	ck_assert_int_eq(trk_smp_filtering(), 0);
	/* full tracing: every allocation, every free (also of the sampled-era blocks) */
	for (int i = 0; i < 1000; i++)
		trk_free(site_mid(80));
	send_sample(r.fd, 1 << 20, 0);
	wait_rate(1 << 20);
	/* sampling again after full tracing: every free is sent, allocations sampled */
	ck_assert_int_eq(trk_smp_filtering(), 0);
	for (int i = 0; i < 1000; i++)
		trk_free(a[i]);
	for (int i = 0; i < 1000; i++)
		trk_free(site_mid(96));
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		if (s.ev[i].op == WIRE_EV_ALLOC) {
			ck_assert_uint_eq(s.ev[i].size, 80);
			plain++;
		} else if (s.ev[i].op == WIRE_EV_ALLOC_W) {
			weighted++;
		} else if (s.ev[i].op == WIRE_EV_FREE) {
			frees++;
		}
	}
	ck_assert_uint_eq(plain, 1000);
	ck_assert_uint_lt(weighted, 20);
	/* 1000 full-tracing frees + 1000 of the first blocks + 1000 of the last */
	ck_assert_uint_eq(frees, 3000);
	ck_dec_free(&s);
}
END_TEST

/* the set: random inserts and removals against a plain array, with realloc moving blocks */
START_TEST(set_under_churn)
{
	struct ck_reader r;
	struct ck_dec s;
	static void *p[20000];
	uint64_t freed_sampled = 0, sampled = 0;

	start(&r, 512, 99); /* small mean: most blocks sampled, the set holds thousands */
	for (int i = 0; i < 20000; i++)
		p[i] = site_mid(256 + (size_t)(i % 13) * 64);
	for (int round = 0; round < 5; round++)
		for (int i = round; i < 20000; i += 5) {
			p[i] = trk_realloc(p[i], 512 + (size_t)round * 128);
			ck_assert_ptr_nonnull(p[i]);
		}
	for (int i = 0; i < 20000; i++)
		trk_free(p[i]);
	finish(&r, &s);
	/* every sampled block (allocations and realloc results) is freed exactly once */
	for (size_t i = 0; i < s.nev; i++) {
		if (s.ev[i].op == WIRE_EV_ALLOC_W)
			sampled++;
		else if (s.ev[i].op == WIRE_EV_FREE)
			freed_sampled++;
	}
	ck_assert_uint_gt(sampled, 10000);
	ck_assert_uint_eq(freed_sampled, sampled);
	ck_dec_free(&s);
}
END_TEST

START_TEST(full_session_unchanged)
{
	struct ck_reader r;
	struct ck_dec s;
	uint64_t plain = 0, frees = 0;

	start(&r, 0, 0);
	ck_assert_int_eq(trk_smp_sampling(), 0);
	for (int i = 0; i < 500; i++)
		trk_free(site_mid(32));
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		ck_assert_int_ne(s.ev[i].op, WIRE_EV_ALLOC_W);
		plain += s.ev[i].op == WIRE_EV_ALLOC;
		frees += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_eq(plain, 500);
	ck_assert_uint_eq(frees, 500);
	ck_assert_uint_eq(s.nsites_records, 0);
	ck_dec_free(&s);
}
END_TEST

/* threads sampling at once: site totals exact, every sampled block freed once */
struct thr_arg {
	int n;
};

static void *thr_main(void *arg)
{
	struct thr_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		trk_free(site_mid(200 + (size_t)(i & 255)));
	return NULL;
}

START_TEST(threads)
{
	struct ck_reader r;
	struct ck_dec s;
	pthread_t th[4];
	struct thr_arg a = { .n = 100000 };
	uint64_t calls = 0, w = 0, f = 0;

	start(&r, 8192, 5);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_main, &a), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	finish(&r, &s);
	for (size_t i = 0; i < s.nsites; i++)
		calls += s.sites[i].calls;
	for (size_t i = 0; i < s.nev; i++) {
		w += s.ev[i].op == WIRE_EV_ALLOC_W;
		f += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_eq(calls, 4 * 100000);
	ck_assert_uint_eq(w, f);
	ck_assert_uint_gt(w, 100);
	ck_dec_free(&s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sample_track");
	TCase *tc = tcase_create("sessions");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, sampled_from_start);
	tcase_add_test(tc, fixed_seed_repeats);
	tcase_add_test(tc, rate_from_config);
	tcase_add_test(tc, attach_waits_for_rate);
	tcase_add_test(tc, switch_full_and_back);
	tcase_add_test(tc, set_under_churn);
	tcase_add_test(tc, full_session_unchanged);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, sample_hot_tcase());
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());

	/* one process: the library's state is per process, sessions follow each other */
	srunner_set_fork_status(sr, CK_NOFORK);
	return ck_run(sr);
}
