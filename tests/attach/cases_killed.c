/* tests/attach/cases_killed.c - the attacher SIGKILLed at every step: the victim must not notice */
/* SPDX-License-Identifier: MIT */
/*
 * A child process of the driver does the whole attach (preflight, prepare,
 * seize, inject, release) with HEAPTAP_HANG=<step>[@N][:kill] (attach/hang.c):
 * at that instant it stops itself with SIGSTOP, and we SIGKILL it while the
 * victim's thread is in that state; ":kill" steps kill themselves at once,
 * while the thread runs our call. The random case resumes a child stopped
 * right after its interrupt stop and kills it after a random delay inside
 * the few milliseconds the remote calls take.
 *
 * After every kill: the victim is not traced, not stopped, answers, and its
 * own checks are clean: no EINTR anywhere (its threads sit in read,
 * nanosleep, clock_nanosleep, futex, epoll_wait), every queued RT signal
 * received once and in order with its siginfo, no register of the vector
 * loop changed, no thread's signal mask changed. One victim takes every kill
 * of a case; at the end a normal attach must still work.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/attach/harness.h"

/* Attach in a child with HEAPTAP_HANG=hang, preferring thread tid (0: any). */
static pid_t attach_child(const struct victim *v, const char *hang, pid_t tid)
{
	struct att_inject_result res;
	struct att_ctx *ctx;
	enum att_reason why;
	pid_t c;

	fflush(stdout);
	c = fork();
	if (c != 0)
		return c;
	if (hang)
		setenv("HEAPTAP_HANG", hang, 1);
	ctx = att_new(v->pid);
	if (!ctx)
		_exit(2);
	if (tid)
		att_prefer_thread(ctx, tid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	if (why)
		report_reason("attach in the child", ctx, why);
	if (!hang)
		print_stats(v, ctx);
	att_free(ctx);
	fflush(stdout);
	_exit(why == ATT_OK ? 0 : why == ATT_E_YAMA || why == ATT_E_PTRACE ? SKIP : 3);
}

/* Wait up to ms for the child to stop or end; its status, or -1 on timeout. */
static int wait_child(pid_t c, int ms, int *status)
{
	int i;

	for (i = 0; i < ms; i++) {
		pid_t r = waitpid(c, status, WUNTRACED | WNOHANG);

		if (r == c)
			return 0;
		usleep(1000);
	}
	return -1;
}

static void reap(pid_t c)
{
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

/* After a kill: not traced, not stopped, and clean self-checks. */
static void after_kill(struct victim *v, const char *what)
{
	char st;
	int i;

	for (i = 0; i < 200 && tracer_pid(v->pid) != 0; i++)
		usleep(5000);
	check(tracer_pid(v->pid) == 0, "%s: victim not traced after the kill", what);
	st = proc_state(v->pid);
	check(st != 'T' && st != 't' && st != 'Z' && st != '?', "%s: victim runs (state %c)", what,
	      st);
	usleep(20000);
	victim_check(v, what);
}

/* One kill at step; must_reach: the step is on every attach's path. */
static int kill_at(struct victim *v, const char *step, pid_t tid, int must_reach)
{
	char what[96];
	int status = 0;
	pid_t c;

	snprintf(what, sizeof(what), "%s%s%d", step, tid ? " tid " : "", (int)tid);
	c = attach_child(v, step, tid);
	if (c < 0)
		return -1;
	if (wait_child(c, 30000, &status) < 0) {
		reap(c);
		check(0, "%s: the attacher neither stopped nor ended in 30 s", what);
		return 0;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP)
		return SKIP;
	if (WIFSTOPPED(status)) {
		kill(c, SIGKILL);
		waitpid(c, &status, 0);
		printf("     %s: attacher SIGKILLed while stopped there\n", what);
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
		printf("     %s: attacher killed itself there\n", what);
	} else {
		check(!must_reach, "%s: step reached (attacher %s %d)", what,
		      WIFEXITED(status) ? "exited" : "died of signal",
		      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	after_kill(v, what);
	return 0;
}

/*
 * Loader mode: from the step that sets pthread_create's registers on, the
 * hijacked thread creates the loader even though heaptap is dead; each
 * such loader must run the start function once, wait for an ack that never
 * comes, unmap its pages and end by itself.
 */
static void loaders_after_kills(struct victim *v, const char *const *steps, size_t n)
{
	size_t k, first = n;
	int i, lines;

	for (k = 0; k < n && first == n; k++)
		if (!strncmp(steps[k], "callregs@2", 10) || !strncmp(steps[k], "resumed@2", 9))
			first = k;
	/*
	 * a loader names itself only after its wait for go (100 ms): on a
	 * loaded machine one may not be visible yet, so wait for its start
	 * line too (each then waits 5 s for an ack that never comes)
	 */
	for (i = 0; i < 2000; i++) {
		lines = count_lines(out_file, "start ");
		if (!loaders_alive(v->pid) && lines >= (int)(n - first))
			break;
		usleep(10000);
	}
	check(loaders_alive(v->pid) == 0, "every loader thread left behind ended by itself");
	lines = count_lines(out_file, "start ");
	check(lines == (int)(n - first), "%d start calls: one per kill from %s on (%zu)", lines,
	      first < n ? steps[first] : "-", n - first);
}

/* A normal attach at the end: the victim can still be attached, and is fine after. */
static void final_attach(struct victim *v)
{
	int status = 0;
	pid_t c = attach_child(v, NULL, 0);

	if (c < 0 || wait_child(c, 60000, &status) < 0) {
		if (c > 0)
			reap(c);
		check(0, "a last attach ends");
		return;
	}
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a last attach succeeds");
	after_kill(v, "after the last attach");
}

/*
 * Calls, in order: 1 mmap, 2 __errno_location, 3 dlopen, 4 dlsym, 5 the
 * start function, 6 munmap. sysstop@N counts syscall stops over all calls.
 */
static const char *const all_steps[] = {
	"stopped", "saved", "callregs@1", "masked", "resumed@1:kill", "end@1",
	"callregs@2", "resumed@2:kill", "end@2", "errno",
	"callregs@3", "resumed@3:kill", "sysstop@1", "sysstop@2", "end@3",
	"callregs@4", "resumed@4:kill", "end@4",
	"callregs@5", "resumed@5:kill", "end@5",
	"callregs@6", "resumed@6:kill", "end@6", "restore-fp", "restored",
};
static const char *const key_steps[] = {
	"masked", "resumed@3:kill", "sysstop@2", "end@3", "resumed@5:kill", "end@5",
	"resumed@6:kill", "end@6", "restore-fp", "restored",
};

/*
 * loader-killed-steps-*: calls 1 mmap (at a fixed address through a chained
 * frame: "sent" is right after heaptap sent the end signal that stops the
 * thread between the frames' two rt_sigreturns, end@1 that stop), 2 the
 * stub (errno, mprotect, pthread_create in the target; no munmap: the
 * loader unmaps the pages). The catchall victim ignores no signal: its
 * mmap runs through libc's wrapper (two syscall stops). From callregs@2 on
 * the loader thread exists and finishes alone (no go: it starts after
 * 100 ms; no ack: it waits 5 s, then unmaps its own two pages and leaves
 * the trampoline page, which the hijacked thread may still have been
 * running when heaptap died).
 */
static const char *const loader_all_steps[] = {
	"stopped", "saved", "callregs@1", "masked", "sent", "resumed@1:kill", "end@1",
	"callregs@2", "resumed@2:kill", "end@2", "restore-fp", "restored",
};
static const char *const loader_key_steps[] = {
	"masked", "end@1", "resumed@2:kill", "end@2", "restore-fp", "restored",
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Calls end at syscall stops when the process ignores no signal the
 * trampoline could send itself (attach/prepare.c, choose_end_sig): then
 * dlopen's and the start function's own syscalls stop too.
 */
static const char *const catch_steps[] = {
	"resumed@3:kill", "sysstop@3", "sysstop@6", "sysstop@12", "end@3", "resumed@5:kill",
	"sysstop@30", "end@5", "end@6", "restore-fp",
};

/*
 * killed-steps-ROLE: every step (busy: the vector loop; its registers must
 * come back through rt_sigreturn's XSAVE image), or the key steps for the
 * other kinds of blocked thread.
 */
int case_killed_steps(const char *role)
{
	struct victim v;
	const char *const *steps = key_steps;
	const char *one[1];
	size_t i, n = N(key_steps);
	pid_t tid = 0;
	int r, catchall = 0;

	if (strcmp(role, "catchall") == 0) {
		/* the victim catches SIGURG, SIGWINCH and SIGCHLD and ignores nothing */
		setenv("ATT_VICTIM_CATCH", "1", 1);
		steps = catch_steps;
		n = N(catch_steps);
		catchall = 1;
		role = "busy";
	}
	if (victim_start(&v))
		return 1;
	unsetenv("ATT_VICTIM_CATCH");
	usleep(100000);
	if (strcmp(role, "any") != 0) {
		for (r = 0; r < R_COUNT && strcmp(role_name[r], role) != 0; r++)
			;
		if (r == R_COUNT) {
			fprintf(stderr, "unknown role %s\n", role);
			victim_stop(&v);
			return 2;
		}
		tid = v.tid[r];
	}
	if (strcmp(role, "busy") == 0) {
		steps = all_steps;
		n = N(all_steps);
	}
	if (loader_mode) {
		/* catchall (end_sig 0): syscall stops come in other places; key steps only */
		int all = strcmp(role, "busy") == 0 && !catchall;

		steps = all ? loader_all_steps : loader_key_steps;
		n = all ? N(loader_all_steps) : N(loader_key_steps);
	}
	one[0] = getenv("ATT_KILL_STEP");
	if (one[0]) {	/* by hand: one step */
		steps = one;
		n = 1;
	}
	for (i = 0; i < n; i++) {
		if (kill_at(&v, steps[i], tid, 1) == SKIP) {
			victim_stop(&v);
			printf("skip: the child may not ptrace its sibling here\n");
			return SKIP;
		}
	}
	if (loader_mode && !one[0])
		loaders_after_kills(&v, steps, n);
	final_attach(&v);
	check(WIFEXITED(victim_stop(&v)), "victim exits normally on EOF");
	return failed;
}

/*
 * killed-random: the child stops right after its thread's interrupt stop;
 * SIGCONT, then SIGKILL after a random 0..4 ms, which falls anywhere in
 * register saving, the six calls and the restore (the pause is ~0.5-5 ms).
 * ATT_KILL_RUNS sets the number of runs (default 10).
 */
int case_killed_random(void)
{
	struct victim v;
	const char *e = getenv("ATT_KILL_RUNS");
	int runs = e ? atoi(e) : 10, i, status, done_before = 0;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	char what[64];
	long us;
	pid_t c;

	if (victim_start(&v))
		return 1;
	usleep(100000);
	printf("     seed %u, %d runs\n", seed, runs);
	for (i = 0; i < runs; i++) {
		us = (long)(rand_r(&seed) % 4000);
		snprintf(what, sizeof(what), "run %d, kill %ld us in", i, us);
		c = attach_child(&v, "stopped", 0);
		if (c < 0 || wait_child(c, 30000, &status) < 0) {
			if (c > 0)
				reap(c);
			check(0, "%s: the attacher stopped", what);
			continue;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP) {
			victim_stop(&v);
			printf("skip: the child may not ptrace its sibling here\n");
			return SKIP;
		}
		if (!WIFSTOPPED(status)) {
			check(0, "%s: the attacher stopped after the interrupt", what);
			continue;
		}
		kill(c, SIGCONT);
		usleep((useconds_t)us);
		kill(c, SIGKILL);
		waitpid(c, &status, 0);
		if (WIFEXITED(status)) {
			done_before++;
			printf("     %s: the attach had ended (exit %d)\n", what, WEXITSTATUS(status));
		}
		after_kill(&v, what);
	}
	printf("     %d of %d attaches had ended before their kill\n", done_before, runs);
	final_attach(&v);
	check(WIFEXITED(victim_stop(&v)), "victim exits normally on EOF");
	return failed;
}
