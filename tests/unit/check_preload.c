/* tests/unit/check_preload.c - Check suite for preload/: environment, bootstrap arena, a real run */
/* SPDX-License-Identifier: MIT */
/*
 * The last case runs this very binary again ("--child") with
 * LD_PRELOAD=<build>/lib/libheaptap_preload.so and HEAPTAP_SOCKET set,
 * reads the stream it sends and checks it with the independent decoder
 * (tests/lib/check_decode.h). The child allocates a known pattern, forks (the
 * grandchild must not be recorded) and reports what its environment looks
 * like through its exit code.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_decode.h"
#include "tests/lib/check_fixture.h"
#include "preload/preload.h"

/* ---- environment ------------------------------------------------------------ */

START_TEST(env_drops_ours)
{
	char a[] = "A=1", hs[] = "HEAPTAP_SOCKET=/tmp/x", hd[] = "HEAPTAP_DEPTH=3", b[] = "B=2";
	char lp[] = "LD_PRELOAD=/a/libfoo.so:/b/libheaptap_preload.so /c/libbar.so "
		    "/d/xlibheaptap_preload.so";
	char *env[] = { a, hs, lp, hd, b, NULL };

	pld_env_clean(env);
	ck_assert_str_eq(env[0], "A=1");
	ck_assert_str_eq(env[1], "LD_PRELOAD=/a/libfoo.so:/c/libbar.so:/d/xlibheaptap_preload.so");
	ck_assert_str_eq(env[2], "B=2");
	ck_assert_ptr_null(env[3]);
	/* the program's own string was not written */
	ck_assert(strstr(lp, "/b/libheaptap_preload.so") != NULL);
}
END_TEST

START_TEST(env_drops_empty_preload)
{
	char a[] = "LD_PRELOAD=libheaptap_preload.so", b[] = "PATH=/bin";
	char c[] = "LD_PRELOAD= : /x/libheaptap_preload.so :";
	char *env[] = { a, b, NULL };
	char *env2[] = { c, NULL };

	pld_env_clean(env);
	ck_assert_str_eq(env[0], "PATH=/bin");
	ck_assert_ptr_null(env[1]);
	pld_env_clean(env2);
	ck_assert_ptr_null(env2[0]);
	pld_env_clean(NULL); /* no environment at all: nothing happens */
}
END_TEST

/* ---- bootstrap arena ------------------------------------------------------------ */

START_TEST(boot_arena)
{
	char *p = pld_boot_alloc(10, 16), *q = pld_boot_alloc(100, 64), *r;
	char *big;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq((uintptr_t)p % 16, 0);
	ck_assert_uint_eq((uintptr_t)q % 64, 0);
	ck_assert(pld_boot_owns(p) && pld_boot_owns(q) && pld_boot_owns(q + 99));
	ck_assert(!pld_boot_owns(&p) && !pld_boot_owns(NULL));
	ck_assert_uint_eq(pld_boot_size(p), 10);
	ck_assert_uint_eq(pld_boot_size(q), 100);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(q[i], 0); /* zero-filled, as calloc needs */
	memset(p, 0xab, 10);
	ck_assert_int_eq(q[0], 0); /* blocks do not overlap */
	ck_assert_ptr_null(pld_boot_alloc(16, 3));	      /* not a power of two */
	ck_assert_ptr_null(pld_boot_alloc(SIZE_MAX - 8, 16)); /* wraps */
	/* exhaustion is NULL, not a crash */
	big = pld_boot_alloc(PLD_BOOT_ARENA_SIZE / 2, 16);
	ck_assert_ptr_nonnull(big);
	r = pld_boot_alloc(PLD_BOOT_ARENA_SIZE / 2, 16);
	ck_assert_ptr_null(r);
}
END_TEST

/* ---- the library under a real program ---------------------------------------- */

#define CHILD_OK 0
#define CHILD_ENV_LEAK 3

static void *volatile child_keep;

/* child_main - runs with the library preloaded. */
static int child_main(void)
{
	char *p = malloc(12345), *q;
	void *m = NULL;
	const char *lp = getenv("LD_PRELOAD");
	pid_t pid;

	if (getenv("HEAPTAP_SOCKET") || (lp && strstr(lp, PLD_LIB_NAME)))
		return CHILD_ENV_LEAK;
	child_keep = p; /* keeps the compiler from pairing malloc and free away */
	q = calloc(7, 1001);
	q = realloc(q, 54321);
	if (posix_memalign(&m, 256, 4444) != 0)
		return 4;
	child_keep = m;
	free(p);
	pid = fork();
	if (pid == 0) {
		child_keep = malloc(99999); /* never recorded */
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	child_keep = q; /* q leaks on purpose */
	return CHILD_OK;
}

static void *exit_thread(void *arg)
{
	(void)arg;
	child_keep = malloc(31337);
	_exit(CHILD_OK); /* from a thread, no destructors: the library's _exit still ends the session */
	return NULL;
}

/* vfork_exit - a vfork child that _exits: it shares our memory, must not end our session. */
static __attribute__((noinline)) void vfork_exit(void)
{
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* child_exit_main - allocate, vfork children that _exit, then _exit from a thread. */
static int child_exit_main(void)
{
	pthread_t th;

	for (int i = 0; i < 3; i++)
		vfork_exit();
	child_keep = malloc(4242);
	if (pthread_create(&th, NULL, exit_thread, NULL) != 0)
		return 5;
	for (;;)
		pause();
}

struct sink {
	int fd;
	uint8_t *buf;
	size_t len, cap;
};

static void *sink_main(void *arg)
{
	struct sink *s = arg;
	ssize_t n;

	for (;;) {
		if (s->cap - s->len < 65536) {
			s->cap = s->cap ? 2 * s->cap : 1 << 20;
			s->buf = realloc(s->buf, s->cap);
			if (!s->buf)
				return NULL;
		}
		n = read(s->fd, s->buf + s->len, s->cap - s->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		s->len += (size_t)n;
	}
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif

/* run_child - run this binary with the library preloaded in mode; the decoded stream in st. */
static bool run_child(const char *mode, struct ck_dec *st, int *exit_code)
{
	const char *bd = getenv("HEAPTAP_BUILD_DIR");
	char lib[PATH_MAX], dir[] = "/tmp/check_preload.XXXXXX", self[PATH_MAX];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sink sk = { 0 };
	pthread_t th;
	int ls, st_code;
	ssize_t sl;
	pid_t pid;

	/* outside ctest there is no library to preload; an ASan program cannot take it */
	if (!bd || UNDER_ASAN)
		return false;
	snprintf(lib, sizeof(lib), "%s/lib/libheaptap_preload.so", bd);
	ck_assert_msg(access(lib, R_OK) == 0, "%s missing", lib);
	sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(sl, 0);
	self[sl] = '\0';
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(ls, 0);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(ls, 1), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		setenv("LD_PRELOAD", lib, 1);
		setenv("HEAPTAP_SOCKET", sa.sun_path, 1);
		setenv("HEAPTAP_DEPTH", "32", 1);
		execl(self, self, mode, (char *)NULL);
		_exit(127);
	}
	sk.fd = accept(ls, NULL, NULL);
	ck_assert_int_ge(sk.fd, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, sink_main, &sk), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(waitpid(pid, &st_code, 0), pid);
	ck_assert(WIFEXITED(st_code));
	*exit_code = WEXITSTATUS(st_code);
	close(sk.fd);
	close(ls);
	unlink(sa.sun_path);
	rmdir(dir);

	ck_assert_msg(ck_decode(sk.buf, sk.len, st) == 0, "malformed at %zu: %s", st->error_at,
		      st->error);
	ck_assert_uint_eq(st->pid, (uint32_t)pid);
	ck_assert_str_eq(st->exe, self);
	free(sk.buf);
	return true;
}

START_TEST(run_with_library)
{
	struct ck_dec st;
	int code = -1, big = 0, found[4] = { 0 };

	if (!run_child("--child", &st, &code))
		return;
	ck_assert_int_eq(code, CHILD_OK);
	ck_assert_int_eq(st.have_end, 1);
	ck_assert_uint_eq(st.end_reason, WIRE_END_EXIT);
	for (size_t i = 0; i < st.nev; i++) {
		struct ck_ev *e = &st.ev[i];

		if (e->op != WIRE_EV_ALLOC)
			continue;
		found[0] |= e->kind == WIRE_KIND_MALLOC && e->size == 12345;
		found[1] |= e->kind == WIRE_KIND_CALLOC && e->size == 7 * 1001;
		found[2] |= e->kind == WIRE_KIND_REALLOC && e->size == 54321;
		found[3] |= e->kind == WIRE_KIND_POSIX_MEMALIGN && e->size == 4444 && e->ptr % 256 == 0;
		big |= e->size == 99999;
		ck_assert_uint_ne(e->trace, 0); /* every allocation has a stack */
	}
	for (int i = 0; i < 4; i++)
		ck_assert_msg(found[i], "allocation %d not recorded", i);
	ck_assert_int_eq(big, 0); /* the forked child was not recorded */
	ck_dec_free(&st);
}
END_TEST

START_TEST(run_exit_from_thread)
{
	struct ck_dec st;
	int code = -1, found = 0, thread_found = 0;

	if (!run_child("--child-exit", &st, &code))
		return;
	ck_assert_int_eq(code, CHILD_OK);
	ck_assert_int_eq(st.have_end, 1); /* END despite _exit and the vfork children */
	ck_assert_uint_eq(st.end_reason, WIRE_END_EXIT);
	for (size_t i = 0; i < st.nev; i++) {
		found |= st.ev[i].op == WIRE_EV_ALLOC && st.ev[i].size == 4242;
		thread_found |= st.ev[i].op == WIRE_EV_ALLOC && st.ev[i].size == 31337;
	}
	ck_assert_int_eq(found, 1);
	ck_assert_int_eq(thread_found, 1);
	ck_dec_free(&st);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;

	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return child_main();
	if (argc > 1 && strcmp(argv[1], "--child-exit") == 0)
		return child_exit_main();
	s = suite_create("preload");
	tc = tcase_create("env");
	tcase_add_test(tc, env_drops_ours);
	tcase_add_test(tc, env_drops_empty_preload);
	suite_add_tcase(s, tc);
	tc = tcase_create("boot");
	tcase_add_test(tc, boot_arena);
	suite_add_tcase(s, tc);
	tc = tcase_create("run");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, run_with_library);
	tcase_add_test(tc, run_exit_from_thread);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
