/* track/unwind_internal.h - the unwinders: unwind.c and cfi.c functions */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TRACK_UNWIND_INTERNAL_H
#define HEAPTAP_TRACK_UNWIND_INTERNAL_H

#include "track/buf_internal.h"
#include "track/internal.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

struct trk_rule;

/* ---- unwind.c ------------------------------------------------------------- */

/* trk_unwind_init - set libunwind's caching policy, choose the unwinder; once per process. */
void trk_unwind_init(int libunwind_only) TRK_HIDDEN;
/* trk_unwind_thread_init - learn the calling thread's stack bounds for t. */
void trk_unwind_thread_init(struct trk_thr *t) TRK_HIDDEN;
/*
 * trk_cfi_rule - the unwind rule for pc (cfi.c); out->cfa_reg NONE if
 * unusable, CUT if pc has no unwind info (in no module, or no FDE covers it).
 * Returns 0.
 */
int trk_cfi_rule(uintptr_t pc, struct trk_rule *out) TRK_HIDDEN;
/*
 * trk_unwind_rule - the rule for pc from t's cache (filled on a miss);
 * the caches must be fresh (a trk_walk of this capture made them so).
 */
const struct trk_rule *trk_unwind_rule(struct trk_thr *t, uintptr_t pc) TRK_HIDDEN;
/*
 * trk_cut_stack - libunwind's stack in out[0..n): keep it up to the first
 * frame in code without unwind info and put the WIRE_IP_CUT marker after
 * that frame (within trk_g.depth), so libunwind's frame-pointer guesses
 * beyond it never reach the tree. Returns the new count.
 */
size_t trk_cut_stack(struct trk_thr *t, uintptr_t *out, size_t n) TRK_HIDDEN;

#define TRK_HOOK_FRAMES_MAX 16 /* ra must show up among the first this many */

/*
 * trk_capture_libunwind - capture the calling thread's stack into out (room
 * for TRK_DEPTH_MAX + 32) as call sites (return address - 1), innermost
 * first, starting at the frame that returns to ra; at most trk_g.depth
 * frames. Returns the count (at least 1: ra itself when unwinding fails).
 *
 * unw_backtrace uses libunwind's fast frame cache and returns return
 * addresses, innermost first, beginning inside the hook. The hook frames
 * are cut off at the frame whose return address is ra (the outermost
 * hook's __builtin_return_address(0)): searching for it instead of
 * skipping a fixed count works whether the compiler inlined, tail-called
 * or kept the wrappers. Inline, so it adds no frame of its own.
 */
static inline __attribute__((always_inline)) size_t trk_capture_libunwind(uintptr_t *out,
									 const void *ra)
{
	int want = (int)trk_g.depth + TRK_HOOK_FRAMES_MAX;
	int got, i, k = -1;
	size_t n;

	got = unw_backtrace((void **)out, want);
	for (i = 0; i < got && i < TRK_HOOK_FRAMES_MAX; i++) {
		if (out[i] == (uintptr_t)ra) {
			k = i;
			break;
		}
	}
	if (unlikely(k < 0)) {
		/* unwinding broke inside the hook: keep the call site at least */
		out[0] = (uintptr_t)ra - 1;
		return 1;
	}
	n = (size_t)(got - k);
	if (n > trk_g.depth)
		n = trk_g.depth;
	for (i = 0; i < (int)n; i++)
		out[i] = out[i + k] - 1;
	return n;
}

/*
 * trk_walk - the fast unwinder (unwind.c): from the caller's state at the
 * hook's entry (ip = ra, sp = fp + 2 words, rbp = fp[0]) along the CFI
 * rules. Returns the frame count, or 0 when it cannot vouch for the
 * stack (the caller then uses libunwind). A frame in code without unwind
 * info ends the stack: that frame, then WIRE_IP_CUT (within the depth);
 * its state (return address, sp, rbp) is then in t->cut_* with t->cut_ok
 * set (which nothing else clears: trk_xf_capture does before the walk).
 */
size_t trk_walk(struct trk_thr *t, uintptr_t *out, uintptr_t ra, const uintptr_t *fp) TRK_HIDDEN;

/*
 * trk_walk_repeat - the leaf of the stack at this hook (ra, fp as for
 * trk_walk), announced in session gen, when its call site was noted
 * (struct trk_wmemo) with the same first frame and the rest of the stack
 * is one of the thread's kept walks from some frame on: the stack of a
 * loop's allocations, of another call site in the same function, or of a
 * call site the thread comes back to after allocating elsewhere. 0: walk
 * and trace.
 */
/*
 * trk_walk_repeat_find - trk_walk_repeat past the entry's own checks, its
 * kept walk gone: where frame 1 lies in the last kept walk.
 */
uint32_t trk_walk_repeat_find(struct trk_thr *t, struct trk_wmemo *e, uintptr_t ra) TRK_HIDDEN;

/*
 * trk_same_above - whether every stack slot the steps w[0 .. m) read still
 * holds what they read. Then a walk that reaches w[0]'s state (ra, sp,
 * rbp) goes on exactly as those steps did: a step depends on nothing but
 * that state, its rule (the same while code_gen is) and those slots. The
 * slots lie between w[0].sp and the stack top, which is mapped (trk_walk
 * checked them against the same bounds when it read them). The loads do
 * not depend on each other, unlike a walk's, where each address comes
 * from the previous load.
 */
static inline bool trk_same_above(const struct trk_wstep *w, size_t m)
{
	uintptr_t dr = 0, db = 0;

	/* no branch and two independent chains: the loads all issue at once */
	for (size_t k = 0; k < m; k++) {
		dr |= *(const uintptr_t *)w[k].rslot ^ w[k].rval;
		db |= *(const uintptr_t *)w[k].bslot ^ w[k].bval;
	}
	return (dr | db) == 0;
}

/*
 * Inlined into the hooks: the memo's usual hit (the same call site, with
 * its own copy of the slots, or its place in a kept walk noted while that
 * walk is still there: its epoch) costs the entry's compares and the slot
 * loads, no call.
 */
static inline __attribute__((always_inline)) uint32_t trk_walk_repeat(struct trk_thr *t, uintptr_t ra,
								       const uintptr_t *fp, uint32_t gen)
{
	struct trk_wmemo *e = &t->wmemo[TRK_WMEMO_WAYS * trk_wmemo_at(ra)];

	if (e->ra != ra && (++e)->ra != ra)
		return 0;
	if (e->sp != (uintptr_t)(fp + 2) || e->rbp != (fp[0] & e->rbp_mask) || e->gen != gen ||
	    e->n > trk_g.depth ||
	    t->rules_gen != atomic_load_explicit(&trk_g.code_gen, memory_order_relaxed))
		return 0;
	if (((*(const uintptr_t *)e->rslot ^ e->rval) | (*(const uintptr_t *)e->bslot ^ e->bval)) != 0)
		return 0;
	if (e->sp1 == 0)
		return e->leaf; /* the first frame was the outermost */
	if (likely(e->np <= TRK_WMEMO_PAIRS)) {
		/* the slots the noted walk read from frame 1 on, unchanged: the same stack above */
		uintptr_t d = 0;

		for (uint32_t k = 0; k < e->np; k++)
			d |= *(const uintptr_t *)e->own[k][0] ^ e->own[k][1];
		return d == 0 ? e->leaf : 0;
	}
	if (likely(e->vepoch == *e->vep))
		return trk_same_above(e->vstep, e->vm) ? e->leaf : 0;
	return trk_walk_repeat_find(t, e, ra);
}

/*
 * trk_walk_note - after trk_walk and trk_tree_trace: note the leaf of the
 * walk if it was kept (its nodes for later matches, its call site).
 */
void trk_walk_note(struct trk_thr *t, uint32_t leaf, uint32_t gen) TRK_HIDDEN;

#endif /* HEAPTAP_TRACK_UNWIND_INTERNAL_H */
