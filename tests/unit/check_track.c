/* tests/unit/check_track.c - Check suite for track/: varints, trace tree, buffers, sessions */
/* SPDX-License-Identifier: MIT */
/*
 * Session tests run a real session over a socketpair inside the test
 * process (Check forks each test, so every test starts with fresh
 * per-process state), call the trk_* hooks directly and decode what came
 * out with an independent reader (tests/lib/check_decode.h, wire.h only).
 * One program, unit.track, of four files: test cases "wire" and "tree"
 * here, "unwind" in check_track_unwind.c, "session" in
 * check_track_session.c and check_track_twice.c (sessions one after the
 * other); what they share is in check_track.h.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_session.h"
#include "check_track.h"
#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/track.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"

/* ---- varints ---------------------------------------------------------------- */

START_TEST(varint_round_trip)
{
	static const uint64_t vals[] = { 0,	     1,		  127,	       128,
					 255,	     16383,	  16384,       (1ull << 32) - 1,
					 1ull << 32, (1ull << 63) - 1, 1ull << 63, UINT64_MAX };
	static const size_t lens[] = { 1, 1, 1, 2, 2, 2, 3, 5, 5, 9, 10, 10 };

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t buf[WIRE_VARINT_MAX + 4];
		const uint8_t *p = buf;
		uint64_t v = 12345;
		size_t n = wire_put_varint(buf, vals[i]);

		ck_assert_uint_eq(n, lens[i]);
		ck_assert_int_eq(wire_get_varint(&p, buf + n, &v), 0);
		ck_assert_uint_eq(v, vals[i]);
		ck_assert_ptr_eq(p, buf + n);
		/* cut short: fails, leaves p alone */
		p = buf;
		ck_assert_int_eq(wire_get_varint(&p, buf + n - 1, &v), -1);
		ck_assert_ptr_eq(p, buf);
	}
}
END_TEST

/* trk_put_varint and trk_put_varint_small (the hooks' encoders) write what wire_put_varint writes */
START_TEST(varint_fast_matches)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;

	for (int i = 0; i < 20000; i++) {
		uint8_t a[WIRE_VARINT_MAX + 8], b[WIRE_VARINT_MAX + 8], c[WIRE_VARINT_MAX + 8];
		uint64_t v;
		size_t na, nb, nc;

		if (i < 64 * 3) {
			/* every length boundary: 2^k - 1, 2^k, 2^k + 1 */
			v = (1ull << (i / 3)) + (uint64_t)(i % 3) - 1;
		} else {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v = x >> (x & 63); /* all magnitudes */
		}
		memset(a, 0xAA, sizeof(a));
		memset(b, 0xAA, sizeof(b));
		memset(c, 0xAA, sizeof(c));
		na = trk_put_varint(a, v);
		nb = wire_put_varint(b, v);
		nc = trk_put_varint_small(c, i & 1 ? v : v & 0x7fff); /* half of them around 2^14 */
		ck_assert_uint_eq(na, nb);
		ck_assert_int_eq(memcmp(a, b, na), 0);
		nb = wire_put_varint(b, i & 1 ? v : v & 0x7fff);
		ck_assert_uint_eq(nc, nb);
		ck_assert_int_eq(memcmp(c, b, nc), 0);
	}
}
END_TEST

/* trk_put_ptr writes the zigzag distance from the previous pointer as wire_put_varint would, and moves the base */
START_TEST(varint_ptr_matches)
{
	struct trk_thr *t = calloc(1, sizeof(*t));
	uint64_t x = 0x2545F4914F6CDD1Dull;

	ck_assert_ptr_nonnull(t);
	for (int i = 0; i < 20000; i++) {
		uint8_t a[WIRE_VARINT_MAX + 8], b[WIRE_VARINT_MAX + 8];
		uintptr_t base = t->pbase, p;
		size_t na, nb;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i < 64 * 2) /* distances of every magnitude, both signs, across 2^20 */
			p = base + (i & 1 ? -(uintptr_t)1 : 1) * (((uintptr_t)1 << (i / 2)) - (i & 2 ? 1 : 0));
		else
			p = base + (uintptr_t)((int64_t)x >> (x & 63)); /* all magnitudes, both signs */
		memset(a, 0xAA, sizeof(a));
		memset(b, 0xAA, sizeof(b));
		na = trk_put_ptr(t, a, p);
		nb = wire_put_varint(b, wire_zigzag((uint64_t)p - (uint64_t)base));
		ck_assert_uint_eq(na, nb);
		ck_assert_int_eq(memcmp(a, b, na), 0);
		ck_assert_uint_eq(t->pbase, p);
	}
	free(t);
}
END_TEST

/* one ALLOC_D or FREE_D: trk_ev_open's short way when it takes it (then true), trk_ev_put's otherwise */
static bool put_one(struct trk_thr *t, bool opened, uint8_t op, uint64_t seq, uint8_t kind, uint64_t size,
		    uint32_t leaf, uintptr_t ptr)
{
	uintptr_t base = t->pbase;
	uint8_t *q = opened ? trk_ev_open(t, 64, op, seq) : NULL;

	if (q) {
		if (op == WIRE_EV_ALLOC_D) {
			*q++ = kind;
			q += trk_put_varint_small(q, size);
			q += trk_put_varint_small(q, leaf);
		}
		q += trk_put_dist(q, base, ptr);
		t->pbase = ptr;
		trk_ev_close(t, q, seq);
		return true;
	}
	q = trk_ev_put(t, 64, op, seq);
	if (op == WIRE_EV_ALLOC_D) {
		*q++ = kind;
		q += trk_put_varint_small(q, size);
		q += trk_put_varint_small(q, leaf);
	}
	q += trk_put_ptr(t, q, ptr);
	trk_ev_end(t, q);
	return false;
}

/* the hooks' short way into the buffer (trk_ev_open/close) writes trk_ev_put's bytes, and refuses the rest */
START_TEST(ev_open_matches)
{
	struct trk_thr *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	uint64_t x = 0x9E3779B97F4A7C15ull, gen = 3, seq = (gen << TRK_SEQ_BITS) | 5000;
	uintptr_t ptr = 0x7f0000100000;
	int shorts = 0;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	a->gen = b->gen = (uint32_t)gen;
	/* an empty chunk, a number of another session: refused, nothing written */
	ck_assert_ptr_null(trk_ev_open(b, 64, WIRE_EV_FREE_D, seq));
	b->len = 1;
	ck_assert_ptr_null(trk_ev_open(b, 64, WIRE_EV_FREE_D, seq + (1ull << TRK_SEQ_BITS)));
	b->len = TRK_BUF_SIZE - 63; /* no room */
	ck_assert_ptr_null(trk_ev_open(b, 64, WIRE_EV_FREE_D, seq));
	b->len = 0;
	ck_assert_uint_eq(b->nev, 0);
	for (int i = 0; i < 4000; i++) {
		uint8_t op = i & 1 ? WIRE_EV_FREE_D : WIRE_EV_ALLOC_D;
		uint64_t d;
		bool short_way;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* deltas around the 1-byte bound (127, 128), larger ones, and the usual 1-4 */
		d = i % 7 == 3 ? 100 + (x & 63) : i % 13 == 5 ? 1 + (x & 0xffff) : 1 + (x & 3);
		ptr += (uintptr_t)((int64_t)(x << 20) >> ((x & 63) | 20));
		seq += d;
		put_one(a, false, op, seq, (uint8_t)(x >> 8), x >> (x >> 58), (uint32_t)(x >> 40 & 0x7ffff), ptr);
		short_way = put_one(b, true, op, seq, (uint8_t)(x >> 8), x >> (x >> 58), (uint32_t)(x >> 40 & 0x7ffff),
				    ptr);
		ck_assert_int_eq(short_way, i > 0 && d < 0x80);
		shorts += short_way;
		ck_assert_uint_eq(a->len, b->len);
		ck_assert_uint_eq(a->nev, b->nev);
		ck_assert_uint_eq(a->last_seq, b->last_seq);
		ck_assert_uint_eq(a->first_seq, b->first_seq);
		ck_assert_uint_eq(a->pbase, b->pbase);
	}
	ck_assert_int_eq(memcmp(a->data, b->data, a->len), 0);
	ck_assert_int_gt(shorts, 3000);
	free(a);
	free(b);
}
END_TEST

START_TEST(varint_rejects_bad)
{
	uint8_t eleven[11], over[10];
	const uint8_t *p;
	uint64_t v;

	memset(eleven, 0x80, sizeof(eleven));
	eleven[10] = 0x00;
	p = eleven;
	ck_assert_int_eq(wire_get_varint(&p, eleven + sizeof(eleven), &v), -1);
	/* tenth byte may only carry bit 63 */
	memset(over, 0xff, sizeof(over));
	over[9] = 0x02;
	p = over;
	ck_assert_int_eq(wire_get_varint(&p, over + sizeof(over), &v), -1);
	over[9] = 0x01;
	p = over;
	ck_assert_int_eq(wire_get_varint(&p, over + sizeof(over), &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	/* non-minimal encodings are accepted (3-byte 5) */
	{
		const uint8_t nm[3] = { 0x85, 0x80, 0x00 };

		p = nm;
		ck_assert_int_eq(wire_get_varint(&p, nm + 3, &v), 0);
		ck_assert_uint_eq(v, 5);
	}
}
END_TEST

/* ---- trace tree (no session: events go to a buffer never sent) --------------- */

struct trk_thr *tree_setup(void)
{
	struct trk_thr *t;

	ck_assert_int_eq(trk_mod_init(), 0);
	trk_g.ended = 1; /* no socket: flushes are dropped */
	t = trk_thr_new(trk_gettid());
	ck_assert_ptr_nonnull(t);
	return t;
}

START_TEST(tree_same_and_different)
{
	struct trk_thr *t = tree_setup();
	uintptr_t a[] = { 0x1010, 0x2020, 0x3030, 0x4040 }; /* innermost first */
	uintptr_t b[] = { 0x1011, 0x2020, 0x3030, 0x4040 }; /* differs innermost */
	uintptr_t c[] = { 0x1010, 0x2020, 0x3030, 0x4041 }; /* differs outermost */
	uint32_t la, la2, lb, lc, n;

	la = trk_tree_leaf(t, a, 4);
	la2 = trk_tree_leaf(t, a, 4);
	lb = trk_tree_leaf(t, b, 4);
	lc = trk_tree_leaf(t, c, 4);
	ck_assert_uint_ne(la, 0);
	ck_assert_uint_eq(la, la2);
	ck_assert_uint_ne(la, lb);
	ck_assert_uint_ne(la, lc);
	ck_assert_uint_ne(lb, lc);
	/* a and b share the parent of the leaf; c shares nothing */
	ck_assert_uint_eq(trk_node_at(la)->parent, trk_node_at(lb)->parent);
	ck_assert_uint_ne(trk_node_at(la)->parent, trk_node_at(lc)->parent);
	/* parent links walk back to the root through the frames, outermost last */
	n = la;
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_ne(n, 0);
		ck_assert_uint_eq(trk_node_at(n)->ip, a[i]);
		n = trk_node_at(n)->parent;
	}
	ck_assert_uint_eq(n, 0);
	/* empty stack: trace 0; a prefix of a stack is its own node */
	ck_assert_uint_eq(trk_tree_leaf(t, a, 0), 0);
	ck_assert_uint_eq(trk_tree_leaf(t, a + 1, 3), trk_node_at(la)->parent);
}
END_TEST

START_TEST(tree_wide_node)
{
	/* more children than the inline slots: the overflow list must work */
	struct trk_thr *t = tree_setup();
	uint32_t leaves[40];

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 40; i++) {
			uintptr_t s[2] = { 0x5000 + (uintptr_t)i, 0x9999 };
			uint32_t l = trk_tree_leaf(t, s, 2);

			if (round == 0)
				leaves[i] = l;
			else
				ck_assert_uint_eq(l, leaves[i]);
			for (int j = 0; j < i && round == 0; j++)
				ck_assert_uint_ne(leaves[j], l);
		}
	}
}
END_TEST

START_TEST(tree_thread_cache_reuse)
{
	/* trk_tree_leaf_thr (previous-stack reuse) agrees with the plain walk */
	struct trk_thr *t = tree_setup();

	for (int i = 0; i < 200; i++) {
		size_t n = 3 + (size_t)(i % 5);
		uintptr_t s[8];
		uint32_t l1, l2;

		for (size_t k = 0; k < n; k++)
			s[k] = 0x100 * (k + 1) + (uintptr_t)((i * 7 + (int)k) % 3);
		memcpy(t->frames, s, n * sizeof(s[0]));
		l1 = trk_tree_leaf_thr(t, n);
		l2 = trk_tree_leaf(t, s, n);
		ck_assert_uint_eq(l1, l2);
	}
}
END_TEST

START_TEST(tree_stack_cache)
{
	/*
	 * trk_tree_trace (whole-stack cache) gives the plain walk's leaf for
	 * 3000 stacks sharing outer parts, asked 30000 times in random order
	 * (hits, misses, evictions from full buckets), prefixes included.
	 */
	enum { NSTACKS = 3000, DEPTH = 40, ASKS = 30000 };
	static uintptr_t st[NSTACKS][DEPTH];
	static size_t len[NSTACKS];
	struct trk_thr *t = tree_setup();
	uint32_t gen, l1, l2;

	srand(7);
	for (int i = 0; i < NSTACKS; i++) {
		len[i] = 1 + (size_t)(rand() % DEPTH);
		for (size_t d = 0; d < len[i]; d++) /* outermost last: shared outer parts */
			st[i][len[i] - 1 - d] = 0x40000 + d * 0x100 + (uintptr_t)(rand() % (d < 4 ? 2 : 5));
	}
	for (int k = 0; k < ASKS; k++) {
		int i = rand() % NSTACKS;
		size_t n = len[i] - (k % 7 == 0 && len[i] > 1); /* sometimes without the innermost */

		memcpy(t->frames, st[i], n * sizeof(st[i][0]));
		l1 = trk_tree_trace(t, n, &gen);
		l2 = trk_tree_leaf(t, st[i], n);
		ck_assert_uint_ne(l1, 0);
		ck_assert_uint_eq(l1, l2);
	}
	ck_assert_uint_eq(trk_tree_trace(t, 0, &gen), 0);
}
END_TEST

#define RACE_THREADS 6
#define RACE_STACKS 400
#define RACE_DEPTH 12

static uintptr_t race_stacks[RACE_STACKS][RACE_DEPTH];
static uint32_t race_leaf[RACE_THREADS][RACE_STACKS];
static uint32_t race_trace[RACE_THREADS][RACE_STACKS][2]; /* trk_tree_trace: first, again */
static pthread_barrier_t race_barrier;

static void *race_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct trk_thr *t = trk_thr_new(trk_gettid());

	pthread_barrier_wait(&race_barrier);
	for (int k = 0; k < RACE_STACKS; k++) {
		/* a permutation (7919 is prime to 400), each thread its own start and direction */
		int kk = id & 1 ? RACE_STACKS - 1 - k : k;
		int s = (kk * 7919 + id * 101) % RACE_STACKS;

		uint32_t gen;

		/* half the threads go through the whole-stack cache first */
		memcpy(t->frames, race_stacks[s], sizeof(race_stacks[s]));
		if (id & 2)
			race_trace[id][s][0] = trk_tree_trace(t, RACE_DEPTH, &gen);
		race_leaf[id][s] = trk_tree_leaf(t, race_stacks[s], RACE_DEPTH);
		if (!(id & 2)) {
			memcpy(t->frames, race_stacks[s], sizeof(race_stacks[s]));
			race_trace[id][s][0] = trk_tree_trace(t, RACE_DEPTH, &gen);
		}
		/* (a miss swaps t->frames with the previous stack: fill it again) */
		memcpy(t->frames, race_stacks[s], sizeof(race_stacks[s]));
		race_trace[id][s][1] = trk_tree_trace(t, RACE_DEPTH, &gen);
	}
	return NULL;
}

/* count_pairs - walk the published tree; fail on a duplicate (parent, ip). */
static size_t walk(uint32_t idx)
{
	struct trk_node *p = trk_node_at(idx);
	uintptr_t seen[256];
	size_t nseen = 0, total = 0;
	uint32_t kids[256];
	size_t nk = 0;

	for (int i = 0; i < TRK_NODE_KIDS; i++) {
		uint32_t k = atomic_load(&p->kid[i]);

		if (!k)
			break;
		ck_assert_uint_eq(trk_node_at(k)->ip, p->kip[i]);
		kids[nk++] = k;
	}
	for (uint32_t k = atomic_load(&p->more); k; k = atomic_load(&trk_node_at(k)->next))
		kids[nk++] = k;
	for (size_t i = 0; i < nk; i++) {
		struct trk_node *c = trk_node_at(kids[i]);

		ck_assert_uint_eq(c->parent, idx);
		for (size_t j = 0; j < nseen; j++)
			ck_assert_msg(seen[j] != c->ip, "duplicate (parent %u, ip %#lx)", idx,
				      (unsigned long)c->ip);
		seen[nseen++] = c->ip;
		total += 1 + walk(kids[i]);
	}
	return total;
}

START_TEST(tree_concurrent_insert)
{
	pthread_t th[RACE_THREADS];
	size_t nodes;

	tree_setup();
	/* stacks sharing long outer parts: many races on the same parents */
	srand(42);
	for (int s = 0; s < RACE_STACKS; s++)
		for (int d = 0; d < RACE_DEPTH; d++)
			race_stacks[s][d] = 0x10000 + (uintptr_t)d * 0x100 +
					    (uintptr_t)(d < RACE_DEPTH / 2 ? rand() % 8 : rand() % 2);
	pthread_barrier_init(&race_barrier, NULL, RACE_THREADS);
	for (int i = 0; i < RACE_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_main, (void *)(intptr_t)i), 0);
	for (int i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	/* every thread found the same leaf for the same stack, distinct stacks differ */
	for (int s = 0; s < RACE_STACKS; s++) {
		ck_assert_uint_ne(race_leaf[0][s], 0);
		for (int i = 1; i < RACE_THREADS; i++)
			ck_assert_uint_eq(race_leaf[i][s], race_leaf[0][s]);
	for (int i = 0; i < RACE_THREADS; i++)
		for (int s = 0; s < RACE_STACKS; s++) {
			ck_assert_uint_eq(race_trace[i][s][0], race_leaf[0][s]);
			ck_assert_uint_eq(race_trace[i][s][1], race_leaf[0][s]);
		}
	}
	for (int s = 0; s < RACE_STACKS; s++) {
		for (int u = 0; u < s; u++) {
			if (memcmp(race_stacks[s], race_stacks[u], sizeof(race_stacks[s])) == 0)
				ck_assert_uint_eq(race_leaf[0][s], race_leaf[0][u]);
			else
				ck_assert_uint_ne(race_leaf[0][s], race_leaf[0][u]);
		}
	}
	nodes = walk(0);
	ck_assert_uint_gt(nodes, RACE_DEPTH);
	ck_assert_uint_le(nodes, (size_t)atomic_load(&trk_g.next_node) - 1);
}
END_TEST


static Suite *track_suite(void)
{
	Suite *s = suite_create("track");
	TCase *tc = tcase_create("wire");

	tcase_add_test(tc, varint_round_trip);
	tcase_add_test(tc, varint_rejects_bad);
	tcase_add_test(tc, varint_fast_matches);
	tcase_add_test(tc, varint_ptr_matches);
	tcase_add_test(tc, ev_open_matches);
	suite_add_tcase(s, tc);
	tc = tcase_create("tree");
	tcase_add_test(tc, tree_same_and_different);
	tcase_add_test(tc, tree_wide_node);
	tcase_add_test(tc, tree_thread_cache_reuse);
	tcase_add_test(tc, tree_concurrent_insert);
	tcase_add_test(tc, tree_stack_cache);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, track_unwind_tcase());
	suite_add_tcase(s, track_session_tcase());
	return s;
}

int main(void)
{
	return ck_run_suite(track_suite());
}