/* tests/attach/cases_run.c - attach cases where injection succeeds: thread kinds, pause, signals */
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
#include "util/clock.h"

/* Inject twice, automatic thread choice; also show that other threads ran. */
int case_inject(void)
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
int case_thread(const char *role)
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
int case_hold(void)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	char r[1024];
	const int independent[] = { R_SLEEPER, R_TICKER, R_BUSY, R_READER, R_EPOLL, R_SIGRECV };
	long worst = 0, limit;
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
	/* the thread may wait for a CPU after release: allow 50 ms on a loaded machine */
	check(kv(r, "gap_condwait") * 1000 <= (long)st.pause_ns + 50000000,
	      "its gap matches the measured pause (%.0f us)", st.pause_ns / 1e3);
	for (i = 0; i < sizeof(independent) / sizeof(independent[0]); i++) {
		char key[32];

		snprintf(key, sizeof(key), "gap_%s", role_name[independent[i]]);
		if (kv(r, key) > worst)
			worst = kv(r, key);
	}
	/* Threads stopped with the held one would see a gap as long as its
	 * pause. On a loaded machine the pause stretches (the call waits for a
	 * CPU) and so do a running thread's gaps: the bound is 100 ms or half
	 * the held thread's gap, whichever is longer. */
	limit = kv(r, "gap_condwait") / 2 > 100000 ? kv(r, "gap_condwait") / 2 : 100000;
	printf("     longest gap of the other threads: %ld us\n", worst);
	check(worst < limit, "other threads kept running (longest gap %ld us < %ld)", worst, limit);
	victim_check(&v, "after hold");
	victim_stop(&v);
	return failed;
}


/*
 * A SIGSTOP arrives while our call runs (sent by the call itself): it must
 * be neither lost nor delivered twice. After release the process is
 * stopped; SIGCONT lets it go on clean.
 */
int case_stop_in_call(const char *which)
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

static void on_term(int sig)
{
	(void)sig;
	term_at = util_mono_ns();
	term_seen = 1;
}

/*
 * SIGTERM to heaptap while the target runs our 200 ms call: it must be
 * deferred until the target's registers are back (attach.h, "Threads").
 */
int case_defer_signals(void)
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
	why = seize_with_lib(ctx);
	check(why == ATT_OK, "seized");
	t0 = util_mono_ns();
	killer = fork();
	if (killer == 0) {
		usleep(50000);
		kill(getppid(), SIGTERM);
		_exit(0);
	}
	why = att_inject(ctx, lib_path, "heaptap_test_sleep", out_file, &res);
	t1 = util_mono_ns();
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
int case_pause(void)
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
int case_zombie_leader(void)
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

