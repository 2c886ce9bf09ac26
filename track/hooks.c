/* track/hooks.c - the allocator hooks: record, then forward to the real functions */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, in any thread, possibly from signal handlers of
 * careless programs. Each hook:
 *   - passes straight through when no session records or the thread is
 *     already inside a hook (the guard: our own and libunwind's allocations,
 *     libc's allocations on our behalf, are never recorded);
 *   - for an allocation: calls the real function first, then unwinds and
 *     appends ALLOC, taking its sequence number after the memory exists;
 *   - for a free: appends FREE, taking its number, before the real free,
 *     so a thread that gets the same address from malloc afterwards takes a
 *     larger number;
 *   - for realloc: unwinds first, reserves the FREE number before the real
 *     call, then writes FREE (or NOP when nothing was freed) and ALLOC;
 *   - leaves errno as the real function left it (or as it was, for free).
 */
#include <errno.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/sample_internal.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"
#include "track/xframe_internal.h"

#define ALLOC_EV_MAX (2 + 6 * WIRE_VARINT_MAX)

static inline bool hook_on(void)
{
	return atomic_load_explicit(&trk_g.state, memory_order_relaxed) == TRK_ON && !trk_tls_guard;
}

/* put_alloc - owner inside enter/exit: append ALLOC numbered seq. */
static inline __attribute__((always_inline)) void put_alloc(struct trk_thr *t, uint64_t seq, uint8_t kind, size_t size,
			     uint32_t leaf, const void *p, uint64_t weight)
{
	uint8_t *q = trk_ev_put(t, ALLOC_EV_MAX, weight ? WIRE_EV_ALLOC_W : WIRE_EV_ALLOC_D, seq);

	*q++ = kind;
	q += trk_put_varint_small(q, size);
	q += trk_put_varint_small(q, leaf);
	if (weight) {
		/* sampled: absolute, leaves the chunk's pointer base alone */
		q += trk_put_varint(q, (uintptr_t)p);
		q += trk_put_varint(q, weight);
	} else {
		q += trk_put_ptr(t, q, (uintptr_t)p);
	}
	trk_ev_end(t, q);
}

/*
 * renumber - seq belongs to another session than gen (one began
 * meanwhile): seq becomes a NOP, the leaf is announced in the new session
 * first, and a new number is taken (inside enter again). Out of line.
 */
static __attribute__((noinline)) uint64_t renumber(struct trk_thr *t, uint64_t seq, uint32_t gen,
						   uint32_t leaf)
{
	while (trk_seq_gen(seq) != gen) {
		trk_ev_end(t, trk_ev_put(t, 2 + WIRE_VARINT_MAX, WIRE_EV_NOP, seq));
		trk_thr_exit(t);
		gen = trk_tree_send(t, leaf);
		seq = trk_thr_enter_seq(t);
	}
	return seq;
}

/*
 * put_alloc_sent - owner inside enter, seq taken: append ALLOC (leaf
 * announced in session gen) and exit (see renumber). Inlined: every
 * recorded allocation comes here.
 */
static inline __attribute__((always_inline)) void put_alloc_sent(struct trk_thr *t, uint64_t seq,
								  uint32_t gen, uint8_t kind, size_t size,
								  uint32_t leaf, const void *p,
								  uint64_t weight)
{
	uintptr_t base = t->pbase;
	uint8_t *q;

	if (unlikely(trk_seq_gen(seq) != gen))
		seq = renumber(t, seq, gen, leaf);
	else if (likely(!weight) && likely((q = trk_ev_open(t, ALLOC_EV_MAX, WIRE_EV_ALLOC_D, seq)) != NULL)) {
		/* the usual ALLOC_D: the fields from registers, one exit */
		*q++ = kind;
		q += trk_put_varint_small(q, size);
		q += trk_put_varint_small(q, leaf);
		q += trk_put_dist(q, base, (uintptr_t)p);
		t->pbase = (uintptr_t)p;
		trk_ev_close(t, q, seq);
		trk_thr_exit(t);
		return;
	}
	put_alloc(t, seq, kind, size, leaf, p, weight);
	trk_thr_exit(t);
}

/*
 * capture_trace - the leaf of the allocating code's stack, announced in the
 * session *gen (trk_tree_trace). A hook called again with the stack of the
 * thread's previous walk (a loop's allocations at one call site) takes that
 * walk's leaf (trk_walk_repeat); otherwise the CFI walker (trk_walk, with
 * libunwind as the fallback: trk_capture_libunwind) and the tree. Must be
 * inlined into the outermost hook function, whose frame pointer leads to
 * the caller (the hooks are built with frame pointers). While a foreign
 * frame producer is set (and heaptap did not switch its language off:
 * WIRE_CTL_XFRAMES), trk_xf_capture (xframe.c) does it all, and the memo
 * must not be asked first: its leaf says nothing of the producer's frames.
 */
static inline __attribute__((always_inline)) uint32_t capture_trace(struct trk_thr *t, const void *ra,
								    uint32_t *gen)
{
	const struct trk_xf_prod *xp = atomic_load_explicit(&trk_xf_cur, memory_order_acquire);
	uint32_t leaf;
	size_t n;

	if (unlikely(xp != NULL) && !(atomic_load_explicit(&trk_xf_off, memory_order_relaxed) & xp->off_bit))
		return trk_xf_capture(t, ra, __builtin_frame_address(0), gen, xp);
	if (likely(trk_g.fast_unwind)) {
		const uintptr_t *fp = __builtin_frame_address(0);

		if (likely(fp[1] == (uintptr_t)ra)) {
			uint32_t cur = atomic_load_explicit(&trk_g.sess_gen, memory_order_acquire);

			leaf = trk_walk_repeat(t, (uintptr_t)ra, fp, cur);
			if (likely(leaf)) {
				*gen = cur;
				return leaf;
			}
			n = trk_walk(t, t->frames, (uintptr_t)ra, fp);
			if (likely(n)) {
				leaf = trk_tree_trace(t, n, gen);
				trk_walk_note(t, leaf, *gen);
				return leaf;
			}
		}
	}
	n = trk_cut_stack(t, t->frames, trk_capture_libunwind(t->frames, ra));
	return trk_tree_trace(t, n, gen);
}

/*
 * record_alloc - unwind, find the trace, append ALLOC; guard held. In
 * sampling mode (sample.c) only a sampled allocation goes on, as ALLOC_W.
 */
static inline __attribute__((always_inline)) void record_alloc(const void *p, size_t size, uint8_t kind, const void *ra)
{
	struct trk_thr *t = trk_thr_get();
	uint64_t weight = 0;
	uint32_t leaf, gen;

	if (unlikely(!t)) {
		atomic_fetch_add(&trk_g.dropped, 1);
		return;
	}
	if (unlikely(trk_smp_sampling()) && !(weight = trk_smp_alloc(t, p, size, ra)))
		return;
	leaf = capture_trace(t, ra, &gen);
	put_alloc_sent(t, trk_thr_enter_seq(t), gen, kind, size, leaf, p, weight);
}

/*
 * The sampled fast path (trk_smp_fast: sampling, guard clear, no sample
 * reached) is checked first, before the state and the guard (its key
 * covers both: sample.c bumps the generation when the state leaves ON). It
 * only counts the call for its site and forwards, counting before the call
 * so the real function is a tail call: no frame, no guard, no errno save
 * (a failing call is counted too: it asked for the bytes). Everything else
 * goes to the *_full functions, out of line so the fast path needs no
 * frame, and reached by tail calls: their frame is then the hook's and
 * capture_trace's frame-pointer start (fp[1] == ra) holds. Were a call left
 * in place (no sibling-call optimisation, e.g. -O0), the capture falls back
 * to libunwind, slower, with the same stack.
 */
static __attribute__((noinline)) void *malloc_full(size_t size, const void *ra)
{
	int *ep = trk_errno_loc();
	void *p;
	int e;

	trk_tls_guard = 1;
	p = trk_g.real.malloc(size);
	e = *ep;
	if (p)
		record_alloc(p, size, WIRE_KIND_MALLOC, ra);
	trk_tls_guard = 0;
	*ep = e;
	return p;
}

void *trk_malloc_ra(size_t size, const void *ra)
{
	/* sampling, no sample reached: counted for its call site, nothing sent */
	if (likely(trk_smp_fast(size)) && likely(trk_smp_count(ra, size)))
		return trk_smp.malloc(size);
	if (!hook_on())
		return trk_g.real.malloc(size);
	return malloc_full(size, ra);
}

/*
 * free_record - trk_free_ra's recording path: FREE, then the real free.
 * Out of line, so the paths that only forward (sampling: a pointer that was
 * not sampled) need no frame of their own and tail-call the real free.
 */
static __attribute__((noinline)) void free_record(void *ptr)
{
	struct trk_thr *t;
	uint8_t *q;

	/*
	 * No errno save: what could change it here (making the thread's
	 * buffer, a flush) keeps it itself (buf.c), and the real free is
	 * called last.
	 */
	trk_tls_guard = 1;
	t = trk_thr_get();
	if (likely(t != NULL)) {
		uint64_t seq = trk_thr_enter_seq(t);
		uintptr_t base = t->pbase;

		q = trk_ev_open(t, 2 + 2 * WIRE_VARINT_MAX, WIRE_EV_FREE_D, seq);
		if (likely(q != NULL)) {
			q += trk_put_dist(q, base, (uintptr_t)ptr);
			t->pbase = (uintptr_t)ptr;
			trk_ev_close(t, q, seq);
		} else {
			q = trk_ev_put(t, 2 + 2 * WIRE_VARINT_MAX, WIRE_EV_FREE_D, seq);
			q += trk_put_ptr(t, q, (uintptr_t)ptr);
			trk_ev_end(t, q);
		}
		trk_thr_exit(t);
	} else {
		atomic_fetch_add(&trk_g.dropped, 1);
	}
	trk_g.real.free(ptr);
	trk_tls_guard = 0;
}

/* free_filtered - sampling, ptr passed the filter: FREE if it was sampled (now out of the set). */
static __attribute__((noinline)) void free_filtered(void *ptr)
{
	if (trk_smp_free_take(ptr))
		free_record(ptr);
	else
		trk_g.real.free(ptr);
}

/* free_slow - trk_free_ra while filtering (sampling): ptr passed the filter. */
static __attribute__((noinline)) void free_slow(void *ptr)
{
	if (!ptr || !hook_on()) {
		trk_g.real.free(ptr);
		return;
	}
	free_filtered(ptr);
}

void trk_free_ra(void *ptr, const void *ra)
{
	(void)ra;
	/*
	 * sampling: a pointer that was not sampled costs one bitmap load (the
	 * filter is on only while the state is ON; a guarded free, or NULL, that
	 * passes the bitmap is sorted out in free_slow)
	 */
	if (likely(atomic_load_explicit(&trk_smp.filter, memory_order_acquire))) {
		if (likely(!trk_smp_maybe(ptr))) {
			trk_smp.free(ptr);
			return;
		}
		free_slow(ptr);
		return;
	}
	/* full tracing (or no session): record unless NULL, guarded or off */
	if (likely(ptr != NULL) && hook_on()) {
		free_record(ptr);
		return;
	}
	trk_g.real.free(ptr);
}

/* calloc_full - trk_calloc_ra past the sampled fast path (see malloc_full). */
static __attribute__((noinline)) void *calloc_full(size_t nmemb, size_t size, const void *ra)
{
	int *ep = trk_errno_loc();
	void *p;
	int e;

	trk_tls_guard = 1;
	p = trk_g.real.calloc(nmemb, size);
	e = *ep;
	if (p)
		record_alloc(p, nmemb * size, WIRE_KIND_CALLOC, ra); /* no overflow: it succeeded */
	trk_tls_guard = 0;
	*ep = e;
	return p;
}

void *trk_calloc_ra(size_t nmemb, size_t size, const void *ra)
{
	size_t bytes;

	/* sampling, no sample reached (see malloc_full) */
	if (!__builtin_mul_overflow(nmemb, size, &bytes) && likely(trk_smp_fast(bytes)) &&
	    likely(trk_smp_count(ra, bytes)))
		return trk_smp.calloc(nmemb, size);
	if (!hook_on())
		return trk_g.real.calloc(nmemb, size);
	return calloc_full(nmemb, size, ra);
}

/*
 * do_realloc - realloc and reallocarray. size is the byte count (only used
 * for the record); call performs the real function.
 */
static inline __attribute__((always_inline)) void *do_realloc(void *ptr, size_t nmemb, size_t size, uint8_t kind, const void *ra)
{
	struct trk_thr *t;
	uint64_t fseq = 0, aseq, weight = 0;
	size_t bytes;
	uint32_t leaf = 0, gen = 0;
	bool overflow, smp, send_free = ptr != NULL, send_alloc = true;
	void *q;
	int *ep = trk_errno_loc();
	int e = *ep;

	trk_tls_guard = 1;
	t = trk_thr_get();
	if (unlikely(!t)) {
		atomic_fetch_add(&trk_g.dropped, 1);
		*ep = e;
		q = kind == WIRE_KIND_REALLOC ? trk_g.real.realloc(ptr, size)
					      : trk_g.real.reallocarray(ptr, nmemb, size);
		trk_tls_guard = 0;
		return q;
	}
	overflow = __builtin_mul_overflow(nmemb, size, &bytes);
	smp = trk_smp_sampling();
	if (unlikely(smp)) {
		/* sampled: decided before the call, the new block goes into the set after it */
		weight = trk_smp_alloc(t, NULL, bytes, ra);
		send_alloc = weight != 0;
		if (send_free && trk_smp_filtering())
			send_free = trk_smp_free_sent(ptr);
	}
	/* unwind before the number is reserved: new nodes must come first */
	if (send_alloc)
		leaf = capture_trace(t, ra, &gen);
	if (send_free)
		fseq = atomic_fetch_add_explicit(&trk_g.seq, 1, memory_order_seq_cst);
	*ep = e;
	q = kind == WIRE_KIND_REALLOC ? trk_g.real.realloc(ptr, size)
				      : trk_g.real.reallocarray(ptr, nmemb, size);
	e = *ep;
	send_alloc = q && send_alloc;
	if (unlikely(!send_free && !send_alloc)) {
		trk_tls_guard = 0; /* sampling: nothing to send */
		*ep = e;
		return q;
	}
	/*
	 * The allocation's number is taken as the buffer is entered (its locked
	 * add is the handshake's fence, trk_thr_enter_seq): after the real call,
	 * as for malloc, and larger than fseq. Only a failed or sampled-out
	 * allocation enters without a number (trk_thr_enter's fence).
	 */
	if (likely(send_alloc))
		aseq = trk_thr_enter_seq(t);
	else
		trk_thr_enter(t);
	if (send_free) {
		/* freed: moved, or size 0 (glibc frees and returns NULL) */
		bool freed = q != NULL || (!overflow && bytes == 0);
		uint8_t *w = trk_ev_put(t, 2 + 2 * WIRE_VARINT_MAX + ALLOC_EV_MAX,
					freed ? WIRE_EV_FREE_D : WIRE_EV_NOP, fseq);

		if (freed)
			w += trk_put_ptr(t, w, (uintptr_t)ptr);
		else if (unlikely(smp))
			trk_smp_keep(ptr); /* still live and sampled */
		trk_ev_end(t, w);
	}
	if (send_alloc) {
		if (unlikely(weight))
			trk_smp_keep(q);
		put_alloc_sent(t, aseq, gen, kind, bytes, leaf, q, weight);
	} else
		trk_thr_exit(t);
	trk_tls_guard = 0;
	*ep = e;
	return q;
}

/* realloc_full - trk_realloc_ra past the sampled fast path (see malloc_full). */
static __attribute__((noinline)) void *realloc_full(void *ptr, size_t size, const void *ra)
{
	return do_realloc(ptr, 1, size, WIRE_KIND_REALLOC, ra);
}

void *trk_realloc_ra(void *ptr, size_t size, const void *ra)
{
	/* sampling, no sample reached, ptr not sampled: nothing to send (see malloc_full) */
	if (likely(trk_smp_fast(size)) && (!ptr || (trk_smp_filtering() && !trk_smp_maybe(ptr))) &&
	    likely(trk_smp_count(ra, size)))
		return trk_smp.realloc(ptr, size);
	if (!hook_on())
		return trk_g.real.realloc(ptr, size);
	return realloc_full(ptr, size, ra);
}

void *trk_reallocarray_ra(void *ptr, size_t nmemb, size_t size, const void *ra)
{
	if (!hook_on())
		return trk_g.real.reallocarray(ptr, nmemb, size);
	return do_realloc(ptr, nmemb, size, WIRE_KIND_REALLOCARRAY, ra);
}

int trk_posix_memalign_ra(void **memptr, size_t alignment, size_t size, const void *ra)
{
	int ret, e;

	if (!hook_on())
		return trk_g.real.posix_memalign(memptr, alignment, size);
	trk_tls_guard = 1;
	ret = trk_g.real.posix_memalign(memptr, alignment, size);
	e = errno;
	if (ret == 0 && *memptr)
		record_alloc(*memptr, size, WIRE_KIND_POSIX_MEMALIGN, ra);
	trk_tls_guard = 0;
	errno = e;
	return ret;
}

/* ALIGNED_HOOK - a hook of the shape void *f(args) recorded as kind. */
#define ALIGNED_HOOK(name, kind, size_expr, params, args)                          \
	void *trk_##name##_ra params                                               \
	{                                                                          \
		void *p;                                                           \
		int e;                                                             \
                                                                                   \
		if (!hook_on())                                                    \
			return trk_g.real.name args;                               \
		trk_tls_guard = 1;                                                 \
		p = trk_g.real.name args;                                          \
		e = errno;                                                         \
		if (p)                                                             \
			record_alloc(p, size_expr, kind, ra);                      \
		trk_tls_guard = 0;                                                 \
		errno = e;                                                         \
		return p;                                                          \
	}

ALIGNED_HOOK(aligned_alloc, WIRE_KIND_ALIGNED_ALLOC, size,
	     (size_t alignment, size_t size, const void *ra), (alignment, size))
ALIGNED_HOOK(memalign, WIRE_KIND_MEMALIGN, size, (size_t alignment, size_t size, const void *ra),
	     (alignment, size))
ALIGNED_HOOK(valloc, WIRE_KIND_VALLOC, size, (size_t size, const void *ra), (size))
ALIGNED_HOOK(pvalloc, WIRE_KIND_PVALLOC, size, (size_t size, const void *ra), (size))

/*
 * The exact-signature hooks: their own return address is the call site.
 * They only pass it on (a tail call), so they need no frame: without one
 * the return address is read from the stack top (with one, a push, a load
 * through rbp and a pop on every call of the program). The *_ra functions
 * they jump to keep theirs.
 */
#define RA __builtin_return_address(0)
#if defined(__clang__)
#define NOFRAME /* no per-function optimize attribute: a frame, and the same stack */
#else
#define NOFRAME __attribute__((optimize("omit-frame-pointer")))
#endif

NOFRAME void *trk_malloc(size_t size)
{
	return trk_malloc_ra(size, RA);
}

NOFRAME void trk_free(void *ptr)
{
	trk_free_ra(ptr, RA);
}

NOFRAME void *trk_calloc(size_t nmemb, size_t size)
{
	return trk_calloc_ra(nmemb, size, RA);
}

NOFRAME void *trk_realloc(void *ptr, size_t size)
{
	return trk_realloc_ra(ptr, size, RA);
}

NOFRAME void *trk_reallocarray(void *ptr, size_t nmemb, size_t size)
{
	return trk_reallocarray_ra(ptr, nmemb, size, RA);
}

NOFRAME int trk_posix_memalign(void **memptr, size_t alignment, size_t size)
{
	return trk_posix_memalign_ra(memptr, alignment, size, RA);
}

NOFRAME void *trk_aligned_alloc(size_t alignment, size_t size)
{
	return trk_aligned_alloc_ra(alignment, size, RA);
}

NOFRAME void *trk_memalign(size_t alignment, size_t size)
{
	return trk_memalign_ra(alignment, size, RA);
}

NOFRAME void *trk_valloc(size_t size)
{
	return trk_valloc_ra(size, RA);
}

NOFRAME void *trk_pvalloc(size_t size)
{
	return trk_pvalloc_ra(size, RA);
}
