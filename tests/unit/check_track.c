/* tests/unit/check_track.c - Check suite for track/: varints, trace tree, buffers, sessions */
/* SPDX-License-Identifier: MIT */
/*
 * Session tests run a real session over a socketpair inside the test
 * process (Check forks each test, so every test starts with fresh
 * per-process state), call the trk_* hooks directly and decode what came
 * out with an independent reader (check_track_decode.c, wire.h only).
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
#include "check_track_decode.c"
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

static struct trk_thr *tree_setup(void)
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

/* ---- the CFI walker agrees with libunwind ------------------------------------- */

static uintptr_t walk_fast[TRK_DEPTH_MAX + 32], walk_slow[TRK_DEPTH_MAX + 32];
static size_t walk_nfast, walk_nslow;

__attribute__((noinline)) static void walk_probe(struct trk_thr *t)
{
	const uintptr_t *fp = __builtin_frame_address(0);

	walk_nfast = trk_walk(t, walk_fast, fp[1], fp);
	walk_nslow = trk_capture_libunwind(walk_slow, (const void *)fp[1]);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static int walk_rec(struct trk_thr *t, int d)
{
	int r = 0;

	if (d > 0)
		r = walk_rec(t, d - 1) + 1;
	else
		walk_probe(t);
	__asm__ volatile("" ::: "memory"); /* no tail calls: every level keeps a frame */
	return r;
}

START_TEST(unwind_walker_matches_libunwind)
{
	struct trk_thr *t = tree_setup();
	uintptr_t fake[4] = { 0x1234, 0x10, 0, 0 };

	trk_g.depth = TRK_DEPTH_MAX;
	trk_thr_get(); /* bind this thread: stack bounds */
	t = trk_tls_thr;
	ck_assert_uint_ne(t->stack_hi, 0);
	for (int d = 0; d < 40; d += 13) {
		walk_rec(t, d);
		ck_assert_uint_gt(walk_nslow, (size_t)d);
		ck_assert_uint_eq(walk_nfast, walk_nslow);
		for (size_t i = 0; i < walk_nslow; i++)
			ck_assert_uint_eq(walk_fast[i], walk_slow[i]);
	}
	/* cached rules give the same answer */
	walk_rec(t, 20);
	ck_assert_uint_eq(walk_nfast, walk_nslow);
	/* a start it cannot vouch for: no frames, no crash (libunwind takes over) */
	ck_assert_uint_eq(trk_walk(t, walk_fast, 0x10, fake), 0);
	fake[1] = (uintptr_t)walk_probe + 1;
	fake[0] = 0;
	(void)trk_walk(t, walk_fast, fake[1], fake);
}
END_TEST

/* two callers of the same shape: the probe's state is the same, one slot above differs */
__attribute__((noinline)) static void walk_common(struct trk_thr *t)
{
	walk_probe(t);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void walk_via_a(struct trk_thr *t)
{
	walk_common(t);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void walk_via_b(struct trk_thr *t)
{
	walk_common(t);
	__asm__ volatile("nop" ::: "memory");
}

static void walk_check(void)
{
	ck_assert_uint_eq(walk_nfast, walk_nslow);
	for (size_t i = 0; i < walk_nslow; i++)
		ck_assert_uint_eq(walk_fast[i], walk_slow[i]);
}

/*
 * The walker takes over the outer frames of the thread's previous walk when
 * it reaches the same state; a return address changed above that point
 * (another caller at the same depth) must be seen, and so must a shallower
 * and a deeper stack, and the depth limit.
 */
START_TEST(unwind_walker_reuses_only_unchanged_frames)
{
	struct trk_thr *t = tree_setup();
	uintptr_t a2;

	trk_g.depth = TRK_DEPTH_MAX;
	trk_thr_get();
	t = trk_tls_thr;
	walk_via_a(t);
	walk_check();
	ck_assert_uint_ge(walk_nfast, 4);
	a2 = walk_fast[1]; /* [0] in walk_common, [1] in walk_via_a */
	walk_via_b(t);
	walk_check();
	ck_assert_uint_ne(walk_fast[1], a2); /* the caller of walk_common differs */
	walk_via_a(t);
	walk_check();
	ck_assert_uint_eq(walk_fast[1], a2);
	for (int d = 30; d >= 0; d -= 6) {
		walk_rec(t, d);
		walk_check();
		walk_rec(t, d);
		walk_check();
	}
	trk_g.depth = 5;
	walk_rec(t, 12);
	ck_assert_uint_eq(walk_nfast, 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_uint_eq(walk_fast[i], walk_slow[i]);
	trk_g.depth = TRK_DEPTH_MAX;
	walk_rec(t, 12);
	walk_check();
}
END_TEST

/*
 * Code built without frame pointers keeps locals in rbp. rbp_y(t, v, x,
 * probe) holds v in rbp while it calls x(t), which saves it (push rbp) and
 * calls probe(t): the state of x's frame and the slot where x saved rbp
 * change with v, but no step reads that rbp (y restores its caller's from
 * its own slot). Both are hand-written so that the compiler cannot keep v
 * elsewhere; the CFI is what gcc emits for such code.
 */
__asm__(".text\n"
	".type rbp_x, @function\n"
	"rbp_x:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"call *%rcx\n"
	"pop %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rbp_x, .-rbp_x\n"
	".type rbp_y, @function\n"
	"rbp_y:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsi, %rbp\n"
	"call *%rdx\n"
	"pop %rbp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rbp_y, .-rbp_y\n");

void rbp_x(void);
void rbp_y(struct trk_thr *t, uintptr_t v, void (*x)(void), void (*probe)(struct trk_thr *));

static volatile int rbp_round; /* which round of the test below; 3 marks the kept walk */

/* rbp_drive - one round, always through the same call sites (only v differs) */
__attribute__((noinline)) static void rbp_drive(struct trk_thr *t)
{
	int k = rbp_round;

	if (k == 3)
		t->wstep[t->wcur][1].ra = 0x4243; /* frame 1: rbp_y */
	if (k == 4)
		t->walk_n = 0; /* the mark gone */
	rbp_y(t, ((uintptr_t)k + 1) * 0x1111, rbp_x, walk_probe);
	__asm__ volatile("" ::: "memory");
}

/*
 * The walker takes over the kept walk at the first frame although its rbp
 * (and the slot it was saved in) changed, when no later step reads that
 * rbp. Shown by a marked return address in the kept walk's second frame,
 * which only a walk that took over at the first frame copies.
 */
START_TEST(unwind_walker_ignores_unread_rbp)
{
	struct trk_thr *t = tree_setup();

	trk_g.depth = TRK_DEPTH_MAX;
	trk_thr_get();
	t = trk_tls_thr;
	for (rbp_round = 0; rbp_round < 7; rbp_round++) {
		rbp_drive(t); /* one call site: the stacks differ only in v */
		if (rbp_round == 3) {
			ck_assert_uint_eq(walk_fast[1], 0x4242);
		} else {
			walk_check();
			ck_assert_uint_ge(walk_nfast, 4);
			ck_assert_uint_gt(t->walk_n, 2);
		}
	}
}
END_TEST

/*
 * trk_walk_repeat: the probe asks for the leaf of its stack and, when it
 * gets none, walks, traces and notes the leaf (as the hooks do).
 */
static uint32_t repeat_got, repeat_leaf, repeat_gen = 1;
static uintptr_t repeat_ra; /* the probe's return address */

__attribute__((noinline)) static void repeat_probe(struct trk_thr *t)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	uint32_t g;

	repeat_ra = fp[1];
	repeat_leaf = 0;
	repeat_got = trk_walk_repeat(t, fp[1], fp, repeat_gen);
	if (!repeat_got) {
		walk_nfast = trk_walk(t, t->frames, fp[1], fp);
		memcpy(walk_fast, t->frames, walk_nfast * sizeof(walk_fast[0]));
		walk_nslow = trk_capture_libunwind(walk_slow, (const void *)fp[1]);
		repeat_leaf = trk_tree_trace(t, walk_nfast, &g);
		trk_walk_note(t, repeat_leaf, repeat_gen);
	}
	__asm__ volatile("" ::: "memory");
}

static volatile int repeat_site; /* which of repeat_common's two call sites */

__attribute__((noinline)) static void repeat_common(struct trk_thr *t)
{
	if (repeat_site) {
		__asm__ volatile("nop" ::: "memory");
		repeat_probe(t);
	} else {
		repeat_probe(t);
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void repeat_via_a(struct trk_thr *t)
{
	repeat_common(t);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void repeat_via_b(struct trk_thr *t)
{
	repeat_common(t);
	__asm__ volatile("nop" ::: "memory");
}

/* repeat_drive - one call site for every step of the test below: its stack differs only by via */
__attribute__((noinline)) static void repeat_drive(struct trk_thr *t, int via)
{
	static void (*volatile fn[2])(struct trk_thr *) = { repeat_via_a, repeat_via_b };

	repeat_site = via == 2 || via == 4;
	if (via >= 3) {
		__asm__ volatile("nop" ::: "memory");
		repeat_via_a(t); /* another path to repeat_via_a */
	} else {
		fn[via == 1](t); /* one call site: a and b differ only in the return into them */
	}
	__asm__ volatile("" ::: "memory");
}

/* note_site - trk_walk_note for a kept one-frame walk at call site ra */
static void note_site(struct trk_thr *t, uintptr_t ra, uint32_t leaf)
{
	struct trk_wstep *w = t->wstep[t->wcur];

	memset(w, 0, sizeof(*w));
	w->ra = ra;
	w->sp = 0x1000;
	t->walk_n = 1;
	t->walk_kept = 1;
	trk_walk_note(t, leaf, 1);
}

/* two call sites of one memo set keep an entry each; a third evicts the one noted longest ago */
START_TEST(unwind_memo_ways)
{
	struct trk_thr *t = tree_setup();
	uintptr_t ra[3] = { 0x401234, 0, 0 }, x;
	size_t set = trk_wmemo_at(ra[0]), n = 1;
	struct trk_wmemo *e;

	trk_thr_get();
	t = trk_tls_thr;
	memset(t->wmemo, 0, sizeof(t->wmemo));
	for (x = ra[0] + 1; n < 3; x++)
		if (trk_wmemo_at(x) == set)
			ra[n++] = x;
	e = &t->wmemo[TRK_WMEMO_WAYS * set];
	note_site(t, ra[0], 10);
	note_site(t, ra[1], 11);
	ck_assert(e[0].ra == ra[1] && e[0].leaf == 11);
	ck_assert(e[1].ra == ra[0] && e[1].leaf == 10);
	note_site(t, ra[0], 12); /* its own entry again, in way 1: nothing moves */
	ck_assert(e[0].ra == ra[1] && e[0].leaf == 11);
	ck_assert(e[1].ra == ra[0] && e[1].leaf == 12);
	note_site(t, ra[2], 13); /* way 0's entry moves to way 1, ra[0]'s goes */
	ck_assert(e[0].ra == ra[2] && e[0].leaf == 13);
	ck_assert(e[1].ra == ra[1] && e[1].leaf == 11);
	t->walk_n = 0;
	t->walk_kept = 0;
	memset(t->wmemo, 0, sizeof(t->wmemo));
}
END_TEST

/* the same stack again (a loop's call site) gives the noted leaf; anything else walks */
START_TEST(unwind_walk_repeat)
{
	/*
	 * via 0: repeat_via_a -> repeat_common's first site; 1: repeat_via_b (same
	 * depth, same sp and rbp at the probe, another caller above); 2:
	 * repeat_via_a -> repeat_common's second site (another call site in the
	 * same function); 3 and 4: as 0 and 2, but repeat_via_a is called from
	 * another place (the first two frames the same as 0's and 2's, the rest
	 * not: after 4 was walked, 3 must not take 0's entry). hit: the leaf
	 * noted when that stack was walked (want[via]); 0: walked (and noted).
	 */
	static const struct {
		int via;
		uint32_t gen;	/* the session asked for */
		int bump;	/* a module went away before the step */
		unsigned depth; /* trk_g.depth; 2 cuts the walk (not kept) */
		int hit;
	} step[] = {
		{ 0, 1, 0, TRK_DEPTH_MAX, 0 }, { 0, 1, 0, TRK_DEPTH_MAX, 1 }, { 0, 1, 0, TRK_DEPTH_MAX, 1 },
		{ 1, 1, 0, TRK_DEPTH_MAX, 0 }, { 1, 1, 0, TRK_DEPTH_MAX, 1 }, { 0, 1, 0, TRK_DEPTH_MAX, 0 },
		{ 0, 1, 0, TRK_DEPTH_MAX, 1 }, { 2, 1, 0, TRK_DEPTH_MAX, 0 }, { 0, 1, 0, TRK_DEPTH_MAX, 1 },
		{ 2, 1, 0, TRK_DEPTH_MAX, 1 }, { 0, 1, 0, TRK_DEPTH_MAX, 1 }, { 1, 1, 0, TRK_DEPTH_MAX, 0 },
		{ 2, 1, 0, TRK_DEPTH_MAX, 0 }, { 0, 2, 0, TRK_DEPTH_MAX, 0 }, { 0, 2, 0, TRK_DEPTH_MAX, 1 },
		{ 0, 2, 1, TRK_DEPTH_MAX, 0 }, { 0, 2, 0, TRK_DEPTH_MAX, 1 }, { 0, 2, 0, 2, 0 },
		{ 0, 2, 0, 2, 0 },	       { 0, 2, 0, TRK_DEPTH_MAX, 1 }, { 4, 2, 0, TRK_DEPTH_MAX, 0 },
		{ 3, 2, 0, TRK_DEPTH_MAX, 0 }, { 3, 2, 0, TRK_DEPTH_MAX, 1 }, { 0, 2, 0, TRK_DEPTH_MAX, 0 },
		{ 4, 2, 0, TRK_DEPTH_MAX, 0 }, { 4, 2, 0, TRK_DEPTH_MAX, 1 }, { 3, 2, 0, TRK_DEPTH_MAX, 0 },
	};
	volatile size_t nstep = sizeof(step) / sizeof(step[0]); /* a loop the compiler keeps */
	struct trk_thr *t = tree_setup();
	uint32_t want[5] = { 0, 0, 0, 0, 0 };

	trk_thr_get();
	t = trk_tls_thr;
	for (size_t k = 0; k < nstep; k++) {
		repeat_gen = step[k].gen;
		trk_g.depth = step[k].depth;
		if (step[k].bump)
			atomic_fetch_add(&trk_g.code_gen, 1);
		repeat_drive(t, step[k].via);
		/* the two call sites may share a set (1 in 64): its two ways hold both */
		if (step[k].hit) {
			ck_assert_msg(repeat_got == want[step[k].via] && repeat_got != 0,
				      "step %zu: got %u, want %u", k, repeat_got, want[step[k].via]);
		} else {
			ck_assert_msg(repeat_got == 0, "step %zu: got %u, want a walk", k, repeat_got);
			ck_assert_uint_ne(repeat_leaf, 0);
			if (step[k].depth == TRK_DEPTH_MAX) { /* kept and noted */
				ck_assert(want[step[k].via] == 0 || want[step[k].via] == repeat_leaf);
				want[step[k].via] = repeat_leaf;
			}
			ck_assert_uint_eq(walk_nfast, step[k].depth < walk_nslow ? step[k].depth : walk_nslow);
			for (size_t i = 0; i < walk_nfast; i++)
				ck_assert_uint_eq(walk_fast[i], walk_slow[i]);
		}
	}
	trk_g.depth = TRK_DEPTH_MAX;
	/* five stacks, five leaves */
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_ne(want[i], 0);
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(want[i], want[j]);
	}
}
END_TEST

/* code without unwind info (anonymous memory, as JIT code): the stack is cut there */
START_TEST(unwind_cut_at_code_without_unwind_info)
{
	struct trk_thr *t = tree_setup();
	uintptr_t fake[4] = { 0, 0, 0, 0 }, st[4];
	char *anon = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t ra = (uintptr_t)anon + 100;

	ck_assert_ptr_ne(anon, MAP_FAILED);
	trk_g.depth = TRK_DEPTH_MAX;
	trk_thr_get();
	t = trk_tls_thr;
	/* the walker: the anonymous frame, then the marker; libunwind is not needed */
	fake[1] = ra;
	ck_assert_uint_eq(trk_walk(t, walk_fast, ra, fake), 2);
	ck_assert_uint_eq(walk_fast[0], ra - 1);
	ck_assert_uint_eq(walk_fast[1], (uintptr_t)WIRE_IP_CUT);
	/* not cached: asked again, the same */
	ck_assert_uint_eq(trk_walk(t, walk_fast, ra, fake), 2);
	/* at depth 1 there is no room for the marker */
	trk_g.depth = 1;
	ck_assert_uint_eq(trk_walk(t, walk_fast, ra, fake), 1);
	trk_g.depth = TRK_DEPTH_MAX;
	/* libunwind's stacks: cut after the first frame without unwind info */
	st[0] = (uintptr_t)walk_probe + 8;
	st[1] = ra - 1;
	st[2] = 0x5555; /* a frame-pointer guess beyond it */
	ck_assert_uint_eq(trk_cut_stack(t, st, 3), 3);
	ck_assert_uint_eq(st[0], (uintptr_t)walk_probe + 8);
	ck_assert_uint_eq(st[1], ra - 1);
	ck_assert_uint_eq(st[2], (uintptr_t)WIRE_IP_CUT);
	/* a stack in known code stays as it is */
	st[1] = (uintptr_t)walk_rec + 8;
	ck_assert_uint_eq(trk_cut_stack(t, st, 2), 2);
	ck_assert_uint_eq(st[1], (uintptr_t)walk_rec + 8);
	munmap(anon, 4096);
}
END_TEST

/* ---- sessions over a socketpair ---------------------------------------------- */

/* test_realloc - libc's, but huge requests fail like an exhausted heap (also under ASan) */
static void *test_realloc(void *p, size_t n)
{
	if (n > (1ull << 40)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n);
}

static const struct trk_real libc_real = {
	.malloc = malloc,
	.free = free,
	.calloc = calloc,
	.realloc = test_realloc,
	.reallocarray = reallocarray,
	.posix_memalign = posix_memalign,
	.aligned_alloc = aligned_alloc,
	.memalign = memalign,
	.valloc = valloc,
	.pvalloc = pvalloc,
};

static _Atomic int before_end_calls;

/* fake_restore - what inject/ will do: put slots back, say how many. */
static void fake_restore(void *arg, uint64_t *restored, uint64_t *left)
{
	ck_assert_ptr_eq(arg, &before_end_calls);
	atomic_fetch_add(&before_end_calls, 1);
	*restored = 5;
	*left = 1;
}

static void session_start(struct ck_reader *r)
{
	struct trk_config cfg = { .before_end = fake_restore, .before_end_arg = &before_end_calls };

	cfg.fd = ck_reader_start(r);
	if (!trk_g.real.malloc)
		trk_set_real(&libc_real); /* once: hooks of other threads may be running */
	ck_assert_int_eq(trk_start(&cfg), 0);
	ck_assert_int_eq(trk_active(), 1);
}

/* session_finish - end (reason) or wait for the end, then decode everything. */
static void session_finish(struct ck_reader *r, int reason, struct tstream *s)
{
	if (reason)
		trk_stop(reason);
	ck_reader_join(r);
	ck_assert_msg(tstream_decode(r->buf, r->len, s) == 0, "malformed stream at byte %zu of %zu",
		      s->error_at, r->len);
	free(r->buf);
}

/* check_order - numbers unique and gap-free, nodes before use, allocs/frees paired. */
static void check_order(const struct tstream *s)
{
	struct tev *v = tstream_by_seq(s);
	uint32_t max_node = atomic_load(&trk_g.next_node);
	uint8_t *known = calloc(max_node + 1, 1);

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(s->have_end, 1);
	ck_assert_uint_eq(s->end_total, s->nev);
	known[0] = 1;
	for (size_t i = 0; i < s->nev; i++) {
		ck_assert_uint_eq(v[i].seq, i); /* unique and without gaps */
		if (v[i].op == WIRE_EV_NODE) {
			ck_assert_uint_le(v[i].a, max_node);
			ck_assert_uint_eq(known[v[i].a], 0);
			ck_assert_uint_eq(known[v[i].b], 1);
			known[v[i].a] = 1;
		} else if (v[i].op == WIRE_EV_ALLOC) {
			ck_assert_uint_le(v[i].b, max_node);
			ck_assert_msg(known[v[i].b], "alloc names node %lu before its NODE",
				      (unsigned long)v[i].b);
		}
	}
	free(known);
	free(v);
}

static void *volatile keep_ptr;

__attribute__((noinline)) static void *call_site(size_t n)
{
	void *p = trk_malloc(n);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

START_TEST(session_round_trip)
{
	struct ck_reader r;
	struct tstream s;
	void *a, *b, *c, *d, *e, *f, *g, *h, *big;
	void *pm = NULL;
	int saw_main = 0, saw_exe = 0, nop = 0, kinds[WIRE_KIND_MAX + 1] = { 0 };
	uintptr_t site_ip = 0;

	session_start(&r);
	a = call_site(100);
	b = trk_calloc(3, 7);
	c = trk_realloc(NULL, 50);
	c = trk_realloc(c, 5000);
	d = trk_reallocarray(NULL, 4, 8);
	ck_assert_int_eq(trk_posix_memalign(&pm, 64, 200), 0);
	e = trk_aligned_alloc(64, 128);
	f = trk_memalign(32, 64);
	g = trk_valloc(10);
	h = trk_pvalloc(10);
	/* a realloc that fails: the FREE number becomes a NOP, the block stays */
	errno = 0;
	big = trk_realloc(a, SIZE_MAX / 2);
	ck_assert_ptr_null(big);
	ck_assert_int_eq(errno, ENOMEM); /* errno as the real realloc left it */
	errno = 1234;
	trk_free(b);
	ck_assert_int_eq(errno, 1234); /* free preserves errno */
	trk_free(NULL);
	trk_free(c);
	trk_free(d);
	trk_free(pm);
	trk_free(e);
	trk_free(f);
	trk_free(g);
	trk_free(h);
	keep_ptr = a;
	session_finish(&r, WIRE_END_STOP, &s);
	ck_assert_int_eq(trk_active(), 0);
	/* after the end, hooks pass through */
	trk_free(a);

	ck_assert_uint_eq(s.pid, (uint32_t)getpid());
	ck_assert_uint_eq(s.end_reason, WIRE_END_STOP);
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	ck_assert_uint_eq(s.end_restored, 5);
	ck_assert_uint_eq(s.end_left, 1);
	ck_assert_uint_eq(s.end_dropped, 0);
	check_order(&s);
	for (size_t i = 0; i < s.nev; i++) {
		struct tev *ev = &s.ev[i];

		if (ev->op == WIRE_EV_MODULE && strcmp(ev->path, s.exe) == 0)
			saw_exe = 1;
		if (ev->op == WIRE_EV_NOP)
			nop++;
		if (ev->op == WIRE_EV_ALLOC) {
			ck_assert_uint_le(ev->kind, WIRE_KIND_MAX);
			kinds[ev->kind]++;
			if (ev->c == (uintptr_t)a) {
				ck_assert_uint_eq(ev->a, 100);
				ck_assert_uint_eq(ev->kind, WIRE_KIND_MALLOC);
				site_ip = trk_node_at((uint32_t)ev->b)->ip;
				saw_main = 1;
			}
		}
		if (ev->op == WIRE_EV_FREE)
			ck_assert_uint_ne(ev->a, 0);
	}
	ck_assert_int_eq(saw_exe, 1);
	ck_assert_int_eq(saw_main, 1);
	ck_assert_int_eq(nop, 1);
	/* the innermost frame is the call inside call_site, not a hook frame */
	ck_assert_uint_gt(site_ip, (uintptr_t)call_site);
	ck_assert_uint_lt(site_ip, (uintptr_t)call_site + 256);
	ck_assert_int_eq(kinds[WIRE_KIND_MALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_CALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_REALLOC], 2);
	ck_assert_int_eq(kinds[WIRE_KIND_REALLOCARRAY], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_POSIX_MEMALIGN], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_ALIGNED_ALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_MEMALIGN], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_VALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_PVALLOC], 1);
	tstream_free(&s);
}
END_TEST

#define SEQ_THREADS 4
#define SEQ_ROUNDS 20000

static void *seq_main(void *arg)
{
	void *slots[16] = { 0 };

	(void)arg;
	for (int i = 0; i < SEQ_ROUNDS; i++) {
		int k = i & 15;

		trk_free(slots[k]);
		slots[k] = trk_malloc(16 + (size_t)(i & 63));
		if ((i & 255) == 0)
			usleep(100); /* idle moments: the timer flushes for us */
	}
	for (int k = 0; k < 16; k++)
		trk_free(slots[k]);
	return NULL;
}

START_TEST(session_threads_sequence)
{
	pthread_t th[SEQ_THREADS];
	struct ck_reader r;
	struct tstream s;
	struct tev *v;
	size_t allocs = 0, frees = 0;

	session_start(&r);
	for (int i = 0; i < SEQ_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, seq_main, NULL), 0);
	for (int i = 0; i < SEQ_THREADS; i++)
		pthread_join(th[i], NULL);
	session_finish(&r, WIRE_END_EXIT, &s);
	check_order(&s);
	/*
	 * Addresses are reused across threads: in number order each pointer
	 * must alternate ALLOC, FREE, ALLOC, ... (a free numbered after the
	 * allocation that reuses its block would show up as a double alloc).
	 */
	v = tstream_by_seq(&s);
	for (size_t i = 0; i < s.nev; i++) {
		if (v[i].op == WIRE_EV_ALLOC) {
			allocs++;
			for (size_t j = i + 1; j < s.nev; j++) {
				if (v[j].op == WIRE_EV_ALLOC && v[j].c == v[i].c)
					ck_abort_msg("pointer %#lx allocated twice without a free",
						     (unsigned long)v[i].c);
				if (v[j].op == WIRE_EV_FREE && v[j].a == v[i].c)
					break;
			}
		} else if (v[i].op == WIRE_EV_FREE) {
			frees++;
		}
	}
	ck_assert_uint_eq(allocs, SEQ_THREADS * SEQ_ROUNDS);
	ck_assert_uint_eq(frees, SEQ_THREADS * SEQ_ROUNDS);
	ck_assert_uint_gt(s.nchunks, SEQ_THREADS);
	free(v);
	tstream_free(&s);
}
END_TEST

START_TEST(session_ctl_stop)
{
	struct ck_reader r;
	struct tstream s;
	const uint8_t stop[2] = { WIRE_CTL_STOP, 0 };
	void *p;

	session_start(&r);
	p = trk_malloc(10);
	trk_free(p);
	/* heaptap asks to stop: the timer thread ends the session itself */
	ck_assert_int_eq(write(r.fd, stop, sizeof(stop)), 2);
	session_finish(&r, 0, &s);
	ck_assert_int_eq(trk_active(), 0);
	ck_assert_uint_eq(s.end_reason, WIRE_END_STOP);
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	trk_stop(WIRE_END_EXIT); /* ending again changes nothing */
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	check_order(&s);
	p = trk_malloc(10); /* passes through */
	ck_assert_ptr_nonnull(p);
	trk_free(p);
	tstream_free(&s);
}
END_TEST

START_TEST(session_ticks_and_idle_flush)
{
	struct ck_reader r;
	struct tstream s;
	void *p;

	int found = 0;
	size_t ticks = 0;

	session_start(&r);
	p = trk_malloc(10);
	/*
	 * Stay idle: the timer must send ticks and flush our buffer without a
	 * flush of our own. Ticks come every 10 ms; allow a loaded machine 10 s.
	 */
	for (int tries = 0; tries < 500 && !(found && ticks >= 2); tries++) {
		struct tstream part = { 0 };

		usleep(20000);
		pthread_mutex_lock(&r.lock);
		if (r.len && tstream_decode(r.buf, r.len, &part) == 0) {
			ticks = part.nticks;
			for (size_t i = 0; i < part.nev; i++)
				found |= part.ev[i].op == WIRE_EV_ALLOC &&
					 part.ev[i].c == (uintptr_t)p;
		}
		tstream_free(&part);
		pthread_mutex_unlock(&r.lock);
	}
	ck_assert_int_eq(found, 1);
	ck_assert_uint_ge(ticks, 2);
	trk_free(p);
	session_finish(&r, WIRE_END_EXIT, &s);
	check_order(&s);
	tstream_free(&s);
}
END_TEST

START_TEST(session_fork_child)
{
	struct ck_reader r;
	struct tstream s;
	pid_t pid;
	int st;

	session_start(&r);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *p;

		trk_after_fork_child();
		p = trk_malloc(77);
		trk_free(p);
		_exit(trk_active() ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(trk_active(), 1); /* the parent goes on */
	trk_free(trk_malloc(33));
	session_finish(&r, WIRE_END_EXIT, &s);
	check_order(&s);
	for (size_t i = 0; i < s.nev; i++)
		ck_assert(!(s.ev[i].op == WIRE_EV_ALLOC && s.ev[i].a == 77));
	tstream_free(&s);
}
END_TEST

/* wait_ticks - let the timer run n more ticks (bounded: 10 s on a loaded machine). */
static void wait_ticks(struct ck_reader *r, size_t n)
{
	size_t start = (size_t)-1;

	for (int tries = 0; tries < 1000; tries++) {
		struct tstream part = { 0 };
		size_t ticks = 0;

		pthread_mutex_lock(&r->lock);
		if (r->len && tstream_decode(r->buf, r->len, &part) == 0)
			ticks = part.nticks;
		tstream_free(&part);
		pthread_mutex_unlock(&r->lock);
		if (start == (size_t)-1)
			start = ticks;
		if (ticks >= start + n)
			return;
		usleep(10000);
	}
	ck_abort_msg("no ticks");
}

START_TEST(session_modules)
{
	struct ck_reader r;
	struct tstream s;
	uintptr_t zbase = 0;
	int vdso = 0, main_exe = 0, added = 0, removed = 0;
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	void *h;

	ck_assert_int_gt(sl, 0);
	self[sl] = '\0';
	/* the test must load it itself, so it must not be loaded yet */
	ck_assert_ptr_null(dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD));
	session_start(&r);
	/* a library loaded and unloaded later is announced by the timer's check */
	h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h);
	wait_ticks(&r, 2);
	ck_assert_int_eq(dlclose(h), 0);
	wait_ticks(&r, 2);
	session_finish(&r, WIRE_END_STOP, &s);
	check_order(&s);
	for (size_t i = 0; i < s.nev; i++) {
		struct tev *e = &s.ev[i];

		if (e->op == WIRE_EV_MODULE) {
			vdso |= strcmp(e->path, "[vdso]") == 0;
			main_exe |= strcmp(e->path, self) == 0;
			if (strstr(e->path, "libz.so") && !zbase) {
				zbase = e->a;
				added = 1;
			}
		}
		if (e->op == WIRE_EV_MODULE_DEL && zbase && e->a == zbase)
			removed = 1;
	}
	ck_assert_int_eq(main_exe, 1);
	ck_assert_int_eq(vdso, 1);
	ck_assert_int_eq(added, 1);
	ck_assert_int_eq(removed, 1);
	tstream_free(&s);
}
END_TEST

START_TEST(session_fd_taken_over)
{
	struct ck_reader r;
	int pfd[2], fd;
	char buf[16];
	ssize_t got;

	/*
	 * A daemonising program closes every fd and its own files get the
	 * numbers: the library must notice and write nothing into them.
	 */
	session_start(&r);
	fd = trk_g.fd;
	ck_assert_int_gt(fd, r.fd); /* moved up out of the way of small fds */
	/* a socket of its own, so a write would even succeed */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pfd), 0);
	ck_assert_int_eq(dup2(pfd[1], fd), fd); /* our socket closed, the number reused */
	for (int i = 0; i < 20000 && trk_active(); i++)
		trk_free(trk_malloc(48));
	for (int i = 0; i < 300 && trk_active(); i++)
		usleep(10000); /* the timer's tick notices too */
	ck_assert_int_eq(trk_active(), 0);
	ck_assert_int_eq(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
	got = read(pfd[0], buf, sizeof(buf));
	ck_assert_int_eq(got, -1); /* nothing was written into the program's socket */
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_ne(fcntl(fd, F_GETFD), -1); /* and its fd was not closed */
	close(pfd[0]);
	close(pfd[1]);
	ck_reader_join(&r); /* our socket is gone: the reader saw EOF */
	free(r.buf);
}
END_TEST

START_TEST(session_peer_gone)
{
	struct trk_config cfg = { .before_end = fake_restore, .before_end_arg = &before_end_calls };
	int sv[2];
	void *p;

	/* heaptap vanished: no SIGPIPE, recording stops, hooks pass through */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	trk_set_real(&libc_real);
	cfg.fd = sv[0];
	ck_assert_int_eq(trk_start(&cfg), 0);
	close(sv[1]);
	for (int i = 0; i < 200000 && trk_active(); i++)
		trk_free(trk_malloc(64));
	ck_assert_int_eq(trk_active(), 0);
	p = trk_malloc(8);
	ck_assert_ptr_nonnull(p);
	trk_free(p);
	/* the restore (inject/) still runs once, from the timer thread */
	for (int i = 0; i < 1000 && !atomic_load(&before_end_calls); i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	/* once the timer has let go, another session may start; not on a non-socket */
	for (int i = 0; i < 1000 && atomic_load(&trk_g.started); i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
	cfg.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(cfg.fd, 0);
	ck_assert_int_eq(trk_start(&cfg), -ENOTSOCK);
	ck_assert_int_eq(trk_active(), 0);
}
END_TEST

/* wait_ended - the session has fully ended (the timer let go of the socket). */
static void wait_ended(void)
{
	for (int i = 0; i < 1000 && atomic_load(&trk_g.started); i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
}

/* check_session - the stream of one session of several: its own modules, end tick. */
static void check_session(const struct tstream *s, const char *self)
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
	struct tstream s1, s2;
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
			    (s2.ev[i].a == 0x1234 || s2.ev[i].a == 0x5678)));
	/* and a third */
	tstream_free(&s1);
	wait_ended();
	session_start(&r);
	trk_free(call_site(7));
	session_finish(&r, WIRE_END_EXIT, &s1);
	check_session(&s1, self);
	tstream_free(&s1);
	tstream_free(&s2);
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
	struct tstream s;
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
		if (s.ev[i].op == WIRE_EV_ALLOC && s.ev[i].c == (uintptr_t)blk[k])
			k++;
	ck_assert_uint_eq(k, 64);
	for (i = 0, k = 0; i < s.nev && k < 64; i++)
		if (s.ev[i].op == WIRE_EV_FREE && s.ev[i].a == (uintptr_t)blk[(k * 37) % 64])
			k++;
	ck_assert_uint_eq(k, 64);
	/* the crafted ones, exact and in order, the dropped one absent */
	for (i = 0, k = 0; i < s.nev; i++) {
		if (s.ev[i].op != WIRE_EV_FREE || k >= 64 + nfree)
			continue;
		if (k++ < 64)
			continue; /* the hooks' frees */
		ck_assert_msg(s.ev[i].a == want[k - 65], "crafted free %zu: 0x%llx, want 0x%llx", k - 65,
			      (unsigned long long)s.ev[i].a, (unsigned long long)want[k - 65]);
	}
	ck_assert_uint_eq(k, 64 + nfree);
	free(want);
	tstream_free(&s);
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
static void check_order_busy(const struct tstream *s)
{
	struct tev *v = tstream_by_seq(s);
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
		else if (v[i].op == WIRE_EV_NODE && (v[i].a > max_node || v[i].b > max_node))
			bad = "node index past the tree";
		else if (v[i].op == WIRE_EV_NODE && known[v[i].a])
			bad = "node announced twice";
		else if (v[i].op == WIRE_EV_NODE && !known[v[i].b])
			bad = "node announced before its parent";
		else if (v[i].op == WIRE_EV_NODE)
			known[v[i].a] = 1;
		else if (v[i].op == WIRE_EV_ALLOC && (v[i].b > max_node || !known[v[i].b]))
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
	struct tstream s;

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
		tstream_free(&s);
		wait_ended();
	}
	atomic_store(&busy_stop, 1);
	for (int i = 0; i < BUSY_THREADS; i++)
		pthread_join(th[i], NULL);
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
	suite_add_tcase(s, tc);
	tc = tcase_create("tree");
	tcase_add_test(tc, tree_same_and_different);
	tcase_add_test(tc, tree_wide_node);
	tcase_add_test(tc, tree_thread_cache_reuse);
	tcase_add_test(tc, tree_concurrent_insert);
	tcase_add_test(tc, tree_stack_cache);
	suite_add_tcase(s, tc);
	tc = tcase_create("unwind");
	tcase_add_test(tc, unwind_walker_matches_libunwind);
	tcase_add_test(tc, unwind_walker_reuses_only_unchanged_frames);
	tcase_add_test(tc, unwind_cut_at_code_without_unwind_info);
	tcase_add_test(tc, unwind_walker_ignores_unread_rbp);
	tcase_add_test(tc, unwind_walk_repeat);
	tcase_add_test(tc, unwind_memo_ways);
	suite_add_tcase(s, tc);
	tc = tcase_create("session");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, session_round_trip);
	tcase_add_test(tc, session_threads_sequence);
	tcase_add_test(tc, session_ctl_stop);
	tcase_add_test(tc, session_ticks_and_idle_flush);
	tcase_add_test(tc, session_fork_child);
	tcase_add_test(tc, session_modules);
	tcase_add_test(tc, session_fd_taken_over);
	tcase_add_test(tc, session_peer_gone);
	tcase_add_test(tc, session_twice);
	tcase_add_test(tc, session_ptr_delta);
	tcase_add_test(tc, session_twice_busy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(track_suite());
}
