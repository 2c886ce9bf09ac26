/* tests/lib/check_libc_real.h - the C library's allocator as a trk_real, for suites that start track/ sessions (header only) */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TESTS_LIB_CHECK_LIBC_REAL_H
#define HEAPTAP_TESTS_LIB_CHECK_LIBC_REAL_H

#include <malloc.h>
#include <stdlib.h>

#include "track/track.h"

/* trk_config.real for a test that calls the hooks directly: every entry is libc's own. */
static const struct trk_real libc_real = {
	.malloc = malloc,
	.free = free,
	.calloc = calloc,
	.realloc = realloc,
	.reallocarray = reallocarray,
	.posix_memalign = posix_memalign,
	.aligned_alloc = aligned_alloc,
	.memalign = memalign,
	.valloc = valloc,
	.pvalloc = pvalloc,
};

#endif
