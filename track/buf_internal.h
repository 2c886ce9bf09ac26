/* track/buf_internal.h - the per-thread event buffer: layout and buf.c functions */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TRACK_BUF_INTERNAL_H
#define HEAPTAP_TRACK_BUF_INTERNAL_H

#include "track/internal.h"

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

#define TRK_WALK_KEEP 64 /* a walk of at most this many frames is kept */
#define TRK_WALKS 4	 /* kept walks a thread holds (4 x 4 KiB) */

/*
 * A kept walk (unwind.c): its steps, and its leaf once trk_walk_note saw
 * it (the leaf's k-th ancestor is then the node of frames k ..). epoch
 * takes a new value of trk_thr.wepoch whenever n or w change, so a memo
 * entry that noted (vep, vepoch) knows the walk it checked is still there.
 */
struct trk_wkeep {
	uint32_t n;    /* frames in w (0: none) */
	uint32_t leaf; /* 0: not noted yet */
	uint64_t epoch;
	struct trk_wstep w[TRK_WALK_KEEP];
};

/* a walk never overwrites the one it takes frames from */
_Static_assert(TRK_WALKS >= 2, "TRK_WALKS");

#define TRK_WMEMO_PAIRS 12 /* slots a memo entry checks itself, at most */

/*
 * A stack seen at a call site, for trk_walk_repeat (unwind.c): the state of
 * its first frame and the two slots its step read, the state of the frame
 * that step led to, the leaf, and which kept walk holds the rest of the
 * stack from that frame on, and its own copy of the slots the steps from
 * there on read, when they fit (trk_walk_repeat then checks those). 328 bytes.
 */
struct trk_wmemo {
	uintptr_t ra, sp, rbp;		    /* frame 0 (ra 0: empty) */
	uintptr_t rbp_mask;		    /* ~0: its step uses rbp; 0: rbp is restored from a slot */
	uintptr_t rslot, rval, bslot, bval; /* what its step read */
	uintptr_t ra1, sp1, rbp1;	    /* frame 1; sp1 0: frame 0 is the outermost */
	uint32_t leaf, gen;		    /* the stack's leaf (its parent: the node of frames
					       1 ..), announced in session gen */
	uint32_t n;			    /* frames */
	uint32_t vm;			    /* frame 1 is vstep[0] of a kept walk, vm steps
					       from its end, and that walk's node there is
					       leaf's parent ... */
	const struct trk_wstep *vstep;
	const uint64_t *vep;		    /* ... as long as that walk's epoch, *vep, is
					       vepoch (set with ra: never NULL then) */
	uint64_t vepoch;
	uint32_t np;			    /* pairs in own (TRK_WMEMO_PAIRS + 1: too many, use vstep) */
	uint32_t pad;
	uintptr_t own[TRK_WMEMO_PAIRS][2];  /* (slot, value) the steps from frame 1 on read */
};

/*
 * 64 sets of two entries (41 KiB): a call site's entry is one of the two of
 * its set, so two hot call sites whose addresses hash alike (1 in 64 for
 * any pair, varying with the load address) do not evict each other at
 * every call. The way noted last is way 0.
 */
#define TRK_WMEMO_BITS 6
#define TRK_WMEMO_WAYS 2

/* trk_wmemo_at - the set of call site ra: its entries are wmemo[TRK_WMEMO_WAYS * set ...]. */
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
	/* where trk_walk found the frame without unwind info (trk_xframe_cut_regs) */
	uintptr_t cut_ra, cut_sp, cut_rbp;
	int cut_ok;		    /* the last trk_walk ended at such a frame */
	uint32_t rules_gen;	    /* trk_g.code_gen the rule cache belongs to */
	struct trk_rule rules[TRK_RULES];
	/* the last kept walk is wkeep[wcur]; the next walk goes to the one after it */
	uint32_t wcur;
	int walk_kept;		    /* the last trk_walk kept its walk (its leaf may be noted) */
	uint64_t wepoch;	    /* the last epoch given to a kept walk */
	struct trk_wmemo wmemo[TRK_WMEMO_WAYS << TRK_WMEMO_BITS]; /* call site -> leaf (trk_walk_repeat) */
	struct trk_wkeep wkeep[TRK_WALKS];
	struct trk_rstack rstack[1u << TRK_RS_BITS];
	uint8_t data[TRK_BUF_SIZE];
};

/* ---- buf.c ---------------------------------------------------------------- */

/* trk_thr_get_slow - make or reuse a buffer for this thread; NULL if no memory. */
struct trk_thr *trk_thr_get_slow(void) TRK_HIDDEN;
/* trk_thr_new - a buffer not bound to the calling thread's TLS (timer); NULL on no memory. */
struct trk_thr *trk_thr_new(uint32_t tid) TRK_HIDDEN;
/* trk_thr_flush_locked - send the buffer's events as one chunk; owner or claim holder. */
void trk_thr_flush_locked(struct trk_thr *t) TRK_HIDDEN;
/* trk_thr_flush_all - flush every buffer (waits for busy owners, sending TICKs meanwhile). */
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
 * trk_store_le - the low n bytes of x at p, least significant first (n a
 * constant: one store on a little-endian machine).
 */
static inline void trk_store_le(uint8_t *p, uint64_t x, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	__builtin_memcpy(p, &x, n);
#else
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(x >> (8 * i));
#endif
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
	trk_store_le(p, x, 8);
	return len;
}

/*
 * trk_put_varint_small - trk_put_varint for numbers that are nearly always
 * below 2^14 (sizes, node indices): the high group is moved up one bit by
 * adding it to the number once more, the continuation bit or'd in, one
 * 2-byte store, the branch predicted the same way call after call; larger
 * ones go to trk_put_varint. Same bytes, same room, same result.
 */
static inline size_t trk_put_varint_small(uint8_t *p, uint64_t v)
{
	if (likely(v < 0x4000)) {
		uint32_t x = (uint32_t)v, hi = x & 0x3f80, more = hi != 0;
		uint16_t w = (uint16_t)((x + hi) | more << 7);

		trk_store_le(p, w, 2);
		return 1 + more;
	}
	return trk_put_varint(p, v);
}

/*
 * trk_put_dist - the zigzag of ptr - base as a varint (the pointer of an
 * ALLOC_D or FREE_D, wire.h); writes up to WIRE_VARINT_MAX bytes, returns
 * their count. A distance below 1 MiB (most of them: one arena) is spread
 * into its three 7-bit groups by adding the upper groups to it once (the
 * top one twice more), with one 4-byte store.
 */
static inline size_t trk_put_dist(uint8_t *p, uintptr_t base, uintptr_t ptr)
{
	uint64_t v = wire_zigzag((uint64_t)ptr - (uint64_t)base);

	if (likely(v < (1u << 21))) {
		/* at most 3 bytes, no clz */
		uint32_t x = (uint32_t)v, g12 = x & 0x1fff80, g2 = x & 0x1fc000;
		uint32_t c1 = g12 != 0, c2 = g2 != 0;
		uint32_t w = (x + g12 + 2 * g2) | c1 << 7 | c2 << 15;

		trk_store_le(p, w, 4);
		return 1 + c1 + c2;
	}
	return trk_put_varint(p, v);
}

/*
 * trk_put_ptr - trk_put_dist from the chunk's previous pointer, which ptr
 * becomes. Owner, after trk_ev_put.
 */
static inline size_t trk_put_ptr(struct trk_thr *t, uint8_t *p, uintptr_t ptr)
{
	uintptr_t base = t->pbase;

	t->pbase = ptr;
	return trk_put_dist(p, base, ptr);
}

/*
 * trk_ev_open - the hooks' short way into trk_ev_put: when seq belongs to
 * the buffer's session, the chunk holds an event already, need bytes fit
 * and seq follows the chunk's last number by less than 128 (one varint
 * byte), writes op and that delta with one 2-byte store and returns the
 * position after them; NULL otherwise (nothing written: the caller takes
 * trk_ev_put). The caller writes the rest from its own copies of the
 * buffer's fields and closes with trk_ev_close. The bytes are trk_ev_put's.
 */
static inline uint8_t *trk_ev_open(struct trk_thr *t, size_t need, uint8_t op, uint64_t seq)
{
	size_t len = t->len;
	uint64_t d = (seq & TRK_SEQ_MASK) - t->last_seq;
	uint16_t w = (uint16_t)(op | d << 8);
	uint8_t *p;

	/* len - 1 wraps for an empty chunk (its first event is absolute) */
	if (unlikely(trk_seq_gen(seq) != t->gen || len - 1 >= TRK_BUF_SIZE - need || d >= 0x80))
		return NULL;
	p = t->data + len;
	trk_store_le(p, w, 2);
	return p + 2;
}

/* trk_ev_close - end an event trk_ev_open began, p past its last byte (never a skipped one). */
static inline void trk_ev_close(struct trk_thr *t, uint8_t *p, uint64_t seq)
{
	t->len = (size_t)(p - t->data);
	t->last_seq = seq & TRK_SEQ_MASK;
	t->nev++;
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

#endif /* HEAPTAP_TRACK_BUF_INTERNAL_H */
