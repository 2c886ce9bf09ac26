/* interpret/order.c - apply events strictly in sequence order across chunks */
/* SPDX-License-Identifier: MIT */
/*
 * Each chunk holds one thread's events with growing sequence numbers, and
 * chunks of different threads interleave arbitrarily (track/wire.h). The
 * next number to apply is c->next_seq. An incoming chunk is applied in place
 * as long as its events are exactly next; the rest is copied into a pending
 * chunk that goes into a min-heap keyed by its next event's number, packed
 * ("Packed events" below). After every applied event the heap top is
 * checked, so a chain of chunks unblocking each other drains at once.
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
	return ch->key;
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

/* ---- packed events ------------------------------------------------- */

/*
 * Once the pending chunks take more than a sixteenth of the reorder window
 * (ITP_PACK_SHARE), a parking chunk's rest is packed (docs/interpret.md,
 * "Packed parking"; decoded, a thread waiting for a CPU made the others'
 * chunks fill the window at 48 bytes an event), event after event:
 *
 *   ALLOC (no weight, kind < 256)  u8 PK_ALLOC, u8 kind, u8 lengths,
 *                                  seq - previous seq, a, b, zigzag(c - last_c)
 *   FREE                           u8 PK_FREE, u8 lengths, seq - previous seq,
 *                                  zigzag(c - last_c)
 *   anything else                  u8 PK_RAW, the struct itp_ev as it is
 *
 * lengths: 2 bits a field, first field lowest, for 1, 2, 4 or 8 bytes,
 * little-endian. last_c is c of the chunk's previous ALLOC or FREE (0
 * before the first), the previous seq 0 before the first event, both
 * modulo 2^64. Fields are stored and loaded as whole 8-byte words (no
 * branch on their lengths; the buffers have 8 bytes of slack). The bytes
 * are heaptap's own: reading them needs no check but for the end.
 */
enum { PK_RAW, PK_ALLOC, PK_FREE };
#define ITP_PACK_SHARE 16 /* packing costs about 12 ns an event: short waits stay decoded */
#define PK_EV_MAX (1 + sizeof(struct itp_ev)) /* PK_RAW's; ALLOC's is 35 */
#define PK_SLACK 8

static const uint8_t pk_len[4] = {1, 2, 4, 8};
static const uint64_t pk_mask[4] = {0xff, 0xffff, 0xffffffff, ~(uint64_t)0};

/* pk_code - the length code of v */
static inline unsigned pk_code(uint64_t v)
{
	return (unsigned)(v > 0xff) + (v > 0xffff) + (v > 0xffffffff);
}

/* pk_put - v at p as a word (8 bytes of room); returns its code, advances p by its length */
static inline unsigned pk_put(uint8_t **p, uint64_t v)
{
	unsigned code = pk_code(v);

	memcpy(*p, &v, 8);
	*p += pk_len[code];
	return code;
}

static inline uint64_t pk_get(const uint8_t **p, unsigned code)
{
	uint64_t v;

	memcpy(&v, *p, 8);
	*p += pk_len[code];
	return v & pk_mask[code];
}

/* unpack - the event at *pp into e, whose seq is the previous event's */
static inline void unpack(const uint8_t **pp, struct itp_ev *e, uint64_t *last_c)
{
	const uint8_t *p = *pp;
	unsigned l;

	switch (*p) {
	case PK_ALLOC:
		e->op = WIRE_EV_ALLOC;
		e->kind = p[1];
		l = p[2];
		p += 3;
		e->seq += pk_get(&p, l & 3);
		e->a = pk_get(&p, l >> 2 & 3);
		e->b = pk_get(&p, l >> 4 & 3);
		e->c = *last_c += wire_unzigzag(pk_get(&p, l >> 6));
		e->d = 0;
		break;
	case PK_FREE:
		e->op = WIRE_EV_FREE;
		l = p[1];
		p += 2;
		e->seq += pk_get(&p, l & 3);
		e->c = *last_c += wire_unzigzag(pk_get(&p, l >> 2 & 3));
		break;
	default:
		memcpy(e, p + 1, sizeof(*e));
		p += 1 + sizeof(*e);
		break;
	}
	*pp = p;
}

/* next - unpack the chunk's next event into cur; have_cur 0 when there is none */
static void next(struct itp_chunk *ch)
{
	const uint8_t *p = ch->pk + ch->off;

	ch->have_cur = ch->off < ch->len;
	if (!ch->have_cur)
		return;
	unpack(&p, &ch->cur, &ch->last_c);
	ch->off = (size_t)(p - ch->pk);
}

/* pack - ev[0, n) packed into c->pk_scratch: its length, or 0 without memory */
static size_t pack(struct itp_ctx *c, const struct itp_ev *ev, size_t n)
{
	uint64_t seq = 0, last_c = 0;
	uint8_t *p;

	if (n > (SIZE_MAX - PK_SLACK) / PK_EV_MAX)
		return 0;
	if (c->pk_scratch_cap < n * PK_EV_MAX + PK_SLACK) {
		free(c->pk_scratch);
		c->pk_scratch_cap = 0;
		c->pk_scratch = malloc(n * PK_EV_MAX + PK_SLACK);
		if (!c->pk_scratch)
			return 0;
		c->pk_scratch_cap = n * PK_EV_MAX + PK_SLACK;
	}
	p = c->pk_scratch;
	for (size_t i = 0; i < n; i++) {
		const struct itp_ev *e = &ev[i];
		uint8_t *h = p;
		unsigned l;

		if (e->op == WIRE_EV_ALLOC && e->d == 0 && e->kind < 256) {
			h[0] = PK_ALLOC;
			h[1] = (uint8_t)e->kind;
			p += 3;
			l = pk_put(&p, e->seq - seq);
			l |= pk_put(&p, e->a) << 2;
			l |= pk_put(&p, e->b) << 4;
			l |= pk_put(&p, wire_zigzag(e->c - last_c)) << 6;
			h[2] = (uint8_t)l;
			last_c = e->c;
		} else if (e->op == WIRE_EV_FREE) {
			h[0] = PK_FREE;
			p += 2;
			l = pk_put(&p, e->seq - seq);
			l |= pk_put(&p, wire_zigzag(e->c - last_c)) << 2;
			h[1] = (uint8_t)l;
			last_c = e->c;
		} else {
			*p++ = PK_RAW;
			memcpy(p, e, sizeof(*e));
			p += sizeof(*e);
		}
		seq = e->seq;
	}
	return (size_t)(p - c->pk_scratch);
}

void itp_chunk_free(struct itp_chunk *ch)
{
	if (!ch)
		return;
	if (ch->packed) {
		for (; ch->have_cur; next(ch))
			if (ch->cur.op == WIRE_EV_MODULE)
				itp_module_free((struct itp_module *)(uintptr_t)ch->cur.a);
	} else {
		for (size_t i = ch->pos; i < ch->n; i++)
			if (ch->ev[i].op == WIRE_EV_MODULE)
				itp_module_free((struct itp_module *)(uintptr_t)ch->ev[i].a);
	}
	free(ch->ev);
	free(ch->pk);
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
		free(ch->pk);
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

/*
 * drain_decoded, drain_packed - apply ch's events while they are next (at
 * least one is: ch->key <= next_seq), *rc 0 or the error that stopped it;
 * 1 when events are left (ch->key updated), 0 when ch is drained.
 *
 * The chunk's fields in locals: the calls below could change them as far
 * as the compiler knows (they do not: nothing an event does touches a
 * pending chunk), and reloading them for every event was most of this loop.
 */
static inline int drain_decoded(struct itp_ctx *c, struct itp_chunk *ch, int *rc)
{
	struct itp_ev *ev = ch->ev;
	size_t pos = ch->pos, n = ch->n;
	uint32_t slot = ch->slot;

	*rc = 0;
	while (pos < n && ev[pos].seq <= c->next_seq) {
		/* pos moves first: a module event's ownership passes to apply */
		*rc = apply_one(c, slot, &ev[pos++]);
		if (*rc)
			break;
	}
	ch->pos = pos;
	if (pos == n)
		return 0;
	ch->key = ev[pos].seq;
	return 1;
}

static inline int drain_packed(struct itp_ctx *c, struct itp_chunk *ch, int *rc)
{
	const uint8_t *p = ch->pk + ch->off, *end = ch->pk + ch->len;
	struct itp_ev e = ch->cur, now;
	uint64_t last_c = ch->last_c;
	uint32_t slot = ch->slot;
	int have = 1;

	*rc = 0;
	while (e.seq <= c->next_seq) {
		/* the next one first: a module event's ownership passes to apply */
		now = e;
		have = p < end;
		if (have)
			unpack(&p, &e, &last_c);
		*rc = apply_one(c, slot, &now);
		if (*rc || !have)
			break;
	}
	ch->cur = e;
	ch->off = (size_t)(p - ch->pk);
	ch->last_c = last_c;
	ch->have_cur = have;
	ch->key = e.seq;
	return have;
}

int itp_order_drain(struct itp_ctx *c, int skip_gaps)
{
	struct itp_heap *h = &c->heap;
	int rc, more;

	while (h->n) {
		struct itp_chunk *ch = h->v[0];

		if (key(ch) > c->next_seq) {
			if (!skip_gaps)
				break;
			rc = skip_to(c, key(ch));
			if (rc)
				return rc;
		}
		more = ch->packed ? drain_packed(c, ch, &rc) : drain_decoded(c, ch, &rc);
		if (more) {
			itp_heap_fix_top(h);
			if (rc)
				return rc;
			continue;
		}
		itp_heap_pop(h);
		c->pending_bytes -= ch->bytes;
		recycle(c, ch);
		if (rc)
			return rc;
	}
	if (skip_gaps)
		return flush_ticks(c, 1);
	return 0;
}

/* take_spare - a drained chunk kept for reuse, else a new empty one; NULL without memory */
static struct itp_chunk *take_spare(struct itp_ctx *c)
{
	struct itp_chunk *ch = c->spare;

	if (!ch)
		return calloc(1, sizeof(*ch));
	c->spare = ch->next_spare;
	c->nspare--;
	return ch;
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
	struct itp_chunk *ch = take_spare(c);
	struct itp_ev *ev;
	size_t cap;

	if (!ch)
		return NULL;
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
	ch->packed = 0;
	ch->key = ch->ev[skip].seq;
	ch->bytes = sizeof(*ch) + ch->cap * sizeof(*ch->ev);
	return ch;
}

/* park_packed - a pending chunk with c->scratch[i, n) packed */
static struct itp_chunk *park_packed(struct itp_ctx *c, size_t i, size_t n)
{
	size_t len = pack(c, c->scratch + i, n - i);
	struct itp_chunk *ch = len ? take_spare(c) : NULL;

	if (!ch)
		return NULL;
	/* a spare's decoded buffer is not needed: the parser has one */
	free(ch->ev);
	ch->ev = NULL;
	ch->cap = ch->n = ch->pos = 0;
	/* a spare's buffer if it fits and is not much larger */
	if (ch->pk_cap < len + PK_SLACK || ch->pk_cap / 2 > len + 4096) {
		uint8_t *pk = realloc(ch->pk, len + PK_SLACK);

		if (!pk) {
			free(ch->pk);
			free(ch);
			return NULL;
		}
		ch->pk = pk;
		ch->pk_cap = len + PK_SLACK;
	}
	/* the slack too: unpack's loads of the last fields read into it */
	memcpy(ch->pk, c->pk_scratch, len + PK_SLACK);
	ch->packed = 1;
	ch->off = 0;
	ch->len = len;
	ch->last_c = 0;
	ch->cur.seq = 0;
	next(ch);
	ch->key = ch->cur.seq;
	ch->bytes = sizeof(*ch) + ch->pk_cap;
	return ch;
}

/* park c->scratch[i..n) in a pending chunk (taking the module pointers) */
static int park(struct itp_ctx *c, uint32_t slot, size_t i, size_t n)
{
	size_t decoded = sizeof(struct itp_chunk) + c->scratch_cap * sizeof(struct itp_ev);
	struct itp_chunk *ch;
	int rc;

	if (c->pending_bytes + decoded <= c->reorder_limit / ITP_PACK_SHARE)
		ch = take_scratch(c, i, n);
	else
		ch = park_packed(c, i, n);
	if (!ch)
		goto out_nomem;
	ch->slot = slot;
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
