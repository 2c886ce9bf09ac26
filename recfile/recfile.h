/* recfile/recfile.h - the recording file: streaming writer and bounded reader */
/* SPDX-License-Identifier: MIT */
/*
 * A recording is what interpret/ writes and report/ reads (docs/design.md
 * "The contracts"). The on-disk layout is documented in docs/recording.md
 * and heaptap(5); this header is the only way other folders touch it.
 *
 * Data model (every table is indexed from 0 in the order it was written):
 *
 *   strings     interned, string 0 is ""
 *   modules     path, load bias, size, build-id
 *   ips         distinct instruction pointers (call sites), each later given a
 *               module and a symbol chain (may be missing: a cut-short file,
 *               or nothing found)
 *   frames      symbol chain links: function, file, line, and the next outer
 *               frame of the same ip when inlined (REC_NONE ends the chain)
 *   traces      the trace tree: trace 0 is the root (no frame); trace i >= 1
 *               has a parent < i and an ip
 *   allocinfos  (size, trace, kind): what one allocation event points at
 *   events      alloc / free / free-temporary of an allocinfo, in the order
 *               they happened; sampled allocations carry a weight (bytes)
 *   ticks       (time, event index, rss): time and RSS at a point of the
 *               event stream
 *   meta        key -> value strings, a later value replaces an earlier one
 *
 * Ownership: the reader owns everything it returns; pointers stay valid until
 * rec_close(). Functions that return int return 0 or a negative enum rec_err
 * (as -REC_E_*); errno is not used for reasons. The *err of the create/open
 * calls and rec_truncated() hold the positive enum value (REC_E_*);
 * rec_strerror() accepts both signs.
 */
#ifndef HEAPTAP_RECFILE_H
#define HEAPTAP_RECFILE_H

#include <stddef.h>
#include <stdint.h>

#define REC_NONE UINT32_MAX

enum rec_err {
	REC_OK = 0,
	REC_E_IO,	 /* read/write/open failed (errno tells more) */
	REC_E_EXISTS,	 /* output exists: the writer never overwrites */
	REC_E_MAGIC,	 /* not a heaptap recording */
	REC_E_VERSION,	 /* a newer, unknown format version */
	REC_E_TRUNCATED, /* ended inside a chunk (the reader keeps what came before) */
	REC_E_CORRUPT,	 /* a chunk or record violates the format */
	REC_E_ZSTD,	 /* a chunk does not decompress */
	REC_E_NOMEM,
	REC_E_RANGE,	 /* an argument or index out of range (writer) */
	REC_E_MAX,
};

/* rec_strerror - a short lowercase phrase for err; never NULL. */
const char *rec_strerror(int err);

/* Allocation event kinds as stored. */
enum rec_ev_op {
	REC_EV_ALLOC = 0,
	REC_EV_FREE = 1,
	REC_EV_FREE_TEMP = 2, /* freed before its thread allocated anything else */
};

/* ------------------------------------------------------------------ */
/* Writer: used by interpret/. Not thread-safe; one writer per file.    */

struct rec_writer;

/*
 * rec_writer_create - create path (O_EXCL: never overwrites) and write the
 * file header. Returns NULL and sets *err on failure.
 */
struct rec_writer *rec_writer_create(const char *path, int *err);

/*
 * rec_writer_discard - a writer that takes every record and keeps nothing:
 * chunks are dropped instead of compressed and written (heaptap attach
 * --snapshot-every without a recording). Memory stays bounded as with a
 * file. Returns NULL and sets *err on failure.
 */
struct rec_writer *rec_writer_discard(int *err);

/*
 * One symbol as rec_put_symbol receives it (the arguments of that call),
 * for rec_writer_symbols. Returns 0 or a negative enum rec_err, which
 * rec_put_symbol returns.
 */
struct rec_sym;
typedef int (*rec_symbol_fn)(void *arg, uint32_t ip, uint32_t module, const struct rec_sym *chain,
			     size_t n);

/*
 * rec_writer_symbols - a discarding writer (as rec_writer_discard) whose
 * rec_put_symbol hands each symbol to fn(arg, ...) instead of storing it,
 * with no check of ip against rec_put_ip (the caller numbers its ips) and
 * no limit of one call per ip. The chain's strings are valid during the
 * call only. interpret/ lends it to its symbolizer to name the addresses
 * of live heap snapshots. Returns NULL and sets *err on failure.
 */
struct rec_writer *rec_writer_symbols(rec_symbol_fn fn, void *arg, int *err);

/* rec_put_meta - set key to value (both copied). A later call wins. */
int rec_put_meta(struct rec_writer *w, const char *key, const char *value);

/* rec_put_string - intern s (copied); *idx gets its index. Equal strings share one. */
int rec_put_string(struct rec_writer *w, const char *s, uint32_t *idx);

/* rec_put_module - append a module; *idx gets its index. */
int rec_put_module(struct rec_writer *w, const char *path, uint64_t base, uint64_t size,
		   const uint8_t *build_id, size_t build_id_len, uint32_t *idx);

/* rec_put_ip - append a distinct instruction pointer; *idx gets its index. */
int rec_put_ip(struct rec_writer *w, uint64_t ip, uint32_t *idx);

/* One link of a symbol chain, innermost (most inlined) first. */
struct rec_sym {
	const char *function; /* demangled; NULL if unknown */
	const char *file;     /* NULL if unknown */
	uint32_t line;	      /* 0 if unknown */
};

/*
 * rec_put_symbol - give ip (an index from rec_put_ip) its module (REC_NONE if
 * none) and symbol chain of n links (n may be 0). At most one call per ip.
 */
int rec_put_symbol(struct rec_writer *w, uint32_t ip, uint32_t module, const struct rec_sym *chain,
		   size_t n);

/*
 * rec_put_xframe - mark ip (an index from rec_put_ip) as a foreign frame
 * (track/wire.h "Foreign frames") of lang (enum wire_lang) and kind (enum
 * wire_xkind); its name, file and line are its rec_put_symbol chain (module
 * REC_NONE). The first call for an ip counts. A symbol sink
 * (rec_writer_symbols) ignores it.
 */
int rec_put_xframe(struct rec_writer *w, uint32_t ip, unsigned lang, unsigned kind);

/* rec_put_trace - append trace node (parent < next index, ip index); *idx gets its index (>= 1). */
int rec_put_trace(struct rec_writer *w, uint32_t parent, uint32_t ip, uint32_t *idx);

/* rec_put_allocinfo - append (size, trace, kind); *idx gets its index. The caller deduplicates. */
int rec_put_allocinfo(struct rec_writer *w, uint64_t size, uint32_t trace, uint32_t kind,
		      uint32_t *idx);

/* rec_put_alloc - an allocation of info; weight 0 = not sampled (the size counts once). */
int rec_put_alloc(struct rec_writer *w, uint32_t info, uint64_t weight);

/* rec_put_free - a free of an allocation of info; temporary per REC_EV_FREE_TEMP. */
int rec_put_free(struct rec_writer *w, uint32_t info, int temporary);

/*
 * rec_put_free_of - as rec_put_free, naming the allocation freed: alloc_no
 * is what rec_writer_nallocs() returned just before its rec_put_alloc. The
 * recording stays the same (a free stores only its info), but the writer
 * can then code frees by age, which makes a program that frees in the order
 * it allocated cost next to nothing. A wrong or unknown alloc_no (use
 * UINT64_MAX) costs only bytes.
 */
int rec_put_free_of(struct rec_writer *w, uint32_t info, int temporary, uint64_t alloc_no);

/*
 * rec_put_lane - the events put from now on come from thread (any number
 * that tells the process's threads apart, the same for a thread's life).
 * The recording stays the same (an event stores no thread), but the writer
 * can then count a free's age among its own thread's allocations, which
 * the threads' interleaving otherwise scrambles. It codes a chunk so only
 * when that saves more than the column of the events' threads (modulo 64)
 * costs. Not calling it puts every event on one thread. interpret/
 * calls it before each alloc and free with the event's thread slot.
 */
void rec_put_lane(struct rec_writer *w, uint32_t thread);

/* rec_writer_nallocs - allocation events written so far (the number the next one gets). */
uint64_t rec_writer_nallocs(const struct rec_writer *w);

/* rec_put_tick - at time_ns since start, RSS was rss bytes; index = events written so far. */
int rec_put_tick(struct rec_writer *w, uint64_t time_ns, uint64_t rss);

/*
 * rec_put_site_count - exact allocation counts of one call site (ip index
 * from rec_put_ip, or REC_NONE for sites without an ip) in a sampled
 * recording: calls and bytes of every allocation there, sampled or not.
 */
int rec_put_site_count(struct rec_writer *w, uint32_t ip, uint64_t calls, uint64_t bytes);

/*
 * rec_writer_flush - compress and write every pending chunk now (dependency
 * order: strings, modules, ips, symbols, traces, allocinfos, events, ticks,
 * meta), so a crash after it leaves a readable file. The writer also
 * flushes by itself when a chunk buffer fills (1 MiB, or 512 Ki events).
 */
int rec_writer_flush(struct rec_writer *w);

/*
 * rec_writer_close - flush, mark the recording complete, close, free w.
 * Returns the first error seen during the writer's life, if any. Accepts NULL.
 */
int rec_writer_close(struct rec_writer *w);

/*
 * rec_writer_thread - from now on, full chunks are encoded, compressed and
 * written by a thread of the writer's own (all signals blocked), in the
 * order they fill, so the file is the same as without it; the caller's
 * thread only fills the tables. An error of that thread is returned by a
 * later rec_put_* that fills a chunk, rec_writer_flush or rec_writer_close.
 * rec_writer_close and rec_writer_abort join it. rec_writer_bytes lags by
 * the chunks not yet written. No-op for a discarding writer. 0 or a
 * negative enum rec_err.
 */
int rec_writer_thread(struct rec_writer *w);

/* rec_writer_abort - close and free without marking complete (keeps what was flushed). */
void rec_writer_abort(struct rec_writer *w);

/* rec_writer_bytes - bytes written to the file so far (flushed chunks only); 0 for NULL. */
uint64_t rec_writer_bytes(const struct rec_writer *w);

/* ------------------------------------------------------------------ */
/* Reader: used by report/. Thread-safe for concurrent rec_event_chunk(). */

struct rec_reader;

struct rec_module {
	const char *path;
	uint64_t base;
	uint64_t size;
	const uint8_t *build_id;
	size_t build_id_len;
};

struct rec_ip {
	uint64_t ip;
	uint32_t module; /* REC_NONE if unknown */
	uint32_t frame;	 /* first (innermost) link, REC_NONE if unsymbolized */
	uint8_t xframe;	 /* 1: a foreign (Java, Python) frame, see rec_put_xframe */
	uint8_t lang;	 /* foreign frames: enum wire_lang (0 unknown) */
	uint8_t xkind;	 /* foreign frames: enum wire_xkind (0 unknown) */
};

struct rec_frame {
	uint32_t function; /* string index, 0 ("") if unknown */
	uint32_t file;	   /* string index, 0 if unknown */
	uint32_t line;	   /* 0 if unknown */
	uint32_t outer;	   /* next outer link of the same ip, REC_NONE at the end */
};

struct rec_trace {
	uint32_t parent; /* < own index; the root (0) has parent 0 */
	uint32_t ip;	 /* ip index; REC_NONE for the root */
};

struct rec_allocinfo {
	uint64_t size;
	uint32_t trace; /* valid trace index (dangling ones are read as 0) */
	uint32_t kind;	/* enum wire_kind value */
};

struct rec_event {
	uint32_t info;	 /* valid allocinfo index */
	uint32_t op;	 /* enum rec_ev_op */
	uint64_t weight; /* bytes this sample stands for; 0 = unsampled */
};

/*
 * rec_weight_calls - how many calls a sampled allocation of size bytes with
 * weight (the bytes it stands for) is estimated to stand for: weight / size
 * rounded half up, at least 1 (also for size 0, and for weight <= size, as
 * an unsampled allocation whose weight is its size). The one estimate of a
 * sample's calls: the report's replay and the live snapshots both use it.
 */
static inline uint64_t rec_weight_calls(uint64_t weight, uint64_t size)
{
	uint64_t c;

	if (size == 0)
		return 1;
	c = weight / size;
	if (weight % size >= size - size / 2)
		c++;
	return c ? c : 1;
}

struct rec_tick {
	uint64_t time_ns;
	uint64_t event_index; /* number of events before this tick */
	uint64_t rss;
};

/*
 * rec_open - open and validate a recording, loading every table (events are
 * decoded on demand, chunk by chunk). A file cut short is opened with what
 * it holds up to its last whole chunk, and rec_truncated() says so.
 * Returns NULL and sets *err on failure.
 */
struct rec_reader *rec_open(const char *path, int *err);

/* rec_open_mem - the same from a buffer (copied), for tests and fuzzing. */
struct rec_reader *rec_open_mem(const void *buf, size_t len, int *err);

/* rec_close - free everything. Accepts NULL. */
void rec_close(struct rec_reader *r);

/* rec_truncated - 0 for a complete recording, else the rec_err that ended reading early. */
int rec_truncated(const struct rec_reader *r);

/* rec_meta - value of key, or NULL if absent. */
const char *rec_meta(const struct rec_reader *r, const char *key);

/* rec_string - string idx, "" when out of range. */
const char *rec_string(const struct rec_reader *r, uint32_t idx);

const struct rec_module *rec_modules(const struct rec_reader *r, size_t *n);
const struct rec_ip *rec_ips(const struct rec_reader *r, size_t *n);
const struct rec_frame *rec_frames(const struct rec_reader *r, size_t *n);
const struct rec_trace *rec_traces(const struct rec_reader *r, size_t *n); /* n >= 1: the root */
const struct rec_allocinfo *rec_allocinfos(const struct rec_reader *r, size_t *n);
const struct rec_tick *rec_ticks(const struct rec_reader *r, size_t *n);

/* Exact counts of one call site (sampled recordings; see rec_put_site_count). */
struct rec_site_count {
	uint32_t ip; /* ip index, REC_NONE if none */
	uint64_t calls, bytes;
};

/* rec_site_counts - the site counts in file order (a site may appear more than once: add them up). */
const struct rec_site_count *rec_site_counts(const struct rec_reader *r, size_t *n);

/* rec_nevents - total number of events; rec_nevent_chunks - independent event chunks. */
uint64_t rec_nevents(const struct rec_reader *r);
size_t rec_nevent_chunks(const struct rec_reader *r);

/*
 * rec_event_chunk - decode event chunk i into *ev (malloc'd, caller frees),
 * *n events, the first being event number *first of the whole stream.
 * Events naming an allocinfo out of range are dropped (counted in
 * rec_dropped_events). Safe to call from several threads at once.
 */
int rec_event_chunk(const struct rec_reader *r, size_t i, struct rec_event **ev, size_t *n,
		    uint64_t *first);

/* rec_dropped_events - events dropped for naming an unknown allocinfo so far. */
uint64_t rec_dropped_events(const struct rec_reader *r);

/*
 * rec_fixed_refs - dangling references found while opening (a module path,
 * frame string, symbol ip or module, trace ip, allocinfo trace or tick event
 * index naming something the file does not hold) and replaced by 0 or
 * REC_NONE. 0 for any file the writer produced. After such a fix a trace
 * i >= 1 may have ip REC_NONE.
 */
uint64_t rec_fixed_refs(const struct rec_reader *r);

#endif /* HEAPTAP_RECFILE_H */
