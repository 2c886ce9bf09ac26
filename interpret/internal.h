/* interpret/internal.h - layouts shared by the files of interpret/ */
/* SPDX-License-Identifier: MIT */
/*
 * One struct itp_ctx holds a whole session: the input buffer, the reorder
 * heap of pending chunks, the maps (raw trace node -> recording trace,
 * ip -> ip index, (size, trace, kind) -> allocinfo, pointer -> live block,
 * tid -> thread slot), the module list, the tick queue and the counters.
 * Nothing here is shared between threads; itp_run is single-threaded.
 */
#ifndef HEAPTAP_INTERPRET_INTERNAL_H
#define HEAPTAP_INTERPRET_INTERNAL_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "interpret/interpret.h"
#include "recfile/recfile.h"
#include "track/wire.h"
#include "util/clock.h"
#include "util/hash.h"

#define ITP_BUF_MIN (128u << 10)	      /* input buffer at first: holds a block's rest (run.c) */
#define ITP_BUF_SIZE (4u << 20)		      /* at most: > 2 records + a block */
#define ITP_REORDER_LIMIT ((size_t)256 << 20) /* default pending bytes before a gap is skipped */
#define ITP_MAX_TABLE (1u << 28)	      /* cap on nodes, ips, allocinfos, threads */
#define ITP_MAX_LIVE ((uint64_t)1 << 30)      /* cap on live pointers */
#define ITP_MAX_THREADS (1u << 20)	      /* distinct tids with their own slot */
#define ITP_MAX_SEGS 256		      /* PT_LOAD entries of one module */
#define ITP_MAX_BUILD_ID 255
#define ITP_MAX_PATH 4096
#define ITP_MAX_TICKS_QUEUED (1u << 20)
#define ITP_MAX_INLINE 64 /* links of one symbol chain */

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
	if ((m->n + 1) * 2 > m->cap) {
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

/* ---------------------------------------------------------------- */
/* modules (modules.c)                                               */

struct itp_seg {
	uint64_t vaddr, memsz, flags;
};

struct itp_module {
	char *path;	  /* as the target named it: shown, never opened (symbolize.c) */
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t base;	 /* load bias */
	uint64_t lo, hi; /* [lo, hi): runtime addresses covered by PT_LOAD */
	struct itp_seg *seg;
	size_t nseg;
	uint64_t seq_add; /* sequence number of its MODULE event */
	uint64_t seq_del; /* of its MODULE_DEL, UINT64_MAX while loaded */
	uint32_t rec_idx; /* recording module index */
	uint32_t next_same_base; /* index + 1 of the next older loaded module at base, 0 = none */
	uint32_t pin;	  /* index + 1 of its file in itp_ctx.pins, 0 = not pinned */
};

struct itp_modules {
	struct itp_module **v;
	size_t n, cap;
	struct itp_map by_base; /* base -> newest module announced at it (modules.c) */
};

/* itp_module_free - free one decoded module. Accepts NULL. */
void itp_module_free(struct itp_module *m);
/* itp_modules_add - append m (owned from then on); 0, -ENOMEM or -E2BIG. */
int itp_modules_add(struct itp_modules *t, struct itp_module *m);
/*
 * itp_modules_del - mark the newest loaded module at base, loaded at or
 * before seq, removed at seq; 0 or -ENOENT. Looks at a bounded number of
 * modules whatever the stream sent.
 */
int itp_modules_del(struct itp_modules *t, uint64_t base, uint64_t seq);
void itp_modules_free(struct itp_modules *t);

/*
 * Which module held an ip when it was first seen, for a batch of ips at
 * once (modules.c): built from the modules, then one sweep in sequence
 * order answers every query in O(log n) each, however the ranges overlap.
 */
struct itp_modindex {
	uint64_t *pts;	/* the distinct bounds of all module ranges, sorted */
	size_t npts;
	size_t leaves;	/* power of two >= npts */
	uint64_t *live; /* per tree node: (stamp << 32) | module + 1 assigned last (0 = none) */
	uint32_t *ever; /* per tree node: module + 1 with the newest seq_add covering it */
};

struct itp_modq {
	uint64_t ip, seq; /* the ip and the sequence number of its first trace node */
	uint32_t idx;	  /* the caller's */
	long mod;	  /* out: index in itp_modules.v, -1 = none */
};

/* itp_modindex_build - index t's module ranges; 0 or -ENOMEM (x then empty). */
int itp_modindex_build(struct itp_modindex *x, const struct itp_modules *t);
/*
 * itp_modindex_resolve - set q[i].mod for each query: the module loaded at
 * q[i].seq that covers q[i].ip, else the newest module that ever covered
 * it, else -1. Sorts q by seq. Stops early (the rest -1) once *stop >= 2.
 * 0 or -ENOMEM.
 */
int itp_modindex_resolve(struct itp_modindex *x, const struct itp_modules *t, struct itp_modq *q,
			 size_t nq, volatile sig_atomic_t *stop);
void itp_modindex_free(struct itp_modindex *x);

/* ---------------------------------------------------------------- */
/* module files pinned while the session runs (pin.c)               */

/*
 * A module is what the target maps, not what its stream says: when a
 * MODULE event is applied, the mapping at the module's first segment in
 * /proc/PID/maps is opened through /proc/PID/map_files (the mapped inode:
 * no path is resolved, so no FIFO, device or symlink), and symbolization
 * reads that fd. One fd per distinct (dev, inode).
 */
#define ITP_MAX_PINS 4096
#define ITP_MAX_MODULE_FILE ((uint64_t)4 << 30) /* bytes of a module or debug file read */

struct itp_pin {
	int fd;
	uint64_t dev, ino; /* as /proc/PID/maps shows them */
};

struct itp_maps_ent {
	uint64_t start, end, dev, ino;
	uint32_t path_off; /* into itp_pins.paths, UINT32_MAX = none */
};

struct itp_pins {
	struct itp_pin *v;
	size_t n, cap;
	struct itp_map by_file;	   /* hash of (dev, inode) -> index in v (a collision: not shared) */
	struct itp_maps_ent *maps; /* the last read of /proc/PID/maps, sorted by start */
	size_t nmaps, cap_maps;
	char *paths;		   /* NUL-terminated paths of maps entries */
	size_t paths_len, paths_cap;
	uint64_t read_at_ns, read_ns; /* when maps was last read, and how long it took */
	uint32_t *retry;	   /* module indices left unpinned because maps was read recently */
	size_t nretry;
	int denied;		   /* map_files refused us (not root): the verified path instead */
	uint64_t pinned, failed;   /* modules pinned, modules that could not be */
};

struct itp_ctx;
/*
 * itp_pin_module - pin module k of c->mods (opt->pid > 0, else nothing);
 * a module that cannot be pinned keeps pin 0. Never fails the session.
 */
void itp_pin_module(struct itp_ctx *c, uint32_t k);
/* itp_pin_retry - pin the modules put off because maps was read moments ago. */
void itp_pin_retry(struct itp_ctx *c);
void itp_pins_free(struct itp_pins *p);
/*
 * itp_elf_fd_ok - check that fd is a regular file of at most
 * ITP_MAX_MODULE_FILE bytes that starts with the ELF magic (libdwfl would
 * otherwise decompress gzip, bzip2, xz or zstd images). 0 or -errno; fd
 * is left open either way.
 */
int itp_elf_fd_ok(int fd);
/*
 * itp_open_debug - the separate debug file of build-id under /usr/lib/debug
 * (and, given a root directory fd, under that root's /usr/lib/debug,
 * resolved inside it), checked as itp_elf_fd_ok; an fd or -errno.
 */
int itp_open_debug(int root_fd, const uint8_t *id, size_t len, const char *suffix);
/* itp_reopen_regular - an O_RDONLY fd on what O_PATH fd pfd names, if a regular file; or -errno. */
int itp_reopen_regular(int pfd);

/* ---------------------------------------------------------------- */
/* decoded events and pending chunks (parse.c, reorder.c)            */

struct itp_ev {
	uint64_t seq;
	uint64_t a, b, c, d; /* per op, see parse.c */
	uint32_t op;	     /* enum wire_ev_op */
	uint32_t kind;	     /* ALLOC: enum wire_kind */
};

struct itp_chunk {
	struct itp_ev *ev;
	size_t n, pos;
	size_t cap;    /* events ev has room for */
	uint32_t slot; /* thread slot of the chunk's tid */
	size_t bytes;  /* accounted in itp_ctx.pending_bytes */
	struct itp_chunk *next_spare; /* on itp_ctx.spare once drained */
};

/*
 * Drained chunks kept for the next park (order.c): a busy two-thread stream
 * parks about every other chunk, and a fresh malloc of a few hundred KiB
 * each time made the heap grow and shrink (brk, page faults) per chunk.
 */
#define ITP_SPARE_CHUNKS 8

struct itp_heap {
	struct itp_chunk **v; /* min-heap by v[i]->ev[v[i]->pos].seq */
	size_t n, cap;
};

int itp_heap_push(struct itp_heap *h, struct itp_chunk *c);
/* itp_heap_fix_top - restore the heap after the top chunk's key grew. */
void itp_heap_fix_top(struct itp_heap *h);
void itp_heap_pop(struct itp_heap *h);
static inline uint64_t itp_heap_min(const struct itp_heap *h)
{
	return h->n ? h->v[0]->ev[h->v[0]->pos].seq : UINT64_MAX;
}
/* itp_chunk_free - free a chunk and any module it still owns. Accepts NULL. */
void itp_chunk_free(struct itp_chunk *c);
struct itp_ctx;
/* itp_chunks_free_spare - free the drained chunks kept for reuse. */
void itp_chunks_free_spare(struct itp_ctx *c);

struct itp_tick {
	uint64_t time_ns, rss, seq;
};

struct itp_thread {
	uint64_t last_alloc_no; /* alloc_no of its last allocation, UINT64_MAX before one */
};

struct itp_ipinfo {
	uint64_t ip;
	uint64_t seq; /* sequence number of the first node that named it */
};

/* ---------------------------------------------------------------- */
/* exact counts per call site of a sampled session (sites.c)         */

#define ITP_MAX_SITES (1u << 20) /* distinct site ips kept; more go to ip 0 */

struct itp_ctx;

struct itp_site {
	uint64_t ip; /* 0 = sites without an ip (the library's overflow slot) */
	uint64_t calls, bytes;
};

struct itp_sites {
	struct itp_map idx; /* ip -> index in v */
	struct itp_site *v;
	size_t n, cap;
	uint64_t calls, bytes; /* totals */
	uint64_t records;      /* SITES records seen */
};

/* itp_sites_parse - add one WIRE_REC_SITES payload; 0 or a negative enum itp_err. */
int itp_sites_parse(struct itp_ctx *c, const uint8_t *p, const uint8_t *end);
/* itp_sites_write - put every site's ip and sums into the recording (before symbolizing). */
int itp_sites_write(struct itp_ctx *c);
void itp_sites_free(struct itp_sites *s);

/* ---------------------------------------------------------------- */
/* snapshot sums (agg.c)                                             */

struct itp_agg {
	struct itp_snap_trace *t; /* by recording trace index */
	size_t nt, cap_t;
	uint64_t *ips;		  /* by ip index */
	size_t nips, cap_ips;
	struct {
		uint32_t trace;
		uint64_t size;
	} *info;		  /* by allocinfo index */
	size_t cap_info;
	uint64_t last_ns;	  /* elapsed_ns of the last snapshot */
	/* calibration to the exact site counts (sampled sessions) */
	struct itp_agg_cum {
		uint64_t bytes, objects; /* weighted allocations since the start */
	} *cum;			  /* by trace index */
	size_t cap_cum;
	struct itp_agg_cum *site_last; /* per site index: its exact counts at the last snapshot */
	size_t cap_site_last;
	size_t nsite_last;	  /* sites (indices below) the last snapshot calibrated */
	struct itp_agg_cum *site_s; /* per site index: its samples' sums when its counts last came */
	size_t cap_site_s;
	/* per trace: unweighted (fully traced) allocations since the last snapshot of a trace
	 * that also has samples (the rate was changed during the session) */
	struct itp_agg_cum *exact;
	size_t cap_exact;
};

int itp_agg_trace(struct itp_ctx *c, uint32_t idx, uint32_t parent, uint32_t ip);
int itp_agg_ip(struct itp_ctx *c, uint32_t idx, uint64_t ip);
/* itp_agg_alloc - bytes = weight (weighted != 0, a sample) or size. */
int itp_agg_alloc(struct itp_ctx *c, uint32_t info, uint32_t trace, uint64_t size, uint64_t bytes,
		  int weighted);
/* itp_agg_free - temp: the block was temporary (its thread allocated nothing since). */
void itp_agg_free(struct itp_ctx *c, uint32_t info, uint64_t bytes, int temp);
/* itp_agg_sites - a SITES record was added: note each site's sample sums of this moment. */
int itp_agg_sites(struct itp_ctx *c);
/* itp_agg_snapshot - call opt->snapshot with the sums, then restart "allocated since". */
void itp_agg_snapshot(struct itp_ctx *c, uint64_t now_ns);
void itp_agg_free_all(struct itp_agg *g);

/* ---------------------------------------------------------------- */
/* names of snapshot addresses, cached for the session (snapsym.c)   */

struct itp_snapsym {
	struct itp_map by_ip;	   /* ip -> index in ent */
	struct itp_snapsym_ent {
		uint32_t first, n; /* lines[first, first + n) */
	} *ent;
	size_t nent, cap_ent;
	struct itp_snap_line *lines; /* strings point into strs */
	size_t nlines, cap_lines;
	struct itp_map str_ids;	   /* string hash (+ probe) -> index in strs */
	char **strs;
	size_t nstrs, cap_strs;
	uint64_t str_bytes;	   /* bytes the strings take */
	uint64_t named;		   /* entries with a function name */
	uint64_t ns;		   /* time spent symbolizing */
};

/*
 * itp_snapsym_view - the symbol chain of each of ips[0, n) into *out (n
 * entries, malloc'd, to free after the snapshot callback; NULL with
 * no_symbols). Addresses not seen before are named first, all in one call
 * of itp_symbolize with the session's ip table swapped for them; the names
 * are kept for the session, so each address costs one lookup once. An
 * address that cannot be named is kept unnamed. 0 or -ENOMEM.
 */
int itp_snapsym_view(struct itp_ctx *c, const uint64_t *ips, size_t n,
		     struct itp_snap_frames **out);
/* itp_snapsym_bytes - the memory the cache holds. */
uint64_t itp_snapsym_bytes(const struct itp_snapsym *s);
void itp_snapsym_free(struct itp_snapsym *s);

/* ---------------------------------------------------------------- */
/* the input queue: a reader thread drains the socket (inq.c)        */

#define ITP_INQ_LIMIT ((size_t)64 << 20) /* default bytes of queued blocks */
#define ITP_INQ_BLOCK ((size_t)128 << 10) /* bytes a block holds: the step of back-pressure */
#define ITP_INQ_MIN_READ ((size_t)16 << 10) /* a new block once the tail has less room */
#define ITP_INQ_IDLE_MS 100 /* a take that waited this long in vain frees the spare blocks */
_Static_assert(ITP_INQ_BLOCK <= ITP_BUF_MIN, "run.c copies the rest of a block into its buffer");
#define ITP_INQ_STALL_MS 5000 /* interpreter took nothing this long, bytes waiting: stop reading */

struct itp_inq;

/*
 * itp_inq_start - start a reader thread that reads fd into at most limit
 * bytes of blocks (0 = ITP_INQ_LIMIT; at least two blocks). If the thread
 * cannot be created, itp_inq_take reads fd itself. 0, or -errno (no queue).
 */
int itp_inq_start(struct itp_inq **q, int fd, size_t limit);
/*
 * itp_inq_take - copy up to cap bytes, in stream order, into dst, waiting
 * at most timeout_ms for some. Returns the bytes copied (> 0), 0 at EOF
 * (after every byte was taken), -EAGAIN when nothing came in time, -EINTR
 * when a signal interrupted the wait, or -errno of a failed read (after
 * every byte read before it was taken).
 */
ssize_t itp_inq_take(struct itp_inq *q, void *dst, size_t cap, int timeout_ms);
/*
 * itp_inq_peek - the oldest bytes not taken yet, in place: *p and *len, the
 * rest of the oldest block (contiguous, at most ITP_INQ_BLOCK). With have ==
 * 0 it waits as itp_inq_take and returns 1 (bytes), 0 (EOF, all taken) or
 * -errno (-EAGAIN, -EINTR, a read error). With have > 0 (the caller looked
 * at that many bytes and needs more of the same block): 1 when the block
 * now holds more than have, else 2 at once, *len = have (copy them out
 * with itp_inq_take). The bytes stay in place until itp_inq_consume.
 */
int itp_inq_peek(struct itp_inq *q, const uint8_t **p, size_t *len, size_t have, int timeout_ms);
/* itp_inq_consume - n of the peeked bytes are taken (the block is reused once all are). */
void itp_inq_consume(struct itp_inq *q, size_t n);
/* itp_inq_full_ns - time the reader has waited for room so far, the current wait included. */
uint64_t itp_inq_full_ns(struct itp_inq *q);
/* itp_inq_set_stall - change ITP_INQ_STALL_MS for this queue (tests). */
void itp_inq_set_stall(struct itp_inq *q, unsigned ms);
/* itp_inq_ended - 1 once the reader saw EOF or a failed read (the bytes before it may still wait). */
int itp_inq_ended(struct itp_inq *q);
/* itp_inq_stop - end the reader (it stops reading at once), free everything, give its numbers. */
void itp_inq_stop(struct itp_inq *q, struct itp_input *st);

/* ---------------------------------------------------------------- */
/* the session                                                       */

#include "interpret/xframe_internal.h"

struct itp_ctx {
	const struct itp_options *opt;
	struct itp_result *res;
	struct rec_writer *w;

	/* input */
	int have_header;
	int ended; /* WIRE_REC_END seen */
	struct wire_header hdr;
	char *exe, *cmdline; /* cmdline with args joined by spaces */

	/* decoded events of the chunk being parsed */
	struct itp_ev *scratch;
	size_t scratch_cap;

	/* ordering */
	uint64_t next_seq; /* every smaller seq is applied or skipped */
	uint64_t nallocs;  /* rec_put_alloc calls that succeeded: rec_writer_nallocs(), without the call */
	struct itp_heap heap;
	struct itp_chunk *spare; /* drained chunks for reuse, at most ITP_SPARE_CHUNKS */
	size_t nspare;
	size_t pending_bytes, reorder_limit;
	struct itp_tick *ticks; /* FIFO ring */
	size_t tick_head, tick_n, tick_cap;
	uint64_t tick_wait; /* seq of the oldest queued tick, UINT64_MAX if none */

	/* state */
	struct itp_nodes nodes; /* raw node index -> recording trace index */
	struct itp_map ipmap;	/* ip -> ip index */
	struct itp_ipinfo *ips;
	size_t nips, ips_cap;
	struct itp_infos infos;
	struct itp_ptrmap ptrs;
	struct itp_map tids; /* tid -> thread slot */
	struct itp_thread *threads;
	size_t nthreads, threads_cap;
	struct itp_modules mods;
	struct itp_pins pins;	/* module files, when opt->pid is set (pin.c) */
	struct itp_sites sites; /* sampling mode: exact counts per call site */
	struct itp_agg agg;	/* snapshot mode: sums per trace */
	struct itp_snapsym snapsym; /* snapshot mode: names of the addresses */
	struct itp_xframes xf;	/* foreign-frame definitions (xframe.c) */
	struct itp_mem mem;	/* the tables' budget */
	int discard;		/* the budget was reached: records are skipped until END */
	int sym_paths;		/* the symbolizer may open the stream's paths (symchild.c) */

	/* numbers */
	struct itp_status st;
	uint64_t last_tick_ns; /* time of the last tick written */
	uint64_t end_mono_ns;  /* our CLOCK_MONOTONIC when END arrived, 0 before */
	uint64_t peak_rss;
	uint64_t total_seq; /* from END, else 0 */
	uint64_t events_dropped;
};

/* itp_fail - record the first error (err > 0) with a printf-style detail; returns -err. */
int itp_fail(struct itp_ctx *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* itp_out_fail - record a writer failure (rc is a negative rec_err); returns -ITP_E_OUTPUT. */
int itp_out_fail(struct itp_ctx *c, int rc, const char *what);

/* ctx.c */
int itp_ctx_init(struct itp_ctx *c, const struct itp_options *opt, struct itp_result *res);
/* itp_default_budget - the default of itp_options.max_memory: a quarter of the RAM, >= ITP_MEM_MIN. */
uint64_t itp_default_budget(void);
/*
 * itp_budget - split opt->max_memory (or the default) into the tables', the
 * reorder window's and the input queue's shares (reorder or input may be NULL).
 */
void itp_budget(const struct itp_options *opt, uint64_t *tables, size_t *reorder, size_t *input);
void itp_ctx_free(struct itp_ctx *c);

/*
 * parse.c: itp_parse - consume whole records (and first the header) from
 * [buf, buf + len); *used gets the bytes consumed (a record cut by the end of
 * buf is left for the next call). Returns 0, or a negative enum itp_err after
 * which nothing more may be fed, except -ITP_E_BUDGET: *used then ends after
 * the record that failed, and with c->discard set the stream goes on, its
 * records skipped until END.
 */
int itp_parse(struct itp_ctx *c, const uint8_t *buf, size_t len, size_t *used);

/* order.c */
/*
 * itp_order_chunk - apply or park c->scratch[0, n), one chunk's decoded
 * events; a parked rest takes the scratch buffer with it (c->scratch is
 * then another, maybe smaller, buffer).
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

/* dwarf_scopes.c: function address ranges of each CU seen, to find scopes fast */
struct itp_fn_range {
	uint64_t lo, hi;  /* [lo, hi) in DWARF addresses */
	uint64_t die_off; /* the DW_TAG_subprogram */
};

struct itp_cu_fns {
	struct itp_fn_range *r; /* sorted by lo */
	size_t n;
};

struct itp_cu_cache {
	struct itp_map by_off; /* CU DIE offset -> index in v */
	struct itp_cu_fns *v;
	size_t n, cap;
};

#define ITP_MAX_DEPTH 256 /* nesting of scopes followed below a function */

#ifdef _LIBDW_H
/*
 * itp_dwarf_scopes - the scopes containing pc (a DWARF address) in cu, from
 * the out-of-line subprogram (path[0]) inwards through lexical blocks and
 * inlined subroutines. Returns how many were stored (0 if no function
 * covers pc). The first call for a CU indexes its functions into cc.
 */
int itp_dwarf_scopes(struct itp_cu_cache *cc, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *path, int max);
#endif
void itp_cu_cache_free(struct itp_cu_cache *cc);

/* symtab.c: ELF function symbols of one module, sorted */
struct itp_sym {
	uint64_t lo, hi;  /* runtime addresses */
	const char *name; /* owned by libdwfl */
	int rank;	  /* 0 global, 1 weak, 2 local */
};

struct itp_symtab {
	struct itp_sym *v;
	size_t n;
	int built;
};

#ifdef _LIBDWFL_H
/* itp_symtab_lookup - the function symbol covering ip, or NULL; indexes mod on first use. */
const char *itp_symtab_lookup(struct itp_symtab *t, Dwfl_Module *mod, uint64_t ip);
#endif
void itp_symtab_free(struct itp_symtab *t);

/*
 * symbolize.c: itp_symbolize - resolve the module and the symbols of every
 * ip in c->ips and write them with rec_put_symbol; 0 or a negative enum
 * itp_err. Works on a copy of the session holding other ips and writer
 * (snapshots); leaves nothing allocated in c.
 */
int itp_symbolize(struct itp_ctx *c);

/* one ip to symbolize: its module (index in c->mods.v, -1 = none) and its index */
struct itp_symq {
	long mod;
	uint64_t ip;
	uint32_t idx;
};

/* receives the chain of v[i] (n links, valid during the call); 0 or a negative enum itp_err */
typedef int (*itp_sym_sink)(void *arg, size_t i, const struct rec_sym *chain, size_t n);
/*
 * itp_sym_batch - read ELF and DWARF for v[0, nv) (sorted by module and
 * address) and hand each ip's chain to sink, in order; the ips after a
 * second stop (*stop >= 2) get empty chains. root_fd: the target's root
 * (opt->sysroot) opened by the caller, or -1 to open it here. Returns
 * sink's first error.
 */
int itp_sym_batch(struct itp_ctx *c, const struct itp_symq *v, size_t nv, itp_sym_sink sink,
		  void *arg, volatile sig_atomic_t *stop, int root_fd);
/* itp_sym_put - write q's chain into the recording (counts an unnamed one). */
int itp_sym_put(struct itp_ctx *c, const struct itp_symq *q, const struct rec_sym *chain, size_t n);
/*
 * symchild.c: itp_symchild_run - itp_sym_batch in a child process (dropped
 * to opt->sym_uid/sym_gid with opt->sym_drop, no_new_privs, address-space
 * and CPU limits), the chains written here as they come. A child that
 * dies, hangs or hits a limit leaves the rest of the ips as addresses
 * (res->sym_error says why). 0 or a negative enum itp_err of the writer.
 */
int itp_symchild_run(struct itp_ctx *c, const struct itp_symq *v, size_t nv);

/*
 * itp_clock_elapsed - raise st.elapsed_ns to the time since the header's
 * start_mono_ns by our clock at mono (CLOCK_MONOTONIC is system-wide), when
 * that is plausible; ticks alone miss the end of a short run.
 */
void itp_clock_elapsed(struct itp_ctx *c, uint64_t mono);

/* meta.c */
int itp_meta_start(struct itp_ctx *c);
int itp_meta_end(struct itp_ctx *c);

/* demangle.cc: malloc'd demangled C++ name, or NULL if not a mangled name. */
char *itp_demangle(const char *name);

#endif /* HEAPTAP_INTERPRET_INTERNAL_H */
