/* tests/sample/check_sample_rate.c - snapshot rates of a sampled session, site counts read out of step */
/* SPDX-License-Identifier: MIT */
/*
 * The library sends its exact per-site counts about once a second (a round:
 * SITES records, then a TICK with the time of the look), while the
 * interpreter takes a snapshot on its own clock; a loaded heaptap reads the
 * rounds late and in bursts. A crafted stream goes through itp_run over a
 * socketpair: rounds every 100 ms of the library's time, each adding 1000
 * calls at site A (sampled once) and 100 at site B (never sampled), so A
 * allocates 10000 calls/s and B 1000 calls/s; the feeder hands them over
 * three at once every 300 ms, snapshots come every 100 ms. Every snapshot
 * after the second round must show each site's calls over its interval
 * within 20 % of the real rate: growth between snapshots would give 0 or
 * 3 times it, and the samples since the counts would add a sample's weight
 * at once.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_stream.h"
#include "interpret/interpret.h"

#define IP_A 0x401234u
#define IP_B 0x405678u
#define IP_MAIN 0x400100u
#define ROUNDS 18
#define ROUND_NS 100000000ull /* the library's look at the counts, every 100 ms here */
#define BURST 3		      /* rounds handed over at once */
#define A_CALLS 1000u	      /* per round: 10000/s */
#define B_CALLS 100u	      /* per round: 1000/s */

/* per snapshot: its interval and what sites A and B allocated in it */
struct views {
	int n;
	struct view {
		uint64_t since, elapsed;
		uint64_t a_calls, b_calls;
	} v[256];
};

static void on_snap(const struct itp_snapshot *s, void *arg)
{
	struct views *vs = arg;
	struct view *w;

	if (vs->n >= 256)
		return;
	w = &vs->v[vs->n++];
	memset(w, 0, sizeof(*w));
	w->since = s->since_ns;
	w->elapsed = s->elapsed_ns;
	for (size_t t = 1; t < s->ntraces; t++) {
		const struct itp_snap_trace *tr = &s->traces[t];
		uint64_t ip = tr->ip < s->nips ? s->ips[tr->ip] : 0;

		if (ip == IP_A)
			w->a_calls += tr->alloc_objects;
		else if (ip == IP_B)
			w->b_calls += tr->alloc_objects;
	}
}

/* the stream: the header and A's sample, ROUNDS rounds of site counts, the end */
struct parts {
	uint64_t start; /* the header's start_mono_ns */
	struct sbuf head, round[ROUNDS], end;
};

static void build(struct parts *f)
{
	static const char cmd[] = "prog";
	struct chunkb c;
	uint64_t start = ck_mono_ns();
	const uint64_t sites[] = { IP_A, A_CALLS, A_CALLS * 16, IP_B, B_CALLS, B_CALLS * 64 };

	f->start = start;
	sb_header(&f->head, 4242, WIRE_F_ATTACHED, "/usr/bin/prog", cmd, sizeof(cmd));
	/* the session started now: the snapshots' clock is the real one */
	memcpy(f->head.p + offsetof(struct wire_header, start_mono_ns), &start, sizeof(start));
	ck_begin(&c, 4242, 0);
	ck_node(&c, 0, 1, 0, IP_MAIN);
	ck_node(&c, 1, 2, 1, IP_A);
	ck_alloc_w(&c, 2, 16, 2, 0x7f0000001000ull, 65536); /* A's one sample */
	ck_end(&f->head, &c);
	for (int k = 0; k < ROUNDS; k++) {
		sb_sites(&f->round[k], 2, sites);
		sb_tick(&f->round[k], (uint64_t)(k + 1) * ROUND_NS, 1u << 20, 3);
	}
	sb_end(&f->end, 3, WIRE_END_STOP);
}

START_TEST(rates_steady_when_counts_come_in_bursts)
{
	struct parts f;
	struct ck_feed feed = { 0 };
	struct views *vs = calloc(1, sizeof(*vs));
	struct itp_options opt = { 0 };
	struct itp_result res;
	int rc, checked = 0;

	ck_assert_ptr_nonnull(vs);
	memset(&f, 0, sizeof(f));
	build(&f);
	/* the rounds BURST at a time, each burst when its last round is due */
	ck_feed_add(&feed, &f.head, 0);
	for (int k = 0; k < ROUNDS; k++) {
		struct ck_feed_part *p = ck_feed_add(&feed, &f.round[k], 0);

		if (k % BURST == 0)
			p->due_ns = f.start + (uint64_t)(k + BURST) * ROUND_NS;
	}
	ck_feed_add(&feed, &f.end, 0);
	opt.no_symbols = 1;
	opt.snapshot = on_snap;
	opt.snapshot_arg = vs;
	opt.snapshot_ns = ROUND_NS;
	rc = ck_feed_run(&feed, &opt, &res);
	ck_assert_msg(rc == 0, "itp_run: %d %s", rc, res.detail);
	ck_assert_uint_eq(res.site_calls, ROUNDS * (A_CALLS + B_CALLS));
	for (int i = 0; i < vs->n; i++) {
		const struct view *w = &vs->v[i];
		double dt = (double)(w->elapsed - w->since) / 1e9, a, b;

		/* from the second burst on (two rounds ended); intervals long enough to round well */
		if (w->elapsed < 2 * BURST * ROUND_NS || dt < 0.05)
			continue;
		a = (double)w->a_calls / dt;
		b = (double)w->b_calls / dt;
		printf("view %d at %.3f s over %.3f s: A %.0f/s B %.0f/s\n", i,
		       (double)w->elapsed / 1e9, dt, a, b);
		ck_assert_msg(a > 8000 && a < 12000, "view %d: site A at %.0f calls/s, not 10000", i, a);
		ck_assert_msg(b > 800 && b < 1200, "view %d: site B at %.0f calls/s, not 1000", i, b);
		checked++;
	}
	/* a loaded machine may take fewer snapshots than one per 100 ms */
	ck_assert_int_ge(checked, 3);
	sb_free(&f.head);
	for (int k = 0; k < ROUNDS; k++)
		sb_free(&f.round[k]);
	sb_free(&f.end);
	free(vs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sample_rate");
	TCase *tc = tcase_create("rates");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rates_steady_when_counts_come_in_bursts);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
