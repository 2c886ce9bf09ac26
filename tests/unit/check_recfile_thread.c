/* tests/unit/check_recfile_thread.c - the writer's chunk thread: the same file as inline, a thread while on */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* program_invocation_short_name, nftw (tests/lib/check_fixture.h) */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "recfile/recfile.h"
#include "util/hash.h"

#define NEV 1700000 /* four event chunks (512 Ki events each), the last one short */

/*
 * A recording that makes every kind of job: event chunks whose infos grow
 * while the chunks fill (the encoder sizes its tables by the infos known at
 * the cut), weighted allocs, string and trace chunks past 1 MiB, ticks,
 * metadata and flushes of half-filled buffers in between.
 */
static void write_mixed(struct rec_writer *w)
{
	uint32_t ip, t = 0, a, ninfo = 0, s;
	char str[48];

	for (uint64_t k = 0; k < NEV; k++) {
		uint64_t x = util_fmix64(k + 1);

		if (k % 16 == 0) {
			CK_REQUIRE(rec_put_ip(w, 0x400000 + (x & 0xffffff) * 16, &ip) == 0);
			CK_REQUIRE(rec_put_trace(w, k % 64 ? t : 0, ip, &t) == 0);
			CK_REQUIRE(rec_put_allocinfo(w, x >> 52, t, 1 + (k & 1), &a) == 0);
			ninfo = a + 1;
		}
		if (k % 50 == 0) {
			snprintf(str, sizeof(str), "%016llx-%llu", (unsigned long long)x,
				 (unsigned long long)k);
			CK_REQUIRE(rec_put_string(w, str, &s) == 0);
		}
		if (k % 2)
			CK_REQUIRE(rec_put_free_of(w, (uint32_t)((x >> 20) % ninfo), k % 7 == 1,
						k / 2 - (x >> 60)) == 0);
		else
			CK_REQUIRE(rec_put_alloc(w, (uint32_t)((x >> 20) % ninfo),
					      k % 10 == 4 ? 4096 + k : 0) == 0);
		if (k % 100000 == 0)
			CK_REQUIRE(rec_put_tick(w, k * 1000, k * 4096) == 0);
		if (k % 300007 == 0)
			CK_REQUIRE(rec_writer_flush(w) == 0);
	}
	CK_REQUIRE(rec_put_meta(w, "state", "done") == 0);
}

START_TEST(test_thread_same_file)
{
	struct rec_writer *w;
	struct rec_reader *r;
	uint8_t *a, *b;
	size_t na, nb;
	int err, before;

	w = rec_writer_create(ck_tmppath("inline.htap"), &err);
	ck_assert_ptr_nonnull(w);
	write_mixed(w);
	ck_assert_int_eq(rec_writer_close(w), 0);

	before = ck_tasks();
	w = rec_writer_create(ck_tmppath("thread.htap"), &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rec_writer_thread(w), 0);
	ck_assert_int_eq(ck_tasks(), before + 1); /* the work is really done elsewhere */
	write_mixed(w);
	ck_assert_int_eq(rec_writer_close(w), 0);
	ck_assert_int_eq(ck_tasks(), before);

	a = ck_slurp(ck_tmppath("inline.htap"), &na);
	b = ck_slurp(ck_tmppath("thread.htap"), &nb);
	ck_assert_uint_gt(na, 1 << 20);
	ck_assert_uint_eq(na, nb);
	ck_assert(!memcmp(a, b, na));
	free(a);
	free(b);
	r = rec_open(ck_tmppath("thread.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), NEV);
	ck_assert_uint_ge(rec_nevent_chunks(r), 4);
	ck_assert_str_eq(rec_meta(r, "state"), "done");
	rec_close(r);
}
END_TEST

START_TEST(test_thread_discard_noop)
{
	struct rec_writer *w;
	int err, before = ck_tasks();

	w = rec_writer_discard(&err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rec_writer_thread(w), 0);
	ck_assert_int_eq(ck_tasks(), before);
	ck_assert_int_eq(rec_writer_close(w), 0);
}
END_TEST

static Suite *recfile_thread_suite(void)
{
	Suite *s = suite_create("recfile_thread");
	TCase *tc = tcase_create("thread");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_thread_same_file);
	tcase_add_test(tc, test_thread_discard_noop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(recfile_thread_suite());
}
