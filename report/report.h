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
 * per event. rpt_summary.estimated says so. With exact per-call-site counts
 * in the recording, every site's weights are calibrated so its calls and
 * bytes equal the exact ones, and sites without a sample get a trace node
 * of their own (report/calibrate.c).
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
	uint64_t peak_stderr;	  /* sampled: standard error of the peak heap estimate there; 0 = exact */
	uint64_t peak_event;	  /* events applied when the peak was reached (0: none) */
	uint64_t peak_time_ns;	  /* time of the first tick at or after the peak */
	int peak_time_known;	  /* 0 when no tick followed the peak */
	uint64_t peak_rss;	  /* highest RSS of any tick */
	int attached;		  /* meta "attached" is non-zero */
	int truncated;		  /* 0, or the enum rec_err that cut the recording short */
	int sampled;		  /* any allocation carried a weight, or sample_bytes != 0 */
	uint64_t sample_bytes;	  /* meta "sample_bytes" */
	int estimated;		  /* calls are estimates (sample_bytes != 0 or weights seen) */
	int site_counts;	  /* the recording has exact per-call-site counts (sampling mode) */
	uint64_t exact_calls;	  /* their sums: every allocation made while sampling, exact */
	uint64_t exact_bytes;
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
	/*
	 * 0: CPython's own evaluation-loop frames (_PyEval_EvalFrameDefault,
	 * the calls into it) are left out of a stack where a Python frame
	 * stands for them (report/fold.c); 1: every native frame is kept
	 * (heaptap report --native-all).
	 */
	int native_all;
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
	int xframe;		/* 1: a foreign (Java, Python) frame: function, file, line are its own */
	unsigned lang;		/* foreign: enum wire_lang (0 unknown) */
	unsigned xkind;		/* foreign: enum wire_xkind (0 unknown) */
};

/*
 * rpt_lang_name - "python", "java", or "foreign" for another language
 * value (0 included); rpt_xkind_name - "interpreted", "compiled",
 * "inlined", "native", or NULL for 0 and unknown values (the tiered kinds
 * are "compiled" or "inlined"); rpt_xkind_tier - "C1", "C2" or NULL;
 * rpt_xkind_mark - what the bracket marks of the reports say:
 * rpt_xkind_name's word, "compiled, inlined", "compiled C2" or
 * "compiled C2, inlined" (C1 alike), NULL as rpt_xkind_name.
 */
const char *rpt_lang_name(unsigned lang);
const char *rpt_xkind_name(unsigned kind);
const char *rpt_xkind_tier(unsigned kind);
const char *rpt_xkind_mark(unsigned kind);

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
 * rpt_write_html - one self-contained HTML page (no network, no other file:
 * CSS, JS and the data are inline): the summary, heap and RSS over time
 * with the peak, an interactive flame graph by calls, bytes, peak or
 * leaked, the top p->top call sites per cost and the leak list
 * (report/html.c). Aggregated: its size hardly grows with the events.
 * Replays the events once more (the heap curve). Returns 0, -ENOMEM or -EIO.
 */
int rpt_write_html(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
	__attribute__((warn_unused_result));

/*
 * rpt_write_heaptrack - the recording as heaptrack's interpreted data file
 * (the text heaptrack_interpret writes, format version 3), zstd-compressed,
 * for heaptrack_print and heaptrack_gui (report/heaptrack.c says what maps
 * and what cannot). Returns 0, -ENOMEM or -EIO.
 */
int rpt_write_heaptrack(FILE *f, const struct rpt_data *d) __attribute__((warn_unused_result));

/*
 * rpt_load_for_heaptrack - what rpt_write_heaptrack needs and no more: the
 * tables and the summary's metadata, without replaying the events (costs,
 * sites and the peak stay empty), unless the recording is sampled, which
 * needs rpt_analyze. Returns 0 and *out (free with rpt_free), or -ENOMEM.
 */
int rpt_load_for_heaptrack(const struct rec_reader *r, const struct rpt_options *opt,
			   struct rpt_data **out) __attribute__((warn_unused_result));

/* The number each folded stack carries (rpt_write_collapsed). */
enum rpt_fold_cost {
	RPT_FOLD_CALLS = 0, /* allocation calls */
	RPT_FOLD_BYTES,	    /* bytes allocated */
	RPT_FOLD_PEAK,	    /* bytes live at the heap peak */
	RPT_FOLD_LEAKED,    /* bytes never freed */
	RPT_FOLD_TEMPORARY, /* temporary allocations */
};

/*
 * rpt_write_collapsed - folded stacks, "outer;...;inner N" per trace with a
 * non-zero cost c, for flamegraph.pl, inferno and speedscope (format in
 * report/collapsed.c). Returns 0, -ENOMEM or -EIO.
 */
int rpt_write_collapsed(FILE *f, const struct rpt_data *d, enum rpt_fold_cost c)
	__attribute__((warn_unused_result));

/*
 * rpt_write_massif - valgrind massif's output file (for ms_print and
 * massif-visualizer): the heap over time, the peak and the end of the
 * recording as detailed snapshots (report/massif.c). p->path goes into the
 * "desc:" line (may be NULL). Returns 0, -ENOMEM or -EIO.
 */
int rpt_write_massif(FILE *f, const struct rpt_data *d, const struct rpt_print_options *p)
	__attribute__((warn_unused_result));

/*
 * rpt_format_size - bytes in human units into buf: "123 B", "1.5 KiB",
 * "2.0 MiB", "3.1 GiB", "1.0 TiB" (binary units, one decimal). Returns buf.
 */
char *rpt_format_size(uint64_t bytes, char *buf, size_t len);

/*
 * pprof builder: a profile.proto (google/pprof) built piece by piece, with
 * no knowledge of recordings, so a live aggregation (sampled snapshots) can
 * use it as well as `heaptap report --format pprof`. Encoded by hand
 * (report/pprof_pb.c, a bounded writer); docs/report.md says why.
 *
 *   p = rpt_pprof_new();
 *   rpt_pprof_sample_type(p, "alloc_objects", "count"); ... (or rpt_pprof_heap_types)
 *   m = rpt_pprof_mapping(p, &map)          0 = unknown module
 *   l = rpt_pprof_location(p, m, ip, lines, nlines)
 *   rpt_pprof_sample(p, values, locs, nlocs)   leaf first; nvalues = sample types
 *   rpt_pprof_write(p, f, 1); rpt_pprof_free(p);
 *
 * Strings are copied. Functions are interned by (name, system name, file),
 * locations by (mapping, address) when address != 0 (a second call returns
 * the first id and ignores its lines). Ids start at 1. Builder
 * functions return 0 or a negative errno (-ENOMEM, -EINVAL for a bad id or
 * a value count that differs from the sample types, -EFBIG past 1 GiB of
 * encoded profile); the id-returning ones return 0 and set errno instead.
 */
struct rpt_pprof;

/* One line of a location: the innermost (most inlined) first, the real function last. */
struct rpt_pprof_line {
	const char *function;	 /* human-readable (demangled) name; NULL = unknown */
	const char *system_name; /* e.g. the mangled name; NULL = same as function */
	const char *file;	 /* source file; NULL = unknown */
	int64_t line;		 /* 0 = unknown */
};

struct rpt_pprof_map {
	uint64_t start, limit;	 /* address range [start, limit) */
	uint64_t file_offset;	 /* file offset of start */
	const char *path;	 /* file name or "[vdso]"; NULL = "" */
	const uint8_t *build_id; /* raw bytes, written as lowercase hex; may be NULL */
	size_t build_id_len;
	int has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

/* Sample values of a heap profile, the order rpt_pprof_heap_types() declares. */
enum rpt_pprof_heap_value {
	RPT_PPROF_ALLOC_OBJECTS = 0, /* allocations (count) */
	RPT_PPROF_ALLOC_SPACE,	     /* bytes allocated */
	RPT_PPROF_INUSE_OBJECTS,     /* allocations live at the profile's moment */
	RPT_PPROF_INUSE_SPACE,	     /* bytes live at the profile's moment */
	RPT_PPROF_HEAP_NVALUES,
};

/* rpt_pprof_new - an empty profile; NULL and errno on failure. Free with rpt_pprof_free. */
struct rpt_pprof *rpt_pprof_new(void);

/* rpt_pprof_free - free p. Accepts NULL. */
void rpt_pprof_free(struct rpt_pprof *p);

/* rpt_pprof_sample_type - declare the next sample value (before the first sample). */
int rpt_pprof_sample_type(struct rpt_pprof *p, const char *type, const char *unit)
	__attribute__((warn_unused_result));

/*
 * rpt_pprof_heap_types - declare alloc_objects/count, alloc_space/bytes,
 * inuse_objects/count, inuse_space/bytes (enum rpt_pprof_heap_value order)
 * and make inuse_space the default, as Go's heap profiles do.
 */
int rpt_pprof_heap_types(struct rpt_pprof *p) __attribute__((warn_unused_result));

/* rpt_pprof_default_type - the sample type shown by default (a declared type name). */
int rpt_pprof_default_type(struct rpt_pprof *p, const char *type) __attribute__((warn_unused_result));

/* rpt_pprof_time - profile start (ns since the epoch, 0 = unknown) and duration in ns. */
void rpt_pprof_time(struct rpt_pprof *p, uint64_t time_ns, uint64_t duration_ns);

/* rpt_pprof_period - sampled profile: one sample per `period` units of type/unit (e.g. "space", "bytes"). */
int rpt_pprof_period(struct rpt_pprof *p, const char *type, const char *unit, uint64_t period)
	__attribute__((warn_unused_result));

/* rpt_pprof_comment - add a free-form comment line (go tool pprof -comments shows them). */
int rpt_pprof_comment(struct rpt_pprof *p, const char *text) __attribute__((warn_unused_result));

/* rpt_pprof_mapping - add a module; returns its id (>= 1), or 0 with errno set. */
uint64_t rpt_pprof_mapping(struct rpt_pprof *p, const struct rpt_pprof_map *m);

/*
 * rpt_pprof_location - a location at address in mapping (0 = none) with
 * nlines lines, innermost first (nlines may be 0: unsymbolized). Returns its
 * id (>= 1), or 0 with errno set (EINVAL: unknown mapping id).
 */
uint64_t rpt_pprof_location(struct rpt_pprof *p, uint64_t mapping, uint64_t address,
			    const struct rpt_pprof_line *lines, size_t nlines);

/*
 * rpt_pprof_sample - add a sample: values[nvalues] (as many as sample
 * types) at the stack locs[nlocs], leaf first (ids from rpt_pprof_location).
 */
int rpt_pprof_sample(struct rpt_pprof *p, const int64_t *values, size_t nvalues, const uint64_t *locs,
		     size_t nlocs) __attribute__((warn_unused_result));

/*
 * rpt_pprof_write - write the profile to f, gzip-compressed when gzip != 0
 * (what pprof files on disk are), else the bare protobuf. p is unchanged
 * and can be written again. Returns 0, -ENOMEM or -EIO.
 */
int rpt_pprof_write(const struct rpt_pprof *p, FILE *f, int gzip) __attribute__((warn_unused_result));

/*
 * rpt_write_pprof - the recording d as a gzip'd heap profile: one sample per
 * trace with allocations (alloc_* = everything allocated, inuse_* = what was
 * still live at the end of the recording, i.e. "leaked"), one location per
 * ip, a mapping per module. Sampled recordings give their estimates and the
 * sampling period. Returns 0, -ENOMEM or -EIO.
 */
int rpt_write_pprof(FILE *f, const struct rpt_data *d) __attribute__((warn_unused_result));

/*
 * Diff of two recordings (heaptap report --diff OLD NEW, report/diff.c).
 * Call sites are matched by what they are, not where they were loaded
 * (ASLR moves them): the module's file name and the site's symbol chain
 * (function, file and line of every inlined link); an unsymbolized site by
 * module file name and offset in it; a site without module by its address.
 * Sites of one recording with the same key (two ips of one source line)
 * add up.
 */
enum rpt_diff_by {
	RPT_DIFF_BYTES = 0, /* bytes allocated (default) */
	RPT_DIFF_CALLS,	    /* allocation calls */
	RPT_DIFF_PEAK,	    /* bytes live at the heap peak */
	RPT_DIFF_LEAKED,    /* bytes not freed at the end */
	RPT_DIFF_BY_MAX,
};

/* One matched call site: what it is (innermost link) and its costs in both recordings. */
struct rpt_diff_site {
	const char *key;      /* the matching key (owned by the diff) */
	const char *function; /* innermost link, NULL if unknown (strings owned by a reader) */
	const char *file;
	uint32_t line;
	const char *module;   /* module path, NULL if unknown */
	uint64_t offset;      /* ip - module base, valid with module */
	int xframe;	      /* 1: a foreign (Java, Python) frame */
	unsigned lang, xkind; /* foreign: enum wire_lang, enum wire_xkind */
	int in_old, in_new;   /* the site exists in that recording */
	struct rpt_costs old, new;
};

struct rpt_diff;

/*
 * rpt_diff_new - match the call sites of old and new and sort, by the
 * change of `by`, the ones that grew (largest increase first) and the ones
 * that shrank (largest decrease first). Both analyses must outlive the diff.
 * Returns 0 and *out (free with rpt_diff_free), or -ENOMEM / -EINVAL.
 */
int rpt_diff_new(const struct rpt_data *old, const struct rpt_data *new, enum rpt_diff_by by,
		 struct rpt_diff **out) __attribute__((warn_unused_result));

/* rpt_diff_free - free df. Accepts NULL. */
void rpt_diff_free(struct rpt_diff *df);

/* rpt_diff_grew / rpt_diff_shrank - the sorted lists; *n gets their length. Owned by df. */
const struct rpt_diff_site *const *rpt_diff_grew(const struct rpt_diff *df, size_t *n);
const struct rpt_diff_site *const *rpt_diff_shrank(const struct rpt_diff *df, size_t *n);

/* What a written diff shows. */
struct rpt_diff_print {
	const char *old_path, *new_path; /* names shown; may be NULL */
	size_t top;			 /* sites per list */
};

/* rpt_write_diff_text / _json - the diff for people / as one JSON object. 0 or -EIO. */
int rpt_write_diff_text(FILE *f, const struct rpt_diff *df, const struct rpt_diff_print *p)
	__attribute__((warn_unused_result));
int rpt_write_diff_json(FILE *f, const struct rpt_diff *df, const struct rpt_diff_print *p)
	__attribute__((warn_unused_result));

/* ------------------------------------------------------------------ */
/* Text safe for a terminal (escape.c)                                   */

/*
 * rpt_escape - the len bytes of in, as a terminal may show them, into out
 * (cap bytes, NUL-terminated; cut at a whole character or escape): printable
 * ASCII and well-formed UTF-8 pass; control bytes, DEL, malformed UTF-8, C1
 * and bidirectional controls become \xNN per byte, a backslash \\. Returns
 * the length written. Every string another party chose goes through it
 * before a terminal sees it (cli_msg, the text report).
 */
size_t rpt_escape(char *out, size_t cap, const char *in, size_t len);

/* rpt_fputs_escaped - fputs(s, f) with s escaped as by rpt_escape (any length). */
void rpt_fputs_escaped(const char *s, FILE *f);

#endif /* HEAPTAP_REPORT_H */
