/* tests/attach/testlib.c - library the attach tests load into the victim */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap_test_start(path) appends one line to the file path:
 *   "start count=N pid=P tid=T rt_blocked=B"
 * count is a static counter (a second dlopen of the same library returns
 * the same instance, so it says 2), rt_blocked whether asynchronous signals
 * were blocked while the start function ran. The other entry points make
 * the call fail in known ways: return nonzero, exit the process, crash,
 * hang.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int count;

__attribute__((visibility("default"))) int heaptap_test_start(const char *path)
{
	sigset_t cur;
	int fd, blocked;

	count++;
	sigprocmask(SIG_SETMASK, NULL, &cur);
	blocked = sigismember(&cur, SIGRTMIN + 1) && sigismember(&cur, SIGTERM);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return 100;
	dprintf(fd, "start count=%d pid=%d tid=%d rt_blocked=%d\n", count, (int)getpid(),
		(int)gettid(), blocked);
	close(fd);
	return 0;
}

__attribute__((visibility("default"))) int heaptap_test_fail(const char *path)
{
	(void)path;
	return 7;
}

__attribute__((visibility("default"))) int heaptap_test_exit(const char *path)
{
	(void)path;
	_exit(3);
}

__attribute__((visibility("default"))) int heaptap_test_crash(const char *path)
{
	volatile uintptr_t bad = 16;	/* hides the constant from -Warray-bounds */

	(void)path;
	*(volatile int *)bad = 1;
	return 0;
}

__attribute__((visibility("default"))) int heaptap_test_hang(const char *path)
{
	(void)path;
	for (;;)
		pause();
}

/*
 * Runs 200 ms: heaptap's own SIGTERM must wait until the call is over.
 * Spins rather than sleeps: a nanosleep here would reset the hijacked
 * thread's restart block (docs/attach.md, "Registers and syscall restart").
 */
__attribute__((visibility("default"))) int heaptap_test_sleep(const char *path)
{
	struct timespec t0, t;

	(void)path;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 200000000L);
	return 0;
}

/* Job control stop of the own thread while the remote call runs: held, then re-delivered. */
__attribute__((visibility("default"))) int heaptap_test_stop_thread(const char *path)
{
	(void)path;
	syscall(SYS_tgkill, getpid(), gettid(), SIGSTOP);
	return 0;
}

/* Same, sent to the process: any thread may take it and start the group stop. */
__attribute__((visibility("default"))) int heaptap_test_stop_process(const char *path)
{
	(void)path;
	kill(getpid(), SIGSTOP);
	return 0;
}
