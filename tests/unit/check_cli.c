/* tests/unit/check_cli.c - unit.cli: argument parsing, output names, library lookup, session */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "cli/cli.h"
#include "report/report.h"
#include "track/wire.h"

static char saved_tmp[200]; /* $TMPDIR as the suite found it ("" = unset) */
static int saved;

/*
 * The session tests point TMPDIR into ck_tmpdir; without fork (CK_FORK=no) it
 * must come back before the next test makes its directory.
 */
static void setup(void)
{
	const char *t = getenv("TMPDIR");

	if (!saved) {
		snprintf(saved_tmp, sizeof(saved_tmp), "%s", t ? t : "");
		saved = 1;
	}
	ck_tmpdir_setup();
}

static void teardown(void)
{
	if (saved_tmp[0])
		setenv("TMPDIR", saved_tmp, 1);
	else
		unsetenv("TMPDIR");
	ck_tmpdir_teardown();
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void mkdirs(const char *path)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_outname)
{
	char b[256];

	ck_assert_int_eq(cli_outname(NULL, "ls", 123, "htap", 0, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "heaptap.ls.123.htap");
	ck_assert_int_eq(cli_outname(NULL, "ls", 123, "htap", 2, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "heaptap.ls.123.2.htap");
	ck_assert_int_eq(cli_outname("/tmp/x", "ls", 7, "htap", 0, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "/tmp/x/heaptap.ls.7.htap");
	ck_assert_int_eq(cli_outname(NULL, "a b/c*d", 1, "htap", 0, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "heaptap.a_b_c_d.1.htap");
	ck_assert_int_eq(cli_outname(NULL, "", 1, "htap", 0, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "heaptap.prog.1.htap");
	ck_assert_int_eq(cli_outname(NULL, NULL, 1, "htap", 0, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "heaptap.prog.1.htap");
	ck_assert_int_eq(cli_outname(NULL, "x+y-z_1.2", 1, "htap", 0, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "heaptap.x+y-z_1.2.1.htap");
	ck_assert_int_eq(cli_outname(NULL, "ls", 123, "htap", 0, b, 10), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_outname_free)
{
	char b[512], p[512];
	unsigned a = 99;

	ck_assert_int_eq(cli_outname_free(ck_tmpdir, "prog", 42, "htap", 0, &a, b, sizeof(b)), 0);
	ck_assert_uint_eq(a, 0);
	ck_tmpdir_path(p, sizeof(p), "heaptap.prog.42.htap");
	ck_assert_str_eq(b, p);
	touch(p);
	ck_tmpdir_path(p, sizeof(p), "heaptap.prog.42.1.htap");
	touch(p);
	/* a dangling symlink takes a name too */
	ck_tmpdir_path(p, sizeof(p), "heaptap.prog.42.2.htap");
	ck_assert_int_eq(symlink("/nonexistent/target", p), 0);
	ck_assert_int_eq(cli_outname_free(ck_tmpdir, "prog", 42, "htap", 0, &a, b, sizeof(b)), 0);
	ck_assert_uint_eq(a, 3);
	ck_tmpdir_path(p, sizeof(p), "heaptap.prog.42.3.htap");
	ck_assert_str_eq(b, p);
	/* starting past a name skips it */
	ck_assert_int_eq(cli_outname_free(ck_tmpdir, "prog", 42, "htap", 5, &a, b, sizeof(b)), 0);
	ck_assert_uint_eq(a, 5);
	/* another pid is free at once */
	ck_assert_int_eq(cli_outname_free(ck_tmpdir, "prog", 43, "htap", 0, &a, b, sizeof(b)), 0);
	ck_assert_uint_eq(a, 0);
}
END_TEST

START_TEST(test_libdir)
{
	char b[PATH_MAX], exe[PATH_MAX], want[PATH_MAX], p[PATH_MAX], real[PATH_MAX];

	/* build tree: T/build/bin/heaptap, T/build/lib/LIB */
	ck_tmpdir_path(p, sizeof(p), "build/lib");
	mkdirs(p);
	ck_tmpdir_path(p, sizeof(p), "build/bin");
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/build/lib/%s", ck_tmpdir, CLI_PRELOAD_LIB);
	touch(p);
	ck_tmpdir_path(exe, sizeof(exe), "build/bin/heaptap");
	ck_assert_int_eq(cli_libdir(NULL, exe, CLI_PRELOAD_LIB, b, sizeof(b)), 0);
	ck_tmpdir_path(want, sizeof(want), "build/lib");
	ck_assert_ptr_nonnull(realpath(want, real));
	ck_assert_str_eq(b, real);
	/* an empty $HEAPTAP_LIBDIR counts as unset */
	ck_assert_int_eq(cli_libdir("", exe, CLI_PRELOAD_LIB, b, sizeof(b)), 0);
	ck_assert_str_eq(b, real);

	/* installed: T/usr/bin/heaptap, T/usr/lib/heaptap/LIB */
	ck_tmpdir_path(p, sizeof(p), "usr/lib/heaptap");
	mkdirs(p);
	ck_tmpdir_path(p, sizeof(p), "usr/bin");
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/usr/lib/heaptap/%s", ck_tmpdir, CLI_PRELOAD_LIB);
	touch(p);
	ck_tmpdir_path(exe, sizeof(exe), "usr/bin/heaptap");
	ck_assert_int_eq(cli_libdir(NULL, exe, CLI_PRELOAD_LIB, b, sizeof(b)), 0);
	ck_tmpdir_path(want, sizeof(want), "usr/lib/heaptap");
	ck_assert_ptr_nonnull(realpath(want, real));
	ck_assert_str_eq(b, real);

#ifdef HEAPTAP_MULTIARCH
	/* installed with a Debian prefix /usr: T/deb/usr/bin/heaptap, T/deb/usr/lib/<multiarch>/heaptap/LIB */
	ck_tmpdir_path(p, sizeof(p), "deb/usr/lib/" HEAPTAP_MULTIARCH "/heaptap");
	mkdirs(p);
	ck_tmpdir_path(p, sizeof(p), "deb/usr/bin");
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/deb/usr/lib/%s/heaptap/%s", ck_tmpdir, HEAPTAP_MULTIARCH, CLI_PRELOAD_LIB);
	touch(p);
	ck_tmpdir_path(exe, sizeof(exe), "deb/usr/bin/heaptap");
	ck_assert_int_eq(cli_libdir(NULL, exe, CLI_PRELOAD_LIB, b, sizeof(b)), 0);
	ck_tmpdir_path(want, sizeof(want), "deb/usr/lib/" HEAPTAP_MULTIARCH "/heaptap");
	ck_assert_ptr_nonnull(realpath(want, real));
	ck_assert_str_eq(b, real);
	ck_tmpdir_path(exe, sizeof(exe), "usr/bin/heaptap");
#endif

	/* $HEAPTAP_LIBDIR wins, and only it is looked at */
	ck_tmpdir_path(want, sizeof(want), "build/lib");
	ck_assert_int_eq(cli_libdir(want, exe, CLI_PRELOAD_LIB, b, sizeof(b)), 0);
	ck_assert_str_eq(b, want);
	ck_tmpdir_path(want, sizeof(want), "usr/bin");
	ck_assert_int_eq(cli_libdir(want, exe, CLI_PRELOAD_LIB, b, sizeof(b)), -ENOENT);

	/* nowhere */
	ck_tmpdir_path(exe, sizeof(exe), "none/bin/heaptap");
	ck_assert_int_eq(cli_libdir(NULL, exe, CLI_PRELOAD_LIB, b, sizeof(b)), -ENOENT);
	ck_assert_int_eq(cli_libdir(NULL, NULL, CLI_PRELOAD_LIB, b, sizeof(b)), -ENOENT);
	ck_assert_int_eq(cli_libdir(NULL, "heaptap", CLI_PRELOAD_LIB, b, sizeof(b)), -ENOENT);
	/* too small a buffer */
	ck_tmpdir_path(exe, sizeof(exe), "build/bin/heaptap");
	ck_assert_int_eq(cli_libdir(NULL, exe, CLI_PRELOAD_LIB, b, 4), -ENAMETOOLONG);
}
END_TEST

/* argv from a string of words (modified in place) */
static int split(char *s, char **argv, int max)
{
	int n = 0;
	char *save = NULL, *w;

	for (w = strtok_r(s, " ", &save); w && n < max - 1; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return n;
}

/*
 * argv of line's words, in a static copy: the parsers keep pointers into
 * it (a->output, a->argv), which must outlive the call.
 */
static char **words(const char *line, int *argc)
{
	static char buf[512];
	static char *argv[32];

	snprintf(buf, sizeof(buf), "%s", line);
	*argc = split(buf, argv, 32);
	return argv;
}

static int rec_parse(const char *line, struct cli_record_args *a, char *err)
{
	int argc;
	char **argv = words(line, &argc);

	return cli_record_parse(argc, argv, a, err, 256);
}

START_TEST(test_record_args)
{
	struct cli_record_args a;
	char err[256];

	ck_assert_int_eq(rec_parse("record -o out.htap --depth 12 -- prog a -b", &a, err), 0);
	ck_assert_str_eq(a.output, "out.htap");
	ck_assert_uint_eq(a.depth, 12);
	ck_assert_int_eq(a.argc, 3);
	ck_assert_str_eq(a.argv[0], "prog");
	ck_assert_str_eq(a.argv[1], "a");
	ck_assert_str_eq(a.argv[2], "-b");
	ck_assert_ptr_null(a.argv[3]);

	/* the program's options are its own, even without "--" */
	ck_assert_int_eq(rec_parse("record prog -o x", &a, err), 0);
	ck_assert_ptr_null(a.output);
	ck_assert_uint_eq(a.depth, 0);
	ck_assert_int_eq(a.argc, 3);
	ck_assert_str_eq(a.argv[1], "-o");

	ck_assert_int_eq(rec_parse("record --output=f --depth=256 ls", &a, err), 0);
	ck_assert_str_eq(a.output, "f");
	ck_assert_uint_eq(a.depth, 256);

	ck_assert_uint_eq(a.langs_off, 0);
	ck_assert_int_eq(rec_parse("record --no-python-frames ls", &a, err), 0);
	ck_assert_uint_eq(a.langs_off, 1u << WIRE_LANG_PYTHON);

	ck_assert_int_eq(rec_parse("record --help", &a, err), 0);
	ck_assert_int_eq(a.help, 1);
	ck_assert_int_eq(rec_parse("record -h prog", &a, err), 0);
	ck_assert_int_eq(a.help, 1);

	ck_assert_int_eq(rec_parse("record", &a, err), -EINVAL);
	ck_assert_str_eq(err, "no program to record");
	ck_assert_int_eq(rec_parse("record -o f --", &a, err), -EINVAL);
	ck_assert_str_eq(err, "no program to record");
	ck_assert_int_eq(rec_parse("record -x prog", &a, err), -EINVAL);
	ck_assert_str_eq(err, "unknown option '-x'");
	ck_assert_int_eq(rec_parse("record --bogus prog", &a, err), -EINVAL);
	ck_assert_str_eq(err, "unknown option '--bogus'");
	ck_assert_int_eq(rec_parse("record -o", &a, err), -EINVAL);
	ck_assert_str_eq(err, "option '-o' needs an argument");
	ck_assert_int_eq(rec_parse("record --output= prog", &a, err), -EINVAL);
	ck_assert_str_eq(err, "-o needs a file name");
	ck_assert_int_eq(rec_parse("record --depth 0 prog", &a, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--depth '0'"));
	ck_assert_int_eq(rec_parse("record --depth 257 prog", &a, err), -EINVAL);
	ck_assert_int_eq(rec_parse("record --depth 12x prog", &a, err), -EINVAL);
	ck_assert_int_eq(rec_parse("record --depth -3 prog", &a, err), -EINVAL);
	ck_assert_int_eq(rec_parse("record --depth", &a, err), -EINVAL);
	ck_assert_str_eq(err, "option '--depth' needs an argument");
}
END_TEST

static int rep_parse(const char *line, struct cli_report_args *a, char *err)
{
	int argc;
	char **argv = words(line, &argc);

	return cli_report_parse(argc, argv, a, err, 256);
}

START_TEST(test_report_args)
{
	struct cli_report_args a;
	char err[256];

	ck_assert_int_eq(rep_parse("report f.htap", &a, err), 0);
	ck_assert_str_eq(a.file, "f.htap");
	ck_assert_int_eq(a.format, CLI_FORMAT_TEXT);
	ck_assert_uint_eq(a.top, 10);
	ck_assert_uint_eq(a.backtraces, 5);
	ck_assert_uint_eq(a.threads, 0);

	ck_assert_int_eq(rep_parse("report --format json -n 3 -b 0 --threads 2 f", &a, err), 0);
	ck_assert_int_eq(a.format, CLI_FORMAT_JSON);
	ck_assert_uint_eq(a.top, 3);
	ck_assert_uint_eq(a.backtraces, SIZE_MAX);
	ck_assert_uint_eq(a.threads, 2);
	/* options after the file too */
	ck_assert_int_eq(rep_parse("report f -f text -n 0", &a, err), 0);
	ck_assert_str_eq(a.file, "f");
	ck_assert_uint_eq(a.top, 0);

	ck_assert_int_eq(rep_parse("report", &a, err), -EINVAL);
	ck_assert_str_eq(err, "no recording given");
	ck_assert_int_eq(rep_parse("report a b", &a, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "'b'"));
	ck_assert_int_eq(rep_parse("report --format xml f", &a, err), -EINVAL);
	ck_assert_str_eq(err, "unknown format 'xml' (see --help)");
	ck_assert_int_eq(rep_parse("report -f collapsed --cost leaked -o out f", &a, err), 0);
	ck_assert_int_eq(a.format, CLI_FORMAT_COLLAPSED);
	ck_assert_int_eq(a.cost, RPT_FOLD_LEAKED);
	ck_assert_str_eq(a.output, "out");
	ck_assert_int_eq(rep_parse("report --cost bytes f", &a, err), -EINVAL);
	ck_assert_int_eq(rep_parse("report -f collapsed --cost x f", &a, err), -EINVAL);
	ck_assert_int_eq(rep_parse("report -n -1 f", &a, err), -EINVAL);
	ck_assert_int_eq(rep_parse("report -n x f", &a, err), -EINVAL);
	ck_assert_int_eq(rep_parse("report --threads 0 f", &a, err), -EINVAL);
	ck_assert_int_eq(rep_parse("report f -n", &a, err), -EINVAL);
	ck_assert_str_eq(err, "option '-n' needs an argument");
	ck_assert_int_eq(rep_parse("report -q f", &a, err), -EINVAL);
	ck_assert_str_eq(err, "unknown option '-q'");
	ck_assert_int_eq(rep_parse("report --help", &a, err), 0);
	ck_assert_int_eq(a.help, 1);
}
END_TEST

static int att_parse(const char *line, struct cli_attach_args *a, char *err)
{
	int argc;
	char **argv = words(line, &argc);

	return cli_attach_parse(argc, argv, a, err, 256);
}

START_TEST(test_attach_args)
{
	static const struct {
		const char *line, *err;
	} bad[] = {
		{ "attach", "no process id given" },
		{ "attach 1 2", "one process id only ('2' is extra)" },
		{ "attach 0", "'0' is not a process id" },
		{ "attach 12x", "'12x' is not a process id" },
		{ "attach --output= 5", "-o needs a file name" },
		{ "attach --out= --snapshot-every 1 5", "--out needs a directory" },
		{ "attach --format json 5", "--format 'json': snapshots are written as pprof only" },
		{ "attach -x 5", "unknown option '-x'" },
		/* a missing PID is said before the options' pairing, an extra one after */
		{ "attach --snapshot-every 1", "no process id given" },
		{ "attach --snapshot-every 1 5 6", "--snapshot-every SECS and --out DIR go together" },
		{ "attach --format pprof --out d 5", "--snapshot-every SECS and --out DIR go together" },
	};
	struct cli_attach_args a;
	char err[256];

	ck_assert_int_eq(att_parse("attach -o out.htap -d 2.5 -v 42", &a, err), 0);
	ck_assert_str_eq(a.output, "out.htap");
	ck_assert(a.duration == 2.5);
	ck_assert_int_eq(a.verbose, 1);
	ck_assert_int_eq(a.pid, 42);
	ck_assert_int_eq(att_parse("attach --snapshot-every 1 --format pprof --out d 7", &a, err), 0);
	ck_assert(a.snapshot_every == 1);
	ck_assert_int_eq(a.format_pprof, 1);
	ck_assert_str_eq(a.out_dir, "d");
	ck_assert_int_eq(a.pid, 7);
	ck_assert_int_eq(att_parse("attach --help", &a, err), 0);
	ck_assert_int_eq(a.help, 1);
	/* a language's frames off: its bit, the one mask both switches go through */
	ck_assert_int_eq(att_parse("attach 9", &a, err), 0);
	ck_assert_uint_eq(a.langs_off, 0);
	ck_assert_int_eq(att_parse("attach --no-java-frames 9", &a, err), 0);
	ck_assert_uint_eq(a.langs_off, 1u << WIRE_LANG_JAVA);
	ck_assert_int_eq(att_parse("attach --no-python-frames --no-java-frames 9", &a, err), 0);
	ck_assert_uint_eq(a.langs_off, (1u << WIRE_LANG_PYTHON) | (1u << WIRE_LANG_JAVA));
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_int_eq(att_parse(bad[k].line, &a, err), -EINVAL);
		ck_assert_str_eq(err, bad[k].err);
	}
}
END_TEST

/* The command functions themselves give exit code 2 on bad usage. */
START_TEST(test_usage_exit_codes)
{
	char *r1[] = { "record", "--depth", "x", "prog", NULL };
	char *r2[] = { "report", "--format", "yaml", "f", NULL };
	char *r3[] = { "report", NULL };
	char *r4[] = { "report", "/nonexistent/file.htap", NULL };

	ck_assert_int_eq(cli_cmd_record(4, r1), CLI_EXIT_USAGE);
	ck_assert_int_eq(cli_cmd_report(4, r2), CLI_EXIT_USAGE);
	ck_assert_int_eq(cli_cmd_report(1, r3), CLI_EXIT_USAGE);
	ck_assert_int_eq(cli_cmd_report(2, r4), CLI_EXIT_FAIL);
}
END_TEST

START_TEST(test_preload_and_status)
{
	char b[64];
	pid_t pid;
	int st;

	ck_assert_int_eq(cli_preload_value("/l/a.so", NULL, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "/l/a.so");
	ck_assert_int_eq(cli_preload_value("/l/a.so", "", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "/l/a.so");
	ck_assert_int_eq(cli_preload_value("/l/a.so", "/x/b.so /y/c.so", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "/l/a.so:/x/b.so /y/c.so");
	ck_assert_int_eq(cli_preload_value("/l/a.so", "/x/b.so", b, 8), -ENAMETOOLONG);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(3);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(cli_exit_status(st), 3);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(cli_exit_status(st), 128 + SIGTERM);
}
END_TEST

START_TEST(test_spawn)
{
	char *missing[] = { "/nonexistent/heaptap-test-prog", NULL };
	char *check_env[] = { "/bin/sh", "-c", "test \"$CLI_T_A\" = new && test \"$CLI_T_B\" = keep "
					  "&& test \"$CLI_T_C\" = added", NULL };
	char *over[] = { "CLI_T_A=new", "CLI_T_C=added", NULL };
	pid_t pid;
	int st;

	ck_assert_int_eq(cli_spawn(missing, NULL, NULL, NULL), -ENOENT);
	setenv("CLI_T_A", "old", 1);
	setenv("CLI_T_B", "keep", 1);
	pid = cli_spawn(check_env, over, NULL, NULL);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(cli_exit_status(st), 0);
	/* heaptap's own environment is left alone */
	ck_assert_str_eq(getenv("CLI_T_A"), "old");
	ck_assert_ptr_null(getenv("CLI_T_C"));
}
END_TEST

/* deflt gives SIG_DFL, ignore gives SIG_IGN, others are inherited. */
START_TEST(test_spawn_signals)
{
	/* field 1 of SigIgn in /proc/self/status, as hex mask */
	char *show[] = { "/bin/sh", "-c", "exec grep SigIgn /proc/self/status > \"$CLI_T_OUT\"", NULL };
	char out[512], env[600], line[128];
	char *over[] = { env, NULL };
	unsigned long long mask = 0;
	sigset_t deflt, ign;
	pid_t pid;
	int st;
	FILE *f;

	ck_tmpdir_path(out, sizeof(out), "sigign");
	snprintf(env, sizeof(env), "CLI_T_OUT=%s", out);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	sigemptyset(&deflt);
	sigaddset(&deflt, SIGPIPE);
	sigemptyset(&ign);
	sigaddset(&ign, SIGUSR2);
	pid = cli_spawn(show, over, &deflt, &ign);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	f = fopen(out, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	ck_assert_int_eq(sscanf(line, "SigIgn: %llx", &mask), 1);
	ck_assert_uint_eq(mask & (1ull << (SIGPIPE - 1)), 0);
	ck_assert_uint_ne(mask & (1ull << (SIGUSR1 - 1)), 0);
	ck_assert_uint_ne(mask & (1ull << (SIGUSR2 - 1)), 0);
}
END_TEST

static void use_tmpdir(void)
{
	setenv("TMPDIR", ck_tmpdir, 1);
}

START_TEST(test_session_dir)
{
	struct cli_session s;
	struct stat st;
	char dir[4096];

	use_tmpdir();
	ck_assert_int_eq(cli_session_open(&s), 0);
	ck_assert_int_ge(s.listen_fd, 0);
	ck_assert_int_eq(strncmp(s.dir, ck_tmpdir, strlen(ck_tmpdir)), 0);
	ck_assert_ptr_nonnull(strstr(s.dir, "/heaptap-"));
	ck_assert_int_eq(stat(s.dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(stat(s.sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	snprintf(dir, sizeof(dir), "%s", s.dir);
	cli_session_close(&s);
	ck_assert_int_eq(s.listen_fd, -1);
	ck_assert_int_lt(stat(dir, &st), 0);
	cli_session_close(&s); /* idempotent */

	/* a socket path too long for sun_path: refused, nothing left */
	{
		char deep[300];

		snprintf(deep, sizeof(deep), "%s/%0120d", ck_tmpdir, 0);
		mkdirs(deep);
		setenv("TMPDIR", deep, 1);
		ck_assert_int_eq(cli_session_open(&s), -ENAMETOOLONG);
		ck_assert_int_eq(rmdir(deep), 0); /* empty: the session dir was removed */
	}
}
END_TEST

/* child: connect to path, write "hi", wait for EOF, exit */
static void connect_child(const char *path)
{
	struct sockaddr_un addr;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	char c;

	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		_exit(10);
	if (write(fd, "hi", 2) != 2)
		_exit(11);
	while (read(fd, &c, 1) > 0)
		;
	_exit(0);
}

START_TEST(test_session_accept)
{
	struct cli_session s;
	struct stat st;
	char buf[4], sock[108];
	int conn, exited, status;
	pid_t pid;

	use_tmpdir();
	ck_assert_int_eq(cli_session_open(&s), 0);
	snprintf(sock, sizeof(sock), "%s", s.sock);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		connect_child(sock);
	ck_assert_int_eq(cli_session_accept(&s, pid, &conn, &exited, &status), 0);
	ck_assert_int_ge(conn, 0);
	ck_assert_int_eq(exited, 0); /* it waits for our EOF */
	ck_assert_int_eq(read(conn, buf, 2), 2);
	ck_assert_int_eq(memcmp(buf, "hi", 2), 0);
	/* no longer listening: the socket file is gone */
	ck_assert_int_eq(s.listen_fd, -1);
	ck_assert_int_lt(stat(sock, &st), 0);
	close(conn);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(cli_exit_status(status), 0);
	cli_session_close(&s);

	/* a child that exits without connecting */
	ck_assert_int_eq(cli_session_open(&s), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(7);
	ck_assert_int_eq(cli_session_accept(&s, pid, &conn, &exited, &status), -ECHILD);
	ck_assert_int_eq(cli_exit_status(status), 7);
	ck_assert_int_eq(conn, -1);
	cli_session_close(&s);
}
END_TEST

/* A connection from a process other than the one we wait for is refused. */
START_TEST(test_session_foreign)
{
	struct cli_session s;
	char sock[108], buf[4];
	int conn, exited, status;
	pid_t intruder, child;

	use_tmpdir();
	ck_assert_int_eq(cli_session_open(&s), 0);
	snprintf(sock, sizeof(sock), "%s", s.sock);
	intruder = fork();
	ck_assert_int_ge(intruder, 0);
	if (intruder == 0)
		connect_child(sock);
	/* the awaited child: connects after the intruder, then exits at our EOF */
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		usleep(200 * 1000);
		connect_child(sock);
	}
	ck_assert_int_eq(cli_session_accept(&s, child, &conn, &exited, &status), 0);
	ck_assert_int_ge(conn, 0);
	/* read its greeting first: closing before it wrote would SIGPIPE it */
	ck_assert_int_eq(read(conn, buf, 2), 2);
	close(conn);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_int_eq(cli_exit_status(status), 0);
	/* the intruder saw its connection closed (or died of SIGPIPE writing
	 * to it), so it ended too */
	ck_assert_int_eq(waitpid(intruder, &status, 0), intruder);
	cli_session_close(&s);
}
END_TEST

static Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_outname);
	tcase_add_test(tc, test_outname_free);
	tcase_add_test(tc, test_libdir);
	tcase_add_test(tc, test_record_args);
	tcase_add_test(tc, test_report_args);
	tcase_add_test(tc, test_attach_args);
	tcase_add_test(tc, test_usage_exit_codes);
	tcase_add_test(tc, test_preload_and_status);
	tcase_add_test(tc, test_spawn);
	tcase_add_test(tc, test_spawn_signals);
	tcase_add_test(tc, test_session_dir);
	tcase_add_test(tc, test_session_accept);
	tcase_add_test(tc, test_session_foreign);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(cli_suite());
}
