/* tests/unit/check_track.h - what unit.track's files share: tree set-up, session helpers */
/* SPDX-License-Identifier: MIT */
/*
 * unit.track is one program of four files: check_track.c (test cases
 * "wire" and "tree", the suite), check_track_unwind.c ("unwind"),
 * check_track_session.c and check_track_twice.c ("session"). Check forks
 * each test, so the state below is fresh in every test.
 */
#ifndef HEAPTAP_TESTS_UNIT_CHECK_TRACK_H
#define HEAPTAP_TESTS_UNIT_CHECK_TRACK_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/lib/check_session.h"
#include "track/internal.h"
#include "track/track.h"

struct ck_dec;

/* tree_setup - modules read, no socket (flushes dropped), a buffer for this thread */
struct trk_thr *tree_setup(void);

/* The test cases of the other files, for the suite. */
TCase *track_unwind_tcase(void);
TCase *track_session_tcase(void);
/* track_session_twice_add - check_track_twice.c's tests, added to case "session" */
void track_session_twice_add(TCase *tc);

/* libc's allocator, but realloc fails huge requests like an exhausted heap */
extern const struct trk_real libc_real;
/* how often fake_restore ran (its arg is &before_end_calls) */
extern _Atomic int before_end_calls;
/* fake_restore - what inject/ will do: put slots back, say how many (5 restored, 1 left) */
void fake_restore(void *arg, uint64_t *restored, uint64_t *left);
/* session_start - a session over r's socketpair, with fake_restore before its end */
void session_start(struct ck_reader *r);
/* session_finish - end (reason) or wait for the end, then decode everything into *s */
void session_finish(struct ck_reader *r, int reason, struct ck_dec *s);
/* check_order - numbers unique and gap-free, nodes before use, allocs/frees paired */
void check_order(const struct ck_dec *s);
/* where a test keeps an allocation alive past the compiler's sight */
extern void *volatile keep_ptr;
/* call_site - trk_malloc(n) from a frame of its own (no tail call) */
void *call_site(size_t n);

#endif /* HEAPTAP_TESTS_UNIT_CHECK_TRACK_H */
