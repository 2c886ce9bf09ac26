/* tests/attach/att_inject_test.c - drive the attacher against real victims, one case per run */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: att_inject_test CASE VICTIM TESTLIB [STATIC_VICTIM [ZOMBIE_LEADER_VICTIM]]
 * Each case starts tests/attach/victim (or the static one), attaches with
 * attach/, and checks the outcome and the victim afterwards: it still
 * answers on its pipe, saw no EINTR, lost or duplicated no signal, and kept
 * its registers. Prints the measured pause. Exit 0 pass, 1 fail, 77 skip
 * (ptrace not permitted here).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/attach/harness.h"

/* Can we PTRACE_SEIZE a child of ours? (containers may forbid ptrace entirely) */
static int ptrace_permitted(void)
{
	pid_t c = fork();
	int ok;

	if (c == 0) {
		pause();
		_exit(0);
	}
	ok = ptrace(PTRACE_SEIZE, c, 0, 0) == 0;
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	return ok;
}

int main(int argc, char **argv)
{
	const char *c;
	int ret;

	if (argc < 4) {
		fprintf(stderr, "usage: %s CASE VICTIM TESTLIB [STATIC_VICTIM [ZL_VICTIM]]\n", argv[0]);
		return 2;
	}
	static char vbuf[PATH_MAX], lbuf[PATH_MAX];

	c = argv[1];
	victim_path = realpath(argv[2], vbuf);
	lib_path = realpath(argv[3], lbuf);
	if (!victim_path || !lib_path) {
		fprintf(stderr, "%s: victim or library missing\n", argv[0]);
		return 2;
	}
	static_path = argc > 4 ? argv[4] : NULL;
	zl_path = argc > 5 ? argv[5] : NULL;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0) {
		char b[8] = "";
		FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");

		if (f && fgets(b, sizeof(b), f) && atoi(b) >= 2 && geteuid() != 0) {
			printf("skip: ptrace_scope %s", b);
			fclose(f);
			return SKIP;
		}
		if (f)
			fclose(f);
	}
	if (!ptrace_permitted()) {
		printf("skip: ptrace is not permitted here\n");
		return SKIP;
	}
	snprintf(out_file, sizeof(out_file), "/tmp/heaptap-att-test-%d.txt", (int)getpid());
	unlink(out_file);
	signal(SIGPIPE, SIG_IGN);

	if (!strncmp(c, "loader-", 7)) {
		loader_mode = 1;
		c += 7;
	}
	if (!strcmp(c, "inject"))
		ret = case_inject();
	else if (!strncmp(c, "thread-", 7))
		ret = case_thread(c + 7);
	else if (!strcmp(c, "pause"))
		ret = case_pause();
	else if (!strcmp(c, "hold"))
		ret = case_hold();
	else if (!strcmp(c, "stopped"))
		ret = case_stopped();
	else if (!strcmp(c, "stopped-late"))
		ret = case_stopped_late();
	else if (!strcmp(c, "traced-strace"))
		ret = case_traced_strace();
	else if (!strcmp(c, "traced"))
		ret = case_traced();
	else if (!strcmp(c, "static"))
		ret = case_static();
	else if (!strcmp(c, "nopid"))
		ret = case_nopid();
	else if (!strcmp(c, "gone-before-seize"))
		ret = case_gone_before_seize();
	else if (!strcmp(c, "exit-mid-call"))
		ret = case_exit_mid_call();
	else if (!strncmp(c, "call-", 5))
		ret = case_bad_call(c + 5);
	else if (!strncmp(c, "fault-", 6))
		ret = case_fault(c + 6);
	else if (!strncmp(c, "stop-in-call-", 13))
		ret = case_stop_in_call(c + 13);
	else if (!strcmp(c, "defer-signals"))
		ret = case_defer_signals();
	else if (!strcmp(c, "zombie-leader"))
		ret = case_zombie_leader();
	else if (!strncmp(c, "killed-steps-", 13))
		ret = case_killed_steps(c + 13);
	else if (!strcmp(c, "eagain"))
		ret = case_eagain();
	else if (!strcmp(c, "priority"))
		ret = case_priority();
	else if (!strcmp(c, "killed-random"))
		ret = case_killed_random();
	else if (!strcmp(c, "namespace"))
		ret = case_namespace(NULL);
	else if (!strcmp(c, "namespace-fault-stage"))
		ret = case_namespace("stage");
	else {
		fprintf(stderr, "unknown case %s\n", c);
		ret = 2;
	}
	unlink(out_file);
	if (ret == 0 && failed)
		ret = 1;
	printf("%s %s\n", ret == 0 ? "PASS" : ret == SKIP ? "SKIP" : "FAIL", c);
	return ret;
}
