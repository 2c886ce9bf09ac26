/* tests/lib/check_decode.h - an independent reader of track/'s event stream, for suites (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * The suites that run track/ (sessions over a socketpair in the test
 * process, or a child under LD_PRELOAD) check what the library sent with
 * this reader. It uses only track/wire.h, never track/'s encoder nor
 * interpret/, so an encoder bug and a matching decoder bug cannot hide
 * each other. (tests/lib/check_stream.h is the other direction: crafted
 * streams fed to itp_run.)
 *
 *   struct ck_dec s;
 *
 *   ck_assert_msg(ck_decode(buf, len, &s) == 0, "malformed stream at byte %zu: %s",
 *                 s.error_at, s.error);
 *   ... s.ev[0 .. s.nev), s.sites, s.end_total ...
 *   ck_dec_free(&s);
 *
 * ck_decode reads the header and every record of buf[0, len) and keeps:
 * the events of every CHUNK in stream order (struct ck_ev: ALLOC_D and
 * FREE_D come as ALLOC and FREE with their pointer restored, counted in
 * ndelta; ALLOC_W stays ALLOC_W, with its weight), the counts of the
 * SITES records summed per call site, the last TICK, the END. Records of
 * other types are skipped, as a reader must.
 *
 * It is strict where the producer is ours: magic and version, a header
 * whose parts add up to header_len, records within WIRE_MAX_RECORD,
 * sequence numbers that grow within a chunk, an event op it knows, a
 * SITES record that ends with its last site. It never reads past
 * buf + len: a cut anywhere inside a record (or the header) fails. On
 * failure it returns -1 with error (a short phrase: what was wrong) and
 * error_at (the offset of the record, or of the header, it was in); what
 * it decoded before stays in s for ck_dec_free.
 *
 * ck_dec_by_seq is a copy of the events in sequence order (free() it;
 * its MODULE paths are still s's); ck_ev_cmp_seq is that order for
 * qsort. ck_dec_nodes builds the trace tree the NODE events describe.
 *
 * Static inline: no build file lists it.
 */
#ifndef HEAPTAP_TESTS_LIB_CHECK_DECODE_H
#define HEAPTAP_TESTS_LIB_CHECK_DECODE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "track/wire.h"

/* One event of a chunk. Which fields mean something depends on op. */
struct ck_ev {
	uint64_t seq;
	uint32_t tid;
	uint8_t op;   /* enum wire_ev_op; never ALLOC_D or FREE_D (see above) */
	uint8_t kind; /* ALLOC, ALLOC_W: enum wire_kind */
	union {
		struct {
			uint64_t size, trace, ptr; /* ALLOC, ALLOC_W; FREE: ptr only */
			uint64_t weight;	   /* ALLOC_W; 0 for ALLOC */
		};
		struct {
			uint64_t index, parent, ip; /* NODE */
		};
		struct {
			uint64_t base; /* MODULE, MODULE_DEL */
			char *path;    /* MODULE: its path, NUL-terminated, owned by the ck_dec */
		};
	};
};

/* One call site's counts, summed over every SITES record. */
struct ck_site {
	uint64_t ip, calls, bytes;
};

/* A decoded stream. */
struct ck_dec {
	uint32_t pid;	/* the header's */
	char exe[4096]; /* the header's exe path */
	struct ck_ev *ev; /* every chunk's events, in stream order */
	size_t nev, cap;
	size_t nchunks;
	size_t ndelta;	       /* ALLOC_D and FREE_D events (decoded as ALLOC and FREE) */
	struct ck_site *sites; /* one per ip, in order of first appearance */
	size_t nsites, sites_cap;
	size_t nsites_records; /* SITES records */
	size_t nticks;
	uint64_t tick_rss, tick_seq; /* of the last TICK */
	int last_rec;		     /* type of the last record other than END */
	int have_end;
	uint64_t end_total, end_reason, end_restored, end_left, end_dropped;
	const char *error; /* NULL, or what was wrong (ck_decode returned -1) */
	size_t error_at;   /* where: the offset of the record or header it was in */
};

/* ck_get - one varint of [*p, end); 0, or -1 at the end of input (*p unchanged) */
static inline int ck_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return wire_get_varint(p, end, v);
}

/* ck_get_zz - a zigzag distance (ALLOC_D, FREE_D) from *base; moves *base to the result */
static inline int ck_get_zz(const uint8_t **p, const uint8_t *end, uint64_t *base, uint64_t *v)
{
	uint64_t z;

	if (ck_get(p, end, &z))
		return -1;
	*v = *base += wire_unzigzag(z);
	return 0;
}

static inline int ck_dec_push(struct ck_dec *s, const struct ck_ev *e)
{
	if (s->nev == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		struct ck_ev *ne = realloc(s->ev, cap * sizeof(*ne));

		if (!ne)
			return -1;
		s->ev = ne;
		s->cap = cap;
	}
	s->ev[s->nev++] = *e;
	return 0;
}

/* ck_dec_module - a MODULE event's body after its delta; e->path malloc'd */
static inline const char *ck_dec_module(const uint8_t **pp, const uint8_t *end, struct ck_ev *e)
{
	const uint8_t *p = *pp;
	uint64_t nseg, x, bl, pl;

	if (ck_get(&p, end, &e->base) || ck_get(&p, end, &nseg))
		return "module: cut";
	if (nseg > (uint64_t)(end - p) / 3)
		return "module: more segments than bytes";
	for (uint64_t i = 0; i < nseg * 3; i++)
		if (ck_get(&p, end, &x))
			return "module: segments cut";
	if (ck_get(&p, end, &bl) || bl > (uint64_t)(end - p))
		return "module: build id cut";
	p += bl;
	if (ck_get(&p, end, &pl) || pl > (uint64_t)(end - p))
		return "module: path cut";
	e->path = strndup((const char *)p, pl);
	if (!e->path)
		return "out of memory";
	*pp = p + pl;
	return NULL;
}

/* ck_dec_event - the body of one event after its op and delta, into e; NULL or what was wrong */
static inline const char *ck_dec_event(const uint8_t **pp, const uint8_t *end, uint64_t *pbase,
				       struct ck_ev *e, struct ck_dec *s)
{
	const uint8_t *p = *pp;
	const char *bad = NULL;

	switch (e->op) {
	case WIRE_EV_ALLOC:
	case WIRE_EV_ALLOC_W:
	case WIRE_EV_ALLOC_D:
		if (p == end)
			return "alloc: cut";
		e->kind = *p++;
		if (ck_get(&p, end, &e->size) || ck_get(&p, end, &e->trace))
			return "alloc: cut";
		if (e->op == WIRE_EV_ALLOC_D ? ck_get_zz(&p, end, pbase, &e->ptr)
					     : ck_get(&p, end, &e->ptr))
			return "alloc: cut";
		if (e->op == WIRE_EV_ALLOC_W && ck_get(&p, end, &e->weight))
			return "alloc: weight cut";
		if (e->op == WIRE_EV_ALLOC_D) {
			e->op = WIRE_EV_ALLOC;
			s->ndelta++;
		}
		break;
	case WIRE_EV_FREE:
		if (ck_get(&p, end, &e->ptr))
			return "free: cut";
		break;
	case WIRE_EV_FREE_D:
		if (ck_get_zz(&p, end, pbase, &e->ptr))
			return "free: cut";
		e->op = WIRE_EV_FREE;
		s->ndelta++;
		break;
	case WIRE_EV_NODE:
		if (ck_get(&p, end, &e->index) || ck_get(&p, end, &e->parent) ||
		    ck_get(&p, end, &e->ip))
			return "node: cut";
		break;
	case WIRE_EV_NOP:
		break;
	case WIRE_EV_MODULE:
		bad = ck_dec_module(&p, end, e);
		break;
	case WIRE_EV_MODULE_DEL:
		if (ck_get(&p, end, &e->base))
			return "module_del: cut";
		break;
	default:
		return "unknown event op";
	}
	*pp = p;
	return bad;
}

/* ck_dec_chunk - a CHUNK record's payload [p, end) */
static inline const char *ck_dec_chunk(const uint8_t *p, const uint8_t *end, struct ck_dec *s)
{
	uint64_t tid, seq, delta, pbase = 0; /* pbase: the chunk's last ALLOC_D/FREE_D pointer */
	int first = 1;

	if (ck_get(&p, end, &tid) || ck_get(&p, end, &seq))
		return "chunk: header cut";
	s->nchunks++;
	while (p < end) {
		struct ck_ev e = { .tid = (uint32_t)tid };
		const char *bad;

		e.op = *p++;
		if (ck_get(&p, end, &delta))
			return "chunk: delta cut";
		if (!first && delta == 0)
			return "chunk: sequence numbers do not grow";
		if (delta > UINT64_MAX - seq)
			return "chunk: sequence number past 2^64";
		first = 0;
		e.seq = seq += delta;
		bad = ck_dec_event(&p, end, &pbase, &e, s);
		if (!bad && ck_dec_push(s, &e))
			bad = "out of memory";
		if (bad) {
			if (e.op == WIRE_EV_MODULE)
				free(e.path);
			return bad;
		}
	}
	return NULL;
}

/* ck_dec_sites - a SITES record's payload: counts added to s->sites per ip */
static inline const char *ck_dec_sites(const uint8_t *p, const uint8_t *end, struct ck_dec *s)
{
	uint64_t n, ip, calls, bytes;

	if (ck_get(&p, end, &n))
		return "sites: cut";
	s->nsites_records++;
	for (uint64_t i = 0; i < n; i++) {
		size_t k;

		if (ck_get(&p, end, &ip) || ck_get(&p, end, &calls) || ck_get(&p, end, &bytes))
			return "sites: cut";
		for (k = 0; k < s->nsites && s->sites[k].ip != ip; k++)
			;
		if (k == s->sites_cap) {
			size_t cap = s->sites_cap ? s->sites_cap * 2 : 256;
			struct ck_site *ns = realloc(s->sites, cap * sizeof(*ns));

			if (!ns)
				return "out of memory";
			s->sites = ns;
			s->sites_cap = cap;
		}
		if (k == s->nsites)
			s->sites[s->nsites++] = (struct ck_site){ .ip = ip };
		s->sites[k].calls += calls;
		s->sites[k].bytes += bytes;
	}
	return p == end ? NULL : "sites: bytes after the last site";
}

/* ck_dec_record - one record's payload [q, end) of type; NULL or what was wrong */
static inline const char *ck_dec_record(uint8_t type, const uint8_t *q, const uint8_t *end,
					struct ck_dec *s)
{
	uint64_t ns;

	if (type != WIRE_REC_END)
		s->last_rec = type;
	switch (type) {
	case WIRE_REC_CHUNK:
		return ck_dec_chunk(q, end, s);
	case WIRE_REC_SITES:
		return ck_dec_sites(q, end, s);
	case WIRE_REC_TICK:
		s->nticks++;
		if (ck_get(&q, end, &ns) || ck_get(&q, end, &s->tick_rss) ||
		    ck_get(&q, end, &s->tick_seq))
			return "tick: cut";
		return NULL;
	case WIRE_REC_END:
		s->have_end = 1;
		if (ck_get(&q, end, &s->end_total) || ck_get(&q, end, &s->end_reason) ||
		    ck_get(&q, end, &s->end_restored) || ck_get(&q, end, &s->end_left) ||
		    ck_get(&q, end, &s->end_dropped))
			return "end: cut";
		return NULL;
	default:
		return NULL; /* a type this reader does not know: skipped */
	}
}

/* ck_dec_header - the header of buf[0, len); its length in *hl */
static inline const char *ck_dec_header(const uint8_t *buf, size_t len, struct ck_dec *s,
					size_t *hl)
{
	const uint8_t *p = buf + WIRE_HDR_FIXED, *end = buf + len;
	struct wire_header h;
	uint64_t el, cl;

	if (len < WIRE_HDR_FIXED)
		return "header: cut";
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, WIRE_MAGIC, 8))
		return "header: not the magic";
	if (h.version != WIRE_VERSION)
		return "header: another version";
	if (h.header_len > len || h.header_len > WIRE_MAX_HEADER)
		return "header: header_len past the end";
	s->pid = h.pid;
	if (ck_get(&p, end, &el) || el > (uint64_t)(end - p) || el >= sizeof(s->exe))
		return "header: exe cut";
	memcpy(s->exe, p, el);
	p += el;
	if (ck_get(&p, end, &cl) || cl > (uint64_t)(end - p))
		return "header: cmdline cut";
	p += cl;
	if ((size_t)(p - buf) != h.header_len)
		return "header: parts do not add up to header_len";
	*hl = h.header_len;
	return NULL;
}

/* ck_decode - decode buf[0, len) into *s: 0, or -1 with s->error and s->error_at */
static inline int ck_decode(const uint8_t *buf, size_t len, struct ck_dec *s)
{
	const uint8_t *p, *end = buf + len, *rec = buf;
	const char *bad;
	size_t hl = 0;

	memset(s, 0, sizeof(*s));
	bad = ck_dec_header(buf, len, s, &hl);
	for (p = buf + hl; !bad && p < end;) {
		uint8_t type;
		uint64_t rl;

		rec = p;
		type = *p++;
		if (ck_get(&p, end, &rl))
			bad = "record: length cut";
		else if (rl > WIRE_MAX_RECORD)
			bad = "record: longer than WIRE_MAX_RECORD";
		else if (rl > (uint64_t)(end - p))
			bad = "record: cut";
		else
			bad = ck_dec_record(type, p, p + rl, s);
		if (!bad)
			p += rl;
	}
	if (!bad)
		return 0;
	s->error = bad;
	s->error_at = (size_t)(rec - buf);
	return -1;
}

/* ck_dec_free - release what ck_decode allocated in s (also after it failed) */
static inline void ck_dec_free(struct ck_dec *s)
{
	for (size_t i = 0; i < s->nev; i++)
		if (s->ev[i].op == WIRE_EV_MODULE)
			free(s->ev[i].path);
	free(s->ev);
	free(s->sites);
	s->ev = NULL;
	s->sites = NULL;
	s->nev = s->cap = s->nsites = s->sites_cap = 0;
}

/* ck_ev_cmp_seq - qsort order of struct ck_ev by sequence number */
static inline int ck_ev_cmp_seq(const void *a, const void *b)
{
	const struct ck_ev *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ck_dec_by_seq - s's events sorted by sequence number: a malloc'd copy (NULL: no memory) */
static inline struct ck_ev *ck_dec_by_seq(const struct ck_dec *s)
{
	struct ck_ev *v = malloc((s->nev + 1) * sizeof(*v));

	if (!v)
		return NULL;
	memcpy(v, s->ev, s->nev * sizeof(*v));
	qsort(v, s->nev, sizeof(*v), ck_ev_cmp_seq);
	return v;
}

/* A stream's trace tree as its NODE events built it: per node index (< n), its ip and parent. */
struct ck_nodes {
	uint64_t *ip, *parent; /* calloc'd; 0 for an index no NODE named */
	size_t n;	       /* the largest index named + 1 */
};

/* ck_dec_nodes - the tree of s (a test failure when it does not fit in memory) */
static inline void ck_dec_nodes(const struct ck_dec *s, struct ck_nodes *t)
{
	t->n = 1;
	for (size_t i = 0; i < s->nev; i++)
		if (s->ev[i].op == WIRE_EV_NODE && s->ev[i].index >= t->n)
			t->n = s->ev[i].index + 1;
	t->ip = calloc(t->n, sizeof(*t->ip));
	t->parent = calloc(t->n, sizeof(*t->parent));
	ck_assert(t->ip && t->parent);
	for (size_t i = 0; i < s->nev; i++) {
		if (s->ev[i].op == WIRE_EV_NODE) {
			t->ip[s->ev[i].index] = s->ev[i].ip;
			t->parent[s->ev[i].index] = s->ev[i].parent;
		}
	}
}

/* ck_nodes_free - release t's arrays */
static inline void ck_nodes_free(struct ck_nodes *t)
{
	free(t->ip);
	free(t->parent);
	t->ip = t->parent = NULL;
}

#endif /* HEAPTAP_TESTS_LIB_CHECK_DECODE_H */
