/* tests/attach/harness.c - victim control and /proc probes shared by the attach test cases */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
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

const char *const role_name[R_COUNT] = {
	"main", "reader", "sleeper", "ticker", "condwait", "epoll", "busy", "sigrecv",
	"inhandler", "inalloc",
};

const char *victim_path, *lib_path, *static_path, *zl_path;
char out_file[PATH_MAX + 64];
int failed;
int loader_mode;
unsigned loader_wait_ms = 10000;

void check(int cond, const char *fmt, ...)
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

long kv(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(text, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

int read_line(int fd, char *buf, size_t cap, int timeout_ms)
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
int spawn(struct victim *v, char *const argv[])
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

int victim_start(struct victim *v)
{
	char *argv[] = { (char *)victim_path, NULL };

	return spawn(v, argv);
}

int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t cap)
{
	if (write(v->in, cmd, strlen(cmd)) < 0 || write(v->in, "\n", 1) < 0)
		return -1;
	return read_line(v->out, reply, cap, 10000);
}

/* Reap the victim: close its stdin (it exits on EOF), kill it if it lingers. */
int victim_stop(struct victim *v)
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
void victim_check_jc(struct victim *v, const char *when, int job_control)
{
	char r[1024];
	int tries;

	/*
	 * A victim stopped right after it started (stopped-late) may not have
	 * sent its first signal yet: ask again until it has (10 s at most).
	 */
	for (tries = 0;; tries++) {
		if (victim_cmd(v, "ping", r, sizeof(r)) < 0) {
			check(0, "%s: victim answers ping", when);
			return;
		}
		if (kv(r, "sent") > 0 || tries == 100)
			break;
		usleep(100000);
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
	check(kv(r, "maskbad") == 0, "%s: every thread kept its signal mask", when);
	check(kv(r, "syserr") == 0, "%s: no blocking call failed otherwise", when);
	check(kv(r, "othersig") == 0, "%s: no stray SIGURG/SIGWINCH/SIGCHLD", when);
	check(kv(r, "errnobad") == 0, "%s: errno kept across every blocking call", when);
	victim_check_progress(v, r, when);
}

/*
 * Every thread that loops on its own (the ticker drives reader, condwait
 * and epoll) still turns: none was left stuck by a restore. Compares the
 * lap counts of ping reply r with later pings, every 100 ms for up to 10 s
 * (a loaded machine may not run a thread for a while).
 */
void victim_check_progress(struct victim *v, const char *r, const char *when)
{
	static const enum role loops[] = { R_READER, R_SLEEPER, R_TICKER, R_CONDWAIT, R_EPOLL, R_BUSY };
	enum { NL = sizeof(loops) / sizeof(loops[0]) };
	long first[NL], last[NL];
	char key[32], r2[1024];
	unsigned i, moved = 0, tries;

	for (i = 0; i < NL; i++) {
		snprintf(key, sizeof(key), "laps_%s", role_name[loops[i]]);
		first[i] = last[i] = kv(r, key);
	}
	for (tries = 0; tries < 100 && moved < NL; tries++) {
		usleep(100000);
		if (victim_cmd(v, "ping", r2, sizeof(r2)) < 0)
			break;
		for (moved = 0, i = 0; i < NL; i++) {
			snprintf(key, sizeof(key), "laps_%s", role_name[loops[i]]);
			last[i] = kv(r2, key);
			moved += first[i] >= 0 && last[i] > first[i];
		}
	}
	for (i = 0; i < NL; i++)
		check(first[i] >= 0 && last[i] > first[i], "%s: thread %s still turns (%ld -> %ld laps)",
		      when, role_name[loops[i]], first[i], last[i]);
}

void victim_check(struct victim *v, const char *when)
{
	victim_check_jc(v, when, 0);
}

int role_of(const struct victim *v, pid_t tid)
{
	int i;

	for (i = 0; i < R_COUNT; i++)
		if (v->tid[i] == tid)
			return i;
	return -1;
}

void print_stats(const struct victim *v, struct att_ctx *ctx)
{
	struct att_stats st;
	int r;

	att_get_stats(ctx, &st);
	r = role_of(v, st.tid);
	printf("     hijacked tid=%d (%s) syscall=%ld rax_at_stop=%ld pause_us=%.1f stop_us=%.1f unwind_us=%.1f "
	       "call_us=%.1f calls=%u threads=%u candidates=%u rejected=%u rounds=%u sysstops=%u endsig=%d "
	       "delivered=%u\n",
	       (int)st.tid, r >= 0 ? role_name[r] : "?", st.syscall, st.stop_rax, st.pause_ns / 1e3,
	       st.stop_ns / 1e3, st.unwind_ns / 1e3, st.call_ns / 1e3, st.calls, st.threads,
	       st.candidates, st.rejected, st.rounds, st.syscall_stops, st.end_sig, st.delivered_signals);
	if (st.rejected)
		printf("     last rejected: %s\n", st.reject_why);
	fflush(stdout);
}

int count_lines(const char *path, const char *needle)
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

/* The start of /proc/PID/name, NUL-terminated, in buf. 0, or -1 when it cannot be opened. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return 0;
}

int tracer_pid(pid_t pid)
{
	char buf[4096];
	const char *p;

	if (read_proc(pid, "status", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "TracerPid:");
	return p ? atoi(p + 10) : -1;
}

char proc_state(pid_t pid)
{
	char buf[1024];
	const char *p;

	if (read_proc(pid, "stat", buf, sizeof(buf)) < 0)
		return '?';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

int maps_contains(pid_t pid, const char *needle)
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

int maps_has_addr(pid_t pid, uint64_t addr)
{
	char path[64], line[1024];
	unsigned long long s, e;
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	/*
	 * Only an anonymous mapping of at most three pages counts, as the
	 * scratch mappings are: a library dlopen'ed after the page was
	 * unmapped (the loader thread's) or a thread stack may take the
	 * address again.
	 */
	while (fgets(line, sizeof(line), f)) {
		char path[8] = "";

		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %7s", &s, &e, path) >= 2 && addr >= s &&
		    addr < e && !path[0] && e - s <= 3 * 4096)
			found = 1;
	}
	fclose(f);
	return found;
}

/* The seize sequence every case with the test library runs; the reason of its first failing step. */
enum att_reason seize_with_lib(struct att_ctx *ctx)
{
	enum att_reason why;

	why = att_preflight(ctx);
	if (!why)
		why = att_prepare(ctx, lib_path);
	if (!why)
		why = att_seize(ctx);
	return why;
}

/* Full sequence; returns the reason of the first failing step. */
enum att_reason attach_once(struct att_ctx *ctx, const char *sym, const char *arg,
				   struct att_inject_result *res, unsigned hold_ms)
{
	enum att_reason why;

	why = seize_with_lib(ctx);
	if (why)
		return why;
	if (hold_ms)
		usleep(hold_ms * 1000);
	return inject_release(ctx, lib_path, sym, arg, res);
}

/* Is tid still a thread of pid? */
static int task_exists(pid_t pid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

enum att_reason inject_release(struct att_ctx *ctx, const char *lib, const char *sym,
			       const char *arg, struct att_inject_result *res)
{
	struct att_inject_result r;
	struct att_stats st;
	enum att_reason why;
	int i;

	if (!loader_mode) {
		why = att_inject(ctx, lib, sym, arg, res);
		att_release(ctx);
		return why;
	}
	memset(&r, 0, sizeof(r));
	why = att_inject_start(ctx, lib, sym, arg);
	att_release(ctx);
	if (why == ATT_OK)
		why = att_inject_wait(ctx, loader_wait_ms, &r);
	if (res)
		*res = r;
	att_get_stats(ctx, &st);
	if (why == ATT_E_LOAD_TIMEOUT || !r.threaded || !r.loader_tid || !st.tid)
		return why;
	/* the loader thread ends and takes its two pages with it (/proc/TID works for any thread) */
	for (i = 0; i < 400 && task_exists(r.loader_tid, r.loader_tid); i++)
		usleep(5000);
	check(!task_exists(r.loader_tid, r.loader_tid), "the loader thread %d ended",
	      (int)r.loader_tid);
	check(r.loader_tid != st.tid, "the library was loaded by thread %d, not the hijacked %d",
	      (int)r.loader_tid, (int)st.tid);
	check(!maps_has_addr(st.tid, st.scratch) && !maps_has_addr(st.tid, st.scratch + 4096) &&
		      !maps_has_addr(st.tid, st.scratch + 8192),
	      "trampoline page and the loader's pages are unmapped");
	return why;
}

void report_reason(const char *what, struct att_ctx *ctx, enum att_reason why)
{
	printf("     %s: %s (exit %d)%s%s%s%s\n", what, att_strerror(why), att_exit_code(why),
	       att_detail(ctx)[0] ? ": " : "", att_detail(ctx), att_errno(ctx) ? ": " : "",
	       att_errno(ctx) ? strerror(att_errno(ctx)) : "");
}

/* Threads of pid named heaptap-load (attach/loader.c's loader threads). */
int loaders_alive(pid_t pid)
{
	char path[320], comm[32];
	struct dirent *e;
	int n = 0, fd;
	ssize_t k;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		k = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[k > 0 ? k : 0] = '\0';
		if (strncmp(comm, "heaptap-load", 12) == 0)
			n++;
	}
	closedir(d);
	return n;
}
