/* tests/unit/check_interpret_wire.c - build event streams (track/wire.h) for interpret tests */
/* SPDX-License-Identifier: MIT */
/*
 * A tiny writer of the wire format, independent of track/, so the tests of
 * interpret/ state the format themselves. Used by check_interpret.c and by
 * its --write-seeds mode (the fuzz corpus in tests/data/stream/).
 * Everything aborts on out-of-memory: these are tests.
 */
#include <stdlib.h>
#include <string.h>

#include "check_interpret_wire.h"

void sb_bytes(struct sbuf *b, const void *p, size_t n)
{
	if (!n)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void sb_u8(struct sbuf *b, uint8_t v)
{
	sb_bytes(b, &v, 1);
}

void sb_var(struct sbuf *b, uint64_t v)
{
	uint8_t tmp[WIRE_VARINT_MAX];

	sb_bytes(b, tmp, wire_put_varint(tmp, v));
}

void sb_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void sb_header(struct sbuf *b, uint32_t pid, uint32_t flags, const char *exe, const char *cmd,
	       size_t cmd_len)
{
	struct wire_header h;
	struct sbuf tail = {0};

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, WIRE_MAGIC, 8);
	h.version = WIRE_VERSION;
	h.flags = flags;
	h.pid = pid;
	h.page_size = 4096;
	h.start_realtime_ns = 1700000000000000000ull;
	h.start_mono_ns = 0; /* unknown: durations come from ticks alone */
	sb_var(&tail, strlen(exe));
	sb_bytes(&tail, exe, strlen(exe));
	sb_var(&tail, cmd_len);
	sb_bytes(&tail, cmd, cmd_len);
	h.header_len = (uint32_t)(WIRE_HDR_FIXED + tail.len);
	sb_bytes(b, &h, sizeof(h));
	sb_bytes(b, tail.p, tail.len);
	sb_free(&tail);
}

void sb_record(struct sbuf *b, uint8_t type, const struct sbuf *payload)
{
	sb_u8(b, type);
	sb_var(b, payload ? payload->len : 0);
	if (payload && payload->len)
		sb_bytes(b, payload->p, payload->len);
}

void sb_tick(struct sbuf *b, uint64_t mono_ns, uint64_t rss, uint64_t seq)
{
	struct sbuf p = {0};

	sb_var(&p, mono_ns);
	sb_var(&p, rss);
	sb_var(&p, seq);
	sb_record(b, WIRE_REC_TICK, &p);
	sb_free(&p);
}

void sb_sites(struct sbuf *b, size_t n, const uint64_t *v)
{
	struct sbuf p = {0};

	sb_var(&p, n);
	for (size_t i = 0; i < 3 * n; i++)
		sb_var(&p, v[i]);
	sb_record(b, WIRE_REC_SITES, &p);
	sb_free(&p);
}

void sb_end(struct sbuf *b, uint64_t total_seq, uint64_t reason)
{
	struct sbuf p = {0};

	sb_var(&p, total_seq);
	sb_var(&p, reason);
	sb_var(&p, 3);
	sb_var(&p, 0);
	sb_var(&p, 0);
	sb_record(b, WIRE_REC_END, &p);
	sb_free(&p);
}

void ck_begin(struct chunkb *c, uint64_t tid, uint64_t first_seq)
{
	memset(c, 0, sizeof(*c));
	c->seq = first_seq;
	sb_var(&c->b, tid);
	sb_var(&c->b, first_seq);
}

static void ev_head(struct chunkb *c, uint8_t op, uint64_t seq)
{
	sb_u8(&c->b, op);
	sb_var(&c->b, seq - c->seq);
	c->seq = seq;
}

/* alloc_head - what ALLOC, ALLOC_W and ALLOC_D share: op, seq, kind, size, trace */
static void alloc_head(struct chunkb *c, uint8_t op, uint64_t seq, uint8_t kind, uint64_t size,
		       uint64_t trace)
{
	ev_head(c, op, seq);
	sb_u8(&c->b, kind);
	sb_var(&c->b, size);
	sb_var(&c->b, trace);
}

void ck_alloc(struct chunkb *c, uint64_t seq, uint8_t kind, uint64_t size, uint64_t trace,
	      uint64_t ptr)
{
	alloc_head(c, WIRE_EV_ALLOC, seq, kind, size, trace);
	sb_var(&c->b, ptr);
}

void ck_alloc_w(struct chunkb *c, uint64_t seq, uint64_t size, uint64_t trace, uint64_t ptr,
		uint64_t weight)
{
	alloc_head(c, WIRE_EV_ALLOC_W, seq, WIRE_KIND_MALLOC, size, trace);
	sb_var(&c->b, ptr);
	sb_var(&c->b, weight);
}

void ck_free(struct chunkb *c, uint64_t seq, uint64_t ptr)
{
	ev_head(c, WIRE_EV_FREE, seq);
	sb_var(&c->b, ptr);
}

static void ptr_d(struct chunkb *c, uint64_t ptr)
{
	uint64_t d = ptr - c->pbase;

	c->pbase = ptr;
	sb_var(&c->b, wire_zigzag(d));
}

void ck_alloc_d(struct chunkb *c, uint64_t seq, uint8_t kind, uint64_t size, uint64_t trace,
		uint64_t ptr)
{
	alloc_head(c, WIRE_EV_ALLOC_D, seq, kind, size, trace);
	ptr_d(c, ptr);
}

void ck_free_d(struct chunkb *c, uint64_t seq, uint64_t ptr)
{
	ev_head(c, WIRE_EV_FREE_D, seq);
	ptr_d(c, ptr);
}

void ck_node(struct chunkb *c, uint64_t seq, uint64_t index, uint64_t parent, uint64_t ip)
{
	ev_head(c, WIRE_EV_NODE, seq);
	sb_var(&c->b, index);
	sb_var(&c->b, parent);
	sb_var(&c->b, ip);
}

void ck_nop(struct chunkb *c, uint64_t seq)
{
	ev_head(c, WIRE_EV_NOP, seq);
}

void ck_module(struct chunkb *c, uint64_t seq, uint64_t base, size_t nseg, const uint64_t *segs,
	       const uint8_t *bid, size_t bid_len, const char *path)
{
	size_t i;

	ev_head(c, WIRE_EV_MODULE, seq);
	sb_var(&c->b, base);
	sb_var(&c->b, nseg);
	for (i = 0; i < nseg * 3; i++)
		sb_var(&c->b, segs[i]);
	sb_var(&c->b, bid_len);
	sb_bytes(&c->b, bid, bid_len);
	sb_var(&c->b, strlen(path));
	sb_bytes(&c->b, path, strlen(path));
}

void ck_module_del(struct chunkb *c, uint64_t seq, uint64_t base)
{
	ev_head(c, WIRE_EV_MODULE_DEL, seq);
	sb_var(&c->b, base);
}

void ck_end(struct sbuf *b, struct chunkb *c)
{
	sb_record(b, WIRE_REC_CHUNK, &c->b);
	sb_free(&c->b);
}
