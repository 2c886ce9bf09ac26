/* track/sample_internal.h - sampling mode: its layouts and sample.c functions */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TRACK_SAMPLE_INTERNAL_H
#define HEAPTAP_TRACK_SAMPLE_INTERNAL_H

#include "track/internal.h"

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
/* Every thread's sampling state (sample.c pushes, never removes; sample_sites.c reads). */
extern _Atomic(struct trk_smp_thr *) trk_smp_threads TRK_HIDDEN;
/* trk_smp_sites_reset - take the counts so far as sent: a new session starts from zero. */
void trk_smp_sites_reset(void) TRK_HIDDEN;
/* trk_smp_send_sites - send the site counts that changed (WIRE_REC_SITES); timer, trk_end. */
void trk_smp_send_sites(void) TRK_HIDDEN;
/*
 * trk_smp_sites_due - at a tick (timer thread or timerless hooks): send the
 * site counts when TRK_SMP_SITES_NS passed since *last (the caller's clock),
 * and make now the last.
 */
void trk_smp_sites_due(uint64_t now, uint64_t *last) TRK_HIDDEN;

#endif /* HEAPTAP_TRACK_SAMPLE_INTERNAL_H */
