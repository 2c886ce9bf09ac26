/* tests/unit/check_recfile.h - what unit.recfile's files share: the small recording */
/* SPDX-License-Identifier: MIT */
/*
 * unit.recfile is one program of three files: check_recfile.c (round
 * trips, the suite), check_recfile_damage.c (damaged and hand-made files)
 * and check_recfile_big.c (big recordings, event modes), all in test case
 * "core" with check_fixture.h's temporary directory per test. That
 * header's state (ck_tmpdir) is static, one per file: each file adds the
 * fixture to the case once more for its own ck_tmppath, so every test gets
 * a fresh directory per file, each removed after it.
 */
#ifndef HEAPTAP_TESTS_UNIT_CHECK_RECFILE_H
#define HEAPTAP_TESTS_UNIT_CHECK_RECFILE_H

#include <check.h>
#include <stdint.h>

#include "recfile/recfile.h"

/* events of the small recording */
#define SMALL_EVENTS 40

/* make_small - write the small recording to path (flush_between: flushed after the symbols and mid-events) */
void make_small(const char *path, int flush_between);
/* check_small - r holds exactly the small recording */
void check_small(const struct rec_reader *r);
/* check_events - r's events are the small recording's, in order; returns how many it has */
uint64_t check_events(const struct rec_reader *r);

/* The test cases of the other files, added to case "core" in the suite's order. */
void recfile_damage_add(TCase *tc);
void recfile_big_add(TCase *tc);

#endif /* HEAPTAP_TESTS_UNIT_CHECK_RECFILE_H */
