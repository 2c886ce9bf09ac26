/* tests/unit/check_track_unwind.c - unit.track's case "unwind": the CFI walker, its memo, cut stacks */
/* SPDX-License-Identifier: MIT */
/*
 * Part of unit.track (check_track.c): the walker agrees with libunwind,
 * reuses only the frames that did not change, ignores an rbp no step
 * reads, remembers repeated stacks per call site, and cuts a stack at
 * code without unwind info.
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
		t->wkeep[t->wcur].w[1].ra = 0x4243; /* frame 1: rbp_y */
	if (k == 4)
		t->wkeep[t->wcur].n = 0; /* the mark gone */
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
			ck_assert_uint_gt(t->wkeep[t->wcur].n, 2);
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
	struct trk_wstep *w = t->wkeep[t->wcur].w;

	memset(w, 0, sizeof(*w));
	w->ra = ra;
	w->sp = 0x1000;
	t->wkeep[t->wcur].n = 1;
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
	t->wkeep[t->wcur].n = 0;
	t->walk_kept = 0;
	memset(t->wmemo, 0, sizeof(t->wmemo));
}
END_TEST

/* age_walks - as if TRK_WALKS - 1 other walks were kept since: only the last kept walk is left */
static void age_walks(struct trk_thr *t)
{
	for (uint32_t i = 0; i < TRK_WALKS; i++)
		if (i != t->wcur)
			t->wkeep[i].epoch = ++t->wepoch;
}

/* drop_own - as if every memo entry's slots were too many for its own copy: the kept walks decide */
static void drop_own(struct trk_thr *t)
{
	for (size_t i = 0; i < sizeof(t->wmemo) / sizeof(t->wmemo[0]); i++)
		t->wmemo[i].np = TRK_WMEMO_PAIRS + 1;
}

/* own_fits - every noted memo entry holds its own copy of its slots */
static bool own_fits(const struct trk_thr *t)
{
	for (size_t i = 0; i < sizeof(t->wmemo) / sizeof(t->wmemo[0]); i++)
		if (t->wmemo[i].ra && t->wmemo[i].sp1 && t->wmemo[i].np > TRK_WMEMO_PAIRS)
			return false;
	return true;
}

/*
 * The same stack again (a loop's call site) gives the noted leaf; anything
 * else walks. Three passes: entries without their own copy of the slots
 * and only the last kept walk left before every step (aged: an entry's
 * own walk is gone once another stack was walked, so the search of the
 * last walk and its node check decide: hit); the same with their own
 * copies (the kept walks do not matter: hit_own); and with the kept
 * walks as they are (hit_own).
 */
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
		int hit, hit_own;
	} step[] = {
		{ 0, 1, 0, TRK_DEPTH_MAX, 0, 0 }, { 0, 1, 0, TRK_DEPTH_MAX, 1, 1 },
		{ 0, 1, 0, TRK_DEPTH_MAX, 1, 1 }, { 1, 1, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 1, 1, 0, TRK_DEPTH_MAX, 1, 1 }, { 0, 1, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 0, 1, 0, TRK_DEPTH_MAX, 1, 1 }, { 2, 1, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 0, 1, 0, TRK_DEPTH_MAX, 1, 1 }, { 2, 1, 0, TRK_DEPTH_MAX, 1, 1 },
		{ 0, 1, 0, TRK_DEPTH_MAX, 1, 1 }, { 1, 1, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 2, 1, 0, TRK_DEPTH_MAX, 0, 1 }, { 0, 2, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 0, 2, 0, TRK_DEPTH_MAX, 1, 1 }, { 0, 2, 1, TRK_DEPTH_MAX, 0, 0 },
		{ 0, 2, 0, TRK_DEPTH_MAX, 1, 1 }, { 0, 2, 0, 2, 0, 0 },
		{ 0, 2, 0, 2, 0, 0 },		  { 0, 2, 0, TRK_DEPTH_MAX, 1, 1 },
		{ 4, 2, 0, TRK_DEPTH_MAX, 0, 0 }, { 3, 2, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 3, 2, 0, TRK_DEPTH_MAX, 1, 1 }, { 0, 2, 0, TRK_DEPTH_MAX, 0, 0 },
		{ 4, 2, 0, TRK_DEPTH_MAX, 0, 1 }, { 4, 2, 0, TRK_DEPTH_MAX, 1, 1 },
		{ 3, 2, 0, TRK_DEPTH_MAX, 0, 0 },
	};
	volatile size_t nstep = sizeof(step) / sizeof(step[0]); /* a loop the compiler keeps */
	struct trk_thr *t = tree_setup();
	uint32_t want[5] = { 0, 0, 0, 0, 0 };

	trk_thr_get();
	t = trk_tls_thr;
	for (int pass = 0; pass < 3; pass++) {
		volatile int aged = pass < 2, own = pass > 0; /* read at every step: one loop body, one call site */

		atomic_fetch_add(&trk_g.code_gen, 1); /* a pass starts with no walk and no entry */
		for (size_t k = 0; k < nstep; k++) {
			int hit = own ? step[k].hit_own : step[k].hit;

			repeat_gen = step[k].gen;
			trk_g.depth = step[k].depth;
			if (step[k].bump)
				atomic_fetch_add(&trk_g.code_gen, 1);
			if (aged)
				age_walks(t);
			if (!own)
				drop_own(t);
			repeat_drive(t, step[k].via);
			ck_assert_msg(!own || own_fits(t), "pass %d step %zu: slots past the own copy", pass, k);
			/* the two call sites may share a set (1 in 64): its two ways hold both */
			if (hit) {
				ck_assert_msg(repeat_got == want[step[k].via] && repeat_got != 0,
					      "pass %d step %zu: got %u, want %u", pass, k, repeat_got,
					      want[step[k].via]);
			} else {
				ck_assert_msg(repeat_got == 0, "pass %d step %zu: got %u, want a walk", pass,
					      k, repeat_got);
				ck_assert_uint_ne(repeat_leaf, 0);
				if (step[k].depth == TRK_DEPTH_MAX) { /* kept and noted */
					ck_assert_msg(want[step[k].via] == 0 || want[step[k].via] == repeat_leaf,
						      "pass %d step %zu: leaf %u, want %u", pass, k, repeat_leaf,
						      want[step[k].via]);
					want[step[k].via] = repeat_leaf;
				}
				ck_assert_uint_eq(walk_nfast,
						  step[k].depth < walk_nslow ? step[k].depth : walk_nslow);
				for (size_t i = 0; i < walk_nfast; i++)
					ck_assert_uint_eq(walk_fast[i], walk_slow[i]);
			}
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

static volatile int alt_join; /* alt_drive: the second stack */

__attribute__((noinline)) static void alt_key(struct trk_thr *t)
{
	repeat_probe(t);
	__asm__ volatile("" ::: "memory");
}

/* alt_drive - strings' two stacks: probe <- alt_key <- alt_drive, or probe <- alt_drive */
__attribute__((noinline)) static void alt_drive(struct trk_thr *t)
{
	if (alt_join) {
		__asm__ volatile("nop" ::: "memory");
		repeat_probe(t);
	} else {
		alt_key(t);
	}
	__asm__ volatile("" ::: "memory");
}

/* alt_age - age_walks if asked, drop_own if asked, out of line (a branch around the call beside could clone it) */
__attribute__((noinline)) static void alt_age(struct trk_thr *t, int age, int own)
{
	if (age)
		age_walks(t);
	if (!own)
		drop_own(t);
	__asm__ volatile("" ::: "memory");
}

/*
 * Two call sites whose stacks share no frame 1 (strings' strdup in
 * make_key and malloc in join, both under main), one after the other: each
 * is walked once, then every call takes its leaf from the memo (its own
 * kept walk is still there). With only the last kept walk (before the
 * pool of kept walks), every switch walked again: the search of the other
 * stack's walk finds no frame 1.
 */
START_TEST(unwind_memo_own_walk)
{
	struct trk_thr *t = tree_setup();
	uint32_t want[2] = { 0, 0 };

	trk_g.depth = TRK_DEPTH_MAX;
	repeat_gen = 1;
	trk_thr_get();
	t = trk_tls_thr;
	/*
	 * key key join key, ... (one call site here: the stacks stay two);
	 * before round 24 key's walk ages out. Without their own copies of the
	 * slots (own 0) the entries depend on the kept walks: the last one
	 * (join's) has no frame 1 of key's, so key walks; join's own walk was
	 * not touched. With them (own 1) key's entry checks its own slots and
	 * takes its leaf: only the first two rounds walk.
	 */
	for (int own = 0; own < 2; own++) {
		atomic_fetch_add(&trk_g.code_gen, 1); /* no walk and no entry */
		for (int round = 0; round < 26; round++) {
			alt_join = round % 4 == 2 || round == 25;
			alt_age(t, round == 24, own);
			alt_drive(t); /* no branch before it: one call site */
			ck_assert_msg(!own || own_fits(t), "round %d: slots past the own copy", round);
			if (round == 0 || round == 2 || (round == 24 && !own)) {
				ck_assert_msg(repeat_got == 0, "own %d round %d: got %u, want a walk", own,
					      round, repeat_got);
				ck_assert(want[alt_join] == 0 || repeat_leaf == want[alt_join]);
				want[alt_join] = repeat_leaf;
			} else {
				ck_assert_msg(repeat_got == want[alt_join], "own %d round %d: got %u, want %u",
					      own, round, repeat_got, want[alt_join]);
			}
		}
	}
	ck_assert_uint_ne(want[0], 0);
	ck_assert_uint_ne(want[1], 0);
	ck_assert_uint_ne(want[0], want[1]);
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

TCase *track_unwind_tcase(void)
{
	TCase *tc = tcase_create("unwind");

	tcase_add_test(tc, unwind_walker_matches_libunwind);
	tcase_add_test(tc, unwind_walker_reuses_only_unchanged_frames);
	tcase_add_test(tc, unwind_cut_at_code_without_unwind_info);
	tcase_add_test(tc, unwind_walker_ignores_unread_rbp);
	tcase_add_test(tc, unwind_walk_repeat);
	tcase_add_test(tc, unwind_memo_ways);
	tcase_add_test(tc, unwind_memo_own_walk);
	return tc;
}
