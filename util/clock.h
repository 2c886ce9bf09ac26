/* util/clock.h - clock readings in nanoseconds */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_UTIL_CLOCK_H
#define HEAPTAP_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * util_clock_ns - clock_gettime(clock) as nanoseconds. A vDSO call for the
 * monotonic and realtime clocks: no system call, no lock, no allocation,
 * safe inside the target's hooks. The clocks used here always exist.
 */
static inline uint64_t util_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * util_mono_ns - CLOCK_MONOTONIC in nanoseconds. The clock is system-wide, so
 * a reading of heaptap and one of the target's library compare directly.
 */
static inline uint64_t util_mono_ns(void)
{
	return util_clock_ns(CLOCK_MONOTONIC);
}

#endif
