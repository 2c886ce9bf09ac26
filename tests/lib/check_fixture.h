/* tests/lib/check_fixture.h - what the Check suites share: a temporary-directory fixture, the runner (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * A suite that writes files registers
 *
 *   tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
 *
 * (or makes its one test case with ck_tmpdir_suite) and each test then has a fresh directory, ck_tmpdir: $TMPDIR (or /tmp)
 * /<program>-XXXXXX. Teardown removes it and everything below it, without
 * following symbolic links, and fails the test if that does not work.
 * Checked fixtures run in the test's own process (CK_FORK), so ck_tmpdir
 * is per test.
 *
 * main() of a suite is then: return ck_run_suite(xxx_suite());
 *
 * Header only (static inline): no build file has to list it.
 */
#ifndef HEAPTAP_TESTS_LIB_CHECK_FIXTURE_H
#define HEAPTAP_TESTS_LIB_CHECK_FIXTURE_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before the first #include (program_invocation_short_name, nftw)"
#endif
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

static char ck_tmpdir[128];

static inline void ck_tmpdir_setup(void)
{
	const char *t = getenv("TMPDIR");

	snprintf(ck_tmpdir, sizeof(ck_tmpdir), "%s/%s-XXXXXX", t && *t ? t : "/tmp",
		 program_invocation_short_name);
	ck_assert_msg(mkdtemp(ck_tmpdir) != NULL, "mkdtemp %s: %s", ck_tmpdir, strerror(errno));
}

static inline int ck_tmpdir_remove_one(const char *path, const struct stat *st, int flag,
				       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

static inline void ck_tmpdir_teardown(void)
{
	ck_assert_msg(nftw(ck_tmpdir, ck_tmpdir_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0,
		      "remove %s: %s", ck_tmpdir, strerror(errno));
}

/* buf = ck_tmpdir/name */
static inline void ck_tmpdir_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", ck_tmpdir, name);
}

/*
 * A suite called name of one test case, tcase (returned in *tc, tests are
 * added to it after), whose tests each get a fresh ck_tmpdir.
 */
static inline Suite *ck_tmpdir_suite(const char *name, const char *tcase, TCase **tc)
{
	Suite *s = suite_create(name);

	*tc = tcase_create(tcase);
	tcase_add_checked_fixture(*tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	suite_add_tcase(s, *tc);
	return s;
}

/* Run every test of s (CK_NORMAL output); EXIT_SUCCESS when none failed. Frees s. */
/* ck_run - run every test of sr, free it; EXIT_FAILURE if one failed (main's return) */
static inline int ck_run(SRunner *sr)
{
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int ck_run_suite(Suite *s)
{
	return ck_run(srunner_create(s));
}

#endif /* HEAPTAP_TESTS_LIB_CHECK_FIXTURE_H */
