/* preload/hooks.c - the exported allocator functions of libheaptap_preload.so */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, possibly before our constructor (other libraries'
 * constructors allocate first). Each function forwards to track/'s *_ra
 * hook with its own return address, which track/ uses as the call site.
 * malloc, free, calloc and realloc do so at once: until the real allocator
 * is known, track/ forwards them to the trk_boot_* functions here (its
 * bootstrap, track.h), which look it up (pld_resolve). The others make sure
 * of it themselves first. While the lookup runs (dlsym calls calloc),
 * requests come from the bootstrap arena; free and realloc recognise its
 * pointers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "preload/preload.h"
#include "track/track.h"

#define RA __builtin_return_address(0)

_Atomic int pld_real_state; /* 0 unknown, 1 being looked up, 2 known */
static struct trk_real real;  /* what trk_set_real got, for trk_boot_*: filled before state 2 */

bool pld_resolve_slow(void)
{
	int expected = 0;

	if (atomic_load_explicit(&pld_real_state, memory_order_acquire) == 2)
		return true;
	if (!atomic_compare_exchange_strong(&pld_real_state, &expected, 1))
		return false;
	/* into real while the state is 1: nobody reads it before the 2 below */
	real.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real.reallocarray = (void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
	real.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	real.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	real.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	real.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	real.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	if (!real.malloc || !real.free || !real.calloc || !real.realloc || !real.reallocarray ||
	    !real.posix_memalign || !real.aligned_alloc || !real.memalign || !real.valloc ||
	    !real.pvalloc) {
		/* no allocator behind us (cannot happen with glibc): arena only */
		return false;
	}
	trk_set_real(&real);
	atomic_store_explicit(&pld_real_state, 2, memory_order_release);
	return true;
}

static void *boot_alloc(size_t size, size_t align)
{
	void *p = pld_boot_alloc(size, align);

	if (!p)
		errno = ENOMEM;
	return p;
}

/*
 * The bootstrap (track.h): where track/ sends malloc, free, calloc and
 * realloc until trk_set_real ran, i.e. while trk_g.real's are still these.
 * Only reached while no session records (a session starts after the
 * lookup), so nothing here is recorded.
 */
void *trk_boot_malloc(size_t size)
{
	if (!pld_resolve())
		return boot_alloc(size, 16);
	return real.malloc(size);
}

void trk_boot_free(void *ptr)
{
	if (pld_boot_owns(ptr) || !pld_resolve())
		return; /* nothing but the arena exists yet */
	real.free(ptr);
}

void *trk_boot_calloc(size_t nmemb, size_t size)
{
	size_t bytes;

	if (!pld_resolve()) {
		if (__builtin_mul_overflow(nmemb, size, &bytes)) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_alloc(bytes, 16); /* the arena is zero-filled */
	}
	return real.calloc(nmemb, size);
}

void *trk_boot_realloc(void *ptr, size_t size)
{
	if (!pld_resolve())
		return ptr ? NULL : boot_alloc(size, 16); /* ptr: not from the arena (realloc) */
	return real.realloc(ptr, size);
}

/*
 * The four hot functions jump to track/ at once (a frameless tail call with
 * the return address read from the stack top; sampling's fast path follows
 * there, docs/track.md). free and realloc first test the arena's bounds:
 * a compare against a constant.
 */
PLD_EXPORT void *malloc(size_t size)
{
	return trk_malloc_ra(size, RA);
}

PLD_EXPORT void free(void *ptr)
{
	if (__builtin_expect(pld_boot_owns(ptr), 0))
		return;
	trk_free_ra(ptr, NULL); /* a free's call site is not used: no load of it */
}

PLD_EXPORT void *calloc(size_t nmemb, size_t size)
{
	return trk_calloc_ra(nmemb, size, RA);
}

/* realloc_boot - realloc of a bootstrap block: moved to the real heap; the old one stays. */
static __attribute__((noinline)) void *realloc_boot(void *ptr, size_t size, const void *ra)
{
	size_t old = pld_boot_size(ptr);
	void *p = pld_resolve() ? trk_malloc_ra(size, ra) : boot_alloc(size, 16);

	if (p)
		memcpy(p, ptr, old < size ? old : size);
	return p;
}

PLD_EXPORT void *realloc(void *ptr, size_t size)
{
	if (__builtin_expect(pld_boot_owns(ptr), 0))
		return realloc_boot(ptr, size, RA);
	return trk_realloc_ra(ptr, size, RA);
}

PLD_EXPORT void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t bytes;

	if (__builtin_mul_overflow(nmemb, size, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (pld_boot_owns(ptr) || !pld_resolve())
		return realloc(ptr, bytes);
	return trk_reallocarray_ra(ptr, nmemb, size, RA);
}

PLD_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	if (!pld_resolve()) {
		void *p = pld_boot_alloc(size, alignment);

		if (!p)
			return ENOMEM;
		*memptr = p;
		return 0;
	}
	return trk_posix_memalign_ra(memptr, alignment, size, RA);
}

PLD_EXPORT void *aligned_alloc(size_t alignment, size_t size)
{
	if (!pld_resolve())
		return boot_alloc(size, alignment);
	return trk_aligned_alloc_ra(alignment, size, RA);
}

PLD_EXPORT void *memalign(size_t alignment, size_t size)
{
	if (!pld_resolve())
		return boot_alloc(size, alignment);
	return trk_memalign_ra(alignment, size, RA);
}

PLD_EXPORT void *valloc(size_t size)
{
	if (!pld_resolve())
		return boot_alloc(size, 4096);
	return trk_valloc_ra(size, RA);
}

PLD_EXPORT void *pvalloc(size_t size)
{
	if (!pld_resolve())
		return boot_alloc((size + 4095) & ~(size_t)4095, 4096);
	return trk_pvalloc_ra(size, RA);
}
