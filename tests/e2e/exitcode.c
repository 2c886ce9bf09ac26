/* tests/e2e/exitcode.c - end with a given exit status or signal */
/* SPDX-License-Identifier: MIT */
/*
 * Target of exitcode.test:
 *   exitcode exit N     allocate, then exit(N)
 *   exitcode return N   allocate, then return N from main
 *   exitcode _exit N    allocate, then _exit(N) (no atexit handlers)
 *   exitcode signal N   allocate, then raise(N) with its default action
 * It prints "ready" and "pid N" first, so the test sees it ran and can
 * name the recording heaptap gives it by default.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expect.h"

static __attribute__((noinline)) void e_alloc(void)
{
	for (int i = 0; i < 10; i++)
		if (!malloc(100))
			abort();
}

int main(int argc, char **argv)
{
	int n;

	if (argc != 3)
		return 99;
	n = atoi(argv[2]);
	ex_printf("ready\npid %d\n", (int)getpid());
	e_alloc();
	if (!strcmp(argv[1], "exit"))
		exit(n);
	if (!strcmp(argv[1], "return"))
		return n;
	if (!strcmp(argv[1], "_exit"))
		_exit(n);
	if (!strcmp(argv[1], "signal")) {
		signal(n, SIG_DFL);
		raise(n);
		return 98; /* the signal was ignored or blocked */
	}
	return 99;
}
