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

#include "attach/attach.h"

#define SKIP 77

enum role {
	R_MAIN, R_READER, R_SLEEPER, R_TICKER, R_CONDWAIT, R_EPOLL, R_BUSY, R_SIGRECV,
	R_INHANDLER, R_INALLOC, R_COUNT
};
static const char *const role_name[R_COUNT] = {
	"main", "reader", "sleeper", "ticker", "condwait", "epoll", "busy", "sigrecv",
	"inhandler", "inalloc",
};

struct victim {
	pid_t pid;
	int in, out;
	int tid[R_COUNT];
	char ready[512];
};

static const char *victim_path, *lib_path, *static_path, *zl_path;
static char out_file[PATH_MAX + 64];
static int failed;

static void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf(cond ? "ok   " : "FAIL ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	if (!cond)
		failed = 1;
}

static long kv(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(text, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

static int read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t len = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (len < cap - 1) {
		if (poll(&p, 1, timeout_ms) <= 0)
			return -1;
		n = read(fd, buf + len, 1);
		if (n <= 0)
			return -1;
		if (buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = '\0';
	return 0;
}

/* Start argv with pipes on stdin/stdout; wait for its first line. */
static int spawn(struct victim *v, char *const argv[])
{
	int in[2], out[2], i;

	memset(v, 0, sizeof(*v));
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	v->pid = fork();
	if (v->pid < 0)
		return -1;
	if (v->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	v->in = in[1];
	v->out = out[0];
	if (read_line(v->out, v->ready, sizeof(v->ready), 5000) < 0)
		return -1;
	for (i = 0; i < R_COUNT; i++)
		v->tid[i] = (int)kv(v->ready, role_name[i]);
	return 0;
}

static int victim_start(struct victim *v)
{
	char *argv[] = { (char *)victim_path, NULL };

	return spawn(v, argv);
}

static int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t cap)
{
	if (write(v->in, cmd, strlen(cmd)) < 0 || write(v->in, "\n", 1) < 0)
		return -1;
	return read_line(v->out, reply, cap, 10000);
}

/* Reap the victim: close its stdin (it exits on EOF), kill it if it lingers. */
static int victim_stop(struct victim *v)
{
	int st = -1, i;

	if (v->pid <= 0)
		return -1;
	close(v->in);
	close(v->out);
	for (i = 0; i < 300; i++) {
		if (waitpid(v->pid, &st, WNOHANG) == v->pid)
			goto out;
		usleep(10000);
	}
	kill(v->pid, SIGKILL);
	waitpid(v->pid, &st, 0);
out:
	v->pid = 0;
	return st;
}

/*
 * Ping and check the victim's self-checks; print its gaps. After a
 * SIGSTOP/SIGCONT of the whole process by the test itself, epoll_wait may
 * return EINTR (signal(7), "Interruption of system calls ... by a stop
 * signal"): that is the kernel's doing, not ours, so those cases pass
 * job_control and only print it.
 */
static void victim_check_jc(struct victim *v, const char *when, int job_control)
{
	char r[1024];

	if (victim_cmd(v, "ping", r, sizeof(r)) < 0) {
		check(0, "%s: victim answers ping", when);
		return;
	}
	printf("     victim %s: %s\n", when, r);
	check(kv(r, "eintr") == 0, "%s: no EINTR in the victim", when);
	if (job_control)
		printf("     %s: epoll_wait EINTR after SIGSTOP/SIGCONT: %ld (allowed)\n", when,
		       kv(r, "epoll_eintr"));
	else
		check(kv(r, "epoll_eintr") == 0, "%s: epoll_wait saw no EINTR", when);
	check(kv(r, "seqerr") == 0 && kv(r, "infobad") == 0,
	      "%s: signals in sequence with their siginfo", when);
	check(kv(r, "sent") > 0 && kv(r, "sent") == kv(r, "recv"),
	      "%s: every signal sent was received once (%ld/%ld)", when, kv(r, "sent"),
	      kv(r, "recv"));
	check(kv(r, "regbad") == 0, "%s: no register corruption", when);
}

static void victim_check(struct victim *v, const char *when)
{
	victim_check_jc(v, when, 0);
}

static int role_of(const struct victim *v, pid_t tid)
{
	int i;

	for (i = 0; i < R_COUNT; i++)
		if (v->tid[i] == tid)
			return i;
	return -1;
}

static void print_stats(const struct victim *v, struct att_ctx *ctx)
{
	struct att_stats st;
	int r;

	att_get_stats(ctx, &st);
	r = role_of(v, st.tid);
	printf("     hijacked tid=%d (%s) syscall=%ld rax_at_stop=%ld pause_us=%.1f stop_us=%.1f unwind_us=%.1f "
	       "call_us=%.1f calls=%u threads=%u candidates=%u rejected=%u rounds=%u held=%u "
	       "delivered=%u\n",
	       (int)st.tid, r >= 0 ? role_name[r] : "?", st.syscall, st.stop_rax, st.pause_ns / 1e3,
	       st.stop_ns / 1e3, st.unwind_ns / 1e3, st.call_ns / 1e3, st.calls, st.threads,
	       st.candidates, st.rejected, st.rounds, st.held_signals, st.delivered_signals);
	if (st.rejected)
		printf("     last rejected: %s\n", st.reject_why);
	fflush(stdout);
}

static int count_lines(const char *path, const char *needle)
{
	char line[512];
	int n = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			n++;
	fclose(f);
	return n;
}

static int tracer_pid(pid_t pid)
{
	char path[64], buf[4096];
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strstr(buf, "TracerPid:");
	return p ? atoi(p + 10) : -1;
}

static char proc_state(pid_t pid)
{
	char path[64], buf[1024];
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

static int maps_contains(pid_t pid, const char *needle)
{
	char path[64], line[1024];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = 1;
	fclose(f);
	return found;
}

static int maps_has_addr(pid_t pid, uint64_t addr)
{
	char path[64], line[1024];
	unsigned long long s, e;
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && addr >= s && addr < e)
			found = 1;
	fclose(f);
	return found;
}

/* Full sequence; returns the reason of the first failing step. */
static enum att_reason attach_once(struct att_ctx *ctx, const char *sym, const char *arg,
				   struct att_inject_result *res, unsigned hold_ms)
{
	enum att_reason why;

	why = att_preflight(ctx);
	if (why)
		return why;
	why = att_prepare(ctx, lib_path);
	if (why)
		return why;
	why = att_seize(ctx);
	if (why)
		return why;
	if (hold_ms)
		usleep(hold_ms * 1000);
	why = att_inject(ctx, lib_path, sym, arg, res);
	att_release(ctx);
	return why;
}

static void report_reason(const char *what, struct att_ctx *ctx, enum att_reason why)
{
	printf("     %s: %s (exit %d)%s%s%s%s\n", what, att_strerror(why), att_exit_code(why),
	       att_detail(ctx)[0] ? ": " : "", att_detail(ctx), att_errno(ctx) ? ": " : "",
	       att_errno(ctx) ? strerror(att_errno(ctx)) : "");
}

/* ---- cases ---------------------------------------------------------------- */

/* Inject twice, automatic thread choice; also show that other threads ran. */
static int case_inject(void)
{
	struct victim v;
	struct att_inject_result r1, r2;
	struct att_ctx *ctx;
	enum att_reason why;
	char r[1024];
	uint64_t h1;

	if (victim_start(&v))
		return 1;
	usleep(300000);
	victim_cmd(&v, "reset", r, sizeof(r));
	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &r1, 0);
	report_reason("first injection", ctx, why);
	check(why == ATT_OK, "first injection succeeds");
	print_stats(&v, ctx);
	check(r1.start_ret == 0, "start function returned 0");
	check(count_lines(out_file, "count=1 ") == 1, "start function ran once with the argument");
	check(count_lines(out_file, "rt_blocked=1") == 1, "signals were blocked during the call");
	check(tracer_pid(v.pid) == 0, "target not traced after release");
	check(maps_contains(v.pid, "libheaptap_attach_testlib"), "library mapped in the target");
	{
		struct att_stats st;

		att_get_stats(ctx, &st);
		check(st.scratch && !maps_has_addr(v.pid, st.scratch), "scratch page unmapped again");
	}
	h1 = r1.handle;
	att_free(ctx);
	usleep(100000);
	victim_check(&v, "after first injection");

	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &r2, 0);
	report_reason("second injection", ctx, why);
	check(why == ATT_OK, "second injection succeeds");
	check(r2.handle == h1 && h1 != 0, "dlopen returned the same handle (%#" PRIx64 ")", h1);
	check(count_lines(out_file, "count=2 ") == 1, "same library instance: count=2");
	print_stats(&v, ctx);
	att_free(ctx);
	usleep(100000);
	victim_check(&v, "after second injection");
	check(WIFEXITED(victim_stop(&v)), "victim exits normally on EOF");
	return failed;
}

/* Hijack one given thread kind; check that its syscall resumed transparently. */
static int case_thread(const char *role)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	char r[1024];
	int i, k = -1;

	for (i = 0; i < R_COUNT; i++)
		if (strcmp(role, role_name[i]) == 0)
			k = i;
	if (k < 0)
		return 1;
	if (victim_start(&v))
		return 1;
	usleep(200000);
	ctx = att_new(v.pid);
	att_prefer_thread(ctx, v.tid[k]);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason(role, ctx, why);
	att_get_stats(ctx, &st);
	if (k == R_EPOLL) {
		/*
		 * It is interrupted only when seen running user code, and an
		 * EINTR that races in is rewound; either way the victim must
		 * not see EINTR (checked below).
		 */
		check(why == ATT_E_THREAD_UNSAFE || why == ATT_OK,
		      "the epoll thread is refused or caught outside epoll_wait");
		if (why == ATT_OK)
			print_stats(&v, ctx);
		printf("     EINTR rewound: %u\n", st.eintr_repaired);
	} else if (k == R_INHANDLER || k == R_INALLOC) {
		check(why == ATT_E_NO_SAFE_THREAD, "a thread inside %s is never hijacked",
		      k == R_INHANDLER ? "a signal handler" : "an allocator function");
		check(st.tid == 0 && st.rejected > 0, "it was stopped, unwound and let go (%u times)",
		      st.rejected);
		check(strstr(st.reject_why, k == R_INHANDLER ? "signal frame" : "victim_malloc_wait") != NULL,
		      "the stack check names why: %s", st.reject_why);
	} else {
		check(why == ATT_OK, "injection through the %s thread succeeds", role);
		check(st.tid == v.tid[k], "the %s thread was the one used", role);
		check(count_lines(out_file, "count=1 ") == 1, "start function ran");
		print_stats(&v, ctx);
	}
	att_free(ctx);
	usleep(100000);
	victim_check(&v, "after");
	(void)r;
	victim_stop(&v);
	return failed;
}

/* Hold the condwait thread 150 ms: it sees the gap, independent threads do not. */
static int case_hold(void)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	char r[1024];
	const int independent[] = { R_SLEEPER, R_TICKER, R_BUSY, R_READER, R_EPOLL, R_SIGRECV };
	long worst = 0;
	size_t i;

	if (victim_start(&v))
		return 1;
	usleep(300000);
	victim_cmd(&v, "reset", r, sizeof(r));
	ctx = att_new(v.pid);
	att_prefer_thread(ctx, v.tid[R_CONDWAIT]);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 150);
	check(why == ATT_OK, "injection with a 150 ms hold succeeds");
	print_stats(&v, ctx);
	att_get_stats(ctx, &st);
	att_free(ctx);
	usleep(50000);
	if (victim_cmd(&v, "ping", r, sizeof(r)) < 0) {
		check(0, "victim answers");
		return 1;
	}
	printf("     victim: %s\n", r);
	check(kv(r, "gap_condwait") >= 150000, "the held thread saw its pause (%ld us)",
	      kv(r, "gap_condwait"));
	check(kv(r, "gap_condwait") * 1000 <= (long)st.pause_ns + 20000000,
	      "its gap matches the measured pause (%.0f us)", st.pause_ns / 1e3);
	for (i = 0; i < sizeof(independent) / sizeof(independent[0]); i++) {
		char key[32];

		snprintf(key, sizeof(key), "gap_%s", role_name[independent[i]]);
		if (kv(r, key) > worst)
			worst = kv(r, key);
	}
	printf("     longest gap of the other threads: %ld us\n", worst);
	check(worst < 75000, "other threads kept running (longest gap %ld us < 75000)", worst);
	victim_check(&v, "after hold");
	victim_stop(&v);
	return failed;
}

static int case_stopped(void)
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
static int case_stopped_late(void)
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

static int case_traced(void)
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

static int case_static(void)
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

static int case_nopid(void)
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
static int case_gone_before_seize(void)
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
static int case_exit_mid_call(void)
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

/* Calls that crash, hang, fail, or name missing things: the victim runs on unharmed. */
static int case_bad_call(const char *which)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why, want;
	const char *sym = "heaptap_test_start", *lib = lib_path, *needle = NULL;
	char junk[128];
	int fd;

	snprintf(junk, sizeof(junk), "/tmp/heaptap-att-junk-%d.so", (int)getpid());
	if (strcmp(which, "crash") == 0) {
		sym = "heaptap_test_crash";
		want = ATT_E_CALL_FAULT;
	} else if (strcmp(which, "hang") == 0) {
		sym = "heaptap_test_hang";
		want = ATT_E_CALL_TIMEOUT;
	} else if (strcmp(which, "startfail") == 0) {
		sym = "heaptap_test_fail";
		want = ATT_E_START;
	} else if (strcmp(which, "dlsym") == 0) {
		sym = "no_such_function";
		want = ATT_E_DLSYM;
		needle = "undefined symbol";
	} else {
		fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "not an ELF file at all\n", 23) != 23)
			return 1;
		close(fd);
		lib = junk;
		want = ATT_E_DLOPEN;
		needle = junk;
	}
	if (victim_start(&v))
		return 1;
	usleep(200000);
	ctx = att_new(v.pid);
	att_set_timeouts(ctx, 0, 300);
	why = att_preflight(ctx);
	if (!why)
		why = att_seize(ctx);
	if (!why) {
		why = att_inject(ctx, lib, sym, out_file, &res);
		att_release(ctx);
	}
	report_reason(which, ctx, why);
	check(why == want, "%s: reason is \"%s\"", which, att_strerror(want));
	if (needle)
		check(strstr(att_detail(ctx), needle) != NULL, "the target's dlerror() text is reported");
	att_get_stats(ctx, &st);
	print_stats(&v, ctx);
	check(st.scratch && !maps_has_addr(v.pid, st.scratch), "scratch page unmapped again");
	check(tracer_pid(v.pid) == 0, "target not traced after release");
	att_free(ctx);
	unlink(junk);
	usleep(100000);
	victim_check(&v, "after the failed call");
	victim_stop(&v);
	return failed;
}

/*
 * A SIGSTOP arrives while our call runs (sent by the call itself): it must
 * be neither lost nor delivered twice. After release the process is
 * stopped; SIGCONT lets it go on clean.
 */
static int case_stop_in_call(const char *which)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	char sym[64];
	int i;

	snprintf(sym, sizeof(sym), "heaptap_test_stop_%s", which);
	if (victim_start(&v))
		return 1;
	usleep(200000);
	ctx = att_new(v.pid);
	why = attach_once(ctx, sym, out_file, &res, 0);
	report_reason(sym, ctx, why);
	check(why == ATT_OK, "injection succeeds although a SIGSTOP came during the call");
	print_stats(&v, ctx);
	att_get_stats(ctx, &st);
	att_free(ctx);
	for (i = 0; i < 200 && proc_state(v.pid) != 'T'; i++)
		usleep(5000);
	check(proc_state(v.pid) == 'T', "the SIGSTOP took effect after release (state %c)",
	      proc_state(v.pid));
	check(tracer_pid(v.pid) == 0, "not traced");
	kill(v.pid, SIGCONT);
	for (i = 0; i < 200 && proc_state(v.pid) == 'T'; i++)
		usleep(5000);
	check(proc_state(v.pid) != 'T', "SIGCONT continues it: the stop was delivered once");
	victim_check_jc(&v, "after SIGCONT", 1);
	victim_stop(&v);
	return failed;
}

static volatile sig_atomic_t term_seen;
static uint64_t term_at;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_term(int sig)
{
	(void)sig;
	term_at = mono_ns();
	term_seen = 1;
}

/*
 * SIGTERM to heaptap while the target runs our 200 ms call: it must be
 * deferred until the target's registers are back (attach.h, "Threads").
 */
static int case_defer_signals(void)
{
	struct victim v;
	struct att_inject_result res;
	struct att_ctx *ctx;
	enum att_reason why;
	struct sigaction sa;
	uint64_t t0, t1;
	pid_t killer;

	if (victim_start(&v))
		return 1;
	usleep(100000);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	ctx = att_new(v.pid);
	why = att_preflight(ctx);
	if (!why)
		why = att_prepare(ctx, lib_path);
	if (!why)
		why = att_seize(ctx);
	check(why == ATT_OK, "seized");
	t0 = mono_ns();
	killer = fork();
	if (killer == 0) {
		usleep(50000);
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	why = att_inject(ctx, lib_path, "heaptap_test_sleep", out_file, &res);
	t1 = mono_ns();
	att_release(ctx);
	waitpid(killer, NULL, 0);
	report_reason("200 ms call", ctx, why);
	check(why == ATT_OK, "the 200 ms call succeeds");
	check(term_seen, "heaptap's SIGTERM was delivered");
	check(term_seen && term_at >= t0 + 190000000u,
	      "only after the call (%.1f ms after it began, call took %.1f ms)",
	      (double)(term_at - t0) / 1e6, (double)(t1 - t0) / 1e6);
	att_free(ctx);
	victim_check(&v, "after the deferred signal");
	victim_stop(&v);
	return failed;
}

/* HEAPTAP_FAULT=<step>: that step fails; the victim must run on unharmed. */
static int case_fault(const char *step)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	int loaded, started;

	if (victim_start(&v))
		return 1;
	usleep(200000);
	setenv("HEAPTAP_FAULT", step, 1);
	ctx = att_new(v.pid);
	unsetenv("HEAPTAP_FAULT");
	memset(&res, 0, sizeof(res));
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason(step, ctx, why);
	check(why == ATT_E_FAULT, "fault at step %s is reported", step);
	att_get_stats(ctx, &st);
	att_free(ctx);
	check(tracer_pid(v.pid) == 0, "target not traced after rollback");
	if (st.scratch)
		check(!maps_has_addr(v.pid, st.scratch), "scratch page unmapped");
	loaded = maps_contains(v.pid, "libheaptap_attach_testlib");
	started = count_lines(out_file, "start ");
	if (!strcmp(step, "dlopen") || !strcmp(step, "dlsym") || !strcmp(step, "start"))
		check(loaded && !started, "library loaded (never unloaded) but not started");
	else
		check(!loaded && !started, "library neither loaded nor started");
	usleep(100000);
	victim_check(&v, "after rollback");
	/* and a clean attach still works afterwards */
	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	check(why == ATT_OK, "a later attach succeeds");
	check(count_lines(out_file, "count=1 ") == 1, "start ran once");
	att_free(ctx);
	usleep(50000);
	victim_check(&v, "after the later attach");
	victim_stop(&v);
	return failed;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void print_dist(const char *what, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_u64);
	printf("     %-28s min %8.1f  median %8.1f  p90 %8.1f  max %8.1f us\n", what, v[0] / 1e3,
	       v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n - 1] / 1e3);
}

/*
 * Measure: N attach cycles (the library is already loaded after the
 * first, as on a second attach), automatic thread choice. Per cycle: the
 * hijacked thread's pause as heaptap measured it and as the thread itself
 * saw it (its longest gap), and the longest gap of the threads that do
 * not depend on it.
 */
static int case_pause(void)
{
	enum { N = 30 };
	uint64_t pause[N], stop[N], unw[N], call[N], self[N], others[N];
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	char r[1024], key[32];
	int i, k, role;
	long g, worst;

	if (victim_start(&v))
		return 1;
	usleep(200000);
	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	att_free(ctx);
	check(why == ATT_OK, "warm-up injection");
	for (i = 0; i < N; i++) {
		usleep(20000);
		victim_cmd(&v, "reset", r, sizeof(r));
		ctx = att_new(v.pid);
		why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
		att_get_stats(ctx, &st);
		att_free(ctx);
		if (why != ATT_OK) {
			check(0, "cycle %d: %s", i, att_strerror(why));
			break;
		}
		usleep(20000);
		victim_cmd(&v, "ping", r, sizeof(r));
		role = role_of(&v, st.tid);
		pause[i] = st.pause_ns;
		stop[i] = st.stop_ns;
		unw[i] = st.unwind_ns;
		call[i] = st.call_ns;
		snprintf(key, sizeof(key), "gap_%s", role >= 0 ? role_name[role] : "none");
		self[i] = kv(r, key) > 0 ? (uint64_t)kv(r, key) * 1000 : 0;
		worst = 0;
		for (k = R_READER; k < R_COUNT; k++) {
			if (k == role || k == R_SIGRECV || k == R_INHANDLER || k == R_INALLOC)
				continue;
			if (role == R_TICKER && (k == R_READER || k == R_CONDWAIT || k == R_EPOLL))
				continue;	/* fed by the ticker */
			snprintf(key, sizeof(key), "gap_%s", role_name[k]);
			g = kv(r, key);
			if (g > worst)
				worst = g;
		}
		others[i] = (uint64_t)worst * 1000;
	}
	if (i == N) {
		printf("     %d attach cycles (library already loaded):\n", N);
		print_dist("pause (heaptap)", pause, N);
		print_dist("  stop after interrupt", stop, N);
		print_dist("  stack check", unw, N);
		print_dist("  remote calls", call, N);
		print_dist("gap seen by hijacked thread", self, N);
		print_dist("longest gap, other threads", others, N);
	}
	victim_check(&v, "after the cycles");
	victim_stop(&v);
	return failed;
}

/* The main thread has exited: the leader is a zombie, the process lives on. */
static int case_zombie_leader(void)
{
	struct victim v;
	struct att_inject_result res;
	struct att_ctx *ctx;
	enum att_reason why;
	char *argv[] = { (char *)zl_path, NULL }, r[256];
	int i;

	if (!zl_path || access(zl_path, X_OK) != 0) {
		printf("skip: no zombie-leader victim given\n");
		return SKIP;
	}
	if (spawn(&v, argv))
		return 1;
	for (i = 0; i < 200 && proc_state(v.pid) != 'Z'; i++)
		usleep(5000);
	check(proc_state(v.pid) == 'Z', "the leader is a zombie (state %c)", proc_state(v.pid));
	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason("zombie leader", ctx, why);
	check(why == ATT_OK, "a process whose main thread exited can be attached");
	check(count_lines(out_file, "count=1 ") == 1, "start function ran");
	print_stats(&v, ctx);
	att_free(ctx);
	check(victim_cmd(&v, "ping", r, sizeof(r)) == 0 && strcmp(r, "pong eintr=0") == 0,
	      "it answers without EINTR (%s)", r);
	victim_stop(&v);
	return failed;
}

/* Start the victim in a new mount namespace where the library's directory is hidden. */
static int spawn_hidden(struct victim *v)
{
	static char script[1400];
	char libdir[512], *slash;
	char *argv[] = { "/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
			 script, NULL };

	if (access("/usr/bin/unshare", X_OK) != 0)
		return -1;
	snprintf(libdir, sizeof(libdir), "%s", lib_path);
	slash = strrchr(libdir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	/* and a private /tmp, so parallel tests do not see each other's staging */
	snprintf(script, sizeof(script),
		 "mount -t tmpfs heaptap-hide '%s' && mount -t tmpfs heaptap-tmp /tmp || exit 97; "
		 "exec '%s'", libdir, victim_path);
	return spawn(v, argv);
}

/* Entries named heaptap-* in the target's /tmp. */
static int staged_dirs(pid_t pid)
{
	char cmd[128], line[256];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls -a /proc/%d/root/tmp", (int)pid);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "heaptap-", 8) && strncmp(line, "heaptap-att-", 12))
			n++;
	pclose(f);
	return n;
}

/* The library is hidden from the target by a mount: attach stages a copy. */
static int case_namespace(const char *fault)
{
	struct victim v;
	struct att_inject_result res;
	struct att_ctx *ctx;
	enum att_reason why;
	char probe[600];
	struct stat sb;
	int before;

	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	/* the start function writes there: visible from both namespaces */
	snprintf(out_file, sizeof(out_file), "%s/heaptap-att-test-%d.txt", cwd, (int)getpid());
	if (spawn_hidden(&v)) {
		printf("skip: cannot make a mount namespace here\n");
		return SKIP;
	}
	snprintf(probe, sizeof(probe), "/proc/%d/root%s", (int)v.pid, lib_path);
	check(stat(probe, &sb) != 0, "the library is not visible inside the target's namespace");
	before = staged_dirs(v.pid);
	if (fault)
		setenv("HEAPTAP_FAULT", fault, 1);
	ctx = att_new(v.pid);
	unsetenv("HEAPTAP_FAULT");
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason("namespace", ctx, why);
	if (fault) {
		check(why == ATT_E_FAULT, "fault at step %s is reported", fault);
		check(count_lines(out_file, "start ") == 0, "start function did not run");
		check(!maps_contains(v.pid, "heaptap_attach_testlib"), "library not loaded");
	} else {
		check(why == ATT_OK, "injection into another mount namespace succeeds");
		check(res.staged == 1, "the library was staged into the target's /tmp");
		check(count_lines(out_file, "count=1 ") == 1, "start function ran");
		check(maps_contains(v.pid, "/tmp/heaptap-"), "the staged copy is what got mapped");
		check(maps_contains(v.pid, "(deleted)"), "the staged copy was removed after dlopen");
	}
	att_free(ctx);
	check(staged_dirs(v.pid) == before, "no staging directory left in the target's /tmp");
	check(tracer_pid(v.pid) == 0, "not traced");
	victim_check(&v, "after staged injection");
	victim_stop(&v);
	return failed;
}

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
