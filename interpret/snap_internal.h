/* interpret/snap_internal.h - site counts of sampled sessions, snapshot sums and their names */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_INTERPRET_SNAP_INTERNAL_H
#define HEAPTAP_INTERPRET_SNAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "interpret/interpret.h"
#include "interpret/table_internal.h"

struct itp_ctx;

/* ---------------------------------------------------------------- */
/* exact counts per call site of a sampled session (sites.c)         */

#define ITP_MAX_SITES (1u << 20) /* distinct site ips kept; more go to ip 0 */


struct itp_site {
	uint64_t ip; /* 0 = sites without an ip (the library's overflow slot) */
	uint64_t calls, bytes;
};

/* A site's counts as they were at the end of a round (see itp_sites_tick). */
struct itp_site_at {
	uint64_t calls, bytes;
};

struct itp_sites {
	struct itp_map idx; /* ip -> index in v */
	struct itp_site *v;
	size_t n, cap;
	uint64_t calls, bytes; /* totals */
	uint64_t records;      /* SITES records seen */
	/*
	 * Rounds: the library sends the counts of one look (maybe several
	 * records) and then a TICK, whose time is the look's. cur and prev are
	 * every site's counts at the last two rounds' ends (ncur, nprev sites),
	 * at stream times cur_ns and prev_ns: the rates (itp_sites_rate).
	 */
	int pending;		/* records came since the last round's end */
	uint64_t rounds;	/* rounds ended */
	struct itp_site_at *cur, *prev;
	size_t ncur, nprev, cap_at;
	uint64_t cur_ns, prev_ns;
};

/* itp_sites_parse - add one WIRE_REC_SITES payload; 0 or a negative enum itp_err. */
int itp_sites_parse(struct itp_ctx *c, const uint8_t *p, const uint8_t *end);
/* itp_sites_tick - a TICK at stream time time_ns: it ends the round of counts before it. 0 or -ENOMEM. */
int itp_sites_tick(struct itp_sites *s, uint64_t time_ns);
/*
 * itp_sites_rate - site i's calls and bytes per second over the last round
 * (the growth of its counts between the last two rounds' ends over the
 * time between them). 0, or -EAGAIN when fewer than two rounds ended.
 */
int itp_sites_rate(const struct itp_sites *s, size_t i, long double *calls_ps,
		   long double *bytes_ps);
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
 * no_symbols), and *xout (inside the same allocation) the foreign-frame
 * marks of each. Addresses not seen before are named first, all in one call
 * of itp_symbolize with the session's ip table swapped for them; the names
 * are kept for the session, so each address costs one lookup once. An
 * address that cannot be named is kept unnamed. With name_new 0 nothing is
 * named: new addresses get empty entries and *unnamed (if not NULL) their
 * count. 0 or -ENOMEM.
 */
int itp_snapsym_view(struct itp_ctx *c, const uint64_t *ips, size_t n, int name_new,
		     struct itp_snap_frames **out, struct itp_snap_xframe **xout, size_t *unnamed);
/* itp_snapsym_bytes - the memory the cache holds. */
uint64_t itp_snapsym_bytes(const struct itp_snapsym *s);
void itp_snapsym_free(struct itp_snapsym *s);

#endif /* HEAPTAP_INTERPRET_SNAP_INTERNAL_H */
