/* preload/preload.h - libheaptap_preload.so: LD_PRELOAD mode of heaptap */
/* SPDX-License-Identifier: MIT */
/*
 * The library exports malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc and pvalloc (version
 * script exports.map; C++ new/delete reach them through malloc/free) and
 * forwards them to track/'s hooks. Configuration comes from the
 * environment `heaptap record` sets:
 *   HEAPTAP_SOCKET  path of the unix stream socket heaptap listens on
 *                   (unset or connect fails: the library stays inert)
 *   HEAPTAP_DEPTH   frames per stack (default TRK_DEPTH_DEFAULT)
 *   HEAPTAP_UNWIND  "libunwind": capture with libunwind only (a fallback
 *                   and comparison switch for the CFI walker)
 *   HEAPTAP_TIMER   "thread": start track's timer thread even in a
 *                   single-threaded sampled program (else the hooks do
 *                   its work while they can, docs/track.md)
 * The constructor removes the library from LD_PRELOAD and every HEAPTAP_*
 * variable from the environment, so programs the target execs are not
 * recorded. Nothing here prints; these are internal to the .so.
 */
#ifndef HEAPTAP_PRELOAD_H
#define HEAPTAP_PRELOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PLD_HIDDEN __attribute__((visibility("hidden")))
#define PLD_EXPORT __attribute__((visibility("default")))
#define PLD_LIB_NAME "libheaptap_preload.so"

/*
 * pld_boot_alloc - memory from the static bootstrap arena, used while the
 * real allocator is being looked up (dlsym itself calls calloc). Zeroed,
 * aligned to align (a power of two, at most 4096). NULL when exhausted.
 * Never freed: free() and realloc() recognise these pointers.
 */
void *pld_boot_alloc(size_t size, size_t align) PLD_HIDDEN;

#define PLD_BOOT_ARENA_SIZE (256 * 1024)
extern char pld_boot_arena[PLD_BOOT_ARENA_SIZE] PLD_HIDDEN;

/*
 * pld_boot_owns - whether p points into the bootstrap arena. On free's hot
 * path: one compare against a constant, no load.
 */
static inline bool pld_boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)pld_boot_arena < PLD_BOOT_ARENA_SIZE;
}

/* pld_boot_size - the size asked for a bootstrap pointer. */
size_t pld_boot_size(const void *p) PLD_HIDDEN;

/*
 * pld_resolve - look the real functions up (dlsym RTLD_NEXT) and hand them
 * to track/. Returns true once they are known; false while the lookup runs
 * (recursive call from dlsym, or another thread doing it), when the caller
 * must use the bootstrap arena.
 */
bool pld_resolve_slow(void) PLD_HIDDEN;

static inline bool pld_resolve(void)
{
	extern _Atomic int pld_real_state PLD_HIDDEN;

	if (__builtin_expect(atomic_load_explicit(&pld_real_state, memory_order_acquire) == 2, 1))
		return true;
	return pld_resolve_slow();
}

/*
 * pld_env_clean - drop this library from LD_PRELOAD and HEAPTAP_* from
 * env (a NULL-terminated environ array, compacted in place; a shortened
 * LD_PRELOAD string lives in a static buffer afterwards).
 */
void pld_env_clean(char **env) PLD_HIDDEN;

#endif /* HEAPTAP_PRELOAD_H */
