/* tests/unit/check_interpret_io.c - interpret/ reading: split reads, blocks, stop, status, the output file */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a stream with check_interpret_wire.c, writes it into one
 * end of a socketpair from a thread, runs itp_run on the other end, then
 * opens the recording with rec_open and asserts on its tables and events
 * (check_interpret_harness.h).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_harness.h"
#include "interpret/inq_internal.h"
#include "interpret/internal.h"

/* ---- tests --------------------------------------------------------- */

/* records cut across reads: the parser must wait for the rest */
START_TEST(test_split_reads)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	size_t splits[] = {3, WIRE_HDR_FIXED + 1, 0}, i;

	header(&s);
	ck_begin(&c, 1, 0);
	for (i = 0; i < 1000; i++)
		ck_alloc(&c, i, WIRE_KIND_MALLOC, i, 0, 0x1000 + i * 16);
	ck_end(&s, &c);
	sb_end(&s, 1000, WIRE_END_EXIT);
	splits[2] = s.len - 5;
	for (i = 0; i < 3; i++) {
		memset(&f, 0, sizeof(f));
		f.split = splits[i];
		ck_assert_int_eq(run_feed(&s, &opt, &res, &f), 0);
		ck_assert_uint_eq(res.final.alloc_calls, 1000);
	}
	sb_free(&s);
}
END_TEST

/*
 * Records of all sizes (one event to more than two of the input queue's
 * blocks), from two threads whose numbers interleave (so chunks are applied
 * in place, parked and drained), written in random pieces: the interpreter
 * parses in the queue's blocks and copies only records cut by a block's end
 * or a read's (run.c in_place). A lost, doubled or misplaced byte shows as a
 * wrong count or an unknown free.
 */
START_TEST(test_records_across_blocks)
{
	static const size_t sizes[] = {1, 4000, 30000, 7, 700, 40000, 2, 4000, 12345, 1};
	struct sbuf s = {0};
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	uint64_t seq = 0, allocs = 0;
	size_t k, i;

	header(&s);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct chunkb a, b;

		/* thread 1 takes the even numbers of this round, thread 2 the odd ones */
		ck_begin(&a, 1, seq);
		ck_begin(&b, 2, seq + 1);
		for (i = 0; i < sizes[k]; i++) {
			uint64_t s0 = seq + 4 * i, pa = 0x10000000 + 16 * allocs, pb = 0x20000000 + 16 * allocs;

			ck_alloc(&a, s0, WIRE_KIND_MALLOC, 16 + i % 100, 0, pa);
			ck_alloc(&b, s0 + 1, WIRE_KIND_MALLOC, 32, 0, pb);
			ck_free(&a, s0 + 2, pa);
			ck_free(&b, s0 + 3, pb);
			allocs++;
		}
		seq += 4 * sizes[k];
		if (k % 2) {
			ck_end(&s, &b);
			ck_end(&s, &a);
		} else {
			ck_end(&s, &a);
			ck_end(&s, &b);
		}
	}
	sb_end(&s, seq, WIRE_END_EXIT);
	ck_assert_uint_gt(s.len, 3 * ITP_INQ_BLOCK);
	f.pieces = 40000;
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), 0);
	ck_assert_uint_eq(res.final.alloc_calls, 2 * allocs);
	ck_assert_uint_eq(res.final.free_calls, 2 * allocs);
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.warn.skipped_seqs, 0);
	ck_assert_uint_eq(res.final.heap_bytes, 0);
	sb_free(&s);
}
END_TEST

START_TEST(test_stop)
{
	struct sbuf s = {0};
	struct chunkb c;
	volatile sig_atomic_t stop = 1;
	struct itp_options opt = {.stop = &stop};
	struct itp_result res;
	struct feeder f = {.wait_stop = 1};

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), 0);
	ck_assert_int_eq(f.got_stop, 1);
	ck_assert_int_eq(res.end_reason, WIRE_END_STOP);
	ck_assert_uint_eq(res.final.alloc_calls, 1);
	sb_free(&s);
}
END_TEST

START_TEST(test_stop_timeout)
{
	struct sbuf s = {0};
	volatile sig_atomic_t stop = 1;
	struct itp_options opt = {.stop = &stop, .stop_timeout_ms = 300};
	struct itp_result res;
	struct feeder f = {.never_end = 1};

	header(&s);
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), -ITP_E_TRUNCATED);
	ck_assert_ptr_nonnull(strstr(res.detail, "300 ms"));
	rec_close(open_rec());
	sb_free(&s);
}
END_TEST

/* the status callbacks seen; the second one stops the run (a second stop: at once) */
struct idle_status {
	int calls;
	volatile sig_atomic_t *stop;
};

static void count_status(const struct itp_status *st, void *arg)
{
	struct idle_status *is = arg;

	(void)st;
	if (++is->calls >= 2)
		*is->stop = 2;
}

/*
 * The status callback runs while nothing comes (a stop was asked, the
 * library never answers): only its second call ends the run, so how long
 * the interpreter's thread waited for a CPU between them does not matter.
 * Without status calls while idle the run ends at the stop timeout instead.
 */
START_TEST(test_status_while_idle)
{
	struct sbuf s = {0};
	struct itp_options opt = {.status = count_status, .stop_timeout_ms = 30000};
	volatile sig_atomic_t stop = 1;
	struct itp_result res;
	struct feeder f = {.never_end = 1};
	struct idle_status is = {.stop = &stop};

	opt.status_arg = &is;
	opt.stop = &stop;
	header(&s);
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), -ITP_E_STOPPED);
	ck_assert_int_ge(is.calls, 2);
	sb_free(&s);
}
END_TEST

START_TEST(test_output_exists)
{
	struct sbuf s = {0};
	struct itp_options opt = {.no_symbols = 1};
	struct itp_result res;
	FILE *fp;

	snprintf(outpath, sizeof(outpath), "%s/exists.htap", ck_tmpdir);
	fp = fopen(outpath, "w");
	ck_assert_ptr_nonnull(fp);
	fclose(fp);
	opt.output = outpath;
	ck_assert_int_eq(itp_run(-1, &opt, &res), -ITP_E_OUTPUT);
	ck_assert_int_eq(res.rec_error, REC_E_EXISTS);
	ck_assert_str_ne(itp_strerror(ITP_E_OUTPUT), "unknown error");
	ck_assert_str_eq(itp_strerror(1000), "unknown error");
	sb_free(&s);
}
END_TEST

/* ---- suite ----------------------------------------------------------------- */

static Suite *interpret_io_suite(void)
{
	Suite *s = suite_create("interpret_io");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_split_reads);
	tcase_add_test(tc, test_records_across_blocks);
	tcase_add_test(tc, test_stop);
	tcase_add_test(tc, test_stop_timeout);
	tcase_add_test(tc, test_status_while_idle);
	tcase_add_test(tc, test_output_exists);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(interpret_io_suite());
}
