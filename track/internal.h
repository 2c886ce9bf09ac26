/* track/internal.h - layouts and internal functions of the recording core */
/* SPDX-License-Identifier: MIT */
/*
 * Per-process state (the exception of docs/design.md "Globals"): everything lives in the
 * one global trk_g, because the hooks are called with libc's signatures and
 * cannot be passed a context.
 *
 *   hook --> unwind (no lock) --> tree lookup (lock-free, CAS insert)
 *        --> per-thread buffer (owner/flusher handshake, no lock instruction)
 *        --> full: WIRE_REC_CHUNK under the socket lock
 *
 * Lock order: loader lock -> module lock -> flush lock -> thread buffer
 * (busy/claim) -> socket lock. Nobody holds a buffer while unwinding or
 * while calling the real allocator.
 */
#ifndef HEAPTAP_TRACK_INTERNAL_H
#define HEAPTAP_TRACK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "track/track.h"
#include "track/wire.h"
#include "util/clock.h"

#define TRK_HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Session state, trk_g.state. */
enum trk_state {
	TRK_OFF = 0,	/* not started yet: hooks pass through */
	TRK_ON = 1,	/* recording */
	TRK_DONE = 2,	/* ended (stopped, exited, socket died, forked child) */
};

/* ---- trace tree (tree.c) ---------------------------------------------- */

/*
 * A node of the process-wide trace tree. Index 0 is the virtual root (its
 * children are the outermost frames). The first TRK_NODE_KIDS children sit
 * in the node itself (index and ip side by side, so finding a child costs
 * no cache miss beyond the parent, which the walk just touched); further
 * children form a singly linked list (more -> next -> next ...) that only
 * grows at its head, by CAS. ip and parent are written before a node is
 * published and never change.
 */
#define TRK_NODE_KIDS 3
#define TRK_KID_BUSY UINT32_MAX /* slot reserved, its ip being written */

struct trk_node {
	uintptr_t ip;			  /* return address - 1 (call site) */
	uint32_t parent;		  /* 0 = child of the root */
	_Atomic uint32_t more;		  /* newest overflow child, 0 = none */
	_Atomic uint32_t next;		  /* next older sibling in the parent's list */
	_Atomic uint32_t kid[TRK_NODE_KIDS]; /* inline children, 0 = free */
	uintptr_t kip[TRK_NODE_KIDS];	  /* their ips, valid once kid is published */
	_Atomic uint32_t sent;		  /* session (trk_g.sess_gen) whose stream has its
					     WIRE_EV_NODE; 0 = none yet */
};

#define TRK_NODE_BLOCK_SHIFT 16 /* 65536 nodes (3.5 MiB) per mmap'd block */
#define TRK_NODE_BLOCK (1u << TRK_NODE_BLOCK_SHIFT)
#define TRK_NODE_BLOCKS 16384	/* at most 2^30 nodes */

/*
 * Sequence numbers carry their session: the counter trk_g.seq holds the
 * session number (trk_g.sess_gen) in its top TRK_GEN_BITS bits and the
 * event number of that session below, so one fetch_add tells a hook both
 * its number and which stream it belongs to. A hook that took its number
 * in an ended session and appends late is recognised by the session bits
 * and its event is dropped (trk_ev_put), never written into the next
 * session's stream.
 */
#define TRK_SEQ_BITS 48
#define TRK_SEQ_MASK ((1ull << TRK_SEQ_BITS) - 1)
#define TRK_GEN_MAX 0xffffu /* sessions per process */

static inline uint32_t trk_seq_gen(uint64_t seq)
{
	return (uint32_t)(seq >> TRK_SEQ_BITS);
}

/* ---- modules (modules.c) ---------------------------------------------- */

/* One loaded module as last seen by dl_iterate_phdr. */
struct trk_mod {
	uintptr_t base;	    /* dlpi_addr */
	const void *phdr;   /* dlpi_phdr: identity together with base */
	uintptr_t lo, hi;   /* runtime address range of its PT_LOAD segments */
	int seen;	    /* scratch for the rescan */
};

#define TRK_MODS_MAX 8192

/* ---- the global state --------------------------------------------------- */

struct trk_global {
	_Atomic int state;		/* enum trk_state */
	_Atomic int started;		/* a session was started and has not fully ended
					   (timer thread gone, socket closed) */
	_Atomic uint32_t sess_gen;	/* the current or last session, 1, 2, ...; 0 = none */
	struct trk_real real;
	int fd;				/* the socket, -1 when closed */
	unsigned depth;
	uint32_t flags;
	void (*before_end)(void *arg, uint64_t *restored, uint64_t *left);
	void *before_end_arg;
	_Atomic int before_end_ran;	/* before_end is called once, whoever ends */
	uint64_t start_mono_ns;
	int pid;			/* the recorded process (a vfork child is not it) */
	long page_size;

	/* written by every event of every thread: a cache line of its own */
	_Atomic uint64_t seq __attribute__((aligned(64))); /* the sequence counter */
	char seq_pad[64 - sizeof(uint64_t)];
	_Atomic uint64_t dropped;	/* events lost (no memory, dead socket) */
	_Atomic uint32_t code_gen;	/* bumped when a module goes away: rule caches are stale */
	int fast_unwind;		/* use the CFI walker (else libunwind only) */

	/* trace tree */
	_Atomic uint32_t next_node;	/* next free index (starts at 1) */
	_Atomic(struct trk_node *) blocks[TRK_NODE_BLOCKS];
	struct trk_node root;		/* node 0 */
	_Atomic(struct trk_sc_bucket *) scache; /* whole-stack cache (tree.c), mapped on first use */

	/* thread buffers */
	_Atomic(struct trk_thr *) threads; /* every buffer ever made */
	pthread_mutex_t flush_lock;	/* one flusher at a time */
	pthread_mutex_t free_lock;
	struct trk_thr *free_list;
	pthread_key_t key;		/* destructor flushes a leaving thread */
	int key_ok;

	/* socket */
	pthread_mutex_t sock_lock;
	int ended;			/* END sent or socket dead: write nothing */

	/* modules */
	pthread_mutex_t mod_lock;
	struct trk_mod *mods;		/* TRK_MODS_MAX entries, mmap'd */
	unsigned nmods;
	unsigned long long dl_adds, dl_subs; /* counters at the last scan */
	_Atomic(const struct trk_range_set *) ranges; /* for lock-free lookup */

	/* timer */
	pthread_t timer;
	int timer_ok;
	struct trk_thr *timer_thr;	/* the timer's own buffer (module events) */
};

/* Sorted, immutable snapshot of the modules' address ranges. */
struct trk_range_set {
	size_t n;
	struct { uintptr_t lo, hi; } r[];
};

extern struct trk_global trk_g TRK_HIDDEN;

/*
 * Thread-local state: a buffer pointer and a recursion guard. The guard
 * lives in the sampled hot path's TLS block (struct trk_smp_tls, below):
 * one 64-bit compare there covers "guard clear" and "sampling at the
 * current rate".
 */
extern __thread struct trk_thr *trk_tls_thr
	__attribute__((tls_model("initial-exec"))) TRK_HIDDEN;
#define trk_tls_guard (trk_smp_tls.k.guard)

/* ---- sock.c --------------------------------------------------------------- */

/*
 * trk_sock_send_locked - write a record (type, payload in iov parts) with
 * MSG_NOSIGNAL; sock_lock held. A failed write marks the socket dead
 * (ended, state DONE). Returns 0 or -errno.
 */
struct iovec;
int trk_sock_send_locked(uint8_t type, const struct iovec *iov, int iovcnt) TRK_HIDDEN;
/* trk_sock_write_raw_locked - write bytes as they are (the stream header); sock_lock held; 0 or -errno. */
int trk_sock_write_raw_locked(const void *data, size_t len) TRK_HIDDEN;
/* trk_sock_adopt - move fd to a high number, remember its identity; the fd or -errno (closed). */
int trk_sock_adopt(int fd) TRK_HIDDEN;
/* trk_sock_ours - whether trk_g.fd is still the socket we adopted. */
bool trk_sock_ours(void) TRK_HIDDEN;
/* trk_sock_close_locked - close trk_g.fd if it is still ours; fd = -1. Socket lock held. */
void trk_sock_close_locked(void) TRK_HIDDEN;
/* trk_sock_send - the same, taking the socket lock. */
int trk_sock_send(uint8_t type, const void *payload, size_t len) TRK_HIDDEN;
/*
 * trk_sock_lock_room - take the socket lock once need bytes can be written
 * without waiting; the wait for heaptap to read happens before, without the
 * lock. Always returns with the lock held: 0, or -ETIMEDOUT when heaptap
 * read nothing for TRK_SEND_STALL_MS (the socket is then dead).
 */
int trk_sock_lock_room(size_t need) TRK_HIDDEN;
/*
 * trk_sock_lock_room_ctl - the same for the timer thread's own writes (TICK,
 * idle flushes): gives up with -EAGAIN, without the lock, as soon as heaptap
 * sent something to read (a STOP must not wait for room).
 */
int trk_sock_lock_room_ctl(size_t need) TRK_HIDDEN;
/* A write that makes no progress this long ends the session (SO_SNDTIMEO, sock.c). */
#define TRK_SEND_STALL_MS 10000

/* ---- modules.c ------------------------------------------------------------ */

/* trk_mod_init - map the module table; 0 or -errno. */
int trk_mod_init(void) TRK_HIDDEN;
/* trk_mod_scan - compare with dl_iterate_phdr, send MODULE / MODULE_DEL through t. */
void trk_mod_scan(struct trk_thr *t, bool force) TRK_HIDDEN;
/* trk_mod_known - whether ip lies in a module announced (lock-free). */
bool trk_mod_known(uintptr_t ip) TRK_HIDDEN;
/*
 * trk_mod_loaded - whether the loader knows a module holding ip
 * (_dl_find_object: lock-free). JIT code is in none, so a new node there
 * need not take the loader's lock in trk_mod_check.
 */
bool trk_mod_loaded(uintptr_t ip) TRK_HIDDEN;
/* trk_mod_check - rescan if dl_iterate_phdr's counters moved; ip unknown. */
void trk_mod_check(struct trk_thr *t) TRK_HIDDEN;

/* ---- session.c / timer.c -------------------------------------------------- */

/* trk_end - the end of a session: flush, before_end, END; closes the socket. */
void trk_end(int reason) TRK_HIDDEN;
/*
 * trk_run_before_end - call cfg.before_end once per process (also when the
 * session died with the socket and no END can be sent); counts in *restored, *left.
 */
void trk_run_before_end(uint64_t *restored, uint64_t *left) TRK_HIDDEN;
/*
 * trk_send_tick - send WIRE_REC_TICK (time, RSS, sequence counter) now;
 * from_timer: not if heaptap sent something meanwhile (trk_sock_lock_room_ctl).
 */
void trk_send_tick(bool from_timer) TRK_HIDDEN;
/*
 * trk_timer_start - the session's timer: with timerless, while the process
 * has one thread and samples, none (the hooks poll, trk_tl_poll); else the
 * timer thread. 0 or -errno.
 */
int trk_timer_start(bool timerless) TRK_HIDDEN;

/* trk_tl_on - nonzero while the hooks do the timer's work (timer.c). */
extern _Atomic int trk_tl_on TRK_HIDDEN;
/* trk_tl_quiet_ns - hooks quiet this long: the timer thread takes over (1 s; tests change it). */
extern uint64_t trk_tl_quiet_ns TRK_HIDDEN;
/* trk_tick_smp_ns - the timer thread's tick while sampling (100 ms; tests change it). */
extern uint64_t trk_tick_smp_ns TRK_HIDDEN;

/*
 * trk_tl_poll - timerless session, a hook's slow path (guard held, outside
 * enter/exit, t the caller's buffer): every tick's worth of time, what the
 * timer thread would do (control records, flush, TICK, sites); starts the
 * timer thread once the process has a second thread, traces fully, or was
 * quiet for TRK_TL_QUIET_NS. May end the session (STOP, EOF).
 */
void trk_tl_poll(struct trk_thr *t) TRK_HIDDEN;
/* trk_gettid - the calling thread's Linux tid. */
uint32_t trk_gettid(void) TRK_HIDDEN;

/* ---- sample.c: sampling mode (docs/track.md "Sampling") ------------------ */

#define TRK_SMP_SITES_BITS 10
#define TRK_SMP_SITES (1u << TRK_SMP_SITES_BITS) /* call-site slots per thread (then "other") */
#define TRK_SMP_SITES_NS 1000000000ull /* site counts are sent this often (1 s) */
#define TRK_SMP_FILTER_BITS 16	  /* the free filter: 64 Ki counters, a bitmap of 8 KiB */

/*
 * Exact counts of one call site (its return address; sent as ra - 1, the
 * call), packed: the calls in the top 24 bits of one word, the bytes in
 * its low 40, so the hot path adds 2^40 + size with one add and tests two
 * guard bits of the sum (bit 63: the calls reached 2^23; bit 39: the bytes
 * reached 2^39). Before a
 * field could overflow, the slow path moves the word into the slot's wide
 * counters (struct trk_smp_wide) and clears it. The hot path's size is
 * below 2^39 because the distance it must stay under is (TRK_SMP_LEFT_MAX).
 * Written by the owner only. 16 bytes: four slots a cache line.
 */
#define TRK_SMP_CALL_ONE (1ull << 40)
#define TRK_SMP_BYTES_MASK (TRK_SMP_CALL_ONE - 1)
#define TRK_SMP_GUARD ((1ull << 63) | (1ull << 39))
#define TRK_SMP_LEFT_MAX ((int64_t)1 << 39) /* the longest distance the hot path sees */

struct trk_smp_site {
	_Atomic uintptr_t ra;	      /* the call's return address (sent as ra - 1); 0 = free slot */
	_Atomic uint64_t packed;      /* calls << 40 | bytes, since the last flush */
};

/*
 * A slot's flushed counts (the owner, under its thread's fseq), and what the
 * timer sent already (under its lock): cold, apart from the slots.
 */
struct trk_smp_wide {
	_Atomic uint64_t calls, bytes;
};

struct trk_smp_sent {
	uint64_t calls, bytes;
};

/*
 * One thread's sampling state, mmap'd, on a global list, kept with its
 * trk_thr (a later thread reusing the buffer reuses it). The distance to
 * the next sample lives in thread-local storage (struct trk_smp_tls).
 * A slot's counts are wide + packed; the owner changes that sum's parts
 * only at a flush, inside fseq odd (a sequence lock: readers retry).
 */
struct trk_smp_thr {
	/* first, so the hot path's slot address is the state pointer + 16 * index */
	struct trk_smp_site site[TRK_SMP_SITES + 1]; /* the last: sites that found no slot */
	_Atomic uint32_t fseq;	      /* odd while the owner flushes a slot */
	uint32_t seed_gen;	      /* trk_smp.seed_gen rng was seeded for */
	uint64_t rng;		      /* xorshift64* state */
	uint64_t rate;		      /* the mean left was drawn for */
	uint64_t rest;		      /* distance beyond TRK_SMP_LEFT_MAX, not yet in left */
	struct trk_smp_thr *next;
	struct trk_smp_wide wide[TRK_SMP_SITES + 1];
	struct trk_smp_sent sent[TRK_SMP_SITES + 1];
};

/*
 * What the hot path needs of its thread, in one thread-local block (initial-
 * exec like trk_tls_thr: one %fs-relative load, no pointer chase):
 * gen == trk_smp.gen means "sampling at the current rate, left drawn for
 * it, s set". Set by trk_smp_alloc only while the rate is not 0 (a rate
 * change bumps trk_smp.gen after storing the rate), so the fast path needs
 * no check of the rate. 32-byte aligned: never split over two cache lines.
 */
struct trk_smp_tls {
	int64_t left;		      /* bytes until the next sample, 1 .. TRK_SMP_LEFT_MAX */
	union {
		uint64_t key;	      /* gen | guard << 32: == trk_smp.gen on the hot path */
		struct {
			uint32_t gen; /* trk_smp.gen left was drawn for, 0 = none */
			int guard;    /* trk_tls_guard: inside a hook or our own code */
		} k;
	};
	struct trk_smp_thr *s;	      /* this thread's state (its trk_thr's smp) */
} __attribute__((aligned(32)));

extern __thread struct trk_smp_tls trk_smp_tls __attribute__((tls_model("initial-exec"))) TRK_HIDDEN;

/* The free filter: bit h(p) set while a sampled block may live at p (sample.c); 8 KiB. */
extern _Atomic uint64_t trk_smp_bits[1u << (TRK_SMP_FILTER_BITS - 6)] TRK_HIDDEN;

/*
 * The first cache line is everything the hot paths read besides their
 * thread's: the generation, the filter switch and the real functions they
 * jump to (copies of trk_g.real's, made by trk_smp_start before any key
 * or the filter is set), so a sampled malloc or free touches one global
 * line. Written only at rate changes and session starts and ends.
 */
struct trk_smp_global {
	_Atomic uint64_t gen;	      /* bumped with every rate change and at the end: threads
					 draw again; starts at 1, stays below 2^32 in practice,
					 never 0 (a new thread's key is 0) */
	_Atomic int filter;	      /* frees are sent only for sampled pointers */
	void *(*malloc)(size_t);      /* trk_g.real's, for the hot paths */
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	/* the slow path's */
	_Atomic uint64_t rate;	      /* mean bytes between samples; 0 = full tracing */
	uint64_t seed;		      /* PRNG seed, 0 = from the clock */
	uint32_t seed_gen;	      /* bumped with every seed given: threads seed again */
} __attribute__((aligned(64)));

extern struct trk_smp_global trk_smp TRK_HIDDEN;

/* trk_smp_sampling - whether allocations are sampled (one relaxed load: the hooks' branch). */
static inline bool trk_smp_sampling(void)
{
	return atomic_load_explicit(&trk_smp.rate, memory_order_relaxed) != 0;
}

/* trk_smp_filtering - whether frees are sent only for sampled pointers. */
static inline bool trk_smp_filtering(void)
{
	return atomic_load_explicit(&trk_smp.filter, memory_order_relaxed) != 0;
}

/*
 * trk_smp_fast - the sampled hot path (hooks.c), the first thing a hook
 * checks: this thread's key is the current generation (so: a session
 * records, it samples, this thread's distance was drawn for the current
 * rate, the guard is clear) and an allocation of size bytes does not reach
 * its next sample. Then trk_smp_count counts it. False: the hook takes its
 * usual path (state, guard), where trk_smp_alloc decides (first use, a new
 * rate, full tracing, or a sample). Two loads (one %fs-relative, one global
 * that changes only with the rate), no dependent load. The generation is
 * bumped when the session ends (trk_smp_stop), so no state check is needed.
 */
static inline bool trk_smp_fast(size_t size)
{
	return trk_smp_tls.key == atomic_load_explicit(&trk_smp.gen, memory_order_acquire) &&
	       likely((uint64_t)trk_smp_tls.left > size);
}

/* trk_smp_site_at - the home slot of a call site (its return address) in a thread's site table. */
static inline size_t trk_smp_site_at(uintptr_t ra)
{
	return (size_t)((ra * 0x9e3779b97f4a7c15ULL) >> (64 - TRK_SMP_SITES_BITS));
}

/*
 * trk_smp_count - after trk_smp_fast(size): when the call site ra has its
 * home slot (the usual case) and its packed count no guard bit after the
 * add, take size from the distance and store the sum (owner only: plain
 * loads and stores, no lock instruction), true. size < 2^39 here, since
 * left > size. False: nothing done; the full path (trk_smp_alloc) counts it
 * (probing, a new site, the "other" slot, a flush). The state pointer is
 * set before the key (trk_smp_alloc): never NULL here.
 */
static inline bool trk_smp_count(const void *ra, size_t size)
{
	struct trk_smp_site *e = &trk_smp_tls.s->site[trk_smp_site_at((uintptr_t)ra)];
	uint64_t w;

	if (unlikely(atomic_load_explicit(&e->ra, memory_order_relaxed) != (uintptr_t)ra))
		return false;
	w = atomic_load_explicit(&e->packed, memory_order_relaxed) + (TRK_SMP_CALL_ONE + size);
	if (unlikely(w & TRK_SMP_GUARD))
		return false;
	atomic_store_explicit(&e->packed, w, memory_order_relaxed);
	trk_smp_tls.left -= (int64_t)size;
	return true;
}

/* trk_smp_site_read - the counts of slot i of s so far (any thread: retries while the owner flushes). */
void trk_smp_site_read(struct trk_smp_thr *s, size_t i, uint64_t *calls, uint64_t *bytes) TRK_HIDDEN;

/*
 * trk_smp_alloc - sampling mode, guard held, p allocated (size bytes) at
 * call site ra: count it for the site, decide. Returns 0 when it is not
 * sampled, else its weight (>= size) with p put into the sampled set.
 */
uint64_t trk_smp_alloc(struct trk_thr *t, const void *p, size_t size, const void *ra) TRK_HIDDEN;

/*
 * trk_smp_filter_at - the free filter's index of a pointer (counter and
 * bit): its 16-byte granule within its 1 MiB window, plus a hash of the
 * window. Blocks near each other get neighbouring bits, so frees of a
 * program's nearby blocks read the same bitmap line (one line covers 8 KiB
 * of heap; a hashed index read a random one of 128 lines per free, which
 * missed L1 in programs whose own data fills it), and two pointers of one
 * window never share a bit; windows are spread by the hash, so blocks at
 * the same offset in different arenas or mappings do not line up.
 */
static inline uint32_t trk_smp_filter_at(uintptr_t p)
{
	return (uint32_t)(((p >> 4) + ((p >> 20) * 0x9e3779b97f4a7c15ULL >> (64 - TRK_SMP_FILTER_BITS))) &
			  ((1u << TRK_SMP_FILTER_BITS) - 1));
}

/*
 * trk_smp_maybe - filtering on: whether ptr may be a live sampled block
 * (its bit in the 8 KiB bitmap; false: certainly not).
 */
static inline bool trk_smp_maybe(const void *ptr)
{
	uint32_t h = trk_smp_filter_at((uintptr_t)ptr);

	return (atomic_load_explicit(&trk_smp_bits[h >> 6], memory_order_relaxed) >> (h & 63)) & 1;
}

/* trk_smp_free_take - ptr passed the filter: remove it from the sampled set; whether it was there. */
bool trk_smp_free_take(const void *ptr) TRK_HIDDEN;

/*
 * trk_smp_free_sent - filtering on: whether a free of ptr must be sent (a
 * sampled ptr, now removed from the set). The usual case, not sampled, is
 * one load from an 8 KiB bitmap.
 */
static inline bool trk_smp_free_sent(const void *ptr)
{
	if (likely(!trk_smp_maybe(ptr)))
		return false;
	return trk_smp_free_take(ptr);
}
/* trk_smp_keep - put ptr back into the sampled set (realloc failed after its free was taken). */
void trk_smp_keep(const void *ptr) TRK_HIDDEN;
/*
 * trk_smp_stop - the state left TRK_ON (trk_end, a fork child): the hot
 * paths, which do not look at the state, stop (generation bumped, filter
 * off), so every hook goes its usual way and passes through.
 */
void trk_smp_stop(void) TRK_HIDDEN;
/* trk_smp_set_stats - the sampled set's live members and capacity (tests). */
void trk_smp_set_stats(size_t *n, size_t *cap) TRK_HIDDEN;
/*
 * trk_smp_start - trk_start, before the hooks record: reset, then the
 * first rate: cfg's when it has one (sample_given), else heaptap's first
 * CTL_SAMPLE if it arrives on fd within cfg->sample_wait_ms (0: only if it
 * is there already).
 */
void trk_smp_start(int fd, const struct trk_config *cfg) TRK_HIDDEN;
/* trk_smp_ctl - a WIRE_CTL_SAMPLE payload (varint rate, [varint seed]); 0 or -EINVAL. */
int trk_smp_ctl(const uint8_t *p, size_t len) TRK_HIDDEN;
/* trk_smp_set_rate - change the mean (0 = full tracing); seed 0 keeps the seed. */
void trk_smp_set_rate(uint64_t rate, uint64_t seed) TRK_HIDDEN;
/* trk_smp_send_sites - send the site counts that changed (WIRE_REC_SITES); timer, trk_end. */
void trk_smp_send_sites(void) TRK_HIDDEN;
/*
 * trk_smp_sites_due - at a tick (timer thread or timerless hooks): send the
 * site counts when TRK_SMP_SITES_NS passed since *last (the caller's clock),
 * and make now the last.
 */
void trk_smp_sites_due(uint64_t now, uint64_t *last) TRK_HIDDEN;

#endif /* HEAPTAP_TRACK_INTERNAL_H */
