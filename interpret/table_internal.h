/* interpret/table_internal.h - the session's tables: memory budget, maps, nodes, allocinfos, live pointers */
/* SPDX-License-Identifier: MIT */
/*
 * The tables that grow with what the stream sends, each with its budget
 * (struct itp_mem). map.c, nodes.c, infos.c and ptrmap.c need nothing else;
 * the lookups that run for every event are inline.
 */
#ifndef HEAPTAP_INTERPRET_TABLE_INTERNAL_H
#define HEAPTAP_INTERPRET_TABLE_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "util/hash.h"

#define ITP_MAX_TABLE (1u << 28)	      /* cap on nodes, ips, allocinfos, threads */
#define ITP_MAX_LIVE ((uint64_t)1 << 30)      /* cap on live pointers */

/* ---------------------------------------------------------------- */
/* the memory budget of the tables (itp_options.max_memory)          */

/*
 * Every table that grows with what the stream sends takes its bytes from
 * one budget before it grows (NULL: a table outside it, e.g. symbolization's
 * caches). Reaching the limit returns -EDQUOT, which ends the session
 * (ITP_E_BUDGET). Tables only grow until the session ends.
 */
struct itp_mem {
	uint64_t used, limit, peak;
};

#define ITP_MEM_MIN ((uint64_t)1 << 30) /* default budget at least, else a quarter of the RAM */

/* itp_mem_take - count bytes more; 0, or -EDQUOT (nothing counted) past the limit. */
static inline int itp_mem_take(struct itp_mem *m, uint64_t bytes)
{
	if (!m)
		return 0;
	if (bytes > m->limit - m->used)
		return -EDQUOT;
	m->used += bytes;
	if (m->used > m->peak)
		m->peak = m->used;
	return 0;
}

static inline void itp_mem_give(struct itp_mem *m, uint64_t bytes)
{
	if (m)
		m->used -= bytes < m->used ? bytes : m->used;
}

/* ---------------------------------------------------------------- */
/* u64 -> u32 hash map, open addressing, linear probing (map.c)      */

struct itp_map_ent {
	uint64_t key;
	uint64_t val; /* value + 1; 0 marks an empty slot */
};

struct itp_map {
	struct itp_map_ent *e; /* key and value side by side: one cache line per probe */
	size_t cap;	       /* power of two, or 0 */
	size_t n;
	struct itp_mem *mem;   /* budget, or NULL */
};

/* itp_map_get - 1 and *val when key is present, else 0. */
static inline int itp_map_get(const struct itp_map *m, uint64_t key, uint32_t *val)
{
	size_t mask, i;

	if (!m->cap)
		return 0;
	mask = m->cap - 1;
	for (i = util_fmix64(key) & mask;; i = (i + 1) & mask) {
		if (!m->e[i].val)
			return 0;
		if (m->e[i].key == key) {
			*val = (uint32_t)(m->e[i].val - 1);
			return 1;
		}
	}
}

/* itp_map_put - set key to val (val < UINT32_MAX). Returns 0, -ENOMEM or -EDQUOT. */
int itp_map_put(struct itp_map *m, uint64_t key, uint32_t val);
void itp_map_free(struct itp_map *m);

/* ---------------------------------------------------------------- */
/* raw trace-node index -> recording trace index (nodes.c)           */

/*
 * track/ hands out node indices from a counter (1, 2, 3, ...), so a plain
 * array indexed by the raw index is both smaller and faster than a hash;
 * indices far above what was seen (a hostile or unknown sender) go to the
 * hash instead, so the array never grows past a few times the node count.
 */
struct itp_nodes {
	uint32_t *direct; /* recording index + 1 by raw index; 0 = not there */
	size_t direct_cap;
	struct itp_map sparse;
	size_t n;
	struct itp_mem *mem; /* budget, or NULL */
};

static inline int itp_nodes_get(const struct itp_nodes *t, uint64_t raw, uint32_t *idx)
{
	if (raw < t->direct_cap && t->direct[raw]) {
		*idx = t->direct[raw] - 1;
		return 1;
	}
	return t->sparse.n ? itp_map_get(&t->sparse, raw, idx) : 0;
}

/* itp_nodes_put - add raw -> idx (raw not present yet). 0, -ENOMEM or -EDQUOT. */
int itp_nodes_put(struct itp_nodes *t, uint64_t raw, uint32_t idx);
void itp_nodes_free(struct itp_nodes *t);

/* ---------------------------------------------------------------- */
/* allocation infos, deduplicated (infos.c)                          */

/*
 * One slot: the key inline, so a lookup costs one cache miss; kind (4 bits,
 * enum wire_kind, 0 = unknown) and index + 1 (28 bits, 0 = empty slot)
 * share a word to keep the slot at 16 bytes.
 */
struct itp_info_ent {
	uint64_t size;
	uint32_t trace;
	uint32_t kind_idx;
};

#define ITP_INFO_IDX_BITS 28
#define ITP_MAX_INFOS ((1u << ITP_INFO_IDX_BITS) - 2)

struct itp_infos {
	struct itp_info_ent *tab;
	size_t cap; /* power of two, or 0 */
	size_t n;
	struct itp_mem *mem; /* budget, or NULL */
};

/*
 * The slot of (size, trace, kind) in a table of 2^bits slots: the top bits
 * of one multiply of the key folded to 64 bits (multiply-shift hashing).
 * The murmur finalizer used before cost three dependent steps more on every
 * allocation, while the lookup waits for the hash.
 */
static inline size_t itp_info_slot(uint64_t size, uint32_t trace, uint32_t kind, unsigned bits)
{
	uint64_t k = size ^ ((uint64_t)trace << 4 | kind) * 0xc2b2ae3d27d4eb4fULL;

	return (size_t)((k * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

/*
 * itp_infos_get - 1 and *idx when (size, trace, kind) is known, else 0.
 * Inline (as itp_map_get): it runs for every allocation.
 */
static inline int itp_infos_get(const struct itp_infos *t, uint64_t size, uint32_t trace,
				uint32_t kind, uint32_t *idx)
{
	uint32_t want = kind << ITP_INFO_IDX_BITS, mask_idx = (1u << ITP_INFO_IDX_BITS) - 1;
	size_t mask, i;

	if (!t->cap)
		return 0;
	mask = t->cap - 1;
	for (i = itp_info_slot(size, trace, kind, (unsigned)__builtin_ctzll(t->cap));
	     t->tab[i].kind_idx; i = (i + 1) & mask) {
		const struct itp_info_ent *f = &t->tab[i];

		if (f->size == size && f->trace == trace && (f->kind_idx & ~mask_idx) == want) {
			*idx = (f->kind_idx & mask_idx) - 1;
			return 1;
		}
	}
	return 0;
}

/*
 * itp_infos_find - index of (size, trace, kind), kind <= 15; *created is 1
 * when it is new (the caller then writes it). Returns 0 or -ENOMEM / -E2BIG.
 */
int itp_infos_find(struct itp_infos *t, uint64_t size, uint32_t trace, uint32_t kind, uint32_t *idx,
		   int *created);
void itp_infos_free(struct itp_infos *t);

/* ---------------------------------------------------------------- */
/* live pointers (ptrmap.c)                                          */

/*
 * 32 bytes, so two slots share a cache line and none straddles two. The
 * allocation's own number is alloc_no (one per applied allocation, like its
 * sequence number, so it also tells the temporary ones: struct itp_thread).
 */
struct itp_ptr {
	uint64_t ptr;	/* 0 = empty slot (a NULL block is never inserted) */
	uint64_t bytes; /* bytes it counts for: its weight if sampled, else its size */
	uint64_t alloc_no; /* rec_writer_nallocs() before its rec_put_alloc (free hint) */
	uint32_t info;	/* allocinfo index */
	uint32_t slot;	/* thread slot of the allocating thread */
};

struct itp_ptrmap {
	struct itp_ptr *v;
	size_t cap; /* power of two, or 0 */
	size_t n;
	struct itp_mem *mem; /* budget, or NULL */
};

/*
 * The pointer table's hot paths are inline (as itp_map_get): one put per
 * allocation, one take per free, and the calls were a measurable part of
 * an event's cost. Growth stays in ptrmap.c.
 */
static inline size_t itp_ptrmap_home(uint64_t ptr, size_t mask)
{
	/* blocks are 16-aligned: a multiplicative hash spreads the high bits */
	return (size_t)((ptr * 0x9e3779b97f4a7c15ULL) >> 20) & mask;
}

/*
 * The table grows at half full, and while it has at most this many slots
 * (1 MiB) at a quarter full: the probes of a put and a take, and the
 * backward shift of a take, end at the first empty slot, and the fewer
 * slots they pass, the fewer of their branches are mispredicted (the
 * replay of bench strings' stream, 4096 blocks live, took 5-9% less CPU;
 * the memory this costs is at most 1 MiB).
 */
#define ITP_PTRMAP_SPARSE_CAP ((size_t)1 << 15)

/* itp_ptrmap_grow - double the table (first: 256 slots). 0, -ENOMEM or -E2BIG. */
int itp_ptrmap_grow(struct itp_ptrmap *m);

/*
 * itp_ptrmap_set - insert or replace (ptr, bytes, alloc_no, info, slot);
 * *replaced says a live entry was overwritten. 0 or -errno. The fields come
 * as values, not as a struct: apply.c built one on its stack with 8-byte
 * stores and the copy read it back with 16-byte loads, which cannot be
 * forwarded from those stores (a stall of about a dozen cycles, twice, on
 * every allocation: a third of itp_apply_alloc's perf samples).
 */
static inline int itp_ptrmap_set(struct itp_ptrmap *m, uint64_t ptr, uint64_t bytes,
				 uint64_t alloc_no, uint32_t info, uint32_t slot, int *replaced)
{
	struct itp_ptr *s;
	size_t mask, i;

	*replaced = 0;
	if ((m->n + 1) * 2 > m->cap ||
	    (m->cap <= ITP_PTRMAP_SPARSE_CAP && (m->n + 1) * 4 > m->cap)) {
		int rc = itp_ptrmap_grow(m);

		if (rc)
			return rc;
	}
	mask = m->cap - 1;
	for (i = itp_ptrmap_home(ptr, mask); m->v[i].ptr; i = (i + 1) & mask)
		if (m->v[i].ptr == ptr) {
			*replaced = 1;
			break;
		}
	s = &m->v[i];
	s->ptr = ptr;
	s->bytes = bytes;
	s->alloc_no = alloc_no;
	s->info = info;
	s->slot = slot;
	m->n += !*replaced;
	return 0;
}

/* itp_ptrmap_put - itp_ptrmap_set of the fields of *e */
static inline int itp_ptrmap_put(struct itp_ptrmap *m, const struct itp_ptr *e, int *replaced)
{
	return itp_ptrmap_set(m, e->ptr, e->bytes, e->alloc_no, e->info, e->slot, replaced);
}

/*
 * itp_ptrmap_take - remove ptr, copying it to *out; 1 if found, else 0.
 * Backward shift: later entries of the run move into the hole when their
 * home slot does not lie cyclically in (hole, j], so no tombstones.
 */
static inline int itp_ptrmap_take(struct itp_ptrmap *m, uint64_t ptr, struct itp_ptr *out)
{
	size_t mask, i, j;

	if (!m->cap || !ptr)
		return 0;
	mask = m->cap - 1;
	for (i = itp_ptrmap_home(ptr, mask);; i = (i + 1) & mask) {
		if (!m->v[i].ptr)
			return 0;
		if (m->v[i].ptr == ptr)
			break;
	}
	*out = m->v[i];
	for (j = (i + 1) & mask; m->v[j].ptr; j = (j + 1) & mask) {
		size_t h = itp_ptrmap_home(m->v[j].ptr, mask);

		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->v[i].ptr = 0;
	m->n--;
	return 1;
}

void itp_ptrmap_free(struct itp_ptrmap *m);

#endif /* HEAPTAP_INTERPRET_TABLE_INTERNAL_H */
