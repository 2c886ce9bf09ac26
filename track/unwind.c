/* track/unwind.c - stack capture: the CFI walker, libunwind set-up */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, inside hooks, with no lock held.
 *
 * unw_backtrace costs about 40 ns to set up plus 7 ns a frame. The walker
 * here does what libunwind's fast path does with less around it: for each
 * return address it looks up a cached rule (cfi.c: CFA = rsp|rbp + off,
 * return address and saved rbp at fixed offsets from the CFA) and steps:
 *
 *   pc = ra - 1; rule = rules[pc]; cfa = (rule.reg == rsp ? sp : rbp) + off
 *   ra' = *(cfa + ra_off); rbp' = rule.rbp_off ? *(cfa + rbp_off) : rbp
 *   sp' = cfa
 *
 * It starts from the caller's state at the hook's entry (the hooks keep
 * frame pointers: fp[0] is the caller's rbp, fp[1] the return address,
 * fp + 2 the caller's sp). It trusts nothing it reads: it only runs on the
 * thread's own stack (see trk_unwind_thread_init; an alternate signal stack
 * or a coroutine stack far below goes to libunwind), every address must lie
 * between the current sp and the top of that stack, the CFA must grow, and
 * any frame without a plain rule (signal trampoline, CFA expression,
 * realigned stack) makes it return 0, so the caller uses libunwind for the
 * whole stack. A return address into code without any unwind info (in no
 * module, as JIT code; covered by no FDE) ends the stack instead: that
 * frame is kept, then the marker WIRE_IP_CUT, and libunwind is not asked
 * (its frame-pointer guess would produce garbage there, slowly).
 * trk_cut_stack applies the same cut to libunwind's stacks. trk_config.libunwind_only
 * (preload/: HEAPTAP_UNWIND=libunwind) turns the walker off.
 *
 * Rules are cached per thread (direct-mapped, no sharing); the caches are
 * dropped when a module goes away (trk_g.code_gen).
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"

void trk_unwind_init(int libunwind_only)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	trk_g.fast_unwind = !libunwind_only;
}

/*
 * walks_drop - forget every kept walk and the call-site memo. The walks
 * get epochs never given before (an entry's vepoch 0 matches none).
 */
static void walks_drop(struct trk_thr *t)
{
	for (size_t i = 0; i < TRK_WALKS; i++) {
		t->wkeep[i].n = 0;
		t->wkeep[i].leaf = 0;
		t->wkeep[i].epoch = ++t->wepoch;
	}
	memset(t->wmemo, 0, sizeof(t->wmemo));
}

/* Stack address at process start (ld.so); the main thread's stack ends there. */
extern void *__libc_stack_end;

#define STACK_SPAN_MAX (64ul << 20) /* sp further below the top than this: libunwind */

/*
 * trk_unwind_thread_init - the top of the calling thread's stack, without
 * pthread_getattr_np: that takes the thread's lock and allocates, and the
 * program may be inside it when our hook runs (the JVM is: a deadlock).
 * glibc puts a thread's descriptor (pthread_self()) at the top of its stack
 * block, right above the stack and its static TLS, so everything between
 * sp and pthread_self() is mapped; the main thread's stack ends at
 * __libc_stack_end (argc, argv and the environment lie above it).
 */
void trk_unwind_thread_init(struct trk_thr *t)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0), hi;

	t->stack_lo = t->stack_hi = 0;
	t->rules_gen = atomic_load(&trk_g.code_gen);
	memset(t->rules, 0, sizeof(t->rules));
	t->wcur = 0;
	t->walk_kept = 0;
	walks_drop(t); /* a recycled buffer's walks were another thread's */
	if (trk_gettid() == (uint32_t)getpid())
		hi = (uintptr_t)__libc_stack_end;
	else
		hi = (uintptr_t)pthread_self();
	if (hi <= sp || hi - sp > STACK_SPAN_MAX)
		return; /* not the layout we know: libunwind only */
	t->stack_lo = hi - STACK_SPAN_MAX;
	t->stack_hi = hi & ~(uintptr_t)7;
}

static inline const struct trk_rule *rule_for(struct trk_thr *t, uintptr_t pc)
{
	struct trk_rule *r = &t->rules[(pc ^ (pc >> 12)) & (TRK_RULES - 1)];

	if (likely(r->valid && r->pc == pc))
		return r;
	trk_cfi_rule(pc, r);
	r->pc = pc;
	/* "no unwind info" is not cached: a module may be loaded there later */
	r->valid = r->cfa_reg != TRK_CFA_CUT;
	return r;
}

/* rules_fresh - drop the rule cache if a module went away since it was filled. */
static inline void rules_fresh(struct trk_thr *t)
{
	if (unlikely(t->rules_gen != atomic_load_explicit(&trk_g.code_gen, memory_order_relaxed))) {
		memset(t->rules, 0, sizeof(t->rules));
		t->rules_gen = atomic_load(&trk_g.code_gen);
		walks_drop(t); /* their steps came from rules that may be gone */
	}
}

const struct trk_rule *trk_unwind_rule(struct trk_thr *t, uintptr_t pc)
{
	return rule_for(t, pc);
}

size_t trk_cut_stack(struct trk_thr *t, uintptr_t *out, size_t n)
{
	size_t i;

	rules_fresh(t);
	for (i = 0; i < n; i++) {
		if (rule_for(t, out[i])->cfa_reg == TRK_CFA_CUT) {
			n = i + 1;
			if (n < trk_g.depth)
				out[n++] = (uintptr_t)WIRE_IP_CUT;
			break;
		}
	}
	return n;
}

/* ok - whether the 8 bytes at a lie in [lo, hi). */
static inline bool ok(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
	return a >= lo && a <= hi - 8 && !(a & 7);
}

/* What a step that read no slot points at (rslot, bslot): always 0, as its rval, bval. */
static const uintptr_t no_slot;

/* A step's rbpm until its walk is kept: it passes rbp on, so it needs it if the next step does. */
#define RBPM_NEXT ((uintptr_t)1)

/*
 * keep_masks - w[0 .. n) are a kept walk's new steps, w[n] (if n < total)
 * the first of the steps it took over, whose mask is final: each
 * RBPM_NEXT becomes the next step's mask (the outermost step's: 0, it
 * reads nothing more). A step that restored an rbp no later step reads
 * forgets its slot (trk_same_above does not compare it): when the caller keeps
 * a loop variable in rbp, the slot where the callee saved it changes with
 * every call.
 */
static inline void keep_masks(struct trk_wstep *w, size_t n, size_t total)
{
	uintptr_t next = n < total ? w[n].rbpm : 0;

	for (size_t k = n; k-- > 0;) {
		if (!next) {
			w[k].bslot = (uintptr_t)&no_slot;
			w[k].bval = 0;
		}
		if (w[k].rbpm == RBPM_NEXT)
			w[k].rbpm = next;
		next = w[k].rbpm;
	}
}

/*
 * trk_walk keeps each walk that ended at the outermost frame within
 * TRK_WALK_KEEP frames (its steps, struct trk_wstep), in the kept walk
 * after the last one (round robin over TRK_WALKS: the call-site memo's
 * entries point into the last few). The next walk of the thread compares
 * its state at every frame with the last kept walk's steps (their sp
 * grows, so one cursor finds the candidate); on a match whose slots above
 * still hold the same values, the kept frames are the rest of the stack
 * and the walk stops stepping. A service's allocations share the outer
 * frames (main loop, worker, thread start): those then cost a compare
 * each instead of a rule lookup and two dependent loads.
 */
size_t trk_walk(struct trk_thr *t, uintptr_t *out, uintptr_t ra, const uintptr_t *fp)
{
	uintptr_t sp = (uintptr_t)(fp + 2), rbp = fp[0], hi = t->stack_hi;
	size_t n = 0, depth = trk_g.depth, pn, j = 0;
	const struct trk_wstep *prev;
	struct trk_wkeep *next;
	struct trk_wstep *cur;
	uint32_t nw;

	t->walk_kept = 0;
	/* not on the thread's own stack (signal stack, coroutine): libunwind's job */
	if (unlikely(sp < t->stack_lo || sp >= hi || ra < 4096))
		return 0;
	rules_fresh(t);
	prev = t->wkeep[t->wcur].w;
	pn = t->wkeep[t->wcur].n;
	/* written from the first step on: the entries that point there are stale */
	nw = (t->wcur + 1) % TRK_WALKS;
	next = &t->wkeep[nw];
	next->n = 0;
	next->leaf = 0;
	next->epoch = ++t->wepoch;
	cur = next->w;
	while (n < depth) {
		uintptr_t pc = ra - 1, cfa;
		const struct trk_rule *r;
		struct trk_wstep *w = n < TRK_WALK_KEEP ? &cur[n] : NULL;

		while (j < pn && prev[j].sp < sp)
			j++;
		/* rbp only where a later step reads it: -O2 code keeps locals there */
		if (j < pn && prev[j].sp == sp && prev[j].ra == ra &&
		    ((prev[j].rbp ^ rbp) & prev[j].rbpm) == 0) {
			if (trk_same_above(prev + j, pn - j)) {
				size_t m = pn - j;

				if (m > depth - n)
					m = depth - n;
				for (size_t k = 0; k < m; k++)
					out[n + k] = prev[j + k].ra - 1;
				/* kept again only if it is whole and fits */
				if (m == pn - j && n + m <= TRK_WALK_KEEP) {
					for (size_t k = 0; k < m; k++)
						cur[n + k] = prev[j + k];
					keep_masks(cur, n, n + m);
					next->n = (uint32_t)(n + m);
					t->wcur = nw;
					t->walk_kept = 1;
				}
				return n + m;
			}
			pn = 0; /* changed above: the kept walk is of no further use here */
		}
		out[n++] = pc;
		r = rule_for(t, pc);
		if (unlikely(r->cfa_reg != TRK_CFA_RSP && r->cfa_reg != TRK_CFA_RBP)) {
			if (r->cfa_reg != TRK_CFA_CUT)
				return 0; /* libunwind's case */
			/* no unwind info (JIT code): the stack ends, marked as cut */
			t->cut_ra = ra;
			t->cut_sp = sp;
			t->cut_rbp = rbp;
			t->cut_ok = 1;
			if (n < depth)
				out[n++] = (uintptr_t)WIRE_IP_CUT;
			return n;
		}
		if (w) {
			w->ra = ra;
			w->sp = sp;
			w->rbp = rbp;
			w->rslot = w->bslot = (uintptr_t)&no_slot;
			w->rval = w->bval = 0;
			/* the outermost step reads nothing: RBPM_NEXT becomes 0 */
			w->rbpm = r->cfa_reg == TRK_CFA_RBP && r->ra_off ? ~(uintptr_t)0
				  : r->rbp_off && r->ra_off	  ? 0
								  : RBPM_NEXT;
		}
		if (r->ra_off == 0)
			goto outermost; /* return address undefined: the outermost frame (_start, clone3) */
		cfa = (r->cfa_reg == TRK_CFA_RSP ? sp : rbp) + (uintptr_t)(intptr_t)r->cfa_off;
		if (unlikely(cfa <= sp || cfa > hi))
			return 0;
		if (unlikely(!ok(cfa + (uintptr_t)(intptr_t)r->ra_off, sp, hi)))
			return 0;
		ra = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->ra_off);
		if (w) {
			w->rslot = cfa + (uintptr_t)(intptr_t)r->ra_off;
			w->rval = ra;
		}
		if (r->rbp_off) {
			if (unlikely(!ok(cfa + (uintptr_t)(intptr_t)r->rbp_off, sp, hi)))
				return 0;
			rbp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->rbp_off);
			if (w) {
				w->bslot = cfa + (uintptr_t)(intptr_t)r->rbp_off;
				w->bval = rbp;
			}
		}
		sp = cfa;
		if (ra == 0)
			goto outermost;
		if (unlikely(ra < 4096))
			return 0;
	}
	return n; /* cut by the depth: not kept */
outermost:
	if (n <= TRK_WALK_KEEP) {
		keep_masks(cur, n, n);
		next->n = (uint32_t)n;
		t->wcur = nw;
		t->walk_kept = 1;
	}
	return n;
}

/* memo_own - e's own copy of the slots w[0 .. m) read (not no_slot), if they fit. */
static void memo_own(struct trk_wmemo *e, const struct trk_wstep *w, size_t m)
{
	uint32_t np = 0;

	for (size_t k = 0; k < m; k++) {
		if (w[k].rslot != (uintptr_t)&no_slot) {
			if (np == TRK_WMEMO_PAIRS)
				goto too_many;
			e->own[np][0] = w[k].rslot;
			e->own[np++][1] = w[k].rval;
		}
		if (w[k].bslot != (uintptr_t)&no_slot) {
			if (np == TRK_WMEMO_PAIRS)
				goto too_many;
			e->own[np][0] = w[k].bslot;
			e->own[np++][1] = w[k].bval;
		}
	}
	e->np = np;
	return;
too_many:
	e->np = TRK_WMEMO_PAIRS + 1;
}

/*
 * trk_walk_note: the kept walk's frames are the leaf's path in the tree
 * (trk_tree_trace made that leaf from exactly these frames), so the node
 * of frames k .. is the leaf's k-th ancestor: trk_walk_repeat_find climbs
 * to it when it needs it, from the walk's leaf. Climbing here for every
 * frame cost a node load per frame on every walk, most of a deep
 * workload's time; no node is loaded here at all (a leaf found by the
 * whole-stack cache is cold). The call site's entry gets the first frame's
 * state and the slots its step read, the state that step led to, and the
 * leaf; and the kept walk itself as where its frame 1 lies (frame 1 of
 * that walk, whose node is the leaf's parent by construction).
 */
void trk_walk_note(struct trk_thr *t, uint32_t leaf, uint32_t gen)
{
	struct trk_wkeep *k = &t->wkeep[t->wcur];
	const struct trk_wstep *w = k->w;
	size_t pn = k->n;
	struct trk_wmemo *e;

	if (!t->walk_kept || !leaf || pn == 0)
		return;
	k->leaf = leaf;
	/* the call site's own entry, else a new one in way 0 (way 0's moves to way 1) */
	e = &t->wmemo[TRK_WMEMO_WAYS * trk_wmemo_at(w[0].ra)];
	if (e->ra != w[0].ra) {
		if (e[1].ra == w[0].ra)
			e++;
		else
			e[1] = e[0];
	}
	e->ra = w[0].ra;
	e->sp = w[0].sp;
	/*
	 * Code without a frame pointer uses rbp as it likes (a loop counter):
	 * the first frame's rbp is compared only if a step of the walk reads
	 * it (keep_masks).
	 */
	e->rbp_mask = w[0].rbpm;
	e->rbp = w[0].rbp & e->rbp_mask;
	e->rslot = w[0].rslot;
	e->rval = w[0].rval;
	e->bslot = w[0].bslot;
	e->bval = w[0].bval;
	e->ra1 = pn > 1 ? w[1].ra : 0;
	e->sp1 = pn > 1 ? w[1].sp : 0;
	e->rbp1 = pn > 1 ? w[1].rbp : 0;
	e->leaf = leaf;
	e->gen = gen;
	e->n = (uint32_t)pn;
	e->vstep = w + 1;
	e->vm = (uint32_t)pn - 1;
	e->vep = &k->epoch;
	e->vepoch = k->epoch;
	memo_own(e, w + 1, pn - 1);
}

/*
 * trk_walk_repeat: a call site noted with the same first frame (ra, sp,
 * rbp if its step uses it) whose step reads the same two slots leads to
 * the same second frame;
 * if a kept walk passes through that frame (same state) with every slot
 * it read from there on unchanged (trk_same_above), the rest of the stack is
 * that walk's from there, whose node is its leaf's j-th ancestor; when that is the node
 * the entry was noted with, the stack is the entry's, and so is its leaf.
 * No step, no copy of the frames, no tree or cache lookup. This covers the
 * same call site again (a loop's allocations: j = 1), the other call
 * sites of the same function (churn's malloc, realloc and calloc), and a
 * call site the thread comes back to after walking a few other stacks
 * (strings: strdup's malloc, and every 8th round join's). The
 * rules must be those of the walks (code_gen), the stack not deeper than
 * the depth (else it would be cut), and the leaf announced in the session
 * the caller numbers in.
 *
 * Which kept walk, where frame 1 lies in it (vstep, vm) and the node check
 * depend only on the entry and that walk (its frames and leaf), so once
 * they passed they are noted in the entry with the walk's epoch (new
 * whenever trk_walk writes into it or the rules are dropped): while both
 * stay, a repeat skips the search for j, the climb and the leaf's node (a
 * load from the shared tree that missed the cache: a third of this
 * function's samples on the churn loop) and checks only the slots. The
 * entry's own walk passed at its note (its frame 1); the walks are kept round
 * robin, so it stays until TRK_WALKS - 1 other walks were kept, and then
 * the last kept walk is searched here. The slots are checked every time.
 */
uint32_t trk_walk_repeat_find(struct trk_thr *t, struct trk_wmemo *e, uintptr_t ra)
{
	const struct trk_wkeep *kw = &t->wkeep[t->wcur];
	const struct trk_wstep *w = kw->w;
	const struct trk_node *ln;
	size_t pn = kw->n, j = 0, k;
	uint32_t node;

	if (!kw->leaf)
		return 0;
	while (j < pn && w[j].sp < e->sp1)
		j++;
	if (j == pn || w[j].sp != e->sp1 || w[j].ra != e->ra1 || ((w[j].rbp ^ e->rbp1) & w[j].rbpm))
		return 0;
	/*
	 * The kept walk's node of frames j ..: the j-th ancestor of its leaf,
	 * against the entry's node of frames 1 ..: its leaf's parent (whose
	 * ip must be this call site's: a stale leaf is not taken).
	 */
	for (node = kw->leaf, k = 0; k < j && node; k++)
		node = trk_node_at(node)->parent;
	ln = trk_node_at(e->leaf);
	if (!node || ln->ip != ra - 1 || node != ln->parent)
		return 0;
	e->vstep = w + j;
	e->vm = (uint32_t)(pn - j);
	e->vep = &kw->epoch;
	e->vepoch = kw->epoch;
	return trk_same_above(w + j, pn - j) ? e->leaf : 0;
}
