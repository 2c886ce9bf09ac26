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

/* ---- per-thread event buffer (buf.c) ---------------------------------- */

#define TRK_BUF_SIZE (64 * 1024) /* event bytes per chunk */
#define TRK_EV_MAX 64		 /* room an ordinary event needs at most */
#define TRK_TCACHE 512		 /* entries of the per-thread child cache */

/* How to unwind through one return address (cfi.c); cached per thread. */
enum trk_cfa {
	TRK_CFA_NONE = 0, /* no plain rule (signal frame, expression, ...): use libunwind */
	TRK_CFA_RSP = 1,
	TRK_CFA_RBP = 2,
	TRK_CFA_CUT = 3,  /* no unwind info at all (no module, no FDE): the stack ends here */
};

struct trk_rule {
	uintptr_t pc;	  /* cache key: return address - 1 */
	int32_t cfa_off;  /* CFA = (rsp or rbp) + cfa_off */
	int16_t ra_off;	  /* return address at CFA + ra_off; 0 = outermost frame */
	int16_t rbp_off;  /* caller's rbp at CFA + rbp_off; 0 = rbp unchanged */
	uint8_t cfa_reg;  /* enum trk_cfa */
	uint8_t valid;	  /* entry filled */
};

#define TRK_RULES 1024 /* entries of the per-thread rule cache (16 KiB) */

/*
 * One frame of a CFI walk, kept so that the thread's next walk can take
 * over the outer frames it shares (unwind.c): the frame's state, and the
 * stack slots the step out of it read, with what they held.
 */
struct trk_wstep {
	uintptr_t ra, sp, rbp; /* the frame's return address, sp and rbp */
	uintptr_t rslot, rval; /* caller's return address read at rslot (outermost frame: a 0 word) */
	uintptr_t bslot, bval; /* caller's rbp read at bslot (rbp unchanged: a 0 word, unwind.c) */
	uintptr_t rbpm;	       /* ~0: the steps from here on read this frame's rbp; 0: they do
				  not (restored from a slot first), so rbp is not compared */
};

#define TRK_WALK_KEEP 64 /* a walk of at most this many frames is kept (2 x 4 KiB) */

/*
 * A stack seen at a call site, for trk_walk_repeat (unwind.c): the state of
 * its first frame and the two slots its step read, the state of the frame
 * that step led to and that frame's tree node, the leaf. 112 bytes.
 */
struct trk_wmemo {
	uintptr_t ra, sp, rbp;		    /* frame 0 (ra 0: empty) */
	uintptr_t rbp_mask;		    /* ~0: its step uses rbp; 0: rbp is restored from a slot */
	uintptr_t rslot, rval, bslot, bval; /* what its step read */
	uintptr_t ra1, sp1, rbp1;	    /* frame 1; sp1 0: frame 0 is the outermost */
	uint32_t leaf, gen;		    /* the stack's leaf (its parent: the node of frames
					       1 ..), announced in session gen */
	uint32_t n;			    /* frames */
	uint32_t vj;			    /* frame 1 is the kept walk's frame vj, and the
					       kept walk's node there is leaf's parent ... */
	uint64_t vepoch;		    /* ... as long as the kept walk is that of
					       trk_thr.wepoch == vepoch (0: not checked) */
};

#define TRK_WMEMO_BITS 6 /* 64 call sites per thread (7 KiB) */

static inline size_t trk_wmemo_at(uintptr_t ra)
{
	return (size_t)((ra * 0x9E3779B97F4A7C15ull) >> (64 - TRK_WMEMO_BITS));
}

/*
 * The per-thread recent-stack cache (tree.c): a stack seen lately by this
 * thread -> its leaf, checked by comparing the frames themselves, so a hit
 * costs neither the whole-stack hash nor the shared table's cache line.
 */
#define TRK_RS_BITS 6	  /* 64 entries */
#define TRK_RS_FRAMES 32  /* stacks up to this deep (17 KiB in all) */

struct trk_rstack {
	uint32_t n;	  /* frames; 0 = empty */
	uint32_t leaf;
	uint32_t gen;	  /* the session leaf was announced in */
	uint32_t pad;
	uintptr_t f[TRK_RS_FRAMES];
};

/* An entry of the per-thread child cache. */
struct trk_tcache {
	uintptr_t ip;
	uint32_t parent, child;
};

/*
 * One thread's buffer. Mapped with mmap, never unmapped; once on the
 * global list it stays there and is reused by a later thread after its
 * owner exited.
 *
 * Who touches the events: the owner appends (and flushes when full) inside
 * trk_thr_enter*() ... trk_thr_exit(); a flusher (timer tick, session end)
 * flushes only while it holds the claim. The two handshake Dekker-style:
 *
 *   owner:   busy = 1; seq = fetch_add(counter); while (claim) pause; ...
 *            busy = 0
 *   flusher: claim = 1; fence; if (busy) { claim = 0; skip } else flush;
 *            claim = 0
 *
 * The owner's locked fetch_add on the sequence counter (which it needs
 * anyway) is its full fence on x86-64, so the per-event cost is two plain
 * stores and a load on top of the counter: no lock instruction of its own.
 * Either the flusher sees busy and backs off, or the owner sees the claim
 * and waits; never both proceed. A busy buffer gets flush_req instead,
 * which its owner honours at its next event.
 */
struct trk_thr {
	_Atomic int busy;	    /* owner is appending */
	_Atomic int claim;	    /* a flusher holds the buffer */
	_Atomic int flush_req;	    /* flusher asks the owner to flush */
	_Atomic int exiting;	    /* key destructor ran; recycle when tid is gone */
	_Atomic int in_use;	    /* owned by a thread (or the timer) */
	uint32_t tid;		    /* owner's Linux thread id */
	_Atomic uint64_t pub;	    /* last_seq + 1 after each event (activity, for the timer) */
	uint64_t seen;		    /* timer: pub at its previous tick */
	uint64_t first_seq;	    /* seq of the chunk's first event */
	uint64_t last_seq;	    /* seq of the chunk's last event */
	size_t len;		    /* event bytes in data */
	uint32_t nev;		    /* events in data (counted as dropped if unsendable) */
	struct trk_thr *next_all;   /* global list, set before publication */
	struct trk_thr *next_free;  /* free list (under trk_g.free_lock) */
	uintptr_t *frames;	    /* unwind scratch, TRK_DEPTH_MAX + 32 slots */
	uintptr_t *prev;	    /* the previous stack (same layout), swapped with frames */
	uint32_t *prev_nodes;	    /* prev_nodes[i]: node of prev[i]; TRK_DEPTH_MAX */
	uint32_t *nodes;	    /* the same for frames, swapped with prev_nodes */
	size_t prev_n;		    /* frames in prev, 0 = none */
	uint32_t spare_node;	    /* node index left from a lost insert race */
	uint32_t gen;		    /* session the events in data belong to */
	int skip;		    /* the event being appended is stale: trk_ev_end drops it */
	uintptr_t pbase;	    /* ptr of the chunk's last ALLOC_D/FREE_D (wire.h), 0 at its start */
	uintptr_t skip_pbase;	    /* pbase before the stale event (restored when it is dropped) */
	struct trk_smp_thr *smp;    /* sampling state (sample.c), made at the first sampled hook */
	/* thread-private cache (parent, ip) -> child: no shared writes */
	struct trk_tcache tcache[TRK_TCACHE];
	uintptr_t stack_lo, stack_hi; /* the owner's stack; hi 0 = unknown (no fast unwind) */
	uint32_t rules_gen;	    /* trk_g.code_gen the rule cache belongs to */
	struct trk_rule rules[TRK_RULES];
	/* the last complete walk (wstep[wcur][0 .. walk_n)) and room for the next */
	uint32_t walk_n, wcur;
	int walk_kept;		    /* the last trk_walk kept its walk (its leaf may be noted) */
	int wnode_ok;		    /* wleaf is the kept walk's leaf */
	uint32_t wleaf;		    /* its k-th ancestor: the node of its frames k .. */
	uint64_t wepoch;	    /* bumped whenever the kept walk or wleaf changes */
	struct trk_wmemo wmemo[1u << TRK_WMEMO_BITS]; /* call site -> leaf (trk_walk_repeat) */
	struct trk_wstep wstep[2][TRK_WALK_KEEP];
	struct trk_rstack rstack[1u << TRK_RS_BITS];
	uint8_t data[TRK_BUF_SIZE];
};

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

/* ---- buf.c ---------------------------------------------------------------- */

/* trk_thr_get_slow - make or reuse a buffer for this thread; NULL if no memory. */
struct trk_thr *trk_thr_get_slow(void) TRK_HIDDEN;
/* trk_thr_new - a buffer not bound to the calling thread's TLS (timer); NULL on no memory. */
struct trk_thr *trk_thr_new(uint32_t tid) TRK_HIDDEN;
/* trk_thr_flush_locked - send the buffer's events as one chunk; owner or claim holder. */
void trk_thr_flush_locked(struct trk_thr *t) TRK_HIDDEN;
/* trk_thr_flush_all - flush every buffer (waits for busy owners). */
void trk_thr_flush_all(void) TRK_HIDDEN;
/* trk_thr_flush_one - flush one buffer as a flusher (waits for its owner). */
void trk_thr_flush_one(struct trk_thr *t) TRK_HIDDEN;
/* trk_thr_flush_idle - timer tick: flush idle buffers, ask busy ones to flush. */
void trk_thr_flush_idle(void) TRK_HIDDEN;
/* trk_thr_key_init - create the pthread key; 0 or -errno. */
int trk_thr_key_init(void) TRK_HIDDEN;

/* trk_thr_get - this thread's buffer, made or reused on first use; NULL if no memory. */
static inline struct trk_thr *trk_thr_get(void)
{
	struct trk_thr *t = trk_tls_thr;

	if (likely(t != NULL))
		return t;
	return trk_thr_get_slow();
}

/* trk_thr_wait_flusher - owner: a flusher holds the buffer, wait (yielding: it may be in a write). */
void trk_thr_wait_flusher(struct trk_thr *t) TRK_HIDDEN;

/* trk_thr_wait_claim - owner, busy set and fenced: wait out a flusher, honour flush_req. */
static inline void trk_thr_wait_claim(struct trk_thr *t)
{
	if (unlikely(atomic_load_explicit(&t->claim, memory_order_acquire)))
		trk_thr_wait_flusher(t);
	if (unlikely(atomic_load_explicit(&t->flush_req, memory_order_relaxed))) {
		atomic_store_explicit(&t->flush_req, 0, memory_order_relaxed);
		trk_thr_flush_locked(t);
	}
}

/*
 * trk_thr_enter_seq - owner: start appending and take the next sequence
 * number (the counter's locked add doubles as the Dekker fence on x86-64).
 */
static inline uint64_t trk_thr_enter_seq(struct trk_thr *t)
{
	uint64_t seq;

	atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
	seq = atomic_fetch_add_explicit(&trk_g.seq, 1, memory_order_seq_cst);
#if !defined(__x86_64__) && !defined(__i386__)
	atomic_thread_fence(memory_order_seq_cst);
#endif
	trk_thr_wait_claim(t);
	return seq;
}

/* trk_thr_enter - owner: start appending without taking a number. */
static inline void trk_thr_enter(struct trk_thr *t)
{
	atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	trk_thr_wait_claim(t);
}

/* trk_thr_exit - owner: done appending. */
static inline void trk_thr_exit(struct trk_thr *t)
{
	atomic_store_explicit(&t->pub, t->last_seq + 1, memory_order_relaxed);
	atomic_store_explicit(&t->busy, 0, memory_order_release);
}

/*
 * trk_ev_put - owner, inside enter/exit: make room for need bytes
 * (flushing), write op and the delta of seq. Returns the write position;
 * the caller encodes the rest and calls trk_ev_end.
 */
static inline uint8_t *trk_ev_put(struct trk_thr *t, size_t need, uint8_t op, uint64_t seq)
{
	uint32_t gen = trk_seq_gen(seq);
	uint8_t *p;

	seq &= TRK_SEQ_MASK;
	if (unlikely(gen != t->gen)) {
		if (gen < t->gen) {
			/* numbered in an ended session: written to scratch, dropped */
			if (t->len + need > TRK_BUF_SIZE)
				trk_thr_flush_locked(t);
			t->skip = 1;
			t->skip_pbase = t->pbase;
			return t->data + t->len;
		}
		/* a new session: what is left of an old one is not sent */
		t->len = 0;
		t->nev = 0;
		t->gen = gen;
	}
	if (unlikely(t->len + need > TRK_BUF_SIZE))
		trk_thr_flush_locked(t);
	p = t->data + t->len;
	*p++ = op;
	if (t->len == 0) {
		t->first_seq = seq;
		t->pbase = 0;
		*p++ = 0;
	} else {
		p += wire_put_varint(p, seq - t->last_seq);
	}
	t->last_seq = seq;
	t->nev++;
	return p;
}

/*
 * trk_put_varint - wire_put_varint without its loop: a number below 2^56
 * (pointers, sizes, node indices) is spread into 7-bit groups with three
 * shift-and-mask steps and stored as one 8-byte word; the length comes
 * from the count of leading zeros. Writes up to 8 bytes (the caller has
 * WIRE_VARINT_MAX of room), returns the bytes the number takes (as
 * wire_put_varint).
 */
static inline size_t trk_put_varint(uint8_t *p, uint64_t v)
{
	uint64_t x = v;
	size_t len;

	if (unlikely(v >> 56))
		return wire_put_varint(p, v);
	x = (x & 0xfffffffull) | (x & 0xfffffff0000000ull) << 4;
	x = (x & 0x00003fff00003fffull) | (x & 0x0fffc0000fffc000ull) << 2;
	x = (x & 0x007f007f007f007full) | (x & 0x3f803f803f803f80ull) << 1;
	len = ((unsigned)(70 - __builtin_clzll(v | 1)) * 37u) >> 8; /* ceil(bits / 7) for bits <= 56 */
	x |= 0x8080808080808080ull & ((1ull << (8 * (len - 1))) - 1);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	__builtin_memcpy(p, &x, 8);
#else
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(x >> (8 * i));
#endif
	return len;
}

/*
 * trk_put_ptr - the pointer of an ALLOC_D or FREE_D: zigzag of its distance
 * from the chunk's previous one (wire.h), which it becomes. Owner, after
 * trk_ev_put; writes up to WIRE_VARINT_MAX bytes, returns their count.
 */
static inline size_t trk_put_ptr(struct trk_thr *t, uint8_t *p, uintptr_t ptr)
{
	uint64_t d = (uint64_t)ptr - (uint64_t)t->pbase;

	t->pbase = ptr;
	return trk_put_varint(p, wire_zigzag(d));
}

static inline void trk_ev_end(struct trk_thr *t, uint8_t *p)
{
	if (unlikely(t->skip)) {
		t->skip = 0;
		t->pbase = t->skip_pbase; /* the dropped event did not move it */
		return;
	}
	t->len = (size_t)(p - t->data);
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
