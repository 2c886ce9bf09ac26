/* interpret/order.c - apply events strictly in sequence order across chunks */
/* SPDX-License-Identifier: MIT */
/*
 * Each chunk holds one thread's events with growing sequence numbers, and
 * chunks of different threads interleave arbitrarily (track/wire.h). The
 * next number to apply is c->next_seq. An incoming chunk is applied in place
 * as long as its events are exactly next; the rest is copied into a pending
 * chunk that goes into a min-heap keyed by its next event's number. After
 * every applied event the heap top is checked, so a chain of chunks
 * unblocking each other drains at once.
 *
 *   chunk A (tid 1): 0 1       4 5           next_seq: 0 1 | 2 3 | 4 5 | 6 7
 *   chunk B (tid 2):     2 3       6 7       A applies 0 1, parks [4 5];
 *                                            B applies 2 3, heap gives 4 5,
 *                                            B's 6 7 follow in place.
 *
 * A number that never arrives (a lost event, a hostile stream) would block
 * forever: when the pending events exceed c->reorder_limit bytes, the gap is
 * skipped (counted in warn.skipped_seqs / gap_skips), and at the end of the
 * stream every remaining gap is skipped. An event whose number was already
 * passed (after a skip, or a duplicate) is applied at once and counted late.
 *
 * Ticks wait in a FIFO until every event below their seq is applied or
 * skipped, so their event index in the recording is exact.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/order_internal.h"

/* ---- heap ---------------------------------------------------------- */

static inline uint64_t key(const struct itp_chunk *ch)
{
	return ch->ev[ch->pos].seq;
}

static void sift_down(struct itp_heap *h, size_t i)
{
	struct itp_chunk *x = h->v[i];
	uint64_t k = key(x);

	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= h->n)
			break;
		m = l + 1 < h->n && key(h->v[l + 1]) < key(h->v[l]) ? l + 1 : l;
		if (key(h->v[m]) >= k)
			break;
		h->v[i] = h->v[m];
		i = m;
	}
	h->v[i] = x;
}

int itp_heap_push(struct itp_heap *h, struct itp_chunk *ch)
{
	size_t i;

	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 64;
		struct itp_chunk **v = realloc(h->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = ncap;
	}
	for (i = h->n++; i > 0;) {
		size_t parent = (i - 1) / 2;

		if (key(h->v[parent]) <= key(ch))
			break;
		h->v[i] = h->v[parent];
		i = parent;
	}
	h->v[i] = ch;
	return 0;
}

void itp_heap_fix_top(struct itp_heap *h)
{
	if (h->n)
		sift_down(h, 0);
}

void itp_heap_pop(struct itp_heap *h)
{
	if (!h->n)
		return;
	h->v[0] = h->v[--h->n];
	if (h->n)
		sift_down(h, 0);
}

void itp_chunk_free(struct itp_chunk *ch)
{
	size_t i;

	if (!ch)
		return;
	for (i = ch->pos; i < ch->n; i++)
		if (ch->ev[i].op == WIRE_EV_MODULE)
			itp_module_free((struct itp_module *)(uintptr_t)ch->ev[i].a);
	free(ch->ev);
	free(ch);
}

/* recycle - keep a drained chunk (no module left in it) for the next park, or free it */
static void recycle(struct itp_ctx *c, struct itp_chunk *ch)
{
	if (c->nspare >= ITP_SPARE_CHUNKS) {
		itp_chunk_free(ch);
		return;
	}
	ch->next_spare = c->spare;
	c->spare = ch;
	c->nspare++;
}

void itp_chunks_free_spare(struct itp_ctx *c)
{
	while (c->spare) {
		struct itp_chunk *ch = c->spare;

		c->spare = ch->next_spare;
		free(ch->ev);
		free(ch);
	}
	c->nspare = 0;
}

/* ---- threads ------------------------------------------------------- */

int itp_thread_slot(struct itp_ctx *c, uint64_t tid, uint32_t *slot)
{
	int rc;

	if (itp_map_get(&c->tids, tid, slot))
		return 0;
	if (c->nthreads >= ITP_MAX_THREADS) {
		/* so many threads: the rest share the last slot (temporary detection blurs) */
		*slot = ITP_MAX_THREADS - 1;
		return 0;
	}
	if (c->nthreads == c->threads_cap) {
		size_t ncap = c->threads_cap ? c->threads_cap * 2 : 64;
		struct itp_thread *v;

		if (itp_mem_take(&c->mem, (ncap - c->threads_cap) * sizeof(*v)))
			return -EDQUOT;
		v = realloc(c->threads, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->threads = v;
		c->threads_cap = ncap;
	}
	rc = itp_map_put(&c->tids, tid, (uint32_t)c->nthreads);
	if (rc)
		return rc;
	c->threads[c->nthreads].last_alloc_no = UINT64_MAX;
	*slot = (uint32_t)c->nthreads++;
	return 0;
}

/* ---- ticks --------------------------------------------------------- */

static int write_tick(struct itp_ctx *c, const struct itp_tick *t)
{
	uint64_t time = t->time_ns;
	int rc;

	/* the recording's ticks never go back in time */
	if (time < c->last_tick_ns)
		time = c->last_tick_ns;
	rc = rec_put_tick(c->w, time, t->rss);
	if (rc)
		return itp_out_fail(c, rc, "tick");
	c->last_tick_ns = time;
	if (time > c->st.elapsed_ns)
		c->st.elapsed_ns = time;
	c->st.rss_bytes = t->rss;
	if (t->rss > c->peak_rss)
		c->peak_rss = t->rss;
	return 0;
}

/* write queued ticks whose events are all behind us; all of them if force */
static int flush_ticks(struct itp_ctx *c, int force)
{
	while (c->tick_n) {
		struct itp_tick *t = &c->ticks[c->tick_head];
		int rc;

		if (!force && t->seq > c->next_seq)
			break;
		rc = write_tick(c, t);
		if (rc)
			return rc;
		c->tick_head = (c->tick_head + 1) & (c->tick_cap - 1);
		c->tick_n--;
	}
	c->tick_wait = c->tick_n ? c->ticks[c->tick_head].seq : UINT64_MAX;
	return 0;
}

int itp_order_flush_ticks(struct itp_ctx *c)
{
	return flush_ticks(c, 0);
}

int itp_order_tick(struct itp_ctx *c, const struct itp_tick *t)
{
	int rc;

	if (!c->tick_n && t->seq <= c->next_seq)
		return write_tick(c, t);
	if (c->tick_n == ITP_MAX_TICKS_QUEUED) {
		/* hostile or stuck: write the oldest early rather than grow */
		struct itp_tick old = c->ticks[c->tick_head];

		c->tick_head = (c->tick_head + 1) & (c->tick_cap - 1);
		c->tick_n--;
		rc = write_tick(c, &old);
		if (rc)
			return rc;
	}
	if (c->tick_n == c->tick_cap) {
		size_t ncap = c->tick_cap ? c->tick_cap * 2 : 256, i;
		struct itp_tick *v = malloc(ncap * sizeof(*v));

		if (!v)
			return itp_fail(c, ITP_E_NOMEM, "out of memory queueing a tick");
		for (i = 0; i < c->tick_n; i++)
			v[i] = c->ticks[(c->tick_head + i) & (c->tick_cap - 1)];
		free(c->ticks);
		c->ticks = v;
		c->tick_cap = ncap;
		c->tick_head = 0;
	}
	c->ticks[(c->tick_head + c->tick_n) & (c->tick_cap - 1)] = *t;
	c->tick_n++;
	c->tick_wait = c->ticks[c->tick_head].seq;
	return 0;
}

/* ---- events -------------------------------------------------------- */

/*
 * itp_apply with the two ops of nearly every event tested first: most
 * events of a threaded program come through the heap (itp_order_drain),
 * and a direct call is cheaper than itp_apply's dispatch.
 */
static inline int apply_ev(struct itp_ctx *c, uint32_t slot, struct itp_ev *e)
{
	if (e->op == WIRE_EV_FREE)
		return itp_apply_free(c, slot, e);
	if (e->op == WIRE_EV_ALLOC)
		return itp_apply_alloc(c, slot, e);
	return itp_apply(c, slot, e);
}

/* apply e, whose seq is next_seq or already passed */
static inline int apply_one(struct itp_ctx *c, uint32_t slot, struct itp_ev *e)
{
	int rc;

	if (e->seq != c->next_seq) {
		c->res->warn.late_events++;
		return apply_ev(c, slot, e);
	}
	rc = apply_ev(c, slot, e);
	if (rc)
		return rc;
	c->next_seq++;
	if (c->next_seq >= c->tick_wait)
		return flush_ticks(c, 0);
	return 0;
}

static int skip_to(struct itp_ctx *c, uint64_t seq)
{
	c->res->warn.skipped_seqs += seq - c->next_seq;
	c->next_seq = seq;
	if (c->next_seq >= c->tick_wait)
		return flush_ticks(c, 0);
	return 0;
}

int itp_order_drain(struct itp_ctx *c, int skip_gaps)
{
	struct itp_heap *h = &c->heap;
	int rc;

	while (h->n) {
		struct itp_chunk *ch = h->v[0];

		if (key(ch) > c->next_seq) {
			if (!skip_gaps)
				break;
			rc = skip_to(c, key(ch));
			if (rc)
				return rc;
		}
		/*
		 * The chunk's fields in locals: the calls below could change
		 * them as far as the compiler knows (they do not: nothing an
		 * event does touches a pending chunk), and reloading them for
		 * every event was most of this loop.
		 */
		{
			struct itp_ev *ev = ch->ev;
			size_t pos = ch->pos, n = ch->n;
			uint32_t slot = ch->slot;

			while (pos < n && ev[pos].seq <= c->next_seq) {
				/* pos moves first: a module event's ownership passes to apply */
				rc = apply_one(c, slot, &ev[pos++]);
				if (rc) {
					ch->pos = pos;
					if (pos == n)
						goto out_pop;
					itp_heap_fix_top(h);
					return rc;
				}
			}
			ch->pos = pos;
		}
		rc = 0;
		if (ch->pos < ch->n) {
			itp_heap_fix_top(h);
			continue;
		}
	out_pop:
		itp_heap_pop(h);
		c->pending_bytes -= ch->bytes;
		if (ch->pos == ch->n)
			recycle(c, ch);
		else
			itp_chunk_free(ch);
		if (rc)
			return rc;
	}
	if (skip_gaps)
		return flush_ticks(c, 1);
	return 0;
}

/*
 * take_scratch - a pending chunk that takes over c->scratch, whose events
 * [skip, n) wait; c->scratch gets the chunk's old buffer (a spare's, maybe
 * smaller: parse.c grows it as needed). Copying the rest of the chunk cost
 * more than applying it: two threads allocating flat out park about every
 * other chunk, most of it.
 */
static struct itp_chunk *take_scratch(struct itp_ctx *c, size_t skip, size_t n)
{
	struct itp_chunk *ch = c->spare;
	struct itp_ev *ev;
	size_t cap;

	if (ch) {
		c->spare = ch->next_spare;
		c->nspare--;
	} else {
		ch = calloc(1, sizeof(*ch));
		if (!ch)
			return NULL;
	}
	ev = ch->ev;
	cap = ch->cap;
	if (cap < c->scratch_cap) {
		/*
		 * a fresh chunk (no buffer) or a smaller spare: give the parser
		 * a buffer as large as the one taken, allocated empty, rather
		 * than let parse.c grow it by doubling, each realloc copying
		 * the events decoded so far (with dozens of chunks pending, as
		 * when one thread's numbers wait for a tick, nearly every park
		 * took a fresh chunk: 0 -> 4096 -> 8192 -> 16384 events, an
		 * eighth of a megabyte to 400 KiB copied each time). On
		 * failure the small buffer stays and parse.c grows it.
		 */
		struct itp_ev *big = malloc(c->scratch_cap * sizeof(*big));

		if (big) {
			free(ev);
			ev = big;
			cap = c->scratch_cap;
		}
	}
	ch->ev = c->scratch;
	ch->cap = c->scratch_cap;
	c->scratch = ev;
	c->scratch_cap = cap;
	ch->n = n;
	ch->pos = skip;
	return ch;
}

/* park c->scratch[i..n) in a pending chunk (taking the module pointers) */
static int park(struct itp_ctx *c, uint32_t slot, size_t i, size_t n)
{
	struct itp_chunk *ch = take_scratch(c, i, n);
	int rc;

	if (!ch)
		goto out_nomem;
	ch->slot = slot;
	ch->bytes = sizeof(*ch) + ch->cap * sizeof(*ch->ev);
	if (itp_heap_push(&c->heap, ch)) {
		itp_chunk_free(ch);
		return itp_fail(c, ITP_E_NOMEM, "out of memory reordering events");
	}
	c->pending_bytes += ch->bytes;
	/* the window is full: give up waiting for the oldest missing numbers */
	while (c->pending_bytes > c->reorder_limit && c->heap.n) {
		c->res->warn.gap_skips++;
		rc = skip_to(c, itp_heap_min(&c->heap));
		if (!rc)
			rc = itp_order_drain(c, 0);
		if (rc)
			return rc;
	}
	return 0;

out_nomem:
	for (; i < n; i++)
		if (c->scratch[i].op == WIRE_EV_MODULE)
			itp_module_free((struct itp_module *)(uintptr_t)c->scratch[i].a);
	return itp_fail(c, ITP_E_NOMEM, "out of memory reordering events");
}

int itp_order_chunk(struct itp_ctx *c, uint32_t slot, size_t n)
{
	struct itp_ev *ev = c->scratch;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		struct itp_ev *e = &ev[i];

		if (e->seq > c->next_seq)
			return park(c, slot, i, n);
		rc = apply_one(c, slot, e);
		if (!rc && c->heap.n && itp_heap_min(&c->heap) <= c->next_seq)
			rc = itp_order_drain(c, 0);
		if (rc) {
			for (i++; i < n; i++)
				if (ev[i].op == WIRE_EV_MODULE)
					itp_module_free((struct itp_module *)(uintptr_t)ev[i].a);
			return rc;
		}
	}
	return 0;
}
