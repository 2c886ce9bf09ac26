/* tests/sample/check_sample_stream.h - unit.sample_track's sessions and call sites */
/* SPDX-License-Identifier: MIT */
/*
 * check_sample_track.c (sampled sessions) and check_sample_hot.c (the hot
 * path's counts) run real sessions inside the test process, the hooks
 * called directly; finish() decodes what the library sent with
 * tests/lib/check_decode.h (track/wire.h only, independent of interpret/).
 */
#ifndef HEAPTAP_TESTS_SAMPLE_CHECK_SAMPLE_STREAM_H
#define HEAPTAP_TESTS_SAMPLE_CHECK_SAMPLE_STREAM_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/lib/check_decode.h"
#include "tests/lib/check_session.h"
#include "track/track.h"

/* send_sample - write a CTL_SAMPLE of rate and seed into heaptap's end fd */
void send_sample(int fd, uint64_t rate, uint64_t seed);

/* the allocator the next start() gives the hooks (NULL: libc's) */
extern const struct trk_real *start_real;

/* start - a session; rate != 0: CTL_SAMPLE is waiting in the socket before trk_start. */
void start(struct ck_reader *r, uint64_t rate, uint64_t seed);

/*
 * start_cfg - a session whose start rate is in trk_config (nothing waits in
 * the socket), or, with wait_ms, comes as CTL_SAMPLE from a thread after
 * late_ms while trk_start waits for it.
 */
void start_cfg(struct ck_reader *r, uint64_t rate, uint64_t seed, unsigned wait_ms,
	       unsigned late_ms);

/*
 * finish - stop the session, wait for its timer, decode its stream into *s
 * (END seen); the caller releases it with ck_dec_free
 */
void finish(struct ck_reader *r, struct ck_dec *s);

/* wait_rate - until the timer applied a CTL_SAMPLE */
void wait_rate(uint64_t rate);

/* Three call sites, told apart by their sizes in the stream (48, n, 3 MiB), by their ip in SITES. */
void *site_small(void);
void *site_mid(size_t n);
void *site_big(void);

#endif /* HEAPTAP_TESTS_SAMPLE_CHECK_SAMPLE_STREAM_H */
