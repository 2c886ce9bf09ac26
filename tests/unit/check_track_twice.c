/* tests/unit/check_track_twice.c - unit.track's case "session": sessions one after the other */
/* SPDX-License-Identifier: MIT */
/*
 * Part of unit.track (check_track.c), test case "session" with
 * check_track_session.c: three sessions in a row, each stream complete in
 * itself; pointers as zigzag distances; sessions re-started while other
 * threads allocate.
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

#include "tests/lib/check_decode.h"
#include "tests/lib/check_fixture.h"
#include "tests/lib/check_session.h"
#include "check_track.h"
#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/track.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"

/* wait_ended - the session has fully ended (the timer let go of the socket). */
static void wait_ended(void)
{
	for (int i = 0; i < 1000 && atomic_load(&trk_g.started); i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
}

/* check_session - the stream of one session of several: its own modules, end tick. */
static void check_session(const struct ck_dec *s, const char *self)
{
	int main_exe = 0;
	size_t nodes = 0, allocs = 0;

	check_order(s); /* from 0 without gaps, every node defined in this stream first */
	for (size_t i = 0; i < s->nev; i++) {
		main_exe |= s->ev[i].op == WIRE_EV_MODULE && strcmp(s->ev[i].path, self) == 0;
		nodes += s->ev[i].op == WIRE_EV_NODE;
		allocs += s->ev[i].op == WIRE_EV_ALLOC;
	}
	ck_assert_int_eq(main_exe, 1);
	ck_assert_uint_gt(nodes, 0);
	ck_assert_uint_gt(allocs, 0);
	/* a TICK right before END, numbered with the END's total, with an RSS */
	ck_assert_int_eq(s->last_rec, WIRE_REC_TICK);
	ck_assert_uint_eq(s->tick_seq, s->end_total);
	ck_assert_uint_gt(s->tick_rss, 0);
}

START_TEST(session_twice)
{
	struct ck_reader r;
	struct ck_dec s1, s2;
	struct trk_config cfg = { 0 };
	struct trk_thr *t;
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	void *p, *q;
	uint8_t *w;

	ck_assert_int_gt(sl, 0);
	self[sl] = '\0';
	/* docs/design.md: a second attach to the same process works */
	session_start(&r);
	p = call_site(101);
	q = trk_realloc(p, 202);
	keep_ptr = trk_malloc(5);
	/* only one session at a time */
	cfg.fd = dup(r.fd);
	ck_assert_int_eq(trk_start(&cfg), -EALREADY);
	ck_assert_int_eq(trk_active(), 1);
	session_finish(&r, WIRE_END_STOP, &s1);
	check_session(&s1, self);

	/* a hook of the first session that appends late, in a buffer not flushed */
	t = trk_tls_thr;
	ck_assert_ptr_nonnull(t);
	trk_thr_enter(t);
	w = trk_ev_put(t, 16, WIRE_EV_FREE, (1ull << TRK_SEQ_BITS) | 1000);
	w += wire_put_varint(w, 0x1234);
	trk_ev_end(t, w);
	trk_thr_exit(t);
	ck_assert_uint_gt(t->len, 0);

	wait_ended();
	session_start(&r);
	/* the same call sites as before: their nodes must be announced again */
	p = call_site(101);
	trk_free(q);
	trk_free(keep_ptr);
	/* a late event numbered in the first session is dropped */
	{
		size_t len;

		trk_thr_enter(t);
		len = t->len;
		w = trk_ev_put(t, 16, WIRE_EV_FREE, (1ull << TRK_SEQ_BITS) | 1001);
		w += wire_put_varint(w, 0x5678);
		trk_ev_end(t, w);
		ck_assert_uint_eq(t->len, len);
		trk_thr_exit(t);
	}
	q = trk_realloc(p, 303);
	trk_free(q);
	session_finish(&r, WIRE_END_STOP, &s2);
	check_session(&s2, self);
	for (size_t i = 0; i < s2.nev; i++)
		ck_assert(!(s2.ev[i].op == WIRE_EV_FREE &&
			    (s2.ev[i].ptr == 0x1234 || s2.ev[i].ptr == 0x5678)));
	/* and a third */
	ck_dec_free(&s1);
	wait_ended();
	session_start(&r);
	trk_free(call_site(7));
	session_finish(&r, WIRE_END_EXIT, &s1);
	check_session(&s1, self);
	ck_dec_free(&s1);
	ck_dec_free(&s2);
}
END_TEST

/*
 * Pointers as zigzag distances (WIRE_EV_ALLOC_D / FREE_D, wire.h): the
 * hooks' pointers and crafted ones (0, the top of the address space, far
 * jumps both ways, above 2^56: the varint's slow path) come back exact from
 * an independent decoder, across chunk boundaries (a flush in the middle
 * starts the next chunk from base 0) and around a stale event that is
 * dropped (it must not move the base). Fails when the encoder's base is
 * not reset per chunk, is moved by a dropped event, or the delta is wrong.
 */
#define PD_CRAFT 9000

START_TEST(session_ptr_delta)
{
	static const uint64_t shapes[] = { 0, 1, UINT64_MAX, 1ull << 56, (1ull << 56) - 1,
					   0x7ffff7a00010ull, 0x555555559000ull, 0x10, 1ull << 63 };
	struct ck_reader r;
	struct ck_dec s;
	struct trk_thr *t;
	uint64_t *want = malloc(PD_CRAFT * sizeof(*want));
	void *blk[64];
	size_t nfree = 0, nblk = 0, i, k;
	uint32_t gen;

	ck_assert_ptr_nonnull(want);
	session_start(&r);
	/* real hooks: heap blocks and mmap'd ones (far apart), freed out of order */
	for (i = 0; i < 64; i++)
		blk[nblk++] = trk_malloc(i % 8 == 7 ? (size_t)1 << 20 : 16 + 24 * i);
	for (i = 0; i < 64; i++)
		trk_free(blk[(i * 37) % 64]);
	t = trk_tls_thr;
	ck_assert_ptr_nonnull(t);
	gen = atomic_load(&trk_g.sess_gen);
	for (i = 0; i < PD_CRAFT; i++) {
		uint64_t seq, v = shapes[i % 9] ^ (i / 9 % 3 ? (uint64_t)i * 0x9e3779b97f4a7c15ull >> (i % 64) : 0);
		uint8_t *w;

		if (i == PD_CRAFT / 2) {
			/* numbered in an older session: written to scratch and dropped */
			trk_thr_enter(t);
			w = trk_ev_put(t, 2 + 2 * WIRE_VARINT_MAX, WIRE_EV_FREE_D,
				       (uint64_t)(gen - 1) << TRK_SEQ_BITS | 5);
			w += trk_put_ptr(t, w, (uintptr_t)0xdeadbeef000ull);
			trk_ev_end(t, w);
			trk_thr_exit(t);
		}
		want[nfree++] = v;
		seq = trk_thr_enter_seq(t);
		w = trk_ev_put(t, 2 + 2 * WIRE_VARINT_MAX, WIRE_EV_FREE_D, seq);
		w += trk_put_ptr(t, w, (uintptr_t)v);
		trk_ev_end(t, w);
		trk_thr_exit(t);
	}
	session_finish(&r, WIRE_END_STOP, &s);
	check_order(&s);
	/* at about 9 bytes an event, the crafted ones filled more than one 64 KiB chunk */
	ck_assert_uint_ge(s.nchunks, 2);
	ck_assert_uint_ge(s.ndelta, 64 + 64 + PD_CRAFT);
	/* the hooks' pointers, in order */
	for (i = 0, k = 0; i < s.nev && k < 64; i++)
		if (s.ev[i].op == WIRE_EV_ALLOC && s.ev[i].ptr == (uintptr_t)blk[k])
			k++;
	ck_assert_uint_eq(k, 64);
	for (i = 0, k = 0; i < s.nev && k < 64; i++)
		if (s.ev[i].op == WIRE_EV_FREE && s.ev[i].ptr == (uintptr_t)blk[(k * 37) % 64])
			k++;
	ck_assert_uint_eq(k, 64);
	/* the crafted ones, exact and in order, the dropped one absent */
	for (i = 0, k = 0; i < s.nev; i++) {
		if (s.ev[i].op != WIRE_EV_FREE || k >= 64 + nfree)
			continue;
		if (k++ < 64)
			continue; /* the hooks' frees */
		ck_assert_msg(s.ev[i].ptr == want[k - 65], "crafted free %zu: 0x%llx, want 0x%llx", k - 65,
			      (unsigned long long)s.ev[i].ptr, (unsigned long long)want[k - 65]);
	}
	ck_assert_uint_eq(k, 64 + nfree);
	free(want);
	ck_dec_free(&s);
}
END_TEST

/* ---- sessions one after the other while other threads allocate ------------ */

#define BUSY_THREADS 3
static _Atomic int busy_stop;

__attribute__((noinline)) static void busy_deep(unsigned d, unsigned k)
{
	if (d) {
		busy_deep(d - 1, k);
		__asm__ volatile("" ::: "memory"); /* not a tail call: a frame per level */
		return;
	}
	trk_free(trk_realloc(trk_malloc(16 + k % 64), 100 + k % 50));
}

static void *busy_main(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;

	while (!atomic_load(&busy_stop))
		busy_deep(k % 12, k), k++;
	return NULL;
}

/*
 * check_order_busy - like check_order for a session ended while other threads
 * were inside hooks: a realloc's FREE number is taken before the real call,
 * outside the buffer handshake, and a hook that passed its "recording?"
 * check just before the end may append after the END's flush visited its
 * buffer: a few numbers per thread can be missing (an existing property of
 * ending under load, not of re-starting). Everything else: numbers unique,
 * from this session only, nodes defined in this stream before use.
 */
static void check_order_busy(const struct ck_dec *s)
{
	struct ck_ev *v = ck_dec_by_seq(s);
	uint32_t max_node = atomic_load(&trk_g.next_node);
	uint8_t *known = calloc(max_node + 1, 1);
	const char *bad = NULL;
	size_t at = 0;

	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(known);
	ck_assert_int_eq(s->have_end, 1);
	ck_assert_uint_le(s->nev, s->end_total);
	ck_assert_uint_le(s->end_total - s->nev, BUSY_THREADS * 32);
	known[0] = 1;
	/*
	 * One assertion at the end, not one per event: each ck_assert writes
	 * to Check's pipe, and the busy threads make a few hundred thousand
	 * events (with fast hooks the test outran its timeout on that alone).
	 */
	for (size_t i = 0; i < s->nev && !bad; i++) {
		if (v[i].seq >= s->end_total)
			bad = "number past the end's total";
		else if (i && v[i].seq <= v[i - 1].seq)
			bad = "number repeated";
		else if (v[i].op == WIRE_EV_NODE && (v[i].index > max_node || v[i].parent > max_node))
			bad = "node index past the tree";
		else if (v[i].op == WIRE_EV_NODE && known[v[i].index])
			bad = "node announced twice";
		else if (v[i].op == WIRE_EV_NODE && !known[v[i].parent])
			bad = "node announced before its parent";
		else if (v[i].op == WIRE_EV_NODE)
			known[v[i].index] = 1;
		else if (v[i].op == WIRE_EV_ALLOC && (v[i].trace > max_node || !known[v[i].trace]))
			bad = "alloc names a node before its NODE";
		if (bad)
			at = i;
	}
	ck_assert_msg(!bad, "event %zu of %zu (seq %llu): %s", at, s->nev,
		      bad ? (unsigned long long)v[at].seq : 0ull, bad ? bad : "");
	free(known);
	free(v);
}

START_TEST(session_twice_busy)
{
	pthread_t th[BUSY_THREADS];
	struct ck_reader r;
	struct ck_dec s;

	trk_set_real(&libc_real);
	for (uintptr_t i = 0; i < BUSY_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, busy_main, (void *)(i * 5)), 0);
	/* hooks run in every thread while sessions end and start */
	for (int round = 0; round < 4; round++) {
		session_start(&r);
		usleep(30000);
		session_finish(&r, WIRE_END_STOP, &s);
		check_order_busy(&s);
		ck_assert_uint_gt(s.nev, 0);
		ck_dec_free(&s);
		wait_ended();
	}
	atomic_store(&busy_stop, 1);
	for (int i = 0; i < BUSY_THREADS; i++)
		pthread_join(th[i], NULL);
}
END_TEST

/* track_session_twice_add - this file's tests, after check_track_session.c's */
void track_session_twice_add(TCase *tc)
{
	tcase_add_test(tc, session_twice);
	tcase_add_test(tc, session_ptr_delta);
	tcase_add_test(tc, session_twice_busy);
}
