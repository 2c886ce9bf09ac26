/* track/unwind.c - libunwind set-up for local stack capture */
/* SPDX-License-Identifier: MIT */
/*
 * The capture itself is trk_capture in internal.h (inline, so the hook
 * has one frame less to unwind). Here: libunwind's cache policy. With
 * UNW_CACHE_PER_THREAD each thread keeps its own frame cache, so threads
 * never contend on libunwind's global cache lock.
 */
#include "track/internal.h"

void trk_unwind_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}
