/* interpret/internal.h - the session (struct itp_ctx) and what every file of interpret/ uses */
/* SPDX-License-Identifier: MIT */
/*
 * One struct itp_ctx holds a whole session: the input buffer, the reorder
 * heap of pending chunks, the maps (raw trace node -> recording trace,
 * ip -> ip index, (size, trace, kind) -> allocinfo, pointer -> live block,
 * tid -> thread slot), the module list, the tick queue and the counters.
 * Nothing here is shared between threads; itp_run is single-threaded.
 *
 * The layouts the session holds have headers of their own, included here:
 * table_internal.h (budget, maps, nodes, allocinfos, live pointers),
 * module_internal.h (modules and their pinned files), snap_internal.h
 * (site counts, snapshot sums and names), xframe_internal.h (foreign-frame
 * definitions). The parts only some files use
 * are included by those files: order_internal.h (ordering and applying
 * events), sym_internal.h (symbolization), inq_internal.h (the input
 * queue).
 */
#ifndef HEAPTAP_INTERPRET_INTERNAL_H
#define HEAPTAP_INTERPRET_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "interpret/interpret.h"
#include "interpret/module_internal.h"
#include "interpret/snap_internal.h"
#include "interpret/table_internal.h"
#include "interpret/xframe_internal.h"
#include "recfile/recfile.h"
#include "track/wire.h"
#include "util/clock.h"

#define ITP_REORDER_LIMIT ((size_t)256 << 20) /* default pending bytes before a gap is skipped */

/* ---------------------------------------------------------------- */
/* decoded events and pending chunks (parse.c, order.c)              */

struct itp_ev {
	uint64_t seq;
	uint64_t a, b, c, d; /* per op, see parse.c */
	uint32_t op;	     /* enum wire_ev_op */
	uint32_t kind;	     /* ALLOC: enum wire_kind */
};

/*
 * A parked chunk (order.c): key is the seq of its next event (the heap's
 * key). While little is pending its events stay decoded in ev[pos, n);
 * beyond that they are packed ("Packed events" in order.c: about 8 bytes
 * an event instead of a struct itp_ev's 48): the next one decoded in cur,
 * those after it in pk[off, len), last_c the pointer the next packed
 * ALLOC or FREE is a distance from, have_cur whether cur still waits.
 */
struct itp_chunk {
	uint64_t key;
	int packed;
	struct itp_ev *ev; /* decoded */
	size_t n, pos;
	size_t cap;	   /* events ev has room for */
	struct itp_ev cur; /* packed */
	uint8_t *pk;
	size_t off, len;
	size_t pk_cap; /* bytes pk has room for */
	uint64_t last_c;
	int have_cur;
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
	struct itp_chunk **v; /* min-heap by v[i]->key */
	size_t n, cap;
};

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
/* the session                                                       */

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
	uint8_t *pk_scratch; /* a chunk's rest being packed (order.c) */
	size_t pk_scratch_cap;

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

/* meta.c */
int itp_meta_start(struct itp_ctx *c);
int itp_meta_end(struct itp_ctx *c);

#endif /* HEAPTAP_INTERPRET_INTERNAL_H */
