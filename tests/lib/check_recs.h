/* tests/lib/check_recs.h - recordings the report suites write by hand, shared (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * Each function writes one small recording with the recfile writer, so the
 * numbers a suite expects from it can be worked out by hand; a failing
 * writer call fails the test. Link with heaptap_recfile.
 */
#ifndef HEAPTAP_TESTS_LIB_CHECK_RECS_H
#define HEAPTAP_TESTS_LIB_CHECK_RECS_H

#include <check.h>
#include <stdint.h>

#include "recfile/recfile.h"
#include "track/wire.h"

/*
 * The sampled recording (sample_bytes 512): module /lib/x.so at 0x10000,
 * one ip 0x10010 in it (no symbol), one trace, one info of size 10
 * (malloc); samples of weight 1000 and 500 (standing for 100 and 50
 * calls), one free (it takes the mean weight, 750); then a tick at
 * tick_ns when that is not 0.
 */
static inline void ck_rec_sampled(const char *path, uint64_t tick_ns)
{
	struct rec_writer *w;
	uint32_t ip, tr, info, mod;
	int err = 0;

	w = rec_writer_create(path, &err);
	ck_assert_msg(w != NULL, "create %s: %s", path, rec_strerror(err));
	ck_assert_int_eq(rec_put_meta(w, "sample_bytes", "512"), 0);
	ck_assert_int_eq(rec_put_module(w, "/lib/x.so", 0x10000, 0x1000, NULL, 0, &mod), 0);
	ck_assert_int_eq(rec_put_ip(w, 0x10010, &ip), 0);
	ck_assert_int_eq(rec_put_symbol(w, ip, mod, NULL, 0), 0);
	ck_assert_int_eq(rec_put_trace(w, 0, ip, &tr), 0);
	ck_assert_int_eq(rec_put_allocinfo(w, 10, tr, WIRE_KIND_MALLOC, &info), 0);
	ck_assert_int_eq(rec_put_alloc(w, info, 1000), 0);
	ck_assert_int_eq(rec_put_alloc(w, info, 500), 0);
	ck_assert_int_eq(rec_put_free(w, info, 0), 0);
	if (tick_ns)
		ck_assert_int_eq(rec_put_tick(w, tick_ns, 0), 0);
	ck_assert_int_eq(rec_writer_close(w), 0);
}

#endif /* HEAPTAP_TESTS_LIB_CHECK_RECS_H */
