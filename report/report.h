/* report/report.h - analysis of a recording and its text and JSON reports */
/* SPDX-License-Identifier: MIT */
/*
 * report/ reads a recording only through recfile/recfile.h. rpt_analyze()
 * replays the event stream once (in parallel over contiguous ranges of event
 * chunks) and computes, per allocation info, trace, call site and allocation
 * function, how many calls and bytes were allocated, what was still live at
 * the moment of the global heap peak, what was never freed and how many
 * allocations were temporary. The definitions are in docs/report.md.
 *
 * A call site is the innermost instruction pointer of a trace: traces with
 * the same innermost ip merge into one site, which remembers its traces so a
 * report can show the costliest backtraces of each site.
 *
 * Sampled recordings: an allocation event may carry a weight (the bytes the
 * sample stands for). Bytes are then sums of weights, a free subtracts the
 * mean weight of its allocation info, and calls are estimated as weight/size
 * per event. rpt_summary.estimated says so.
 *
 * Nothing here prints on its own: the rpt_write_* functions write the report
 * to the stream the command layer hands in. Ownership: struct rpt_data owns
 * everything it returns; it keeps pointers into the reader, which must stay
 * open until rpt_free().
 */
#ifndef HEAPTAP_REPORT_H
#define HEAPTAP_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "recfile/recfile.h"

/* Which cost a list of call sites is sorted by. */
enum rpt_cost {
	RPT_COST_CALLS = 0,  /* allocation calls */
	RPT_COST_PEAK,	     /* bytes live at the global heap peak */
	RPT_COST_LEAKED,     /* bytes never freed */
	RPT_COST_TEMPORARY,  /* temporary allocations (count) */
	RPT_COST_MAX,
};

/* Costs of an allocation info, a trace, a call site or a whole recording. */
struct rpt_costs {
	uint64_t calls;		  /* allocation calls (estimated when sampled) */
	uint64_t bytes;		  /* bytes allocated in total (weights when sampled) */
	uint64_t peak;		  /* bytes live at the global peak */
	uint64_t peak_calls;	  /* allocations live at the global peak */
	uint64_t leaked;	  /* bytes not freed at the end of the recording */
	uint64_t leaked_calls;	  /* allocations not freed */
	uint64_t temporary;	  /* temporary allocations (freed right away) */
	uint64_t temporary_bytes; /* their bytes */
};

struct rpt_summary {
	const char *command;	  /* meta "cmdline" (args joined by spaces), else exe; never NULL */
	const char *exe;	  /* meta "exe", "" if absent */
	uint64_t pid;		  /* meta "pid", 0 if absent */
	uint64_t duration_ns;	  /* last tick's time (or meta "duration_ns" if larger) */
	uint64_t events;	  /* events replayed */
	uint64_t dropped_events;  /* events the reader dropped as invalid */
	uint64_t frees;		  /* free events */
	struct rpt_costs total;	  /* totals over all allocations */
	uint64_t peak_event;	  /* events applied when the peak was reached (0: none) */
	uint64_t peak_time_ns;	  /* time of the first tick at or after the peak */
	int peak_time_known;	  /* 0 when no tick followed the peak */
	uint64_t peak_rss;	  /* highest RSS of any tick */
	int attached;		  /* meta "attached" is non-zero */
	int truncated;		  /* 0, or the enum rec_err that cut the recording short */
	int sampled;		  /* any allocation carried a weight, or sample_bytes != 0 */
	uint64_t sample_bytes;	  /* meta "sample_bytes" */
	int estimated;		  /* calls are estimates (sample_bytes != 0 or weights seen) */
	const char *end_reason;	  /* meta "end_reason" (exit, stop, error, truncated, ...); NULL if absent */
};

/* One call site. ip is an index into rec_ips(), or REC_NONE for the empty stack. */
struct rpt_site {
	uint32_t ip;
	uint32_t ntraces;	/* distinct traces (backtraces) merged into it */
	struct rpt_costs cost;
};

struct rpt_options {
	unsigned threads; /* worker threads for the replay; 0 = one per online CPU (at most 8) */
};

struct rpt_data;

/*
 * rpt_analyze - replay the recording r and compute every cost. A chunk that
 * fails to decode ends the replay there: what came before is kept and
 * rpt_summary.truncated is set (if the reader had not already said so).
 * Returns 0 and *out (free with rpt_free), or -ENOMEM with *out NULL.
 */
int rpt_analyze(const struct rec_reader *r, const struct rpt_options *opt, struct rpt_data **out)
	__attribute__((warn_unused_result));

/* rpt_free - free d. Accepts NULL. */
void rpt_free(struct rpt_data *d);

/* rpt_get_summary - the recording's summary; owned by d. */
const struct rpt_summary *rpt_get_summary(const struct rpt_data *d);

/*
 * rpt_function - costs of the allocation function kind (enum wire_kind,
 * 1..WIRE_KIND_MAX); kind 0 collects kinds the recording named that are not
 * known. Returns NULL for a kind out of range.
 */
const struct rpt_costs *rpt_function(const struct rpt_data *d, unsigned kind);

/* rpt_function_name - "malloc", "calloc", ... for kind; "unknown" otherwise. */
const char *rpt_function_name(unsigned kind);

/*
 * rpt_top_sites - the call sites with a non-zero cost c, costliest first
 * (ties: more calls, then lower ip index). *n gets how many there are (all
 * of them; the caller shows the first few). Owned by d.
 */
const struct rpt_site *const *rpt_top_sites(const struct rpt_data *d, enum rpt_cost c, size_t *n);

/*
 * rpt_site_traces - the traces merged into site s that have a non-zero cost
 * c, costliest first. Writes at most max trace indices to out and returns
 * how many it wrote; *total (may be NULL) gets how many there are.
 */
size_t rpt_site_traces(const struct rpt_data *d, const struct rpt_site *s, enum rpt_cost c,
		       uint32_t *out, size_t max, size_t *total);

/* rpt_trace_costs - the costs of trace t (an index of rec_traces()); NULL if out of range. */
const struct rpt_costs *rpt_trace_costs(const struct rpt_data *d, uint32_t t);

/* rpt_cost_of - the field of k that c sorts by. */
uint64_t rpt_cost_of(const struct rpt_costs *k, enum rpt_cost c);

/* One frame of a symbolized backtrace (strings owned by the reader). */
struct rpt_frame {
	uint64_t ip;		/* the instruction pointer */
	const char *function;	/* NULL if unknown */
	const char *file;	/* NULL if unknown */
	uint32_t line;		/* 0 if unknown */
	const char *module;	/* module path, NULL if unknown */
	uint64_t offset;	/* ip - module base (valid when module != NULL) */
	int inlined;		/* 1: inlined into the next (outer) frame of the same ip */
};

/*
 * rpt_backtrace - expand trace t into frames, innermost first, each ip
 * giving its inlined links first and its real function last. Writes at most
 * max frames and returns how many the whole backtrace has (may exceed max).
 */
size_t rpt_backtrace(const struct rpt_data *d, uint32_t t, struct rpt_frame *out, size_t max);

/* What a written report shows. */
struct rpt_print_options {
	const char *path;	/* the recording's name, shown in the text header; may be NULL */
	size_t top;		/* call sites per list */
	size_t backtraces;	/* backtraces per call site, SIZE_MAX = all (text counts the rest) */
	size_t max_frames;	/* frames per backtrace in text (0 = all); JSON always has all */
};

/* rpt_write_text - the report for people. Returns 0 or -EIO when writing failed. */
int rpt_write_text(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
	__attribute__((warn_unused_result));

/*
 * rpt_write_json - the same numbers as one JSON object (schema in
 * heaptap-report(1) and docs/report.md; bytes are integers). Returns 0 or -EIO.
 */
int rpt_write_json(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
	__attribute__((warn_unused_result));

/*
 * rpt_format_size - bytes in human units into buf: "123 B", "1.5 KiB",
 * "2.0 MiB", "3.1 GiB", "1.0 TiB" (binary units, one decimal). Returns buf.
 */
char *rpt_format_size(uint64_t bytes, char *buf, size_t len);

#endif /* HEAPTAP_REPORT_H */
