/* track/internal.h - the recording core's shared state: global layout, socket, modules, session */
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

#include <errno.h>
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
 * Thread-local state, in one initial-exec block (one %fs-relative access
 * with one offset from the GOT, no pointer chase): the sampled hot path's
 * key and distance (track/sample_internal.h), the recursion guard, the
 * thread's buffer and where its errno lives.
 * key == trk_smp.gen means "sampling at the current rate, left drawn for
 * it, s set". Set by trk_smp_alloc only while the rate is not 0 (a rate
 * change bumps trk_smp.gen after storing the rate), so the fast path needs
 * no check of the rate; one 64-bit compare of key covers "guard clear" and
 * "sampling at the current rate". 64-byte aligned: one cache line.
 */
struct trk_smp_thr;
struct trk_thr;
struct trk_smp_tls {
	int64_t left;		      /* bytes until the next sample, 1 .. TRK_SMP_LEFT_MAX */
	union {
		uint64_t key;	      /* gen | guard << 32: == trk_smp.gen on the hot path */
		struct {
			uint32_t gen; /* trk_smp.gen left was drawn for, 0 = none */
			int guard;    /* trk_tls_guard: inside a hook or our own code */
		} k;
	};
	struct trk_smp_thr *s;	      /* this thread's sampling state (its trk_thr's smp) */
	struct trk_thr *thr;	      /* trk_tls_thr: this thread's buffer, NULL until made */
	int *errnop;		      /* &errno of this thread, NULL until a hook asked (trk_errno_loc) */
} __attribute__((aligned(64)));

extern __thread struct trk_smp_tls trk_smp_tls __attribute__((tls_model("initial-exec"))) TRK_HIDDEN;
#define trk_tls_guard (trk_smp_tls.k.guard)
#define trk_tls_thr (trk_smp_tls.thr)

/*
 * trk_errno_loc - &errno of the calling thread: __errno_location() once,
 * then the address kept beside the guard (the hooks save and restore errno
 * around every recorded call; a call through the PLT each time otherwise).
 */
static inline int *trk_errno_loc(void)
{
	int *p = trk_smp_tls.errnop;

	if (__builtin_expect(p == NULL, 0)) {
		p = __errno_location();
		trk_smp_tls.errnop = p;
	}
	return p;
}

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

/*
 * trk_xf_off - heaptap's last WIRE_CTL_XFRAMES: bit (1 << lang) for each
 * language whose frames are not wanted (timer.c; 0 again at every
 * trk_start): trk_xframe_wanted, and the hooks skip such a producer.
 */
extern _Atomic uint32_t trk_xf_off TRK_HIDDEN;
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

#endif /* HEAPTAP_TRACK_INTERNAL_H */
