/* tests/e2e/fork.c - a forked child and an exec'd child are not recorded */
/* SPDX-License-Identifier: MIT */
/*
 * Target of fork.test. The parent allocates (f_parent_before), forks a
 * child that allocates (f_child), frees one of the parent's blocks (in its
 * own copy of the heap) and exits through exit(), so atexit handlers and
 * destructors run in the child. Then the parent runs /bin/true through
 * system() and execs itself with --exec-child (which allocates from
 * f_exec_child and prints "exec-child ok"), and allocates again
 * (f_parent_after). Only the parent's allocations belong in the recording,
 * with exact numbers; the children must run as they would without heaptap.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "expect.h"

#define NOINLINE __attribute__((noinline))
#define AT(s, call) (ex_site_at(&(s), __FILE__, __LINE__), (call))

static struct ex_site s_before = EX_SITE("f_parent_before");
static struct ex_site s_after = EX_SITE("f_parent_after");
static void *blocks[2];

static NOINLINE void f_parent_before(void)
{
	for (int i = 0; i < 2; i++) {
		blocks[i] = AT(s_before, malloc(500));
		ex_alloc(&s_before, EX_MALLOC, blocks[i], 500);
	}
}

static NOINLINE void f_parent_after(void)
{
	void *p = AT(s_after, malloc(300));

	ex_alloc(&s_after, EX_MALLOC, p, 300);
}

static NOINLINE int f_child(void)
{
	int made = 0;

	for (int i = 0; i < 7; i++)
		made += malloc(12345) != NULL;
	return made;
}

static NOINLINE int f_exec_child(void)
{
	int made = 0;

	for (int i = 0; i < 5; i++)
		made += malloc(4321) != NULL;
	return made;
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	pid_t pid;
	int st;

	if (argc == 2 && !strcmp(argv[1], "--exec-child")) {
		if (f_exec_child() != 5)
			return 4;
		ex_printf("exec-child ok\n");
		return 0;
	}

	f_parent_before();

	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		free(blocks[0]); /* the child's copy: the parent's block stays */
		exit(f_child() == 7 ? 0 : 4);
	}
	st = wait_status(pid);
	ex_printf("fork-child status=%d\n", st);

	st = system("/bin/true");
	ex_printf("system status=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));

	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--exec-child", (char *)NULL);
		_exit(5);
	}
	st = wait_status(pid);
	ex_printf("exec-child status=%d\n", st);

	f_parent_after();
	ex_print();
	ex_printf("absent f_child\nabsent f_exec_child\nnomodule dash\n");
	return 0;
}
