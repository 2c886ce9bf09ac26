/* bench/sample/floor_hooks.c - the sampled hot path built up piece by piece, one LD_PRELOAD library per step */
/* SPDX-License-Identifier: MIT */
/*
 * bench/sample/floor compiles this several times, each with a set of
 * FLOOR_* macros, and preloads each result into floor_loop.c. Every variant
 * interposes malloc and free the way libheaptap_preload.so does (an exported
 * function with no frame that ends in a jump through a function pointer to
 * glibc's __libc_malloc / __libc_free) and adds one piece of the sampled
 * hot path at a time:
 *
 *   (none)          the interposed call only: load the pointer, jump
 *   FLOOR_COUNTER   + the distance to the next sample: a thread-local
 *                     int64 compared with the size and lowered by it
 *   FLOOR_SITES=1   + the exact per-site count in a hashed table (an
 *                     earlier design): slot = table[hash(return address)], its
 *                     ip compared, calls += 1 and bytes += size (two
 *                     read-modify-writes of a 32-byte slot)
 *   FLOOR_SITES=2   + the same count packed: calls in the top 24 bits and
 *                     bytes in the low 40 of one word of a 16-byte slot, one
 *                     add and one test of two guard bits (bit 63: calls
 *                     reached 2^23; bit 39: bytes reached 2^39), the slow
 *                     path flushes the word into wide counters
 *   FLOOR_FILTER    + free's filter: one bit of an 8 KiB bitmap indexed by
 *                     a multiplicative hash of the pointer (all clear here:
 *                     no sample is kept, which is the usual case)
 *
 * What the variants leave out on purpose, because heaptap needs it and it
 * is measured by the real library beside them: the check that the library
 * knows the real allocator (preload's "resolved" flag), the session and
 * rate check (heaptap's generation key), the dirty flag for the timer,
 * and everything on the slow path (a sample every 512 KiB here only
 * resets the distance). Each variant is a floor: what that much work
 * costs with nothing else in the way.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define RATE 524288
#define SITES_BITS 10

extern void *__libc_malloc(size_t size);
extern void __libc_free(void *ptr);

/* loaded at every call, as heaptap's trk_g.real.malloc */
HIDDEN void *(*floor_real_malloc)(size_t) = __libc_malloc;
HIDDEN void (*floor_real_free)(void *) = __libc_free;

#if defined(FLOOR_SITES) && FLOOR_SITES == 1
struct site {
	uintptr_t ip;
	uint64_t calls, bytes, pad;
};
#elif defined(FLOOR_SITES) && FLOOR_SITES == 2
#define CALL_ONE (1ull << 40)
#define GUARD ((1ull << 63) | (1ull << 39))
struct site {
	uintptr_t ip;
	uint64_t packed; /* calls << 40 | bytes */
};

/* what the slow path flushed, after the table (cold) */
struct wide {
	uint64_t calls, bytes;
};
#endif

#if defined(FLOOR_COUNTER) || defined(FLOOR_SITES)
struct floor_tls {
	int64_t left;
#ifdef FLOOR_SITES
	struct site *tab;
#endif
};

static __thread struct floor_tls tls __attribute__((tls_model("initial-exec")));
#endif

#ifdef FLOOR_FILTER
HIDDEN uint64_t floor_bits[1024]; /* 64 Ki bits, all clear: no sample is kept */
#endif

#ifdef FLOOR_SITES
static inline size_t site_at(uintptr_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ULL) >> (64 - SITES_BITS));
}
#endif

#if defined(FLOOR_COUNTER) || defined(FLOOR_SITES)
/* malloc_slow - the distance ran out (or the thread is new, or the site has no slot yet) */
static __attribute__((noinline)) void *malloc_slow(size_t size, uintptr_t ip)
{
	(void)ip;
	if (tls.left <= (int64_t)size)
		tls.left = RATE;
	else
		tls.left -= (int64_t)size;
#ifdef FLOOR_SITES
	if (!tls.tab) {
		void *m = mmap(NULL, (sizeof(struct site) + 32) << SITES_BITS, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return floor_real_malloc(size);
		tls.tab = m;
	}
	{
		struct site *e = &tls.tab[site_at(ip)];

		if (!e->ip)
			e->ip = ip;
		if (e->ip == ip) {
#if FLOOR_SITES == 1
			e->calls++;
			e->bytes += size;
#else
			struct wide *d = (struct wide *)(tls.tab + (1u << SITES_BITS)) + site_at(ip);

			d->calls += (e->packed >> 40) + 1;
			d->bytes += (e->packed & (CALL_ONE - 1)) + size;
			e->packed = 0;
#endif
		}
	}
#endif
	return floor_real_malloc(size);
}
#endif

EXPORT void *malloc(size_t size)
{
#if defined(FLOOR_SITES)
	uintptr_t ip = (uintptr_t)__builtin_return_address(0) - 1;
	struct site *e;

	if (unlikely((uint64_t)tls.left <= size) || unlikely(!tls.tab))
		return malloc_slow(size, ip);
	e = &tls.tab[site_at(ip)];
	if (unlikely(e->ip != ip))
		return malloc_slow(size, ip);
#if FLOOR_SITES == 1
	tls.left -= (int64_t)size;
	e->calls++;
	e->bytes += size;
#else
	{
		uint64_t w = e->packed + (CALL_ONE | size);

		if (unlikely(w & GUARD))
			return malloc_slow(size, ip);
		e->packed = w;
		tls.left -= (int64_t)size;
	}
#endif
	__asm__ volatile("" ::: "memory"); /* the stores happen, as heaptap's relaxed atomics */
	return floor_real_malloc(size);
#elif defined(FLOOR_COUNTER)
	if (unlikely((uint64_t)tls.left <= size))
		return malloc_slow(size, 0);
	tls.left -= (int64_t)size;
	return floor_real_malloc(size);
#else
	return floor_real_malloc(size);
#endif
}

EXPORT void free(void *ptr)
{
#ifdef FLOOR_FILTER
	uint32_t h = (uint32_t)(((uintptr_t)ptr >> 4) * 0x9e3779b97f4a7c15ULL >> 48);

	if (unlikely((floor_bits[h >> 6] >> (h & 63)) & 1))
		__asm__ volatile("" ::: "memory"); /* a sampled pointer: heaptap would look it up */
#endif
	floor_real_free(ptr);
}
