/* tests/unit/check_util.c - Check suite for util/: the bounded file reader and the status id reader */
/* SPDX-License-Identifier: MIT */
/*
 * util/procids.h reads a file the target owns a part of: a status file is
 * taken only as the kernel writes it, every other one is refused whole
 * (-EINVAL) and the ids passed in are left as they were. Crafted files in
 * a temporary directory, the test process's own file against getresuid,
 * and the bound on what is read.
 *
 * util/procread.h reads at most cap - 1 bytes and says when there was
 * more: files that fit, that fit exactly, that are longer, empty or
 * missing, a link (refused), a pipe whose writer writes in pieces (short
 * reads are looped), and real /proc files.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "util/procids.h"
#include "util/procread.h"

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

/* ck_tmpdir/name holding len bytes of c; its path in path[160] */
static void write_file(char *path, const char *name, char c, size_t len)
{
	FILE *f;

	ck_tmpdir_path(path, 160, name);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < len; i++)
		ck_assert_int_eq(fputc(c, f), c);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * util_read_file of path into a buffer of '#'s, cap bytes of it lent:
 * returns want, with want_len bytes read and NUL-terminated, nothing
 * written at buf[cap] or past it
 */
static void expect_read(const char *path, size_t cap, int want, size_t want_len)
{
	char buf[64];
	size_t len = 99;

	ck_assert_uint_lt(cap, sizeof(buf));
	memset(buf, '#', sizeof(buf));
	ck_assert_int_eq(util_read_file(path, buf, cap, &len), want);
	ck_assert_uint_eq(len, want_len);
	if (cap)
		ck_assert_uint_eq(strlen(buf), want_len);
	ck_assert_int_eq(buf[cap], '#');
}

/* a file shorter than the buffer, and one of exactly cap - 1 bytes: whole, 0 */
START_TEST(read_fits)
{
	char path[160], buf[16];

	write_file(path, "five", 'a', 5);
	expect_read(path, 16, 0, 5);
	ck_assert_int_eq(util_read_file(path, buf, sizeof(buf), NULL), 0);
	ck_assert_str_eq(buf, "aaaaa");
	write_file(path, "fifteen", 'b', 15);
	expect_read(path, 16, 0, 15);
}
END_TEST

/* a file larger than the buffer: its first cap - 1 bytes, NUL-terminated, -EFBIG */
START_TEST(read_truncated)
{
	char path[160], buf[32];
	size_t len = 0;

	write_file(path, "big", 'c', 100000);
	expect_read(path, 17, -EFBIG, 16);
	ck_assert_int_eq(util_read_file(path, buf, sizeof(buf), NULL), -EFBIG);
	ck_assert_int_eq(buf[0], 'c');
	write_file(path, "sixteen", 'd', 16);
	expect_read(path, 16, -EFBIG, 15); /* one byte over */
	expect_read(path, 1, -EFBIG, 0);   /* room for the NUL only */
	/* a real /proc file longer than the buffer */
	ck_assert_int_eq(util_proc_read(getpid(), "status", buf, sizeof(buf), &len), -EFBIG);
	ck_assert_uint_eq(len, sizeof(buf) - 1);
	ck_assert_int_eq(strncmp(buf, "Name:", 5), 0);
}
END_TEST

/* an empty file, a missing one, a directory, a link, no room: nothing read, buf "" (but for cap 0) */
START_TEST(read_missing_or_empty)
{
	char path[160], link[160], buf[16];
	size_t len;

	write_file(path, "empty", 'e', 0);
	expect_read(path, 16, 0, 0);
	ck_tmpdir_path(path, sizeof(path), "none");
	expect_read(path, 16, -ENOENT, 0);
	expect_read(ck_tmpdir, 16, -EISDIR, 0);
	write_file(path, "target", 'f', 4);
	ck_tmpdir_path(link, sizeof(link), "link");
	ck_assert_int_eq(symlink(path, link), 0);
	expect_read(link, 16, -ELOOP, 0);
	expect_read(path, 0, -EINVAL, 0); /* cap 0: buf not touched */
	ck_assert_int_eq(util_proc_read(-5, "stat", buf, sizeof(buf), &len), -ENOENT);
	memset(link, 'n', sizeof(link) - 1);
	link[sizeof(link) - 1] = '\0';
	ck_assert_int_eq(util_proc_read(1, link, buf, sizeof(buf), &len), -ENAMETOOLONG);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* a writer that writes in pieces: every short read is followed by another until end of file */
START_TEST(read_short_reads)
{
	char path[160], buf[64];
	size_t len = 0;
	int status;
	pid_t pid;

	ck_tmpdir_path(path, sizeof(path), "fifo");
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		for (int i = 0; fd >= 0 && i < 3; i++) {
			if (write(fd, "abc", 3) != 3)
				_exit(1);
			usleep(20000);
		}
		_exit(fd < 0);
	}
	ck_assert_int_eq(util_read_file(path, buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_uint_eq(len, 9);
	ck_assert_str_eq(buf, "abcabcabc");
}
END_TEST

/* this process's own stat through util_proc_read: whole, its pid first */
START_TEST(read_own_proc)
{
	char buf[1024], want[32];
	size_t len;

	ck_assert_int_eq(util_proc_read(getpid(), "stat", buf, sizeof(buf), &len), 0);
	ck_assert_uint_eq(len, strlen(buf));
	snprintf(want, sizeof(want), "%d (", (int)getpid());
	ck_assert_int_eq(strncmp(buf, want, strlen(want)), 0);
	ck_assert_int_eq(util_read_file("/proc/self/statm", buf, sizeof(buf), &len), 0);
	ck_assert_int_eq(buf[len - 1], '\n');
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
	tc = tcase_create("procread");
	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, read_fits);
	tcase_add_test(tc, read_truncated);
	tcase_add_test(tc, read_missing_or_empty);
	tcase_add_test(tc, read_short_reads);
	tcase_add_test(tc, read_own_proc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(util_suite());
}
