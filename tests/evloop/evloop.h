/* tests/evloop/evloop.h - the readings both event-loop programs take: clock, run-queue wait, GOT slot */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TESTS_EVLOOP_H
#define HEAPTAP_TESTS_EVLOOP_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "util/clock.h"

/* evl_now_us - CLOCK_MONOTONIC in microseconds */
static inline int64_t evl_now_us(void)
{
	return (int64_t)(util_mono_ns() / 1000);
}

/*
 * evl_rq_wait_us - the time the thread has waited on a run queue, runnable
 * but not running (us), from its /proc/thread-self/schedstat open as fd; 0
 * when it cannot be read.
 */
static inline int64_t evl_rq_wait_us(int fd)
{
	char buf[128];
	unsigned long long run = 0, wait = 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? (int64_t)(wait / 1000) : 0;
}

/*
 * evl_malloc_slot - what malloc's GOT slot holds (the programs are built
 * with -fno-plt: every call goes through it; heaptap's hook changes it)
 */
static inline void *evl_malloc_slot(void)
{
	void *volatile *slot;

	__asm__("leaq malloc@GOTPCREL(%%rip), %0" : "=r"(slot));
	return *slot;
}

#endif
