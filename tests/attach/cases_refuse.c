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

/* SIGSTOP the victim and wait (1 s at most) until /proc says it is stopped. */
static void stop_victim(pid_t pid)
{
	int i;

	kill(pid, SIGSTOP);
	for (i = 0; i < 200 && proc_state(pid) != 'T'; i++)
		usleep(5000);
}

/* After a refused attach: still stopped 50 ms later and not traced; then SIGCONT, it works; reap it. */
static void stays_stopped(struct victim *v)
{
	usleep(50000);
	check(proc_state(v->pid) == 'T', "it stays stopped (state %c)", proc_state(v->pid));
	check(tracer_pid(v->pid) == 0, "not traced");
	kill(v->pid, SIGCONT);
	victim_check_jc(v, "after SIGCONT", 1);
	victim_stop(v);
}

int case_stopped(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;

	if (victim_start(&v))
		return 1;
	stop_victim(v.pid);
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	report_reason("stopped target", ctx, why);
	check(why == ATT_E_STOPPED, "a stopped target is refused");
	why = att_seize(ctx);
	check(why == ATT_E_STATE, "seize refuses without a passed preflight");
	att_free(ctx);
	stays_stopped(&v);
	return failed;
}

/* Stopped between preflight and seize: seize sees the group stop and leaves it stopped. */
int case_stopped_late(void)
{
	struct victim v;
	struct att_ctx *ctx;
	enum att_reason why;

	if (victim_start(&v))
		return 1;
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	check(why == ATT_OK, "preflight passes while running");
	stop_victim(v.pid);
	why = att_seize(ctx);
	report_reason("stopped after preflight", ctx, why);
	check(why == ATT_E_STOPPED || why == ATT_E_NO_THREAD, "seize gives up on a stopped target");
	att_free(ctx);
	stays_stopped(&v);
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

/*
 * The victim as heaptap meets its targets: not a child of ours. A keeper
 * process forks it, reaps it and writes its wait status on *status_fd.
 *
 * Why not our own child: when the thread we trace is the thread-group
 * leader and the process exits, attach/ reaps that thread with
 * waitpid(tid, __WALL); a tracer that is also the real parent takes the
 * process's exit status there (kernel/exit.c, wait_task_zombie: EXIT_DEAD
 * unless ptrace_reparented()), so our own waitpid(pid) finds nothing and
 * the status the check wants is gone. For a tracer that is not the parent
 * the leader is handed on to the real parent (EXIT_TRACE), which is what
 * the keeper sees. Which thread attach/ picks depends on what they are
 * doing at that instant, so a test with the victim as its child failed
 * now and then (the leader, blocked in read, wins when the waiting threads
 * happen to be running).
 */
static int victim_start_kept(struct victim *v, pid_t *keeper, int *status_fd)
{
	int in[2], out[2], st[2], i, s;
	pid_t c;

	memset(v, 0, sizeof(*v));
	*keeper = -1;
	*status_fd = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(st, O_CLOEXEC))
		return -1;
	*keeper = fork();
	if (*keeper < 0)
		return -1;
	if (*keeper == 0) {
		c = fork();
		if (c == 0) {
			dup2(in[0], 0);
			dup2(out[1], 1);
			execl(victim_path, victim_path, (char *)NULL);
			_exit(127);
		}
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		close(st[0]);
		s = -1;
		while (c > 0 && waitpid(c, &s, 0) < 0 && errno == EINTR)
			;
		if (write(st[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(1);
		_exit(0);
	}
	close(in[0]);
	close(out[1]);
	close(st[1]);
	v->in = in[1];
	v->out = out[0];
	*status_fd = st[0];
	if (read_line(v->out, v->ready, sizeof(v->ready), 5000) < 0)
		return -1;
	v->pid = (pid_t)kv(v->ready, "pid");
	for (i = 0; i < R_COUNT; i++)
		v->tid[i] = (int)kv(v->ready, role_name[i]);
	return v->pid > 0 ? 0 : -1;
}

/*
 * The kept victim's wait status, as its keeper saw it: waits up to 3 s for
 * it to exit by itself (stdin closed), then says what state it is in and
 * kills it. Returns -1 if it had to be killed or no status came.
 */
static int victim_stop_kept(struct victim *v, pid_t keeper, int status_fd)
{
	struct pollfd p = { .fd = status_fd, .events = POLLIN };
	int s = -1, killed = 0;

	close(v->in);
	close(v->out);
	if (poll(&p, 1, 3000) <= 0) {
		printf("     victim %d has not exited 3 s after the call: state %c, TracerPid %d\n",
		       (int)v->pid, proc_state(v->pid), tracer_pid(v->pid));
		kill(v->pid, SIGKILL);
		killed = 1;
		p.revents = 0;
		poll(&p, 1, 5000);
	}
	if (read(status_fd, &s, sizeof(s)) != (ssize_t)sizeof(s))
		s = -1;
	close(status_fd);
	if (keeper > 0)
		waitpid(keeper, NULL, 0);
	v->pid = 0;
	return killed ? -1 : s;
}

/*
 * The start function exits the process in the middle of the remote call:
 * once with the leader hijacked, once another thread. Both must report the
 * exit and leave the process's own status (3) to its parent.
 */
int case_exit_mid_call(void)
{
	static const enum role roles[] = { R_MAIN, R_CONDWAIT };
	struct victim v;
	struct att_inject_result res;
	struct att_stats ast;
	struct att_ctx *ctx;
	enum att_reason why;
	int st, status_fd;
	pid_t keeper;
	size_t k;

	for (k = 0; k < sizeof(roles) / sizeof(roles[0]); k++) {
		if (victim_start_kept(&v, &keeper, &status_fd)) {
			check(0, "victim starts (as a grandchild)");
			return 1;
		}
		ctx = att_new(v.pid);
		att_prefer_thread(ctx, v.tid[roles[k]]);
		why = attach_once(ctx, "heaptap_test_exit", out_file, &res, 0);
		report_reason("exit during the call", ctx, why);
		att_get_stats(ctx, &ast);
		printf("     asked for the %s thread %d (%s); hijacked %d\n", role_name[roles[k]],
		       v.tid[roles[k]], v.tid[roles[k]] == v.pid ? "the leader" : "not the leader",
		       (int)ast.tid);
		check(why == ATT_E_EXITED, "%s: exit during the attach is reported", role_name[roles[k]]);
		att_free(ctx);
		st = victim_stop_kept(&v, keeper, status_fd);
		check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3,
		      "%s: the victim's parent saw it exit with the library's status 3 (wait status %#x)",
		      role_name[roles[k]], (unsigned)st);
	}
	return failed;
}

