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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Check records every passing ck_assert (a write per call); hot loops use
 * CK_REQUIRE instead, which costs nothing unless it fails.
 */
#define CK_REQUIRE(c)                                                             \
	do {                                                                      \
		if (!(c))                                                         \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c);        \
	} while (0)

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
 * ck_tmppath - ck_tmpdir/name in a static buffer; two calls in a row give
 * two buffers (old, new), the third reuses the first.
 */
static inline char *ck_tmppath(const char *name)
{
	static char p[2][PATH_MAX + 64];
	static int k;

	ck_assert_uint_lt(strlen(name), 64);
	k ^= 1;
	snprintf(p[k], sizeof(p[k]), "%s/%s", ck_tmpdir, name);
	return p[k];
}

/*
 * ck_slurp - the whole file at path in a malloc'd buffer with one spare byte
 * after it (for a NUL), its size in *len; any failure fails the test.
 */
static inline uint8_t *ck_slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* ck_tasks - the threads of this process now (the entries of /proc/self/task); fails the test if unreadable */
static inline int ck_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	ck_assert_msg(d != NULL, "opendir /proc/self/task: %s", strerror(errno));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
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
