/* tests/unit/check_util.c - Check suite for util/: the /proc/PID/status id reader on crafted files */
/* SPDX-License-Identifier: MIT */
/*
 * util/procids.h reads a file the target owns a part of: a status file is
 * taken only as the kernel writes it, every other one is refused whole
 * (-EINVAL) and the ids passed in are left as they were. Crafted files in
 * a temporary directory, the test process's own file against getresuid,
 * and the bound on what is read.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "util/procids.h"

/* the lines around the ids in a real status file */
#define HEAD "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nTgid:\t42\nPid:\t42\nTracerPid:\t0\n"
#define TAIL "FDSize:\t64\nGroups:\t4 24 27\nNSpid:\t42\n"
#define UIDS "Uid:\t1000\t1001\t1002\t1003\n"
#define GIDS "Gid:\t2000\t2001\t2002\t2003\n"

/* util_ids_read_file of a file holding text; ids starts as all 7s */
static int read_text(const char *text, struct util_ids *ids)
{
	char path[160];
	FILE *f;

	ck_tmpdir_path(path, sizeof(path), "status");
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	ck_assert_int_eq(fclose(f), 0);
	for (int i = 0; i < UTIL_ID_N; i++)
		ids->uid[i] = ids->gid[i] = 7;
	return util_ids_read_file(path, ids);
}

/* text must be refused and leave ids alone */
static void refused(const char *text)
{
	struct util_ids ids;

	ck_assert_msg(read_text(text, &ids) == -EINVAL, "taken: \"%s\"", text);
	for (int i = 0; i < UTIL_ID_N; i++) {
		ck_assert_uint_eq(ids.uid[i], 7);
		ck_assert_uint_eq(ids.gid[i], 7);
	}
}

START_TEST(kernel_form)
{
	struct util_ids ids;

	ck_assert_int_eq(read_text(HEAD UIDS GIDS TAIL, &ids), 0);
	for (int i = 0; i < UTIL_ID_N; i++) {
		ck_assert_uint_eq(ids.uid[i], 1000 + (unsigned)i);
		ck_assert_uint_eq(ids.gid[i], 2000 + (unsigned)i);
	}
	ck_assert_uint_eq(ids.uid[UTIL_ID_FS], 1003);
	ck_assert_uint_eq(ids.gid[UTIL_ID_EFFECTIVE], 2001);
	/* the order of the two lines does not matter, nor the largest id */
	ck_assert_int_eq(read_text("Gid:\t0\t0\t0\t0\nUid:\t4294967294\t0\t1\t2\n", &ids), 0);
	ck_assert_uint_eq(ids.uid[UTIL_ID_REAL], 4294967294u);
	ck_assert_uint_eq(ids.uid[UTIL_ID_FS], 2);
}
END_TEST

START_TEST(extra_spaces)
{
	struct util_ids ids;

	/* blanks between the numbers and before the newline are blanks */
	ck_assert_int_eq(read_text("Uid:  5 \t 6  7\t\t8  \t\nGid: 9 10 11 12\n", &ids), 0);
	ck_assert_uint_eq(ids.uid[UTIL_ID_REAL], 5);
	ck_assert_uint_eq(ids.uid[UTIL_ID_FS], 8);
	ck_assert_uint_eq(ids.gid[UTIL_ID_FS], 12);
	/* but not where the kernel puts none */
	refused(" Uid:\t1\t1\t1\t1\n" GIDS);
	refused("Uid :\t1\t1\t1\t1\n" GIDS);
	refused("Uid:1\t1\t1\t1\n" GIDS);
	refused(UIDS "Gid:\t2\t2\t2\t2\r\n");
}
END_TEST

START_TEST(missing_or_repeated_lines)
{
	refused("");
	refused(HEAD TAIL);
	refused(HEAD UIDS TAIL);
	refused(HEAD GIDS TAIL);
	refused(UIDS UIDS GIDS);
	refused(UIDS GIDS "Gid:\t0\t0\t0\t0\n");
	/* a Uid: the comm carries is not at the start of a line */
	refused("Name:\tUid:\t0\t0\t0\t0\n" GIDS);
}
END_TEST

START_TEST(truncated)
{
	refused(HEAD UIDS "Gid:\t2000\t2001\t2002\t2003");
	refused(HEAD UIDS "Gid:\t2000\t2001\t20");
	refused(HEAD "Uid:\t1000\t1001\t1002\t1003");
	refused(HEAD "Uid:\t1000\t1001\t1002\n" GIDS);
	refused(HEAD "Uid:\n" GIDS);
	refused(HEAD "Uid:");
}
END_TEST

START_TEST(bad_numbers)
{
	refused("Uid:\t4294967295\t0\t0\t0\n" GIDS); /* (uid_t)-1: no id */
	refused("Uid:\t4294967296\t0\t0\t0\n" GIDS);
	refused("Uid:\t0\t0\t0\t99999999999999999999999999\n" GIDS);
	refused(UIDS "Gid:\t0\t0\t18446744073709551617\t0\n");
	refused("Uid:\t-1\t0\t0\t0\n" GIDS);
	refused("Uid:\t+1\t0\t0\t0\n" GIDS);
	refused("Uid:\t0x10\t0\t0\t0\n" GIDS);
	refused("Uid:\t1000a\t0\t0\t0\n" GIDS);
	refused("Uid:\t0\t0\t0\t0\t0\n" GIDS); /* a fifth */
}
END_TEST

/* only the first UTIL_IDS_READ bytes are read: lines past them do not exist */
START_TEST(bounded_read)
{
	size_t pad = 2 * UTIL_IDS_READ;
	char *text = malloc(pad + 200);
	struct util_ids ids;

	ck_assert_ptr_nonnull(text);
	memset(text, 'x', pad);
	text[0] = '#';
	text[pad - 1] = '\n';
	strcpy(text + pad, UIDS GIDS);
	refused(text);
	/* a long line after the ids (Groups: with many groups) is not read */
	strcpy(text, UIDS GIDS "Groups:\t");
	memset(text + strlen(text), '1', pad);
	text[strlen(UIDS GIDS "Groups:\t") + pad] = '\0';
	ck_assert_int_eq(read_text(text, &ids), 0);
	ck_assert_uint_eq(ids.gid[UTIL_ID_SAVED], 2002);
	free(text);
}
END_TEST

START_TEST(not_a_file)
{
	struct util_ids ids;
	char path[160];

	ck_tmpdir_path(path, sizeof(path), "none");
	ck_assert_int_eq(util_ids_read_file(path, &ids), -ENOENT);
	ck_assert_int_eq(util_ids_read_file(ck_tmpdir, &ids), -EISDIR);
	ck_assert_int_eq(util_ids_read(-5, &ids), -ENOENT);
}
END_TEST

/* this process's own status against what the kernel says otherwise */
START_TEST(own_process)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	struct util_ids ids;

	ck_assert_int_eq(getresuid(&r, &e, &s), 0);
	ck_assert_int_eq(getresgid(&gr, &ge, &gs), 0);
	ck_assert_int_eq(util_ids_read(getpid(), &ids), 0);
	ck_assert_uint_eq(ids.uid[UTIL_ID_REAL], r);
	ck_assert_uint_eq(ids.uid[UTIL_ID_EFFECTIVE], e);
	ck_assert_uint_eq(ids.uid[UTIL_ID_SAVED], s);
	ck_assert_uint_eq(ids.uid[UTIL_ID_FS], (uid_t)setfsuid((uid_t)-1));
	ck_assert_uint_eq(ids.gid[UTIL_ID_REAL], gr);
	ck_assert_uint_eq(ids.gid[UTIL_ID_EFFECTIVE], ge);
	ck_assert_uint_eq(ids.gid[UTIL_ID_SAVED], gs);
	ck_assert_uint_eq(ids.gid[UTIL_ID_FS], (gid_t)setfsgid((gid_t)-1));
	/* as root: a filesystem id of its own shows in the fourth field only */
	if (e == 0) {
		setfsuid(4321);
		ck_assert_int_eq(util_ids_read(getpid(), &ids), 0);
		ck_assert_uint_eq(ids.uid[UTIL_ID_FS], 4321);
		ck_assert_uint_eq(ids.uid[UTIL_ID_EFFECTIVE], 0);
		setfsuid(0);
	}
}
END_TEST

static Suite *util_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("util", "procids", &tc);

	tcase_add_test(tc, kernel_form);
	tcase_add_test(tc, extra_spaces);
	tcase_add_test(tc, missing_or_repeated_lines);
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, bad_numbers);
	tcase_add_test(tc, bounded_read);
	tcase_add_test(tc, not_a_file);
	tcase_add_test(tc, own_process);
	return s;
}

int main(void)
{
	return ck_run_suite(util_suite());
}
