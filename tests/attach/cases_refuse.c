/* tests/attach/cases_refuse.c - attach cases the attacher must refuse or survive: stopped, traced, gone */
/* SPDX-License-Identifier: MIT */
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

int case_stopped(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;
	int i;

	if (victim_start(&v))
		return 1;
	kill(v.pid, SIGSTOP);
	for (i = 0; i < 200 && proc_state(v.pid) != 'T'; i++)
		usleep(5000);
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	report_reason("stopped target", ctx, why);
	check(why == ATT_E_STOPPED, "a stopped target is refused");
	why = att_seize(ctx);
	check(why == ATT_E_STATE, "seize refuses without a passed preflight");
	att_free(ctx);
	usleep(50000);
	check(proc_state(v.pid) == 'T', "it stays stopped (state %c)", proc_state(v.pid));
	kill(v.pid, SIGCONT);
	victim_check_jc(&v, "after SIGCONT", 1);
	victim_stop(&v);
	return failed;
}

/* Stopped between preflight and seize: seize sees the group stop and leaves it stopped. */
int case_stopped_late(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;
	int i;

	if (victim_start(&v))
		return 1;
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	check(why == ATT_OK, "preflight passes while running");
	kill(v.pid, SIGSTOP);
	for (i = 0; i < 200 && proc_state(v.pid) != 'T'; i++)
		usleep(5000);
	why = att_seize(ctx);
	report_reason("stopped after preflight", ctx, why);
	check(why == ATT_E_STOPPED || why == ATT_E_NO_THREAD, "seize gives up on a stopped target");
	att_free(ctx);
	usleep(50000);
	check(proc_state(v.pid) == 'T', "it stays stopped (state %c)", proc_state(v.pid));
	check(tracer_pid(v.pid) == 0, "not traced");
	kill(v.pid, SIGCONT);
	victim_check_jc(&v, "after SIGCONT", 1);
	victim_stop(&v);
	return failed;
}

int case_traced(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;
	char expect[64];
	int go[2];
	pid_t tracer;
	char c;

	if (victim_start(&v))
		return 1;
	if (pipe(go))
		return 1;
	tracer = fork();
	if (tracer == 0) {
		/* a small tracer of our own: seize (no stop) and wait */
		if (ptrace(PTRACE_SEIZE, v.pid, 0, 0) < 0)
			_exit(2);
		(void)!write(go[1], "s", 1);
		pause();
		_exit(0);
	}
	close(go[1]);
	if (read(go[0], &c, 1) != 1) {
		check(0, "helper tracer seized the victim");
		return 1;
	}
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	report_reason("traced target", ctx, why);
	check(why == ATT_E_TRACED, "an already traced target is refused");
	snprintf(expect, sizeof(expect), "traced by %d (", (int)tracer);
	check(strstr(att_detail(ctx), expect) != NULL, "the reason names the tracer %d", (int)tracer);
	att_free(ctx);
	kill(tracer, SIGKILL);
	waitpid(tracer, NULL, 0);
	usleep(50000);
	victim_check(&v, "after the tracer left");
	victim_stop(&v);
	return failed;
}

/* The same with a real tracer: strace -p. */
int case_traced_strace(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;
	pid_t st;
	char pidstr[16];
	int i;

	if (access("/usr/bin/strace", X_OK) != 0) {
		printf("skip: no strace\n");
		return SKIP;
	}
	if (victim_start(&v))
		return 1;
	snprintf(pidstr, sizeof(pidstr), "%d", (int)v.pid);
	st = fork();
	if (st == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl("/usr/bin/strace", "strace", "-q", "-o", "/dev/null", "-p", pidstr, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 400 && tracer_pid(v.pid) != st; i++)
		usleep(5000);
	check(tracer_pid(v.pid) == st, "strace attached");
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	report_reason("traced by strace", ctx, why);
	check(why == ATT_E_TRACED, "a process under strace is refused");
	check(strstr(att_detail(ctx), "(strace)") != NULL, "the reason names strace");
	att_free(ctx);
	kill(st, SIGINT);	/* strace detaches on SIGINT */
	waitpid(st, NULL, 0);
	for (i = 0; i < 200 && tracer_pid(v.pid) != 0; i++)
		usleep(5000);
	/* strace's own attach interrupts every thread: epoll_wait may see EINTR from it */
	victim_check_jc(&v, "after strace detached", 1);
	victim_stop(&v);
	return failed;
}

int case_static(void)
{
	struct victim v;
	char *argv[] = { (char *)static_path, NULL };
	struct att_ctx *ctx;
	enum att_reason why;

	if (!static_path || !static_path[0] || access(static_path, X_OK) != 0) {
		printf("skip: no static victim (libc.a missing)\n");
		return SKIP;
	}
	if (spawn(&v, argv))
		return 1;
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	report_reason("static target", ctx, why);
	check(why == ATT_E_STATIC, "a static binary is refused");
	att_free(ctx);
	victim_stop(&v);
	return failed;
}

int case_nopid(void)
{
	struct att_ctx *ctx;
	enum att_reason why;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	ctx = att_new(gone);
	why = att_preflight(ctx);
	report_reason("reaped pid", ctx, why);
	check(why == ATT_E_NO_PROCESS, "a nonexistent pid is refused");
	att_free(ctx);
	return failed;
}

/* The process exits between preflight and seize. */
int case_gone_before_seize(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;

	if (victim_start(&v))
		return 1;
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	check(why == ATT_OK, "preflight passes");
	kill(v.pid, SIGKILL);
	waitpid(v.pid, NULL, 0);
	v.pid = 0;
	why = att_seize(ctx);
	report_reason("gone before seize", ctx, why);
	check(why == ATT_E_EXITED, "seize reports the exit");
	att_free(ctx);
	return failed;
}

/* The start function exits the process in the middle of the remote call. */
int case_exit_mid_call(void)
{
	struct victim v;
	struct att_inject_result res;
	struct att_ctx *ctx;
	enum att_reason why;
	int st;

	if (victim_start(&v))
		return 1;
	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_exit", out_file, &res, 0);
	report_reason("exit during the call", ctx, why);
	check(why == ATT_E_EXITED, "exit during the attach is reported");
	att_free(ctx);
	st = victim_stop(&v);
	check(WIFEXITED(st) && WEXITSTATUS(st) == 3, "victim exited with the library's status 3");
	return failed;
}

