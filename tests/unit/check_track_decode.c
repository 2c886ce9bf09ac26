/* tests/unit/check_track_decode.c - decode a track/ event stream with the wire.h helpers */
/* SPDX-License-Identifier: MIT */
/*
 * Included by the files of unit.track that decode, check_track_xframe.c
 * and check_preload.c (static: no header of its own). An independent
 * reader of the stream: it uses only track/wire.h, never track/'s encoder.
 */
#include <stdlib.h>
#include <string.h>

#include "track/wire.h"

#include <stddef.h>
#include <stdint.h>

/* One decoded chunk event. */
struct tev {
	uint64_t seq;
	uint32_t tid;
	uint8_t op;
	uint8_t kind;
	uint64_t a, b, c; /* ALLOC: size, trace, ptr; FREE: ptr; NODE: index, parent, ip;
			     MODULE(_DEL): base */
	char path[256];	  /* MODULE */
};

/* A decoded stream. */
struct tstream {
	uint32_t pid;
	char exe[4096];
	struct tev *ev; /* in stream order */
	size_t nev;
	size_t nticks, nchunks;
	size_t ndelta; /* ALLOC_D and FREE_D events (decoded into ALLOC and FREE) */
	uint64_t tick_rss, tick_seq; /* of the last TICK */
	int last_rec;		     /* type of the record before END (or the last one) */
	int have_end;
	uint64_t end_total, end_reason, end_restored, end_left, end_dropped;
	int error; /* nonzero: malformed, with the byte offset in error_at */
	size_t error_at;
};

/* tstream_decode - decode a whole stream (header + records). Returns 0 or -1 (s->error). */
static int tstream_decode(const uint8_t *buf, size_t len, struct tstream *s);
/* tstream_free - release s->ev. */
static void tstream_free(struct tstream *s);
/* tstream_by_seq - events sorted by sequence number (malloc'd copy). */
static struct tev *tstream_by_seq(const struct tstream *s);
/* A stream's trace tree as its NODE events built it: per node index (< n), its ip and parent. */
struct tnodes {
	uint64_t *ip, *parent; /* calloc'd; 0 for an index no NODE named */
	size_t n;	       /* the largest index named + 1 */
};
/* tstream_nodes - the tree of s; tnodes_free releases it. */
static void tstream_nodes(const struct tstream *s, struct tnodes *t);
static void tnodes_free(struct tnodes *t);


static int get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return wire_get_varint(p, end, v);
}

static int decode_chunk(const uint8_t *p, const uint8_t *end, struct tstream *s)
{
	uint64_t tid, seq, prev = 0;
	int first = 1;

	if (get(&p, end, &tid) || get(&p, end, &seq))
		return -1;
	uint64_t pbase = 0; /* ALLOC_D/FREE_D pointers: zigzag distance from the previous one */

	while (p < end) {
		struct tev e = { .tid = (uint32_t)tid };
		uint64_t delta, n;

		e.op = *p++;
		if (get(&p, end, &delta))
			return -1;
		seq += delta;
		if (!first && seq <= prev)
			return -1; /* must grow within a chunk */
		first = 0;
		prev = seq;
		e.seq = seq;
		switch (e.op) {
		case WIRE_EV_ALLOC:
		case WIRE_EV_ALLOC_W:
		case WIRE_EV_ALLOC_D:
			if (p >= end)
				return -1;
			e.kind = *p++;
			if (get(&p, end, &e.a) || get(&p, end, &e.b) || get(&p, end, &e.c))
				return -1;
			if (e.op == WIRE_EV_ALLOC_W && get(&p, end, &n))
				return -1;
			if (e.op == WIRE_EV_ALLOC_D) {
				e.c = pbase += (e.c >> 1) ^ -(e.c & 1);
				e.op = WIRE_EV_ALLOC;
				s->ndelta++;
			}
			break;
		case WIRE_EV_FREE:
		case WIRE_EV_FREE_D:
			if (get(&p, end, &e.a))
				return -1;
			if (e.op == WIRE_EV_FREE_D) {
				e.a = pbase += (e.a >> 1) ^ -(e.a & 1);
				e.op = WIRE_EV_FREE;
				s->ndelta++;
			}
			break;
		case WIRE_EV_NODE:
			if (get(&p, end, &e.a) || get(&p, end, &e.b) || get(&p, end, &e.c))
				return -1;
			break;
		case WIRE_EV_NOP:
			break;
		case WIRE_EV_MODULE: {
			uint64_t nseg, x, bl, pl;

			if (get(&p, end, &e.a) || get(&p, end, &nseg))
				return -1;
			for (uint64_t i = 0; i < nseg * 3; i++)
				if (get(&p, end, &x))
					return -1;
			if (get(&p, end, &bl) || bl > (uint64_t)(end - p))
				return -1;
			p += bl;
			if (get(&p, end, &pl) || pl > (uint64_t)(end - p))
				return -1;
			memcpy(e.path, p, pl < sizeof(e.path) - 1 ? pl : sizeof(e.path) - 1);
			p += pl;
			break;
		}
		case WIRE_EV_MODULE_DEL:
			if (get(&p, end, &e.a))
				return -1;
			break;
		default:
			return -1;
		}
		if (s->nev % 4096 == 0) {
			struct tev *ne = realloc(s->ev, (s->nev + 4096) * sizeof(*ne));

			if (!ne)
				return -1;
			s->ev = ne;
		}
		s->ev[s->nev++] = e;
	}
	return 0;
}

static __attribute__((unused)) int tstream_decode(const uint8_t *buf, size_t len, struct tstream *s)
{
	const uint8_t *p = buf, *end = buf + len;
	struct wire_header h;
	uint64_t el, cl;

	memset(s, 0, sizeof(*s));
	if (len < WIRE_HDR_FIXED)
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, WIRE_MAGIC, 8) || h.version != WIRE_VERSION || h.header_len > len)
		goto bad;
	s->pid = h.pid;
	p += WIRE_HDR_FIXED;
	if (get(&p, end, &el) || el > (uint64_t)(end - p) || el >= sizeof(s->exe))
		goto bad;
	memcpy(s->exe, p, el);
	p += el;
	if (get(&p, end, &cl) || cl > (uint64_t)(end - p))
		goto bad;
	p += cl;
	if ((size_t)(p - buf) != h.header_len)
		goto bad;
	while (p < end) {
		uint8_t type = *p++;
		uint64_t rl;
		const uint8_t *q;

		if (get(&p, end, &rl) || rl > WIRE_MAX_RECORD || rl > (uint64_t)(end - p))
			goto bad;
		q = p;
		p += rl;
		if (type != WIRE_REC_END)
			s->last_rec = type;
		if (type == WIRE_REC_CHUNK) {
			s->nchunks++;
			if (decode_chunk(q, p, s))
				goto bad;
		} else if (type == WIRE_REC_TICK) {
			uint64_t ns;

			s->nticks++;
			if (get(&q, p, &ns) || get(&q, p, &s->tick_rss) || get(&q, p, &s->tick_seq))
				goto bad;
		} else if (type == WIRE_REC_END) {
			s->have_end = 1;
			if (get(&q, p, &s->end_total) || get(&q, p, &s->end_reason) ||
			    get(&q, p, &s->end_restored) || get(&q, p, &s->end_left) ||
			    get(&q, p, &s->end_dropped))
				goto bad;
		}
	}
	return 0;
bad:
	s->error = 1;
	s->error_at = (size_t)(p - buf);
	return -1;
}

static __attribute__((unused)) void tstream_free(struct tstream *s)
{
	free(s->ev);
	s->ev = NULL;
}

static int by_seq(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static __attribute__((unused)) struct tev *tstream_by_seq(const struct tstream *s)
{
	struct tev *v = malloc((s->nev + 1) * sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, s->ev, s->nev * sizeof(*v));
	qsort(v, s->nev, sizeof(*v), by_seq);
	return v;
}

static __attribute__((unused)) void tstream_nodes(const struct tstream *s, struct tnodes *t)
{
	t->n = 1;
	for (size_t i = 0; i < s->nev; i++)
		if (s->ev[i].op == WIRE_EV_NODE && s->ev[i].a >= t->n)
			t->n = s->ev[i].a + 1;
	t->ip = calloc(t->n, sizeof(*t->ip));
	t->parent = calloc(t->n, sizeof(*t->parent));
	ck_assert(t->ip && t->parent);
	for (size_t i = 0; i < s->nev; i++) {
		if (s->ev[i].op == WIRE_EV_NODE) {
			t->ip[s->ev[i].a] = s->ev[i].c;
			t->parent[s->ev[i].a] = s->ev[i].b;
		}
	}
}

static __attribute__((unused)) void tnodes_free(struct tnodes *t)
{
	free(t->ip);
	free(t->parent);
	t->ip = t->parent = NULL;
}
