/* track/unwind.c - capture the calling thread's stack with libunwind */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, inside the hooks, with no lock held. unw_backtrace
 * uses libunwind's fast frame cache (per thread, see trk_unwind_init) and
 * returns return addresses, innermost first, beginning inside the hook.
 * The hook frames are cut off at the frame whose return address is the
 * hook's own return address ra (the outermost hook's
 * __builtin_return_address(0)): that one is the allocating call site.
 * Searching for ra instead of skipping a fixed count keeps working whether
 * the compiler inlined, tail-called or kept the wrappers.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>

#include "track/internal.h"

#define HOOK_FRAMES_MAX 16 /* ra must show up among the first this many */

void trk_unwind_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

size_t trk_capture(uintptr_t *out, const void *ra)
{
	int want = (int)trk_g.depth + HOOK_FRAMES_MAX;
	int got, i, k = -1;
	size_t n;

	got = unw_backtrace((void **)out, want);
	for (i = 0; i < got && i < HOOK_FRAMES_MAX; i++) {
		if (out[i] == (uintptr_t)ra) {
			k = i;
			break;
		}
	}
	if (k < 0) {
		/* unwinding broke inside the hook: keep the call site at least */
		out[0] = (uintptr_t)ra - 1;
		return 1;
	}
	n = (size_t)(got - k);
	if (n > trk_g.depth)
		n = trk_g.depth;
	for (i = 0; i < (int)n; i++)
		out[i] = out[i + k] - 1;
	return n;
}
