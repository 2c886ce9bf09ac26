/* preload/hooks.c - the exported allocator functions of libheaptap_preload.so */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, possibly before our constructor (other libraries'
 * constructors allocate first). Each function makes sure the real
 * allocator is known (pld_resolve) and forwards to track/'s *_ra hook with
 * its own return address, which track/ uses as the call site. While the
 * lookup itself runs (dlsym calls calloc), requests come from the
 * bootstrap arena; free and realloc recognise its pointers.
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

bool pld_resolve_slow(void)
{
	struct trk_real r;
	int expected = 0;

	if (atomic_load_explicit(&pld_real_state, memory_order_acquire) == 2)
		return true;
	if (!atomic_compare_exchange_strong(&pld_real_state, &expected, 1))
		return false;
	r.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	r.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	r.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	r.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	r.reallocarray = (void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
	r.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	r.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	r.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	r.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	r.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	if (!r.malloc || !r.free || !r.calloc || !r.realloc || !r.reallocarray ||
	    !r.posix_memalign || !r.aligned_alloc || !r.memalign || !r.valloc || !r.pvalloc) {
		/* no allocator behind us (cannot happen with glibc): arena only */
		return false;
	}
	trk_set_real(&r);
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
 * The four hot functions test "resolved" inline and keep everything else
 * (the lookup, the arena) in a function of its own, so their usual path
 * needs no frame: a load, a compare and a tail call to track/ with the
 * return address read from the stack top (sampling's fast path follows
 * there, docs/track.md).
 */
#define RESOLVED() __builtin_expect(atomic_load_explicit(&pld_real_state, memory_order_acquire) == 2, 1)

static __attribute__((noinline)) void *malloc_boot(size_t size, const void *ra)
{
	if (!pld_resolve())
		return boot_alloc(size, 16);
	return trk_malloc_ra(size, ra);
}

PLD_EXPORT void *malloc(size_t size)
{
	if (RESOLVED())
		return trk_malloc_ra(size, RA);
	return malloc_boot(size, RA);
}

static __attribute__((noinline)) void free_boot(void *ptr, const void *ra)
{
	if (pld_boot_owns(ptr))
		return;
	if (!pld_resolve())
		return; /* nothing but the arena exists yet */
	trk_free_ra(ptr, ra);
}

PLD_EXPORT void free(void *ptr)
{
	if (RESOLVED() && !pld_boot_owns(ptr)) {
		trk_free_ra(ptr, NULL); /* a free's call site is not used: no load of it */
		return;
	}
	free_boot(ptr, RA);
}

static __attribute__((noinline)) void *calloc_boot(size_t nmemb, size_t size, const void *ra)
{
	size_t bytes;

	if (!pld_resolve()) {
		if (__builtin_mul_overflow(nmemb, size, &bytes)) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_alloc(bytes, 16); /* the arena is zero-filled */
	}
	return trk_calloc_ra(nmemb, size, ra);
}

PLD_EXPORT void *calloc(size_t nmemb, size_t size)
{
	if (RESOLVED())
		return trk_calloc_ra(nmemb, size, RA);
	return calloc_boot(nmemb, size, RA);
}

static __attribute__((noinline)) void *realloc_boot(void *ptr, size_t size, const void *ra);

PLD_EXPORT void *realloc(void *ptr, size_t size)
{
	if (RESOLVED() && !pld_boot_owns(ptr))
		return trk_realloc_ra(ptr, size, RA);
	return realloc_boot(ptr, size, RA);
}

static __attribute__((noinline)) void *realloc_boot(void *ptr, size_t size, const void *ra)
{
	if (pld_boot_owns(ptr)) {
		/* move a bootstrap block to the real heap; the old one stays */
		size_t old = pld_boot_size(ptr);
		void *p = pld_resolve() ? trk_malloc_ra(size, ra) : boot_alloc(size, 16);

		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (!pld_resolve())
		return ptr ? NULL : boot_alloc(size, 16);
	return trk_realloc_ra(ptr, size, ra);
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
