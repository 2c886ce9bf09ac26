/* tests/unit/check_top.c - unit.top: top arguments, cleaning, folding per call site, sparklines */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <check.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "cli/top.h"

START_TEST(test_clean)
{
	char buf[64];
	const char evil[] = "ab\x1b[2J\t\\c\xff\x7f";

	ck_assert_str_eq(top_clean(buf, sizeof(buf), evil, sizeof(evil)),
			 "ab\\x1b[2J\\x09\\\\c\\xff\\x7f");
	/* stops at NUL and at the length given */
	ck_assert_str_eq(top_clean(buf, sizeof(buf), "abc\0def", 7), "abc");
	ck_assert_str_eq(top_clean(buf, sizeof(buf), "abcdef", 2), "ab");
	/* never cuts an escape in half: \x1b needs 4 bytes and then the NUL */
	ck_assert_str_eq(top_clean(buf, 5, "a\x1b", 2), "a");
	ck_assert_str_eq(top_clean(buf, 6, "a\x1b", 2), "a\\x1b");
	ck_assert_str_eq(top_clean(buf, 1, "abc", 3), "");
}
END_TEST

START_TEST(test_args)
{
	char *attach[] = {"top", "-o", "x.htap", "4242", NULL};
	char *full[] = {"top", "--full", "7", NULL};
	char *launch[] = {"top", "--sample", "1M", "--log", "l", "--", "prog", "-x", NULL};
	char *both[] = {"top", "--full", "--sample", "1M", "7", NULL};
	char *logpid[] = {"top", "--log", "l", "7", NULL};
	char *none[] = {"top", "--", NULL};
	char *two[] = {"top", "1", "2", NULL};
	struct cli_top_args a;
	char err[200];

	ck_assert_int_eq(cli_top_parse(4, attach, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.pid, 4242);
	ck_assert_str_eq(a.output, "x.htap");
	ck_assert_uint_eq(a.sample, 512 * 1024); /* sampled by default */
	ck_assert_int_eq(cli_top_parse(3, full, &a, err, sizeof(err)), 0);
	ck_assert_uint_eq(a.sample, 0);
	ck_assert_int_eq(cli_top_parse(8, launch, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.pid, 0);
	ck_assert_int_eq(a.argc, 2);
	ck_assert_str_eq(a.argv[0], "prog");
	ck_assert_str_eq(a.argv[1], "-x");
	ck_assert_str_eq(a.log, "l");
	ck_assert_uint_eq(a.sample, 1024 * 1024);
	ck_assert_int_eq(cli_top_parse(5, both, &a, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--full"));
	ck_assert_int_eq(cli_top_parse(4, logpid, &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cli_top_parse(2, none, &a, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(cli_top_parse(3, two, &a, err, sizeof(err)), -EINVAL);
}
END_TEST

/*
 * A snapshot: root 0; 1 main (ip A); 2 f (ip B) under 1; 3 g (ip C) under 1;
 * 4 f (ip B) under 3: traces 2 and 4 share the call site B.
 */
START_TEST(test_fold)
{
	static const uint64_t ips[] = {0x1000, 0x2000, 0x3000};
	static const struct itp_snap_line lmain = {"main", "a.c", 3}, lf = {"f", "a.c", 7},
					  lg = {"g", NULL, 0};
	static const struct itp_snap_frames names[] = {{&lmain, 1}, {&lf, 1}, {&lg, 1}};
	struct itp_snap_trace t[5];
	struct itp_snapshot s;
	struct top_prev prev[] = {{0x2000, 100, 0, 0, 0}};
	struct top_frame *f;

	memset(t, 0, sizeof(t));
	t[1] = (struct itp_snap_trace){.parent = 0, .ip = 0};
	t[2] = (struct itp_snap_trace){.parent = 1,
				       .ip = 1,
				       .inuse_bytes = 300,
				       .inuse_objects = 3,
				       .alloc_objects = 10,
				       .alloc_bytes = 1000,
				       .temp_objects = 4};
	t[3] = (struct itp_snap_trace){.parent = 1, .ip = 2, .alloc_objects = 2, .alloc_bytes = 64};
	t[4] = (struct itp_snap_trace){.parent = 3,
				       .ip = 1,
				       .inuse_bytes = 500,
				       .inuse_objects = 1,
				       .alloc_objects = 6,
				       .alloc_bytes = 600};
	memset(&s, 0, sizeof(s));
	s.traces = t;
	s.ntraces = 5;
	s.ips = ips;
	s.nips = 3;
	s.since_ns = 1000000000ull;
	s.elapsed_ns = 3000000000ull; /* rates over 2 s */
	f = top_model_fold(&s, prev, 1, 1.0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->nrows, 2); /* B and C; main allocates nothing itself */
	ck_assert_uint_eq(f->rows[0].ip, 0x2000);
	ck_assert_int_eq(f->rows[0].live_bytes, 800);
	ck_assert_int_eq(f->rows[0].live_objects, 4);
	ck_assert_int_eq(f->rows[0].change, 700);
	ck_assert(f->rows[0].calls_ps == 8.0);
	ck_assert(f->rows[0].bytes_ps == 800.0);
	ck_assert(f->rows[0].temp_ps == 2.0);
	/* the heaviest stack through B is trace 4: f <- g <- main */
	ck_assert_uint_eq(f->rows[0].nstack, 3);
	ck_assert_uint_eq(f->rows[0].stack[0], 0x2000);
	ck_assert_uint_eq(f->rows[0].stack[1], 0x3000);
	ck_assert_uint_eq(f->rows[0].stack[2], 0x1000);
	ck_assert_uint_eq(f->rows[1].ip, 0x3000);
	ck_assert_int_eq(f->rows[1].change, 0); /* new, with nothing live */
	ck_assert(f->calls_ps == 9.0);
	ck_assert_ptr_null(top_frame_sym(f, 0x2000)); /* the snapshot named nothing */
	top_frame_free(f);
	/* names: copied for every ip of the stacks shown, found by ip */
	s.frames = names;
	f = top_model_fold(&s, NULL, 0, 0);
	ck_assert_uint_eq(f->nsyms, 3);
	ck_assert_str_eq(top_frame_sym(f, 0x2000)->function, "f");
	ck_assert_str_eq(top_frame_sym(f, 0x2000)->file, "a.c");
	ck_assert_uint_eq(top_frame_sym(f, 0x2000)->line, 7);
	ck_assert_str_eq(top_frame_sym(f, 0x1000)->function, "main");
	ck_assert_ptr_null(top_frame_sym(f, 0x3000)->file);
	ck_assert_ptr_null(top_frame_sym(f, 0x4000));
	top_frame_free(f);
	s.frames = NULL;
	/* the first frame: no change at all */
	f = top_model_fold(&s, NULL, 0, 0);
	ck_assert_int_eq(f->rows[0].change, 0);
	top_frame_free(f);
	/* a corrupt parent (not older) ends the stack instead of looping */
	t[4].parent = 4;
	f = top_model_fold(&s, NULL, 0, 0);
	ck_assert_uint_eq(f->rows[0].nstack, 1);
	top_frame_free(f);
}
END_TEST

/*
 * The session's last snapshot comes a moment after the one before: its
 * rates are over the window of the others (1 s here), the time before its
 * own 50 ms at the last frame's rates, not its few calls over 50 ms.
 */
START_TEST(test_fold_last)
{
	static const uint64_t ips[] = {0x1000, 0x2000, 0x3000};
	struct itp_snap_trace t[3];
	struct itp_snapshot s;
	/* B allocated 100 calls/s, 6400 bytes/s; a site at 0x5000 50 calls/s, not since */
	struct top_prev prev[] = {{0x2000, 0, 100.0, 6400.0, 10.0}, {0x5000, 0, 50.0, 500.0, 0}};
	struct top_frame *f;

	memset(t, 0, sizeof(t));
	t[1] = (struct itp_snap_trace){.parent = 0, .ip = 0};
	/* 50 ms: 5 calls of 64 bytes (the same rate), or 20 (400 calls/s over its own 50 ms) */
	t[2] = (struct itp_snap_trace){.parent = 1, .ip = 1, .alloc_objects = 5, .alloc_bytes = 320};
	memset(&s, 0, sizeof(s));
	s.traces = t;
	s.ntraces = 3;
	s.ips = ips;
	s.nips = 3;
	s.since_ns = 10000000000ull;
	s.elapsed_ns = 10050000000ull;
	f = top_model_fold(&s, prev, 2, 1.0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->nrows, 1);
	ck_assert(f->interval_s == 1.0);
	ck_assert_double_eq_tol(f->rows[0].calls_ps, 100.0, 1e-9);
	ck_assert_double_eq_tol(f->rows[0].bytes_ps, 6400.0, 1e-9);
	ck_assert_double_eq_tol(f->rows[0].temp_ps, 9.5, 1e-9); /* none in the last 50 ms */
	/* the site gone quiet still counts for its 950 ms in the totals */
	ck_assert_double_eq_tol(f->calls_ps, 100.0 + 47.5, 1e-9);
	ck_assert_double_eq_tol(f->bytes_ps, 6400.0 + 475.0, 1e-9);
	top_frame_free(f);
	/* a burst in the last 50 ms shows as what it adds to the last second */
	t[2].alloc_objects = 20;
	t[2].alloc_bytes = 1280;
	f = top_model_fold(&s, prev, 2, 1.0);
	ck_assert_double_eq_tol(f->rows[0].calls_ps, 95.0 + 20.0, 1e-9);
	ck_assert_double_eq_tol(f->rows[0].bytes_ps, 6080.0 + 1280.0, 1e-9);
	top_frame_free(f);
	/* a snapshot as long as the window, or the first one: its own interval */
	s.since_ns = 9000000000ull;
	f = top_model_fold(&s, prev, 2, 1.0);
	ck_assert_double_eq_tol(f->interval_s, 1.05, 1e-9);
	ck_assert_double_eq_tol(f->rows[0].calls_ps, 20.0 / 1.05, 1e-9);
	top_frame_free(f);
	s.since_ns = 10000000000ull;
	f = top_model_fold(&s, NULL, 0, 1.0);
	ck_assert_double_eq_tol(f->rows[0].calls_ps, 400.0, 1e-9);
	top_frame_free(f);
}
END_TEST

START_TEST(test_sparkline)
{
	uint64_t v[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	char buf[64];

	top_sparkline(v, 10, buf, sizeof(buf), 10, 0);
	ck_assert_str_eq(buf, "_.--:=++*#"); /* lowest to highest, eight levels */
	top_sparkline(v, 10, buf, sizeof(buf), 5, 0);
	ck_assert_uint_eq(strlen(buf), 5); /* two points a cell, the higher one */
	ck_assert_int_eq(buf[4], '#');
	top_sparkline(v, 10, buf, sizeof(buf), 10, 1);
	ck_assert_str_eq(buf, "\u2581\u2582\u2583\u2583\u2584\u2585\u2586\u2586\u2587\u2588");
	top_sparkline(v, 10, buf, 4, 10, 1); /* room for one block and the NUL */
	ck_assert_str_eq(buf, "\u2581");
	top_sparkline(v, 0, buf, sizeof(buf), 10, 1);
	ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(test_format)
{
	char b[32];

	ck_assert_str_eq(top_fmt_bytes(512, b, sizeof(b)), "512B");
	ck_assert_str_eq(top_fmt_bytes(1536, b, sizeof(b)), "1.50K");
	ck_assert_str_eq(top_fmt_bytes(20.5 * 1048576, b, sizeof(b)), "20.5M");
	ck_assert_str_eq(top_fmt_count(999, b, sizeof(b)), "999");
	ck_assert_str_eq(top_fmt_count(12345, b, sizeof(b)), "12.3k");
	ck_assert_str_eq(top_fmt_count(4.5e6, b, sizeof(b)), "4.50M");
}
END_TEST

static Suite *top_suite(void)
{
	Suite *s = suite_create("top");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_clean);
	tcase_add_test(tc, test_args);
	tcase_add_test(tc, test_fold);
	tcase_add_test(tc, test_fold_last);
	tcase_add_test(tc, test_sparkline);
	tcase_add_test(tc, test_format);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(top_suite());
}
