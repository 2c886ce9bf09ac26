/* tests/unit/check_interpret_wire.h - stream builder used by the interpret tests */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_CHECK_INTERPRET_WIRE_H
#define HEAPTAP_CHECK_INTERPRET_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "track/wire.h"

/* a growing byte buffer */
struct sbuf {
	uint8_t *p;
	size_t len, cap;
};

void sb_bytes(struct sbuf *b, const void *p, size_t n);
void sb_u8(struct sbuf *b, uint8_t v);
void sb_var(struct sbuf *b, uint64_t v);
void sb_free(struct sbuf *b);
/* stream header; cmd holds cmd_len bytes, args separated by NUL */
void sb_header(struct sbuf *b, uint32_t pid, uint32_t flags, const char *exe, const char *cmd,
	       size_t cmd_len);
void sb_record(struct sbuf *b, uint8_t type, const struct sbuf *payload);
void sb_tick(struct sbuf *b, uint64_t mono_ns, uint64_t rss, uint64_t seq);
/* SITES record of n exact site counts: v holds n triples (ip, calls, bytes) */
void sb_sites(struct sbuf *b, size_t n, const uint64_t *v);
/* END record with slots_restored 3, slots_left 0, events_dropped 0 */
void sb_end(struct sbuf *b, uint64_t total_seq, uint64_t reason);

/* one chunk being built: events must be added with growing seq */
struct chunkb {
	struct sbuf b;
	uint64_t seq;
	uint64_t pbase; /* ptr of the last ck_alloc_d / ck_free_d (WIRE_EV_*_D) */
};

void ck_begin(struct chunkb *c, uint64_t tid, uint64_t first_seq);
void ck_alloc(struct chunkb *c, uint64_t seq, uint8_t kind, uint64_t size, uint64_t trace,
	      uint64_t ptr);
void ck_alloc_w(struct chunkb *c, uint64_t seq, uint64_t size, uint64_t trace, uint64_t ptr,
		uint64_t weight);
void ck_free(struct chunkb *c, uint64_t seq, uint64_t ptr);
/* WIRE_EV_ALLOC_D / WIRE_EV_FREE_D: ptr as the zigzag distance from c->pbase */
void ck_alloc_d(struct chunkb *c, uint64_t seq, uint8_t kind, uint64_t size, uint64_t trace,
		uint64_t ptr);
void ck_free_d(struct chunkb *c, uint64_t seq, uint64_t ptr);
void ck_node(struct chunkb *c, uint64_t seq, uint64_t index, uint64_t parent, uint64_t ip);
void ck_nop(struct chunkb *c, uint64_t seq);
/* segs: nseg triples (vaddr, memsz, flags) */
void ck_module(struct chunkb *c, uint64_t seq, uint64_t base, size_t nseg, const uint64_t *segs,
	       const uint8_t *bid, size_t bid_len, const char *path);
void ck_module_del(struct chunkb *c, uint64_t seq, uint64_t base);
/* append the chunk as a record to b and free it */
void ck_end(struct sbuf *b, struct chunkb *c);

#endif
