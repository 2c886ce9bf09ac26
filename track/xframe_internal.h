/* track/xframe_internal.h - foreign frames: the producer the hooks call, the definition queue */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TRACK_XFRAME_INTERNAL_H
#define HEAPTAP_TRACK_XFRAME_INTERNAL_H

#include "track/internal.h"

struct trk_thr;

/* A registered producer (track.h, trk_xframe_set_producer): never changes once published. */
struct trk_xf_prod {
	trk_xframe_fn fn;
	void *arg;
	uint32_t off_bit; /* 1 << lang of trk_xframe_set_producer_lang; 0: any language, never skipped */
};

/* The producer the hooks call, NULL = none (one load per recorded stack). */
extern _Atomic(const struct trk_xf_prod *) trk_xf_cur TRK_HIDDEN;

/*
 * trk_xf_capture - capture_trace (hooks.c) while producer p is set: the
 * native walk (CFI walker from the hook's frame fp, else libunwind), then
 * p splices its frames into t->frames, then the tree (its caches are keyed
 * on the spliced frames, so they stay right). The per-call-site memo
 * (trk_walk_repeat, trk_walk_note) is neither asked nor fed: it answers from
 * the native stack alone, which no longer determines the frames (asked, it
 * gives a native leaf noted before the producer, or the previous answer's
 * leaf; unit.track_xframe memo_not_taken_under_a_producer; docs/track.md
 * "Foreign frames" says why it is not keyed on the answer). Out of line;
 * fp is the outermost hook's frame (its caller's state at entry).
 */
uint32_t trk_xf_capture(struct trk_thr *t, const void *ra, const uintptr_t *fp, uint32_t *gen,
			const struct trk_xf_prod *p) TRK_HIDDEN;

/*
 * trk_xf_drain - send the queued WIRE_REC_XFRAME records of the current
 * session (dropping older sessions' ones). from_timer: the timer's tick or
 * trk_tl_poll (gives way to heaptap's control records, as TICK does); else
 * the end of the session (waits for room).
 */
void trk_xf_drain(bool from_timer) TRK_HIDDEN;

/*
 * trk_xf_flush - the producer's flush (trk_xframe_set_flush), if one is set
 * and the session still records: trk_end calls it before the session stops
 * taking definitions.
 */
void trk_xf_flush(void) TRK_HIDDEN;

#endif /* HEAPTAP_TRACK_XFRAME_INTERNAL_H */
