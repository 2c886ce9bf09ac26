/* interpret/interpret.h - the shared interpreter: event stream in, recording out */
/* SPDX-License-Identifier: MIT */
/*
 * Runs inside the heaptap process (record and attach modes alike). It reads
 * the event stream of track/wire.h from a connected socket, which it never
 * trusts, keeps the pointer map and the module map, symbolizes each distinct
 * instruction pointer once with libdw, and writes the recording through
 * recfile/recfile.h. It prints nothing: results and errors come back in
 * struct itp_result for the command layer to show.
 */
#ifndef HEAPTAP_INTERPRET_H
#define HEAPTAP_INTERPRET_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Why interpretation ended early; 0 = the stream ended cleanly. */
enum itp_err {
	ITP_OK = 0,
	ITP_E_IO,	  /* reading the socket failed (errno in itp_result.sys_errno) */
	ITP_E_HEADER,	  /* no valid stream header (bad magic, version, length) */
	ITP_E_CORRUPT,	  /* a record or event violates track/wire.h */
	ITP_E_TRUNCATED,  /* the stream ended inside a record or without WIRE_REC_END */
	ITP_E_OUTPUT,	  /* writing the recording failed (rec_err in itp_result.rec_error) */
	ITP_E_NOMEM,
	ITP_E_BUDGET,	  /* the session's memory budget (itp_options.max_memory) was reached */
	ITP_E_STOPPED,	  /* a second stop request ended the session at once */
	ITP_E_MAX,
};

/* itp_strerror - short lowercase phrase for an enum itp_err; never NULL. */
const char *itp_strerror(int err);

/* Live numbers, also the final totals. */
struct itp_status {
	uint64_t elapsed_ns;	/* target time since the stream header */
	uint64_t alloc_calls;	/* allocation events applied */
	uint64_t free_calls;	/* free events applied (incl. unknown pointers) */
	uint64_t heap_bytes;	/* bytes currently allocated (weighted when sampled) */
	uint64_t peak_bytes;	/* highest heap_bytes so far */
	uint64_t traces;	/* distinct trace-tree nodes */
	uint64_t rss_bytes;	/* last RSS the target reported */
	uint64_t output_bytes;	/* recording bytes written so far */
};

/* One trace of a snapshot, indexed like the recording's traces (0 = the root, no ip). */
struct itp_snap_trace {
	uint32_t parent;	/* trace index, < own index */
	uint32_t ip;		/* index into itp_snapshot.ips */
	int64_t inuse_objects;	/* live now (estimated when sampled) */
	int64_t inuse_bytes;
	uint64_t alloc_objects; /* allocated since the previous snapshot */
	uint64_t alloc_bytes;
	uint64_t temp_objects;	/* of those freed since then, the temporary ones (freed
				 * before their thread allocated again; estimated when sampled) */
};

struct itp_snap_module {
	const char *path;
	uint64_t base;	  /* load bias */
	uint64_t lo, hi;  /* runtime address range */
	const uint8_t *build_id;
	size_t build_id_len;
	/*
	 * Its executable PT_LOAD segment, widened to whole pages as the loader
	 * maps it: [text_lo, text_hi) at run time, text_vaddr = its first page's
	 * unrelocated address. All 0 when the module has none or several.
	 */
	uint64_t text_lo, text_hi, text_vaddr;
};

/* One link of an ip's symbol chain in a snapshot (as struct rec_sym). */
struct itp_snap_line {
	const char *function; /* NULL if unknown */
	const char *file;     /* NULL if unknown */
	uint32_t line;	      /* 0 if unknown */
};

/* What an ip of a snapshot is when it is a foreign (Java, Python) frame. */
struct itp_snap_xframe {
	uint8_t xframe;	     /* 1: a foreign frame, named from its definition */
	uint8_t lang, xkind; /* enum wire_lang, enum wire_xkind */
};

/* An ip's symbol chain: innermost (inlined) first, the real function last; n = 0: not named. */
struct itp_snap_frames {
	const struct itp_snap_line *v;
	uint32_t n;
};

/* What the snapshot callback sees (valid during the call only). */
struct itp_snapshot {
	uint64_t start_realtime_ns; /* session start (stream header) */
	uint64_t since_ns;	    /* elapsed time of the previous snapshot (0: first) */
	uint64_t elapsed_ns;	    /* target time since the start */
	uint64_t sample_bytes;	    /* sampling mean, 0 = full tracing */
	const struct itp_snap_trace *traces; /* a trace's own sums, not its children's */
	size_t ntraces;
	const uint64_t *ips;	    /* instruction pointers (call sites) */
	size_t nips;
	/*
	 * Per ips[] entry, its symbol chain: named by the recording's
	 * symbolizer the first time the address is in a snapshot, then kept for
	 * the session. NULL when the session does not symbolize (no_symbols).
	 */
	const struct itp_snap_frames *frames;
	/* per ips[] entry: foreign frames marked; NULL when frames is */
	const struct itp_snap_xframe *xframes;
	const struct itp_snap_module *mods; /* loaded now */
	size_t nmods;
	/*
	 * With itp_options.snapshot_early: addresses the view leaves unnamed
	 * because naming them is still to come (their frames[] are empty); the
	 * same snapshot follows with their names. 0 in that second call and
	 * without snapshot_early.
	 */
	size_t unnamed;
};

/* Things the stream got wrong that did not end it (each a counted warning). */
struct itp_counters {
	uint64_t unknown_frees;	  /* frees of pointers never seen allocated */
	uint64_t unknown_traces;  /* allocations naming a node never sent (given trace 0) */
	uint64_t unknown_parents; /* nodes naming a parent never sent (given parent 0) */
	uint64_t bad_nodes;	  /* nodes with index 0 or an index sent before (ignored) */
	uint64_t reused_ptrs;	  /* allocations of a pointer still live (the old block leaks) */
	uint64_t null_allocs;	  /* allocations returning pointer 0 (ignored) */
	uint64_t bad_kinds;	  /* allocations of a kind past WIRE_KIND_MAX (stored as kind 0) */
	uint64_t unknown_module_dels; /* MODULE_DEL of a base with no loaded module */
	uint64_t late_events;	  /* events whose seq was already passed (applied late) */
	uint64_t skipped_seqs;	  /* sequence numbers never seen (gaps skipped) */
	uint64_t gap_skips;	  /* times the reorder window overflowed and a gap was skipped */
	uint64_t unknown_records; /* records of an unknown type (skipped) */
	uint64_t build_id_mismatch; /* modules whose file on disk has another build-id (not symbolized) */
	uint64_t unsymbolized_ips; /* ips left without a function name */
	uint64_t unpinned_modules; /* modules whose mapped file could not be pinned */
};

struct itp_options {
	const char *output;	/* recording path, created (never overwritten); NULL with
				 * snapshot set: no recording, only the snapshots */
	const char *sysroot;	/* the target's root (e.g. "/proc/PID/root") for debug files; NULL = ours */
	int no_symbols;		/* 1 = skip symbolization (tests, speed) */
	/*
	 * The target's pid as heaptap knows it (never the stream's): each module
	 * is pinned through /proc/PID/map_files when its MODULE event is applied
	 * and symbolized from that fd; one that could not be pinned falls back
	 * to its build-id under /usr/lib/debug. 0 = no process (replays, tests):
	 * the stream's module paths (under sysroot) are opened, checked to be
	 * regular ELF files; only for streams one trusts.
	 */
	int pid;
	int debuginfod;		/* 1 = libdwfl may ask the servers of DEBUGINFOD_URLS */
	/*
	 * Symbolize in a child process (symchild.c) with no_new_privs and
	 * address-space and CPU limits; with sym_drop it runs as sym_uid and
	 * sym_gid (heaptap root, the target another user's).
	 */
	int sym_child;
	int sym_drop;
	uint32_t sym_uid, sym_gid;
	/*
	 * 1 = a program heaptap started itself, with its own ids (record): when
	 * it has exited before its modules could be pinned, its module paths
	 * are still opened (with the regular-ELF checks), since it could read
	 * whatever heaptap can and the recording is heaptap's own 0600 file.
	 */
	int launched;
	/*
	 * Memory budget of the interpreter's tables (trace nodes, ips,
	 * allocation infos, live pointers, threads, modules, strings), the
	 * reorder window and the input queue. Reaching it ends the session
	 * (ITP_E_BUDGET) as a stop does: the library is told to stop and
	 * restores the process, the recording is closed holding what came
	 * before. 0 = ITP_MAX_MEMORY_DEFAULT (a quarter of the RAM, at least 1 GiB).
	 */
	uint64_t max_memory;
	/*
	 * Set by the caller (e.g. from a signal handler) to end the session:
	 * 1 = itp_run sends WIRE_CTL_STOP once and keeps reading until
	 * WIRE_REC_END or EOF, or until the library sent nothing for
	 * stop_timeout_ms (counted from its last byte, not from the request:
	 * a long stream still being read is not late), or at most 12 times
	 * that after the request, then finishes the recording; 2 (a second
	 * stop) = end at once: nothing more is read or symbolized, the
	 * recording is closed as cut short (ITP_E_STOPPED).
	 */
	volatile sig_atomic_t *stop;
	unsigned stop_timeout_ms; /* 0 = 5000 */
	/* Called from itp_run about every 250 ms (live status line); may be NULL. */
	void (*status)(const struct itp_status *st, void *arg);
	void *status_arg;
	/*
	 * Called for each WIRE_REC_LOG record, message not NUL-terminated
	 * (len bytes, already stripped of control characters); may be NULL.
	 */
	void (*log)(int level, const char *msg, size_t len, void *arg);
	/*
	 * 1 = no flush of the recording once a second, only when its buffers
	 * fill and at the end: the recording's bytes then depend on the stream
	 * alone, not on when it was read (bench/consume compares two builds'
	 * recordings byte for byte). A live session keeps the flushes, so that
	 * a cut-short recording holds what came before.
	 */
	int no_timed_flush;
	/* Bytes of pending out-of-order events before a gap is skipped; 0 = 256 MiB. */
	size_t reorder_limit;
	/*
	 * Memory for stream bytes read and not yet interpreted (interpret/inq.c);
	 * 0 = ITP_INQ_LIMIT (32 MiB). When it is full heaptap stops reading and
	 * the target waits (and ends the session itself after 10 s without a read).
	 * Once a stop was asked it may hold twice that: the library's last
	 * bytes and its END do not wait for the interpreter.
	 */
	size_t input_limit;
	/*
	 * Sampling: with sample_ctl set, itp_run sends
	 * WIRE_CTL_SAMPLE with this mean (0 = full tracing) and seed (0 = from
	 * the clock) first thing, so the library starts in that mode (it waits
	 * a moment for the record in its start; heaptap always sends one).
	 */
	int sample_ctl;
	uint64_t sample_bytes;
	uint64_t sample_seed;
	/*
	 * Periodic heap snapshots (heaptap attach --snapshot-every): when set,
	 * itp_run keeps per-trace sums (interpret/agg.c, no per-event storage)
	 * and calls snapshot about every snapshot_ns until a stop is asked or
	 * the stream ends, and once at the end (all since the one before),
	 * with a view valid during the call. The first comes snapshot_first_ns
	 * after the start (0: snapshot_ns), or as soon as the stream's header
	 * is in when that is later; the rest keep the snapshot_ns schedule.
	 */
	void (*snapshot)(const struct itp_snapshot *s, void *arg);
	void *snapshot_arg;
	uint64_t snapshot_ns;
	uint64_t snapshot_first_ns;
	/*
	 * A snapshot holding addresses never named before is handed over
	 * twice: at once with the names known so far (itp_snapshot.unnamed
	 * set), then once the new addresses are named (the symbolizer may take
	 * a while: a child process reading ELF and DWARF). For a live view,
	 * which shows figures before names rather than nothing.
	 */
	int snapshot_early;
};

/*
 * How heaptap read the stream (interpret/inq.c): a reader thread drains the
 * socket into at most input_limit bytes of memory; the interpreter takes
 * from there. full_* say how long the reader waited because that memory
 * was full (the target then waited for the interpreter).
 */
struct itp_input {
	uint64_t bytes;	       /* read from the socket */
	uint64_t reads;	       /* read calls that returned bytes */
	uint64_t peak_bytes;   /* most memory the queue held (whole blocks) */
	uint64_t peak_pending; /* most bytes read and not yet interpreted */
	uint64_t peak_socket;  /* most left in the socket after a read, not counting the catch-up after a full queue */
	uint64_t full_waits;   /* times the reader found the queue full */
	uint64_t full_ns;      /* time it waited for room in all */
	uint64_t full_max_ns;  /* its longest wait */
	uint64_t block_allocs; /* queue blocks taken from malloc (emptied ones are reused) */
};

/*
 * inject/'s start-up timings (WIRE_REC_START; docs/stream.md): ns from the
 * library's start call. have = 0: the stream had none (record mode, an
 * older library, a session that ended before its first pass).
 */
#define ITP_START_FIELDS 24 /* room for enum wire_start_field (track/wire.h) */
struct itp_start {
	int have;
	uint64_t f[ITP_START_FIELDS]; /* by enum wire_start_field; missing ones 0 */
	char deferred[256];		/* first module put off, "" = none */
};

struct itp_result {
	int err;		 /* enum itp_err */
	int sys_errno;		 /* errno for ITP_E_IO */
	int rec_error;		 /* enum rec_err for ITP_E_OUTPUT */
	char detail[256];	 /* one line saying what exactly was wrong, or "" */
	struct itp_status final; /* totals at the end */
	uint32_t pid;		 /* from the stream header */
	uint32_t flags;		 /* WIRE_F_* from the header */
	char exe[256];		 /* from the header, cut if longer */
	int end_reason;		 /* enum wire_end_reason, 0 if no END record came */
	int stop_gave_up;	 /* after a stop, the wait for END ran out (detail says how) */
	uint64_t slots_restored, slots_left; /* from the END record (attach mode) */
	uint64_t events_dropped; /* from the END record: events the library lost */
	struct itp_counters warn; /* see struct itp_counters */
	uint64_t symbolize_ns;	 /* time spent resolving and symbolizing ips */
	uint64_t snap_ips;	 /* snapshots: addresses their symbol cache holds */
	uint64_t snap_named;	 /* of them, those with a function name */
	uint64_t snap_sym_bytes; /* memory the cache holds */
	uint64_t snap_symbolize_ns; /* time spent naming new snapshot addresses */
	char sym_error[160];	 /* why symbolization ended early (its child died...), "" = it did not */
	uint64_t sym_left;	 /* ips it left as addresses then */
	uint64_t peak_table_bytes; /* most memory the budgeted tables held */
	uint64_t ips;		 /* distinct ips */
	uint64_t site_calls;	 /* sampling: exact allocation calls (sum of the site counts) */
	uint64_t site_bytes;	 /* sampling: exact bytes allocated */
	uint64_t site_records;	 /* WIRE_REC_SITES records received */
	struct itp_input input;	 /* see struct itp_input */
	struct itp_start start;	 /* see struct itp_start */
	char lib_error[256];	 /* the library's last WIRE_LOG_ERROR message, "" = none */
};

/*
 * itp_run - interpret the stream on fd until it ends, writing the recording
 * to opt->output. Blocks. Always tries to leave a readable recording holding
 * everything up to the point of an error. Returns 0 when the stream ended
 * cleanly; otherwise a negative enum itp_err (also in res->err, with
 * res->detail). Returns -ITP_E_OUTPUT without reading if the output cannot
 * be created. Does not close fd.
 */
int itp_run(int fd, const struct itp_options *opt, struct itp_result *res);

/*
 * itp_send_sample - send WIRE_CTL_SAMPLE (mean bytes, 0 = full tracing;
 * seed, 0 = keep) on the session socket fd, without blocking. Returns 0 or
 * -errno (-EAGAIN when the library does not read its socket).
 */
int itp_send_sample(int fd, uint64_t rate, uint64_t seed);

#endif /* HEAPTAP_INTERPRET_H */
