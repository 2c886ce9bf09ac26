/* track/wire.h - the event stream between track/ (in the target) and interpret/ (in heaptap) */
/* SPDX-License-Identifier: MIT */
/*
 * This header is the stream contract of docs/design.md. It is included by
 * track/ (which writes the stream inside the target process) and by
 * interpret/ (which reads it in the heaptap process and must never trust it).
 * Everything is little-endian. Numbers inside records are unsigned LEB128
 * varints (at most 10 bytes for a u64). docs/stream.md explains the design.
 *
 * Stream layout
 * -------------
 *
 *   +--------------------------------------+
 *   | header (WIRE_HDR_FIXED bytes, fixed)  |  struct wire_header below
 *   |  then varint exe_len, exe bytes       |
 *   |  then varint cmd_len, cmdline bytes   |  args separated by NUL
 *   +--------------------------------------+  header_len covers all of the above
 *   | record | record | record | ...       |
 *   +--------------------------------------+
 *
 *   record := u8 type | varint len | payload[len]     (len <= WIRE_MAX_RECORD)
 *
 * A reader skips records of unknown type (forward compatibility) and stops
 * with an error on a length past WIRE_MAX_RECORD or past the end of input.
 *
 * Ordering across threads
 * -----------------------
 * Every event that must be ordered (alloc, free, new trace node, module
 * change, no-op) takes a sequence number from one process-wide atomic
 * counter (0, 1, 2, ... without gaps): an allocation takes it after the real
 * allocator returned, a free before the real free is called, so a pointer
 * freed in thread A and then returned by malloc in thread B has the smaller
 * number on the free. Threads buffer their events privately and send them as
 * WIRE_REC_CHUNK records; chunks of different threads interleave arbitrarily.
 * The interpreter applies events strictly in sequence order, waiting for a
 * missing number (the timer thread flushes idle buffers every tick, so the
 * wait is bounded). A number that was taken but whose event could not happen
 * (realloc failed, a racing thread inserted the same trace node) is sent as
 * WIRE_EV_NOP so no gap stays open. At end of stream, gaps are skipped.
 *
 * Chunk payload:
 *   varint tid            Linux thread id of the thread whose events these are
 *   varint first_seq      sequence number the first event's delta counts from
 *   event*                until the payload ends
 *
 * Each event starts with a u8 op, then "varint seq_delta": the event's
 * sequence number minus the previous event's in this chunk (for the first
 * event: minus first_seq). Sequence numbers within a chunk only grow.
 *
 *   WIRE_EV_ALLOC    delta, u8 kind (enum wire_kind), varint size,
 *                    varint trace (raw node index, 0 = empty stack), varint ptr
 *   WIRE_EV_ALLOC_W  as WIRE_EV_ALLOC, then varint weight: the bytes this
 *                    sampled allocation stands for (sampling mode)
 *   WIRE_EV_FREE     delta, varint ptr
 *   WIRE_EV_NODE     delta, varint index, varint parent, varint ip
 *                    A trace-tree node: index is the track-side node index
 *                    (>= 1, unique, maybe with gaps), parent is 0 for the root
 *                    (outermost frame) or an index sent before; ip is a
 *                    return address minus one (a call site), or the exact pc
 *                    of the innermost frame when that is not a return address.
 *                    A trace index used by an alloc always names a node whose
 *                    NODE event has a smaller sequence number.
 *                    ip WIRE_IP_CUT is no code address but a marker: the
 *                    stack was cut because the frame inside it (its parent)
 *                    lies in code without unwind info (no module, e.g. JIT
 *                    code, or no FDE); it is always a stack's outermost node.
 *                    An ip with bit 63 set (WIRE_XFRAME_BIT), other than
 *                    WIRE_IP_CUT, is no code address either but a foreign
 *                    frame (a Java or Python frame, see "Foreign frames").
 *   WIRE_EV_NOP      delta
 *   WIRE_EV_MODULE   delta, varint base (load bias, dlpi_addr), varint nseg,
 *                    nseg x (varint vaddr, varint memsz, varint flags)  (PT_LOAD
 *                    p_vaddr / p_memsz / p_flags, unrelocated), varint
 *                    build_id_len, build-id bytes, varint path_len, path bytes
 *                    A module present from this event on. The main program's
 *                    path is its real path, not "".
 *   WIRE_EV_MODULE_DEL delta, varint base: the module at base went away
 *   WIRE_EV_ALLOC_D  as WIRE_EV_ALLOC, but the ptr is varint zigzag(ptr -
 *                    pbase) (zigzag(d) = d << 1 ^ d >> 63, modulo 2^64)
 *   WIRE_EV_FREE_D   delta, varint zigzag(ptr - pbase)
 *                    pbase: the ptr of the chunk's previous ALLOC_D or
 *                    FREE_D, 0 at the chunk's start (other ops leave it).
 *                    A heap's pointers lie close together: 2-3 bytes
 *                    instead of 6-7 (full tracing sends these).
 *
 * Other records:
 *   WIRE_REC_TICK    varint mono_ns (since header start_mono_ns), varint
 *                    rss_bytes, varint seq (the counter's value when read:
 *                    every event with a smaller number happened before it)
 *   WIRE_REC_END     varint total_seq (the counter's final value), varint
 *                    reason (enum wire_end_reason), varint slots_restored,
 *                    varint slots_left (changed by someone else since),
 *                    varint events_dropped
 *   WIRE_REC_LOG     u8 level, message bytes (from the library, for heaptap
 *                    to print; never printed by the library itself)
 *   WIRE_REC_SITES   varint n, n x (varint ip, varint calls, varint bytes):
 *                    exact allocation counts per immediate call site (ip =
 *                    return address - 1, the innermost frame's ip; 0 = sites
 *                    that found no slot) added since the previous SITES
 *                    record, in sampling mode only (every allocation, sampled
 *                    or not; not ordered by sequence numbers: sums); the
 *                    records of one look at the counts are followed by a
 *                    TICK, whose time is that look's (the reader's rates)
 *   WIRE_REC_START   varint n, n x varint (enum wire_start_field order; a
 *                    reader takes the fields it knows, treats missing ones
 *                    as 0 and ignores extra ones), varint path_len, path
 *                    bytes (the first module the first patch pass had to
 *                    defer, maybe empty): inject/'s start-up timings, sent
 *                    once after its first patch pass (not ordered)
 *
 *   WIRE_REC_XFRAME  varint id, u8 lang (enum wire_lang), u8 kind (enum
 *                    wire_xkind), varint line (0 = unknown), varint name_len,
 *                    name bytes, varint file_len, file bytes (name_len <=
 *                    WIRE_XFRAME_MAX_NAME, file_len <= WIRE_XFRAME_MAX_FILE,
 *                    id <= WIRE_XFRAME_ID_MAX; bytes after the file are
 *                    ignored): defines foreign frame id (not ordered, see
 *                    below)
 *
 * Foreign frames
 * --------------
 * A producer inside the target (a JVM agent, a Python frame reader) adds
 * frames of another language to native stacks (track.h, trk_xframe_*): a
 * stack ip wire_xframe_ip(id) stands for the frame the producer defined as
 * id with one WIRE_REC_XFRAME, sent once per session, before or after the
 * stacks that use it (the reader waits for the end of the session to name
 * them). The first definition of an id wins, later ones are ignored; an id
 * used but never defined is shown as "[frame #id]". Ids are the producer's
 * (small dense numbers preferred); an id keeps its meaning for the life of
 * the process. The names are the target's word: shown (escaped), never
 * opened as paths.
 *
 * Control, interpret -> track, on the same socket, same framing:
 *   WIRE_CTL_STOP    empty payload: restore, flush, send END, close
 *   WIRE_CTL_SAMPLE  varint bytes (0 = full tracing), optional varint seed
 *                    (PRNG seed, 0 = from the clock): change sampling. Sent
 *                    by heaptap right after accepting to start sampled.
 *   WIRE_CTL_XFRAMES varint off: the languages whose foreign frames are not
 *                    wanted from now on, bit (1 << lang) for each enum
 *                    wire_lang (`heaptap attach --no-python-frames`: bit
 *                    WIRE_LANG_PYTHON; --no-java-frames: WIRE_LANG_JAVA); 0
 *                    = every producer adds what it does, the default of
 *                    every session. Other bits are ignored. Sent after
 *                    WIRE_CTL_SAMPLE.
 */
#ifndef HEAPTAP_TRACK_WIRE_H
#define HEAPTAP_TRACK_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WIRE_MAGIC "HTAPEVS1"	  /* 8 bytes, no NUL on the wire */
#define WIRE_VERSION 1
#define WIRE_HDR_FIXED 56	  /* bytes of struct wire_header */
#define WIRE_MAX_HEADER (64 * 1024) /* header_len above this is corrupt */
#define WIRE_MAX_RECORD (1024 * 1024) /* record payload above this is corrupt */
#define WIRE_VARINT_MAX 10
#define WIRE_IP_CUT UINT64_MAX	  /* node ip: frames cut here (no unwind info), see above */
#define WIRE_XFRAME_BIT (1ull << 63) /* node ip: a foreign frame, see above */
#define WIRE_XFRAME_ID_MAX (WIRE_XFRAME_BIT - 2) /* id + bit 63 is never WIRE_IP_CUT */
#define WIRE_XFRAME_MAX_NAME 1024 /* name bytes of a WIRE_REC_XFRAME, at most */
#define WIRE_XFRAME_MAX_FILE 1024 /* file bytes of a WIRE_REC_XFRAME, at most */

/* Fixed part of the header, exactly as on the wire (little-endian host). */
struct wire_header {
	char magic[8];		   /* WIRE_MAGIC */
	uint16_t version;	   /* WIRE_VERSION */
	uint16_t reserved;
	uint32_t header_len;	   /* whole header incl. exe and cmdline */
	uint32_t flags;		   /* WIRE_F_* */
	uint32_t pid;
	uint32_t page_size;
	uint32_t reserved2;
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at session start */
	uint64_t start_mono_ns;	   /* CLOCK_MONOTONIC at session start */
	uint64_t sample_bytes;	   /* mean bytes between samples, 0 = all */
};
_Static_assert(sizeof(struct wire_header) == WIRE_HDR_FIXED, "wire header layout");

enum wire_flags {
	WIRE_F_ATTACHED = 1u << 0, /* attached to a running process */
	WIRE_F_SAMPLED = 1u << 1,  /* allocations are sampled, see weights */
};

enum wire_rec_type {
	WIRE_REC_CHUNK = 1,
	WIRE_REC_TICK = 2,
	WIRE_REC_END = 3,
	WIRE_REC_LOG = 4,
	WIRE_REC_SITES = 5,
	WIRE_REC_XFRAME = 6,
	WIRE_REC_START = 10,
	WIRE_CTL_STOP = 64,
	WIRE_CTL_SAMPLE = 65,
	WIRE_CTL_XFRAMES = 66,
};

enum wire_ev_op {
	WIRE_EV_ALLOC = 1,
	WIRE_EV_ALLOC_W = 2,
	WIRE_EV_FREE = 3,
	WIRE_EV_NODE = 4,
	WIRE_EV_NOP = 5,
	WIRE_EV_MODULE = 6,
	WIRE_EV_MODULE_DEL = 7,
	WIRE_EV_ALLOC_D = 8,
	WIRE_EV_FREE_D = 9,
};

/* Which allocation function was called; also stored in recordings. */
enum wire_kind {
	WIRE_KIND_MALLOC = 1,
	WIRE_KIND_CALLOC = 2,
	WIRE_KIND_REALLOC = 3,
	WIRE_KIND_REALLOCARRAY = 4,
	WIRE_KIND_POSIX_MEMALIGN = 5,
	WIRE_KIND_ALIGNED_ALLOC = 6,
	WIRE_KIND_MEMALIGN = 7,
	WIRE_KIND_VALLOC = 8,
	WIRE_KIND_PVALLOC = 9,
	WIRE_KIND_MAX = 9,
};

enum wire_end_reason {
	WIRE_END_EXIT = 1,     /* the process is exiting */
	WIRE_END_STOP = 2,     /* heaptap asked (WIRE_CTL_STOP) */
	WIRE_END_ERROR = 3,    /* the library gave up (see a LOG record) */
};

/*
 * WIRE_REC_START fields, in wire order (times in ns from the library's start
 * call, CLOCK_MONOTONIC; 0 = not reached). Append only.
 */
enum wire_start_field {
	WIRE_START_CONNECT_NS = 0, /* connected to heaptap's socket */
	WIRE_START_RATE_NS,	   /* heaptap's sampling rate read (or waited out) */
	WIRE_START_RATE_GOT,	   /* 1: the rate came; 0: waited out, traced fully */
	WIRE_START_SESSION_NS,	   /* trk_start returned: header and module list sent */
	WIRE_START_DRAIN_NS,	   /* waited for heaptap to read what was sent (duration) */
	WIRE_START_PASS_DONE_NS,   /* first complete patch pass done */
	WIRE_START_PASS_NS,	   /* that pass's own duration */
	WIRE_START_PASSES,	   /* passes it took (>1: modules came or went meanwhile) */
	WIRE_START_MODULES,	   /* modules walked */
	WIRE_START_PATCHED,	   /* words rewritten */
	WIRE_START_DEFERRED,	   /* modules left pending (half-loaded) */
	WIRE_START_DEF_RELRO,	   /* of them: RELRO pages still writable */
	WIRE_START_DEF_UNMAPPED,   /* of them: a slot's page not in /proc/self/maps */
	WIRE_START_DEF_UNRELOC,	   /* of them: a slot not relocated yet */
	WIRE_START_CALL_MONO_NS,   /* the start call itself, CLOCK_MONOTONIC (absolute) */
	WIRE_START_NFIELDS,
};
#define WIRE_START_MAX_FIELDS 64   /* n above this is corrupt */
#define WIRE_START_MAX_PATH 4096   /* path_len above this is corrupt */

/* The language of a foreign frame (WIRE_REC_XFRAME); also stored in recordings. */
enum wire_lang {
	WIRE_LANG_UNKNOWN = 0,
	WIRE_LANG_PYTHON = 1,
	WIRE_LANG_JAVA = 2,
};

/* How a foreign frame runs (Java); 0 where the language has no such thing. */
enum wire_xkind {
	WIRE_XKIND_UNKNOWN = 0,
	WIRE_XKIND_INTERPRETED = 1,
	WIRE_XKIND_COMPILED = 2, /* JIT-compiled (C1, C2) */
	WIRE_XKIND_INLINED = 3,	 /* compiled, inlined into its caller's code */
	WIRE_XKIND_NATIVE = 4,	 /* a native method's Java frame */
	/* the same, with the JIT tier known (HotSpot: C1 levels 1-3, C2 level 4) */
	WIRE_XKIND_COMPILED_C1 = 5,
	WIRE_XKIND_COMPILED_C2 = 6,
	WIRE_XKIND_INLINED_C1 = 7,
	WIRE_XKIND_INLINED_C2 = 8,
	WIRE_XKIND_MAX = 8,
};

/* wire_xframe_ip - the stack ip of foreign frame id (id <= WIRE_XFRAME_ID_MAX). */
static inline uint64_t wire_xframe_ip(uint64_t id)
{
	return id | WIRE_XFRAME_BIT;
}

/* wire_is_xframe - whether a stack ip is a foreign frame (bit 63, not WIRE_IP_CUT). */
static inline int wire_is_xframe(uint64_t ip)
{
	return (ip & WIRE_XFRAME_BIT) && ip != WIRE_IP_CUT;
}

/* wire_xframe_id - the id of a foreign frame's ip. */
static inline uint64_t wire_xframe_id(uint64_t ip)
{
	return ip & ~WIRE_XFRAME_BIT;
}

enum wire_log_level { WIRE_LOG_INFO = 0, WIRE_LOG_WARN = 1, WIRE_LOG_ERROR = 2 };

/*
 * wire_put_varint - append v as LEB128 at p; returns bytes written (1..10).
 * The caller guarantees WIRE_VARINT_MAX bytes of room.
 */
/*
 * wire_zigzag / wire_unzigzag - a distance modulo 2^64 (ALLOC_D, FREE_D) as
 * an unsigned number small for small distances either way:
 * d << 1 ^ d >> 63 (arithmetic shift), and back.
 */
static inline uint64_t wire_zigzag(uint64_t d)
{
	return d << 1 ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t wire_unzigzag(uint64_t v)
{
	return (v >> 1) ^ -(v & 1);
}

static inline size_t wire_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/*
 * wire_get_varint - read a LEB128 number from [*p, end).
 * Returns 0 and advances *p on success; -1 if input ends inside the number
 * or it is longer than 10 bytes or overflows 64 bits (*p is then unchanged).
 */
static inline int wire_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	unsigned shift = 0;

	while (q < end) {
		uint8_t b = *q++;

		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*out = v;
			return 0;
		}
		shift += 7;
		if (shift > 63)
			return -1;
	}
	return -1;
}

#endif /* HEAPTAP_TRACK_WIRE_H */
