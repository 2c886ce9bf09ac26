/* interpret/order_internal.h - putting events in order and applying them (order.c, apply.c) */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_INTERPRET_ORDER_INTERNAL_H
#define HEAPTAP_INTERPRET_ORDER_INTERNAL_H

#include <stdint.h>

#include "interpret/internal.h"

#define ITP_MAX_THREADS (1u << 20)	      /* distinct tids with their own slot */
#define ITP_MAX_TICKS_QUEUED (1u << 20)

/* the pending chunks, a min-heap by their next event's sequence number (order.c) */
int itp_heap_push(struct itp_heap *h, struct itp_chunk *c);
/* itp_heap_fix_top - restore the heap after the top chunk's key grew. */
void itp_heap_fix_top(struct itp_heap *h);
void itp_heap_pop(struct itp_heap *h);
static inline uint64_t itp_heap_min(const struct itp_heap *h)
{
	return h->n ? h->v[0]->key : UINT64_MAX;
}
/* itp_chunk_free - free a chunk and any module it still owns. Accepts NULL. */
void itp_chunk_free(struct itp_chunk *c);
/* itp_chunks_free_spare - free the drained chunks kept for reuse. */
void itp_chunks_free_spare(struct itp_ctx *c);

/* order.c */
/*
 * itp_order_chunk - apply or park c->scratch[0, n), one chunk's decoded
 * events; a parked rest takes the scratch buffer with it (c->scratch is
 * then another, maybe smaller, buffer) or, when much is pending already, is
 * packed into a pending chunk (c->scratch stays).
 */
int itp_order_chunk(struct itp_ctx *c, uint32_t slot, size_t n);
int itp_order_tick(struct itp_ctx *c, const struct itp_tick *t);
/* itp_order_drain - apply what is ready; with skip_gaps, everything pending. */
int itp_order_drain(struct itp_ctx *c, int skip_gaps);
int itp_thread_slot(struct itp_ctx *c, uint64_t tid, uint32_t *slot);

/* apply.c: apply one event in order; module events pass ownership of ev->a. */
int itp_apply(struct itp_ctx *c, uint32_t slot, struct itp_ev *ev);
/* apply.c: itp_apply for an event known to be an ALLOC or ALLOC_W, or a FREE. */
int itp_apply_alloc(struct itp_ctx *c, uint32_t slot, struct itp_ev *ev);
int itp_apply_free(struct itp_ctx *c, uint32_t slot, struct itp_ev *ev);
/* order.c: itp_order_flush_ticks - write the queued ticks next_seq has reached. */
int itp_order_flush_ticks(struct itp_ctx *c);

/*
 * itp_order_event - apply e, whose number is next_seq or already passed,
 * then the pending chunks it unblocked: what itp_order_chunk does for each
 * in-order event of a chunk. Inline, for parse.c, which applies a chunk's
 * events as it decodes them while they come in order (the usual case), so
 * they are not stored and read back. apply is itp_apply, or for an event
 * whose op the caller knows, itp_apply_alloc or itp_apply_free (a direct
 * call instead of a second dispatch on the op). 0 or a negative enum
 * itp_err.
 */
static inline __attribute__((always_inline)) int
itp_order_event(struct itp_ctx *c, uint32_t slot, struct itp_ev *e,
		int (*apply)(struct itp_ctx *, uint32_t, struct itp_ev *))
{
	int rc;

	if (__builtin_expect(e->seq != c->next_seq, 0)) {
		c->res->warn.late_events++;
		return apply(c, slot, e);
	}
	rc = apply(c, slot, e);
	if (rc)
		return rc;
	c->next_seq++;
	if (c->next_seq >= c->tick_wait) {
		rc = itp_order_flush_ticks(c);
		if (rc)
			return rc;
	}
	if (c->heap.n && itp_heap_min(&c->heap) <= c->next_seq)
		return itp_order_drain(c, 0);
	return 0;
}
/* apply.c: itp_ip_index - the recording's index of ip, added (seq: when first seen) if new. */
int itp_ip_index(struct itp_ctx *c, uint64_t ip, uint64_t seq, uint32_t *idx);

#endif /* HEAPTAP_INTERPRET_ORDER_INTERNAL_H */
