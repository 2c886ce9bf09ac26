/* recfile/put.c - the writer's rec_put_* calls: validate, encode, buffer */
/* SPDX-License-Identifier: MIT */
/*
 * Every call checks its arguments against what was written before (an
 * index must name an existing record) and returns -REC_E_RANGE without
 * changing anything when it does not. After a write error every call
 * returns that error.
 */
#include <stdlib.h>

#include "track/wire.h"
#include "recfile/internal.h"

static inline void put_varint(struct rec_wbuf *b, uint64_t v)
{
	b->len += wire_put_varint(b->p + b->len, v);
}

static inline void put_varint2(struct rec_wbuf *b, uint64_t v)
{
	b->len2 += wire_put_varint(b->p2 + b->len2, v);
}

/* room for more bytes in the second column */
static int reserve2(struct rec_wbuf *b, size_t more)
{
	return rec_grow((void **)&b->p2, &b->cap2, b->len2, more, 1);
}

static inline void put_bytes(struct rec_wbuf *b, const void *p, size_t n)
{
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* intern s into the string table; a new string gets a STRINGS record */
static int put_str(struct rec_writer *w, const char *s, uint32_t *idx)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_STRINGS];
	size_t len = s ? strlen(s) : 0;
	int added, ret;

	if (len > REC_MAX_STRING)
		return -REC_E_RANGE;
	if (!len) {
		*idx = 0;
		return 0;
	}
	ret = rec_wbuf_reserve(b, len + WIRE_VARINT_MAX);
	if (ret)
		return ret;
	ret = rec_strtab_intern(&w->strs, s, len, idx, &added);
	if (ret || !added)
		return ret;
	put_varint(b, len);
	put_bytes(b, s, len);
	return rec_writer_record_done(w, REC_SEC_STRINGS);
}

int rec_put_string(struct rec_writer *w, const char *s, uint32_t *idx)
{
	if (w->err)
		return -w->err;
	if (!s)
		return -REC_E_RANGE;
	return put_str(w, s, idx);
}

int rec_put_meta(struct rec_writer *w, const char *key, const char *value)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_META];
	size_t kl, vl;
	int ret;

	if (w->err)
		return -w->err;
	if (!key || !value)
		return -REC_E_RANGE;
	kl = strlen(key);
	vl = strlen(value);
	if (kl > REC_MAX_STRING || vl > REC_MAX_STRING)
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, kl + vl + 2 * WIRE_VARINT_MAX);
	if (ret)
		return ret;
	put_varint(b, kl);
	put_bytes(b, key, kl);
	put_varint(b, vl);
	put_bytes(b, value, vl);
	return rec_writer_record_done(w, REC_SEC_META);
}

int rec_put_module(struct rec_writer *w, const char *path, uint64_t base, uint64_t size,
		   const uint8_t *build_id, size_t build_id_len, uint32_t *idx)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_MODULES];
	uint32_t pidx;
	int ret;

	if (w->err)
		return -w->err;
	if (build_id_len > REC_MAX_BUILD_ID || (build_id_len && !build_id) ||
	    w->nmodules >= REC_MAX_INDEX)
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, build_id_len + 4 * WIRE_VARINT_MAX);
	if (ret)
		return ret;
	ret = put_str(w, path, &pidx);
	if (ret)
		return ret;
	put_varint(b, pidx);
	put_varint(b, base);
	put_varint(b, size);
	put_varint(b, build_id_len);
	if (build_id_len)
		put_bytes(b, build_id, build_id_len);
	*idx = w->nmodules++;
	return rec_writer_record_done(w, REC_SEC_MODULES);
}

int rec_put_ip(struct rec_writer *w, uint64_t ip, uint32_t *idx)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_IPS];
	int ret;

	if (w->err)
		return -w->err;
	if (w->nips >= REC_MAX_INDEX)
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, WIRE_VARINT_MAX);
	if (ret)
		return ret;
	if (w->nips / 8 >= w->symbolized_bytes) {
		size_t cap = w->symbolized_bytes;

		ret = rec_grow((void **)&w->symbolized, &cap, w->symbolized_bytes, 1, 1);
		if (ret)
			return ret;
		memset(w->symbolized + w->symbolized_bytes, 0, cap - w->symbolized_bytes);
		w->symbolized_bytes = cap;
	}
	put_varint(b, rec_zigzag((int64_t)(ip - b->prev_a)));
	b->prev_a = ip;
	*idx = w->nips++;
	return rec_writer_record_done(w, REC_SEC_IPS);
}

int rec_put_symbol(struct rec_writer *w, uint32_t ip, uint32_t module, const struct rec_sym *chain,
		   size_t n)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_SYMBOLS];
	uint32_t fn, file;
	size_t start;
	int ret;

	if (w->err)
		return -w->err;
	if (w->on_symbol)
		return n > REC_MAX_CHAIN || (n && !chain) ? -REC_E_RANGE
							  : w->on_symbol(w->on_symbol_arg, ip, module, chain, n);
	if (ip >= w->nips || (module != REC_NONE && module >= w->nmodules) || n > REC_MAX_CHAIN ||
	    (n && !chain))
		return -REC_E_RANGE;
	if (w->symbolized[ip / 8] & (1u << (ip % 8)))
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, (3 + 3 * n) * WIRE_VARINT_MAX);
	if (ret)
		return ret;
	/* strings first: interning may flush STRINGS, never SYMBOLS */
	for (size_t i = 0; i < n; i++) {
		ret = put_str(w, chain[i].function, &fn);
		if (!ret)
			ret = put_str(w, chain[i].file, &file);
		if (ret)
			return ret;
	}
	start = b->len;
	put_varint(b, rec_zigzag((int64_t)ip - (int64_t)b->prev_a));
	put_varint(b, module == REC_NONE ? 0 : (uint64_t)module + 1);
	put_varint(b, n);
	for (size_t i = 0; i < n; i++) {
		/* already interned above: these lookups add nothing */
		ret = put_str(w, chain[i].function, &fn);
		if (!ret)
			ret = put_str(w, chain[i].file, &file);
		if (ret) {
			b->len = start;
			return ret;
		}
		put_varint(b, fn);
		put_varint(b, file);
		put_varint(b, chain[i].line);
	}
	b->prev_a = ip;
	w->symbolized[ip / 8] |= (uint8_t)(1u << (ip % 8));
	return rec_writer_record_done(w, REC_SEC_SYMBOLS);
}

int rec_put_trace(struct rec_writer *w, uint32_t parent, uint32_t ip, uint32_t *idx)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_TRACES];
	int ret;

	if (w->err)
		return -w->err;
	if (parent >= w->ntraces || ip >= w->nips || w->ntraces >= REC_MAX_INDEX)
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, WIRE_VARINT_MAX);
	if (!ret)
		ret = reserve2(b, WIRE_VARINT_MAX);
	if (ret)
		return ret;
	put_varint(b, w->ntraces - parent);
	put_varint2(b, rec_zigzag((int64_t)ip - (int64_t)b->prev_a));
	b->prev_a = ip;
	*idx = w->ntraces++;
	return rec_writer_record_done(w, REC_SEC_TRACES);
}

int rec_put_allocinfo(struct rec_writer *w, uint64_t size, uint32_t trace, uint32_t kind,
		      uint32_t *idx)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_ALLOCINFOS];
	uint64_t tz;
	int ret;

	if (w->err)
		return -w->err;
	if (trace >= w->ntraces || w->ninfos >= REC_MAX_INDEX)
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, WIRE_VARINT_MAX);
	if (!ret)
		ret = reserve2(b, 2 * WIRE_VARINT_MAX);
	if (ret)
		return ret;
	tz = rec_zigzag((int64_t)trace - (int64_t)b->prev_a);
	put_varint(b, size);
	if (kind < REC_KIND_ESC) {
		put_varint2(b, tz << 4 | kind);
	} else {
		put_varint2(b, tz << 4 | REC_KIND_ESC);
		put_varint2(b, kind);
	}
	b->prev_a = trace;
	*idx = w->ninfos++;
	return rec_writer_record_done(w, REC_SEC_ALLOCINFOS);
}

/* put_event's rare cases: an error, a range check failing, full columns, a weight */
static __attribute__((noinline)) int put_event_slow(struct rec_writer *w, uint32_t info, uint32_t op,
						    uint64_t weight, uint32_t age)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_EVENTS];
	size_t n = b->count;
	size_t cap;
	int ret;

	if (w->err)
		return -w->err;
	if (info >= w->ninfos)
		return -REC_E_RANGE;
	if (n == w->ev.cap) {
		cap = w->ev.cap;
		ret = rec_grow((void **)&w->ev.info, &cap, n, 1, sizeof(*w->ev.info));
		if (ret)
			return ret;
		cap = w->ev.cap;
		ret = rec_grow((void **)&w->ev.op, &cap, n, 1, sizeof(*w->ev.op));
		if (ret)
			return ret;
		cap = w->ev.cap;
		ret = rec_grow((void **)&w->ev.age, &cap, n, 1, sizeof(*w->ev.age));
		if (ret)
			return ret;
		w->ev.cap = cap;
	}
	if (op == REC_EV_WEIGHTED) {
		ret = rec_wbuf_reserve(&w->ev.weights, WIRE_VARINT_MAX);
		if (ret)
			return ret;
		put_varint(&w->ev.weights, weight);
	}
	w->ev.info[n] = info;
	w->ev.op[n] = (uint8_t)(op | w->lane);
	w->ev.age[n] = age;
	if (!rec_ev_class(op))
		w->nallocs++;
	w->nevents++;
	if (b->count + 1 < REC_EV_CHUNK && w->ev.weights.len < REC_CHUNK_TARGET) {
		b->count++;
		return 0;
	}
	return rec_writer_record_done(w, REC_SEC_EVENTS);
}

/*
 * Inlined into its three callers: it runs for every event of a recording,
 * and the calls (and record_done's, for a chunk that is not full) were a
 * tenth of the interpreter's time on an allocation-only stream. The usual
 * case (no error, a valid info, room, no weight) is one test of four
 * conditions, and the byte store (ev_op), which may alias any field and
 * made the compiler load each one again after it, comes last.
 */
static inline __attribute__((always_inline)) int put_event(struct rec_writer *w, uint32_t info,
							    uint32_t op, uint64_t weight,
							    uint32_t age)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_EVENTS];
	size_t n = b->count;
	int full;

	if (__builtin_expect(w->err | (info >= w->ninfos) | (n == w->ev.cap) |
				     (op == REC_EV_WEIGHTED),
			     0))
		return put_event_slow(w, info, op, weight, age);
	w->nevents++;
	if (!rec_ev_class(op))
		w->nallocs++;
	/* rec_writer_record_done's test for the events section, without the call */
	full = n + 1 >= REC_EV_CHUNK || w->ev.weights.len >= REC_CHUNK_TARGET;
	w->ev.info[n] = info;
	w->ev.age[n] = age;
	w->ev.op[n] = (uint8_t)(op | w->lane);
	if (__builtin_expect(!full, 1)) {
		b->count = (uint32_t)(n + 1);
		return 0;
	}
	return rec_writer_record_done(w, REC_SEC_EVENTS);
}

int rec_put_alloc(struct rec_writer *w, uint32_t info, uint64_t weight)
{
	return put_event(w, info, weight ? REC_EV_WEIGHTED : REC_EV_ALLOC, weight, 0);
}

int rec_put_free(struct rec_writer *w, uint32_t info, int temporary)
{
	return put_event(w, info, temporary ? REC_EV_FREE_TEMP : REC_EV_FREE, 0, 0);
}

int rec_put_free_of(struct rec_writer *w, uint32_t info, int temporary, uint64_t alloc_no)
{
	/* a wrong hint costs bytes, never correctness: the encoder checks it */
	uint64_t age = w->nallocs - alloc_no; /* allocs back; wraps when alloc_no is not before */

	return put_event(w, info, temporary ? REC_EV_FREE_TEMP : REC_EV_FREE, 0,
			 alloc_no < w->nallocs && age <= UINT32_MAX ? (uint32_t)age : 0);
}

void rec_put_lane(struct rec_writer *w, uint32_t thread)
{
	w->lane = (uint8_t)(thread % REC_EV_LANES << 2);
}

uint64_t rec_writer_nallocs(const struct rec_writer *w)
{
	return w->nallocs;
}

int rec_put_tick(struct rec_writer *w, uint64_t time_ns, uint64_t rss)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_TICKS];
	int ret;

	if (w->err)
		return -w->err;
	ret = rec_wbuf_reserve(b, 3 * WIRE_VARINT_MAX);
	if (ret)
		return ret;
	/* time may step back in a crafted call; zigzag keeps it exact */
	put_varint(b, rec_zigzag((int64_t)(time_ns - b->prev_a)));
	put_varint(b, w->nevents - b->prev_b);
	put_varint(b, rec_zigzag((int64_t)(rss - b->prev_c)));
	b->prev_a = time_ns;
	b->prev_b = w->nevents;
	b->prev_c = rss;
	return rec_writer_record_done(w, REC_SEC_TICKS);
}
