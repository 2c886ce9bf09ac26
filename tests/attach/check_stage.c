/* tests/attach/check_stage.c - Check suite unit.stage: attach/deps.c and attach/stage.c on real files */
/* SPDX-License-Identifier: MIT */
/*
 * Registered from tests/unit/attach.cmake (also in the ASan/UBSan build).
 * Uses the built libheaptap_inject.so ($HEAPTAP_BUILD_DIR/lib) and this
 * host's libunwind/liblzma. The staging cases fork a child that chroots
 * into a temporary root (needs root; said and passed over otherwise).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "attach/internal.h"
#include "elf/elfr.h"

static char lib[PATH_MAX];

static void find_lib(void)
{
	const char *b = getenv("HEAPTAP_BUILD_DIR");

	ck_assert_msg(b, "HEAPTAP_BUILD_DIR is not set");
	snprintf(lib, sizeof(lib), "%s/lib/libheaptap_inject.so", b);
	ck_assert_msg(access(lib, R_OK) == 0, "no %s", lib);
}

static const struct att_dep *dep(const struct att_deps *d, const char *name, size_t *at)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->v[i].name, name)) {
			if (at)
				*at = i;
			return &d->v[i];
		}
	return NULL;
}

START_TEST(deps_of_the_inject_library)
{
	static struct att_deps d;
	const struct att_dep *u, *z, *m, *c;
	size_t iu = 0, iz = 0;
	struct stat st;

	find_lib();
	ck_assert_int_eq(att_deps_find(lib, &d), 0);
	u = dep(&d, "libunwind.so.8", &iu);
	z = dep(&d, "liblzma.so.5", &iz);
	m = dep(&d, "libm.so.6", NULL);
	c = dep(&d, "libc.so.6", NULL);
	ck_assert_msg(u && z && m && c, "closure lacks libunwind/liblzma/libm/libc (%zu names)", d.n);
	/* found on this host, regular files; liblzma only through libunwind, so after it */
	ck_assert(!u->libc_part && u->host[0] == '/' && stat(u->host, &st) == 0 && S_ISREG(st.st_mode));
	ck_assert(!z->libc_part && z->host[0] == '/' && stat(z->host, &st) == 0 && S_ISREG(st.st_mode));
	ck_assert_uint_lt(iu, iz);
	/* glibc's: noted, never resolved to a host file (never copied) */
	ck_assert(m->libc_part && !m->host[0]);
	ck_assert(c->libc_part && !c->host[0]);
}
END_TEST

/* A copy of the library with liblzma.so.5 beside it: its DT_RPATH $ORIGIN serves libunwind's need too. */
START_TEST(deps_rpath_origin_is_inherited)
{
	static struct att_deps d, host;
	char dir[] = "/tmp/check-stage-XXXXXX", cmd[3 * PATH_MAX], copy[PATH_MAX];
	const struct att_dep *z, *u;

	find_lib();
	ck_assert_int_eq(att_deps_find(lib, &host), 0);
	z = dep(&host, "liblzma.so.5", NULL);
	ck_assert(z && z->host[0]);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/' && cp -L '%s' '%s/liblzma.so.5'", lib, dir, z->host, dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(copy, sizeof(copy), "%s/libheaptap_inject.so", dir);
	ck_assert_int_eq(att_deps_find(copy, &d), 0);
	z = dep(&d, "liblzma.so.5", NULL);
	u = dep(&d, "libunwind.so.8", NULL);
	ck_assert(z && u);
	ck_assert_str_eq(z->host, strcat(strcpy(cmd, dir), "/liblzma.so.5"));
	ck_assert_str_eq(u->host, dep(&host, "libunwind.so.8", NULL)->host);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(deps_bad_input)
{
	static struct att_deps d;
	char path[] = "/tmp/check-stage-txt-XXXXXX";
	int fd;

	ck_assert_int_eq(att_deps_find("/nonexistent/libx.so", &d), -ENOENT);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	ck_assert_int_eq(att_deps_find(path, &d), -ENOEXEC);
	ck_assert_uint_eq(d.n, 0);
	unlink(path);
}
END_TEST

START_TEST(libc_sonames)
{
	ck_assert(att_dep_is_libc("libc.so.6"));
	ck_assert(att_dep_is_libc("libm.so.6"));
	ck_assert(att_dep_is_libc("ld-linux-x86-64.so.2"));
	ck_assert(att_dep_is_libc("libnss_files.so.2"));
	ck_assert(att_dep_is_libc("libpthread.so.0"));
	ck_assert(!att_dep_is_libc("libunwind.so.8"));
	ck_assert(!att_dep_is_libc("liblzma.so.5"));
	ck_assert(!att_dep_is_libc("libcrypt.so.1"));	/* libxcrypt, not glibc */
}
END_TEST

/* Our own process sees everything: nothing is copied, the path is used as is. */
START_TEST(stage_nothing_for_ourselves)
{
	struct att_ctx *ctx;
	char tpath[PATH_MAX];
	int staged = -1;

	find_lib();
	ctx = att_new(getpid());
	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(att_stage(ctx, lib, tpath, sizeof(tpath), &staged), ATT_OK);
	ck_assert_int_eq(staged, 0);
	ck_assert_str_eq(tpath, lib);
	ck_assert_str_eq(ctx->stage_dir, "");
	att_free(ctx);
}
END_TEST

/* A child chrooted into root, waiting to be killed. Returns its pid, or 0 when chroot is not permitted. */
static pid_t chrooted_child(const char *root)
{
	int p[2];
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		c = chroot(root) == 0 && chdir("/") == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	if (c != 'y') {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 0;
	}
	return pid;
}

/*
 * The staging cases' fixture: a temporary root (its contents are the
 * case's), a child chrooted into it and a ctx for that child.
 */
struct rootfix {
	char root[sizeof("/tmp/check-stage-root-XXXXXX")];
	pid_t pid;		/* 0 until root_enter, and when chroot is not permitted */
	struct att_ctx *ctx;
};

/* Make the empty root, with a /tmp of mode 1777 when with_tmp. */
static void root_make(struct rootfix *f, bool with_tmp)
{
	char path[sizeof(f->root) + 8];

	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/check-stage-root-XXXXXX");
	find_lib();
	ck_assert_ptr_nonnull(mkdtemp(f->root));
	if (with_tmp) {
		snprintf(path, sizeof(path), "%s/tmp", f->root);
		ck_assert_int_eq(mkdir(path, 01777), 0);
	}
}

/* Start the chrooted child and make f->ctx for it; false, said on stderr, when chroot is not permitted. */
static bool root_enter(struct rootfix *f, const char *name)
{
	f->pid = chrooted_child(f->root);
	if (!f->pid) {
		fprintf(stderr, "%s: chroot not permitted here, case passed over\n", name);
		return false;
	}
	f->ctx = att_new(f->pid);
	ck_assert_ptr_nonnull(f->ctx);
	return true;
}

/* Free the ctx, end the child, remove the root. */
static void root_done(struct rootfix *f)
{
	char cmd[sizeof(f->root) + 16];

	att_free(f->ctx);
	f->ctx = NULL;
	if (f->pid) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
		f->pid = 0;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	ck_assert_int_eq(system(cmd), 0);
}

static int count_entries(const char *dir)
{
	char cmd[PATH_MAX + 64];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	return n;
}

/* How many libraries outside glibc the library needs on this host (an ASan build's need libasan too). */
static int copied_deps(void)
{
	static struct att_deps d;
	size_t i;
	int n = 0;

	ck_assert_int_eq(att_deps_find(lib, &d), 0);
	for (i = 0; i < d.n; i++)
		n += !d.v[i].libc_part && d.v[i].host[0];
	return n;
}

/* A root without libunwind/liblzma: the library and both go into its /tmp, all removed by att_unstage. */
START_TEST(stage_into_a_bare_root)
{
	static const char *const names[] = { "libheaptap_inject.so", "libunwind.so.8", "liblzma.so.5" };
	char path[PATH_MAX + 64], tpath[PATH_MAX];
	struct rootfix f;
	struct att_ctx *ctx;
	struct stat st;
	int staged = 0;
	size_t i;

	root_make(&f, true);
	if (!root_enter(&f, "stage_into_a_bare_root"))
		goto out;
	ctx = f.ctx;
	ctx->uid = getuid();
	ctx->gid = getgid();
	ck_assert_int_eq(att_stage(ctx, lib, tpath, sizeof(tpath), &staged), ATT_OK);
	ck_assert_int_eq(staged, 1);
	ck_assert_msg(!strncmp(tpath, "/tmp/heaptap-", 13) && strlen(tpath) == 13 + 6 + 1 + strlen(names[0]) &&
			      !strcmp(tpath + 20, names[0]),
		      "tpath %s", tpath);
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%.*s/%s", f.root, 19, tpath, names[i]);
		ck_assert_msg(stat(path, &st) == 0 && S_ISREG(st.st_mode), "%s not staged", path);
		ck_assert_uint_eq(st.st_mode & 07777, 0500);
	}
	snprintf(path, sizeof(path), "%s%.*s", f.root, 19, tpath);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(count_entries(path), 1 + copied_deps());
	att_unstage(ctx);
	ck_assert_int_eq(stat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/tmp", f.root);
	ck_assert_int_eq(count_entries(path), 0);
out:
	root_done(&f);
}
END_TEST

/*
 * The target's /tmp is an absolute symlink (to a directory of ours): it is
 * not followed, and with no /dev/shm either, one line names what is missing.
 */
START_TEST(stage_refuses_a_symlinked_tmp)
{
	char bait[] = "/tmp/check-stage-bait-XXXXXX", path[PATH_MAX + 64], tpath[PATH_MAX], cmd[PATH_MAX];
	struct rootfix f;
	struct att_ctx *ctx;
	int staged = 0;

	root_make(&f, false);
	ck_assert_ptr_nonnull(mkdtemp(bait));
	snprintf(path, sizeof(path), "%s/tmp", f.root);
	ck_assert_int_eq(symlink(bait, path), 0);
	if (!root_enter(&f, "stage_refuses_a_symlinked_tmp"))
		goto out;
	ctx = f.ctx;
	ck_assert_int_eq(att_stage(ctx, lib, tpath, sizeof(tpath), &staged), ATT_E_STAGE);
	ck_assert_int_eq(staged, 0);
	ck_assert_int_eq(count_entries(bait), 0);
	ck_assert_msg(strstr(ctx->detail, "libunwind.so.8") && strstr(ctx->detail, "liblzma.so.5") &&
			      strstr(ctx->detail, "tmp: Not a directory") && strstr(ctx->detail, "dev/shm: "),
		      "detail: %s", ctx->detail);
out:
	root_done(&f);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", bait);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Whether text starts with the host path of a library the closure would copy. */
static bool names_a_copy(const char *text)
{
	static struct att_deps d;
	size_t i;

	ck_assert_int_eq(att_deps_find(lib, &d), 0);
	for (i = 0; i < d.n; i++)
		if (!d.v[i].libc_part && d.v[i].host[0] && !strncmp(text, d.v[i].host, strlen(d.v[i].host)))
			return true;
	return false;
}

/*
 * A process whose glibc is older than the copies need: the GLIBC_* versions
 * of libunwind.so.8 (2.34 on Debian 12) are checked against its libc before
 * anything is copied. Needs a glibc 2.31 libc file: the oldlibc tests'
 * rootfs ($HEAPTAP_OLDLIBC_ROOT, tests/oldlibc/rootfs.sh); passed over
 * without it.
 */
START_TEST(stage_checks_the_copies_glibc_versions)
{
	char path[PATH_MAX + 64], tpath[PATH_MAX], cmd[PATH_MAX + 32];
	const char *old = getenv("HEAPTAP_OLDLIBC_ROOT");
	char oldlibc[PATH_MAX];
	struct rootfix f;
	struct att_ctx *ctx;
	int staged = 0, fd;

	find_lib();
	snprintf(oldlibc, sizeof(oldlibc), "%s/lib/x86_64-linux-gnu/libc-2.31.so",
		 old ? old : "/var/cache/heaptap-test/bullseye");
	if (access(oldlibc, R_OK) != 0) {
		fprintf(stderr, "stage_checks_the_copies_glibc_versions: no %s, case passed over\n", oldlibc);
		return;
	}
	root_make(&f, true);
	/* the process's own libm.so.6 is there (only its presence is checked) */
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/lib/x86_64-linux-gnu'", f.root);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/lib/x86_64-linux-gnu/libm.so.6", f.root);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	if (!root_enter(&f, "stage_checks_the_copies_glibc_versions"))
		goto out;
	ctx = f.ctx;
	ck_assert_int_eq(elfr_file_open(oldlibc, &ctx->libc), ELFR_OK);
	snprintf(ctx->libc_path, sizeof(ctx->libc_path), "/lib/x86_64-linux-gnu/libc-2.31.so");
	ck_assert_int_eq(att_stage(ctx, lib, tpath, sizeof(tpath), &staged), ATT_E_LIBC_VERSION);
	ck_assert_int_eq(staged, 0);
	/* the first copy in the closure's order that needs more: libunwind.so.8 (libasan.so.8 under ASan) */
	ck_assert_msg(names_a_copy(ctx->detail) && strstr(ctx->detail, "needs GLIBC_2.3") &&
			      strstr(ctx->detail, "defines up to GLIBC_2.30"),
		      "detail: %s", ctx->detail);
	snprintf(path, sizeof(path), "%s/tmp", f.root);
	ck_assert_int_eq(count_entries(path), 0);
out:
	root_done(&f);
}
END_TEST

static Suite *stage_suite(void)
{
	Suite *s = suite_create("stage");
	TCase *t = tcase_create("deps");

	tcase_add_test(t, deps_of_the_inject_library);
	tcase_add_test(t, deps_rpath_origin_is_inherited);
	tcase_add_test(t, deps_bad_input);
	tcase_add_test(t, libc_sonames);
	suite_add_tcase(s, t);
	t = tcase_create("stage");
	tcase_add_test(t, stage_nothing_for_ourselves);
	tcase_add_test(t, stage_into_a_bare_root);
	tcase_add_test(t, stage_refuses_a_symlinked_tmp);
	tcase_add_test(t, stage_checks_the_copies_glibc_versions);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return ck_run_suite(stage_suite());
}
