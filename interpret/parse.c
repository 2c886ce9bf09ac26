/* interpret/parse.c - bounded parser of the event stream (track/wire.h) */
/* SPDX-License-Identifier: MIT */
/*
 * Input is untrusted: every length is compared with the bytes left before it
 * is used, every count is capped, every sequence number is checked for
 * overflow. A record is parsed only once all of it is in the buffer; one cut
 * by the end of the buffer waits for the next read. A chunk is decoded whole
 * into c->scratch and handed to order.c; if it turns out corrupt, the events
 * decoded before the fault are still handed over, then the stream ends.
 *
 * Decoded event fields (struct itp_ev):
 *   ALLOC/ALLOC_W  a = size, b = raw trace, c = ptr, d = weight (0: ALLOC)
 *   FREE           c = ptr
 *   NODE           a = raw index, b = raw parent, c = ip
 *   MODULE         a = (uintptr_t) struct itp_module * (owned by the event)
 *   MODULE_DEL     a = base
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/order_internal.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "get_var's word-at-a-time path reads the stream as little-endian words"
#endif

/*
 * get_var - wire_get_varint with fast paths, same result and the same
 * rejection of cut, overlong or overflowing numbers:
 *  - one byte (ops' deltas, most node indices), then two (most sizes);
 *  - with 8 bytes left, numbers of up to 8 bytes (56 bits: pointers take 6
 *    or 7) without a loop: one unaligned load, the first byte without the
 *    continuation bit found by a count of trailing zeros, and the 7-bit
 *    groups packed together in three mask-and-shift steps:
 *
 *      bytes  0ggggggg x 8      -> 16-bit lanes of 14 bits
 *             -> 32-bit lanes of 28 bits -> one 56-bit number
 *
 *  - else (9 or 10 bytes, or near the end) the byte loop.
 * get_var_w takes the word path first, for fields whose length changes
 * from event to event (sizes, pointers and their distances): a test for
 * one byte first is a branch their length decides, and sizes of 16 to 528
 * bytes go either way; the word path costs a few instructions more but no
 * misprediction.
 */
static inline uint64_t pack7(uint64_t x)
{
	x &= 0x7f7f7f7f7f7f7f7fULL;
	x = (x & 0x007f007f007f007fULL) | (x & 0x7f007f007f007f00ULL) >> 1;
	x = (x & 0x00003fff00003fffULL) | (x & 0x3fff00003fff0000ULL) >> 2;
	return (x & 0x000000000fffffffULL) | (x & 0x0fffffff00000000ULL) >> 4;
}

/* the word path: 1 and the number when it has at most 8 bytes and 8 bytes are left */
static inline __attribute__((always_inline)) int get_word(const uint8_t **pp, const uint8_t *end,
							   uint64_t *out)
{
	uint64_t w, stop;
	unsigned bits;

	if (end - *pp < 8)
		return 0;
	memcpy(&w, *pp, 8); /* little-endian: byte 0 is the low byte */
	stop = ~w & 0x8080808080808080ULL;
	if (!stop)
		return 0;
	/* the last byte's bit 7 is bit 8k + 7: 8k + 8 bits belong to the number */
	bits = (unsigned)__builtin_ctzll(stop) + 1;
	/* bits >= 8, so the shifts are at most 56 */
	*out = pack7(w << (64 - bits) >> (64 - bits));
	*pp += bits / 8;
	return 1;
}

/* 9 or 10 bytes, or near the end */
static int get_var_slow(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned i;

	if (end - p < WIRE_VARINT_MAX)
		return wire_get_varint(pp, end, out);
	for (i = 0; i < WIRE_VARINT_MAX - 1; i++) {
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (p[i] < 0x80) {
			*out = v;
			*pp = p + i + 1;
			return 0;
		}
	}
	if (p[9] > 1)
		return -1;
	*out = v | (uint64_t)p[9] << 63;
	*pp = p + WIRE_VARINT_MAX;
	return 0;
}

static inline __attribute__((always_inline)) int get_var(const uint8_t **pp, const uint8_t *end,
							  uint64_t *out)
{
	const uint8_t *p = *pp;

	if (__builtin_expect(p < end && *p < 0x80, 1)) {
		*out = *p;
		*pp = p + 1;
		return 0;
	}
	/* two bytes (sizes up to 16 KiB, node indices up to 16 K): cheaper than packing a word */
	if (end - p >= 2 && p[1] < 0x80) {
		*out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		*pp = p + 2;
		return 0;
	}
	if (__builtin_expect(get_word(pp, end, out), 1))
		return 0;
	return get_var_slow(pp, end, out);
}

static inline __attribute__((always_inline)) int get_var_w(const uint8_t **pp, const uint8_t *end,
							    uint64_t *out)
{
	if (__builtin_expect(get_word(pp, end, out), 1))
		return 0;
	return get_var_slow(pp, end, out);
}

#define GET(p, end, v)                                                                             \
	do {                                                                                       \
		if (get_var(&(p), (end), &(v)))                                                    \
			goto bad_varint;                                                           \
	} while (0)

#define GET_W(p, end, v)                                                                           \
	do {                                                                                       \
		if (get_var_w(&(p), (end), &(v)))                                                  \
			goto bad_varint;                                                           \
	} while (0)

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

/* header: fixed part, then varint exe_len + exe, varint cmd_len + cmdline */
static int parse_header(struct itp_ctx *c, const uint8_t *buf, size_t len, size_t *used)
{
	const uint8_t *p, *end;
	uint64_t exe_len, cmd_len;
	size_t i;

	*used = 0;
	if (len < WIRE_HDR_FIXED)
		return 0;
	memcpy(&c->hdr, buf, WIRE_HDR_FIXED);
	if (memcmp(c->hdr.magic, WIRE_MAGIC, 8))
		return itp_fail(c, ITP_E_HEADER, "bad stream magic (not a heaptap event stream)");
	if (c->hdr.version != WIRE_VERSION)
		return itp_fail(c, ITP_E_HEADER, "unsupported stream version %u (expected %u)",
				c->hdr.version, WIRE_VERSION);
	if (c->hdr.header_len < WIRE_HDR_FIXED + 2 || c->hdr.header_len > WIRE_MAX_HEADER)
		return itp_fail(c, ITP_E_HEADER, "stream header length %u out of range [%u, %u]",
				c->hdr.header_len, WIRE_HDR_FIXED + 2, WIRE_MAX_HEADER);
	if (len < c->hdr.header_len)
		return 0;
	p = buf + WIRE_HDR_FIXED;
	end = buf + c->hdr.header_len;
	if (wire_get_varint(&p, end, &exe_len) || exe_len > (uint64_t)(end - p))
		return itp_fail(c, ITP_E_HEADER, "stream header: exe length past the header");
	c->exe = dup_bytes(p, exe_len);
	p += exe_len;
	if (wire_get_varint(&p, end, &cmd_len) || cmd_len > (uint64_t)(end - p))
		return itp_fail(c, ITP_E_HEADER, "stream header: cmdline length past the header");
	/* args are NUL-separated (and maybe NUL-terminated): join with spaces */
	while (cmd_len && !p[cmd_len - 1])
		cmd_len--;
	c->cmdline = dup_bytes(p, cmd_len);
	if (!c->exe || !c->cmdline)
		return itp_fail(c, ITP_E_NOMEM, "out of memory reading the stream header");
	for (i = 0; i < cmd_len; i++)
		if (!c->cmdline[i])
			c->cmdline[i] = ' ';
	c->have_header = 1;
	if (c->opt->sample_bytes) {
		/* the rate heaptap asked for (the library learns it after writing the header) */
		c->hdr.sample_bytes = c->opt->sample_bytes;
		c->hdr.flags |= WIRE_F_SAMPLED;
	}
	c->res->pid = c->hdr.pid;
	c->res->flags = c->hdr.flags;
	/* exe is shown on a terminal by the command layer: no control bytes */
	for (i = 0; c->exe[i] && i + 1 < sizeof(c->res->exe); i++) {
		unsigned char ch = (unsigned char)c->exe[i];

		c->res->exe[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
	}
	c->res->exe[i] = 0;
	*used = c->hdr.header_len;
	return itp_meta_start(c);
}

/* MODULE payload after the delta; on success *out owns a new module */
static int parse_module(struct itp_ctx *c, const uint8_t **pp, const uint8_t *end,
			struct itp_module **out)
{
	const uint8_t *p = *pp;
	struct itp_module *m = calloc(1, sizeof(*m));
	uint64_t nseg, bid_len, path_len, lo = UINT64_MAX, hi = 0;
	size_t i;
	int ret;

	if (!m)
		return itp_fail(c, ITP_E_NOMEM, "out of memory decoding a module");
	m->seq_del = UINT64_MAX;
	GET(p, end, m->base);
	GET(p, end, nseg);
	if (nseg > ITP_MAX_SEGS) {
		ret = itp_fail(c, ITP_E_CORRUPT, "module with %llu segments (at most %u)",
			       (unsigned long long)nseg, ITP_MAX_SEGS);
		goto out_free;
	}
	m->seg = calloc(nseg ? nseg : 1, sizeof(*m->seg));
	if (!m->seg) {
		ret = itp_fail(c, ITP_E_NOMEM, "out of memory decoding a module");
		goto out_free;
	}
	m->nseg = nseg;
	for (i = 0; i < nseg; i++) {
		struct itp_seg *s = &m->seg[i];
		uint64_t a, b;

		GET(p, end, s->vaddr);
		GET(p, end, s->memsz);
		GET(p, end, s->flags);
		if (__builtin_add_overflow(m->base, s->vaddr, &a) ||
		    __builtin_add_overflow(a, s->memsz, &b)) {
			ret = itp_fail(c, ITP_E_CORRUPT, "module segment wraps the address space");
			goto out_free;
		}
		if (a < lo)
			lo = a;
		if (b > hi)
			hi = b;
	}
	m->lo = nseg ? lo : 0;
	m->hi = nseg ? hi : 0;
	GET(p, end, bid_len);
	if (bid_len > ITP_MAX_BUILD_ID || bid_len > (uint64_t)(end - p)) {
		ret = itp_fail(c, ITP_E_CORRUPT, "module build-id length %llu out of bounds",
			       (unsigned long long)bid_len);
		goto out_free;
	}
	if (bid_len) {
		m->build_id = malloc(bid_len);
		if (!m->build_id) {
			ret = itp_fail(c, ITP_E_NOMEM, "out of memory decoding a module");
			goto out_free;
		}
		memcpy(m->build_id, p, bid_len);
		m->build_id_len = bid_len;
		p += bid_len;
	}
	GET(p, end, path_len);
	if (path_len > ITP_MAX_PATH || path_len > (uint64_t)(end - p)) {
		ret = itp_fail(c, ITP_E_CORRUPT, "module path length %llu out of bounds",
			       (unsigned long long)path_len);
		goto out_free;
	}
	if (memchr(p, 0, path_len)) {
		ret = itp_fail(c, ITP_E_CORRUPT, "module path contains a NUL byte");
		goto out_free;
	}
	m->path = dup_bytes(p, path_len);
	if (!m->path) {
		ret = itp_fail(c, ITP_E_NOMEM, "out of memory decoding a module");
		goto out_free;
	}
	p += path_len;
	*pp = p;
	*out = m;
	return 0;

bad_varint:
	ret = itp_fail(c, ITP_E_CORRUPT, "module event: truncated or overlong varint");
out_free:
	itp_module_free(m);
	return ret;
}

/*
 * scratch_room - room for event n in c->scratch, the buffer and its size
 * also in *sv and *cap (parse_chunk's copies); 0 or -ITP_E_NOMEM.
 */
static int scratch_room(struct itp_ctx *c, size_t n, struct itp_ev **sv, size_t *cap)
{
	size_t ncap;
	struct itp_ev *v;

	if (n < c->scratch_cap)
		return 0;
	ncap = c->scratch_cap ? c->scratch_cap * 2 : 4096;
	v = realloc(c->scratch, ncap * sizeof(*v));
	if (!v)
		return itp_fail(c, ITP_E_NOMEM, "out of memory decoding a chunk");
	c->scratch = v;
	c->scratch_cap = ncap;
	*sv = v;
	*cap = ncap;
	return 0;
}

/* chunk_open - the chunk's thread and first sequence number, and the thread's slot */
static int chunk_open(struct itp_ctx *c, const uint8_t **pp, const uint8_t *end, uint64_t *tid,
		      uint64_t *seq, uint32_t *slot)
{
	int rc;

	if (wire_get_varint(pp, end, tid) || wire_get_varint(pp, end, seq))
		return itp_fail(c, ITP_E_CORRUPT, "chunk: truncated tid or first_seq");
	rc = itp_thread_slot(c, *tid, slot);
	if (rc == -EDQUOT)
		return itp_fail(c, ITP_E_BUDGET, "the memory budget is used up (by threads)");
	if (rc)
		return itp_fail(c, ITP_E_NOMEM, "out of memory tracking thread %llu",
				(unsigned long long)*tid);
	return 0;
}

/* seq_step - advance *seq by an event's delta (at least mind), refusing a repeat or an overflow */
static inline __attribute__((always_inline)) int
seq_step(struct itp_ctx *c, uint64_t tid, uint64_t *seq, uint64_t delta, uint64_t mind)
{
	if (__builtin_expect(delta < mind, 0))
		return itp_fail(c, ITP_E_CORRUPT, "chunk of thread %llu: sequence number %llu repeated",
				(unsigned long long)tid, (unsigned long long)*seq);
	if (__builtin_add_overflow(*seq, delta, seq))
		return itp_fail(c, ITP_E_CORRUPT, "chunk of thread %llu: sequence number overflows",
				(unsigned long long)tid);
	return 0;
}

static int bad_event(struct itp_ctx *c, uint64_t tid)
{
	return itp_fail(c, ITP_E_CORRUPT, "chunk of thread %llu: event cut short or overlong varint",
			(unsigned long long)tid);
}

/*
 * decode_other - the fields of an event other than an allocation or a
 * free (ev->op and ev->seq are set); 0 or a negative enum itp_err.
 */
static int decode_other(struct itp_ctx *c, const uint8_t **pp, const uint8_t *end,
			struct itp_ev *ev, uint64_t tid)
{
	const uint8_t *p = *pp;
	struct itp_module *m = NULL;
	int ret;

	switch (ev->op) {
	case WIRE_EV_NODE:
		GET(p, end, ev->a);
		GET(p, end, ev->b);
		GET(p, end, ev->c);
		break;
	case WIRE_EV_NOP:
		break;
	case WIRE_EV_MODULE:
		ret = parse_module(c, &p, end, &m);
		if (ret)
			return ret;
		m->seq_add = ev->seq;
		ev->a = (uintptr_t)m;
		break;
	case WIRE_EV_MODULE_DEL:
		GET(p, end, ev->a);
		break;
	default:
		/* events carry no length: an unknown op cannot be skipped */
		return itp_fail(c, ITP_E_CORRUPT, "chunk of thread %llu: unknown event op %u",
				(unsigned long long)tid, ev->op);
	}
	*pp = p;
	return 0;

bad_varint:
	return bad_event(c, tid);
}

/*
 * parse_chunk - decode a chunk's events and apply them as they come while
 * each is next in order (itp_order_event): in the usual case every event
 * is decoded into c->scratch[0] and applied at once, in the cache, instead
 * of the whole chunk being stored and then read back (4000 events of 48
 * bytes: more than L1 holds). From the first event that must wait, the
 * rest is decoded into c->scratch[0, n) and handed to itp_order_chunk,
 * which parks it (nothing was applied in between, so its first event still
 * waits). A decoding fault ends the chunk after the events before it were
 * applied or parked; an apply failure ends it at once.
 */
static int parse_chunk(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	uint64_t tid = 0, seq = 0, delta;
	uint64_t pbase = 0; /* ALLOC_D/FREE_D pointers count from it */
	uint64_t mind = 0; /* the smallest valid delta: 0 for the first event, then 1 */
	uint32_t slot;
	size_t n = 0, cap;
	struct itp_ev *sv;
	int ret, rc, inplace = 1;

	ret = chunk_open(c, &p, end, &tid, &seq, &slot);
	if (ret)
		return ret;
	/*
	 * the buffer in locals: the stores into events could alias c's
	 * fields, so reading them through c cost two loads an event; only
	 * scratch_room changes them (applying an event never parks a chunk)
	 */
	sv = c->scratch;
	cap = c->scratch_cap;
	while (p < end) {
		struct itp_ev *ev;
		uint64_t v;
		unsigned op;

		if (__builtin_expect(n >= cap, 0)) {
			ret = scratch_room(c, n, &sv, &cap);
			if (ret)
				break;
		}
		/* each op sets the fields apply.c reads for it, and only those */
		ev = &sv[n];
		op = *p++;
		ev->op = op;
		GET(p, end, delta);
		ret = seq_step(c, tid, &seq, delta, mind);
		if (ret)
			break;
		ev->seq = seq;
		mind = 1;
		switch (op) {
		case WIRE_EV_ALLOC_D:
			/*
			 * size and the zigzag distance from the previous
			 * ALLOC_D/FREE_D (wire.h) by the word path: their
			 * lengths (one to three bytes) change from event to
			 * event, and get_var's tests for one byte, then two,
			 * were branches mispredicted that often (the word path
			 * cut the replay of bench threads' stream by 15%)
			 */
			if (p >= end)
				goto bad_varint;
			ev->kind = *p++;
			GET_W(p, end, ev->a);
			GET(p, end, ev->b);
			GET_W(p, end, v);
			ev->c = pbase += wire_unzigzag(v);
			ev->op = WIRE_EV_ALLOC;
			ev->d = 0;
			goto alloc_decoded;
		case WIRE_EV_ALLOC:
		case WIRE_EV_ALLOC_W:
			if (p >= end)
				goto bad_varint;
			ev->kind = *p++;
			GET_W(p, end, ev->a);
			GET(p, end, ev->b);
			GET_W(p, end, ev->c);
			ev->d = 0;
			if (op == WIRE_EV_ALLOC_W)
				GET(p, end, ev->d);
		alloc_decoded:
			if (inplace && seq <= c->next_seq) {
				rc = itp_order_event(c, slot, ev, itp_apply_alloc);
				if (rc)
					return rc;
				continue;
			}
			break;
		case WIRE_EV_FREE_D:
			GET_W(p, end, v);
			ev->c = pbase += wire_unzigzag(v);
			ev->op = WIRE_EV_FREE;
			goto free_decoded;
		case WIRE_EV_FREE:
			GET_W(p, end, ev->c);
		free_decoded:
			if (inplace && seq <= c->next_seq) {
				rc = itp_order_event(c, slot, ev, itp_apply_free);
				if (rc)
					return rc;
				continue;
			}
			break;
		default:
			ret = decode_other(c, &p, end, ev, tid);
			if (ret)
				goto out_order;
		}
		if (inplace) {
			if (seq <= c->next_seq) {
				/* on failure nothing is left to free: later events are not decoded */
				rc = itp_order_event(c, slot, ev, itp_apply);
				if (rc)
					return rc;
				continue;
			}
			inplace = 0;
		}
		n++;
	}
	goto out_order;

bad_varint:
	ret = bad_event(c, tid);
out_order:
	/* hand over what was decoded before any fault, then report the fault */
	rc = n ? itp_order_chunk(c, slot, n) : 0;
	return ret ? ret : rc;
}

static int parse_tick(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	struct itp_tick t;

	if (wire_get_varint(&p, end, &t.time_ns) || wire_get_varint(&p, end, &t.rss) ||
	    wire_get_varint(&p, end, &t.seq))
		return itp_fail(c, ITP_E_CORRUPT, "tick record cut short");
	/* the site counts just before it are of this moment */
	if (itp_sites_tick(&c->sites, t.time_ns))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for site rates");
	return itp_order_tick(c, &t);
}

static int parse_end(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	uint64_t v[5];
	size_t i;

	for (i = 0; i < 5; i++)
		if (wire_get_varint(&p, end, &v[i]))
			return itp_fail(c, ITP_E_CORRUPT, "end record cut short");
	c->ended = 1;
	c->end_mono_ns = util_mono_ns();
	c->total_seq = v[0];
	c->res->end_reason = v[1] <= WIRE_END_ERROR ? (int)v[1] : WIRE_END_ERROR;
	c->res->slots_restored = v[2];
	c->res->slots_left = v[3];
	c->res->events_dropped = v[4];
	return 0;
}

static void parse_log(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	char msg[512];
	size_t n = 0;
	int level;

	if (p >= end)
		return;
	level = *p++;
	for (; p < end && n + 1 < sizeof(msg); p++)
		msg[n++] = *p < 0x20 || *p == 0x7f ? '?' : (char)*p;
	msg[n] = 0;
	if (level >= WIRE_LOG_ERROR) {
		if (c->w)
			rec_put_meta(c->w, "library_error", msg);
		size_t k = n < sizeof(c->res->lib_error) ? n : sizeof(c->res->lib_error) - 1;

		memcpy(c->res->lib_error, msg, k);
		c->res->lib_error[k] = '\0';
	}
	if (c->opt->log)
		c->opt->log(level, msg, n, c->opt->status_arg);
}

_Static_assert(WIRE_START_NFIELDS <= ITP_START_FIELDS, "itp_start holds every start field");

/*
 * parse_start - inject/'s start-up timings. Fields this heaptap does not
 * know are skipped, missing ones stay 0; the deferred module's path is
 * cut to fit and made printable. A count or length past the record is
 * corrupt.
 */
static int parse_start(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	struct itp_start *s = &c->res->start;
	uint64_t n, v, plen;
	size_t k = 0;

	memset(s, 0, sizeof(*s));
	if (wire_get_varint(&p, end, &n) || n > WIRE_START_MAX_FIELDS)
		return itp_fail(c, ITP_E_CORRUPT, "start record: bad field count");
	for (uint64_t i = 0; i < n; i++) {
		if (wire_get_varint(&p, end, &v))
			return itp_fail(c, ITP_E_CORRUPT, "start record cut short");
		if (i < WIRE_START_NFIELDS)
			s->f[i] = v;
	}
	if (wire_get_varint(&p, end, &plen) || plen > WIRE_START_MAX_PATH ||
	    plen > (uint64_t)(end - p))
		return itp_fail(c, ITP_E_CORRUPT, "start record: bad module path");
	for (; k < plen && k + 1 < sizeof(s->deferred); k++)
		s->deferred[k] = p[k] < 0x20 || p[k] == 0x7f ? '?' : (char)p[k];
	s->deferred[k] = '\0';
	s->have = 1;
	return 0;
}

int itp_parse(struct itp_ctx *c, const uint8_t *buf, size_t len, size_t *used)
{
	const uint8_t *p = buf, *end = buf + len;
	int ret;

	*used = 0;
	if (!c->have_header) {
		size_t n;

		ret = parse_header(c, buf, len, &n);
		if (ret || !n)
			return ret;
		p += n;
	}
	while (p < end && !c->ended) {
		const uint8_t *q = p + 1, *payload;
		uint64_t rlen;
		unsigned type = *p;

		if (wire_get_varint(&q, end, &rlen)) {
			/* an incomplete varint waits, an overlong one is corrupt */
			if (end - (p + 1) >= WIRE_VARINT_MAX)
				return itp_fail(c, ITP_E_CORRUPT,
						"record length is not a valid varint");
			break;
		}
		if (rlen > WIRE_MAX_RECORD)
			return itp_fail(c, ITP_E_CORRUPT, "record of %llu bytes (at most %u)",
					(unsigned long long)rlen, WIRE_MAX_RECORD);
		if (rlen > (uint64_t)(end - q))
			break;
		payload = q;
		q += rlen;
		if (c->discard && type != WIRE_REC_END && type != WIRE_REC_LOG) {
			/* the budget is used up: only the end (and what the library says) counts */
			p = q;
			continue;
		}
		switch (type) {
		case WIRE_REC_CHUNK:
			ret = parse_chunk(c, payload, q);
			break;
		case WIRE_REC_TICK:
			ret = parse_tick(c, payload, q);
			break;
		case WIRE_REC_END:
			ret = parse_end(c, payload, q);
			break;
		case WIRE_REC_LOG:
			parse_log(c, payload, q);
			ret = 0;
			break;
		case WIRE_REC_SITES:
			ret = itp_sites_parse(c, payload, q);
			break;
		case WIRE_REC_START:
			ret = parse_start(c, payload, q);
			break;
		case WIRE_REC_XFRAME:
			ret = itp_xframe_parse(c, payload, q);
			break;
		default:
			c->res->warn.unknown_records++;
			ret = 0;
			break;
		}
		if (ret) {
			/* past the record that failed: after ITP_E_BUDGET the caller goes on */
			*used = (size_t)(q - buf);
			return ret;
		}
		p = q;
	}
	*used = (size_t)(p - buf);
	return 0;
}
