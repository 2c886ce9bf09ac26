/* cli/cmd_attach.c - heaptap attach: load the tracking library into a live process, record, detach */
/* SPDX-License-Identifier: MIT */
/*
 * Steps, each undone on every path (goto cleanup, reverse order), one
 * function each in cli_attach_session:
 *
 *   open_session: preflight (/proc only) -> take the session's control
 *   socket (one heaptap per process; `heaptap detach` talks to it,
 *   detach_ctl.c) -> find libheaptap_inject.so -> session dir and socket
 *   in the target's /tmp
 *   prepare: att_prepare (file work, nothing stopped)
 *   seize_and_load: att_seize (one thread stopped) -> start the session
 *   thread (attach_thread.c) -> att_inject_start (a loader thread does
 *   dlopen + start function with the socket path as the target sees it)
 *   -> att_release (the thread runs on) -> att_inject_wait
 *   await_library: the session thread accepted the library's connection
 *   (SO_PEERCRED = PID)
 *   run_session: itp_run until a stop signal or --duration -> the library
 *   restores its GOT slots and sends END -> the summary
 *   and the session directory is removed.
 *
 * All ptrace work happens in this (the main) thread: ptrace ties the
 * tracee to the thread that seized it. attach -v's timings: attach_timing.c.
 *
 * Signals. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM
 * (the --duration timer) only set cli_attach_stop, installed before anything is
 * touched. While the target's thread runs our code, attach/ blocks them
 * and they arrive after the registers are back (docs/attach.md). A stop
 * before the seize ends the command with nothing changed; a stop after
 * the injection is handed to itp_run, which sends WIRE_CTL_STOP at once,
 * so the library restores its slots and ends cleanly. SIGPIPE is ignored.
 * The flags and their handler: attach_stop.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach_int.h"
#include "cli/signals.h"
#include "inject/inject.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"
#include "track/wire.h"
#include "util/clock.h"

/*
 * 1 when pid sees the file system as we do: same mount namespace and same
 * root directory. Module paths in its stream are then ours too; otherwise
 * they are read through /proc/PID/root.
 */
static int same_view(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	if (stat("/proc/self/ns/mnt", &a) < 0 || stat(path, &b) < 0)
		return 0;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	if (stat("/", &a) < 0 || stat(path, &b) < 0)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* 1 when libheaptap_inject.so is already mapped in pid (an earlier session). */
static int inject_loaded(pid_t pid)
{
	char path[64], line[4096];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/" INJ_LIB_NAME) != NULL;
	fclose(f);
	return found;
}

/* Print "heaptap: attach PID: <reason>[: <detail>]" and return the exit code. */
static int attach_fail(pid_t pid, struct att_ctx *ctx, enum att_reason why)
{
	const char *detail = ctx ? att_detail(ctx) : "";

	cli_msg("attach %d: %s%s%s", (int)pid, att_strerror(why), detail[0] ? ": " : "", detail);
	return att_exit_code(why);
}

/*
 * test_delay - HEAPTAP_DELAY=after-inject:MS: the main thread sleeps MS
 * milliseconds once the loader's outcome is read, as a main thread that
 * waits for a CPU would (tests/session/startup-slow.test: the library's
 * start and the first event must not wait for it). Nothing else reads it.
 */
static void test_delay(const char *step)
{
	const char *v = getenv("HEAPTAP_DELAY");
	size_t n = strlen(step);
	struct timespec ts;
	unsigned long ms;

	if (!v || strncmp(v, step, n) || v[n] != ':')
		return;
	ms = strtoul(v + n + 1, NULL, 10);
	if (ms > 60000)
		ms = 60000;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !cli_attach_stop)
		;
}

/* What the session ended with, after itp_run. Returns the exit code. */
static int summarize(pid_t pid, const char *out, int ret, const struct itp_result *res,
		     int was_loaded, int snapshots)
{
	struct stat st;

	if (res->err == ITP_E_OUTPUT && lstat(out, &st) < 0) {
		/* nothing written: the library saw the socket close and restored its slots */
		cli_msg("attach: %s: %s%s%s", out[0] ? out : "snapshots", rec_strerror(res->rec_error),
			res->detail[0] ? ": " : "", res->detail);
		return CLI_EXIT_FAIL;
	}
	if (res->err == ITP_E_HEADER) {
		/* no stream header: nothing was recorded and nothing was patched */
		unlink(out);
		if (was_loaded)
			cli_msg("attach %d: heaptap's library in it already ran a session and did not "
				"start another (this version records one session per process); "
				"nothing was changed", (int)pid);
		else
			cli_msg("attach %d: its tracking library closed the connection without "
				"starting a session%s%s; nothing was changed", (int)pid,
				res->detail[0] ? ": " : "", res->detail);
		return CLI_EXIT_FAIL;
	}
	if (ret < 0) {
		if (res->err == ITP_E_TRUNCATED && res->stop_gave_up)
			cli_msg("attach: warning: %d: %s; its last events may be missing", (int)pid,
				res->detail);
		else if (res->err == ITP_E_TRUNCATED && !res->end_reason)
			cli_msg("attach: warning: %d ended the event stream without its end record "
				"(killed, or _exit); its last events may be missing", (int)pid);
		else if (res->err == ITP_E_OUTPUT)
			cli_msg("attach: %s: %s%s%s", out, rec_strerror(res->rec_error),
				res->detail[0] ? ": " : "", res->detail);
		else if (res->err == ITP_E_IO)
			cli_msg("attach: reading the event stream: %s", strerror(res->sys_errno));
		else
			cli_msg("attach: event stream: %s%s%s", itp_strerror(res->err),
				res->detail[0] ? ": " : "", res->detail);
	}
	if (res->events_dropped)
		cli_msg("attach: warning: the library lost %llu events",
			(unsigned long long)res->events_dropped);
	if (res->end_reason == WIRE_END_EXIT)
		cli_msg("attach: %d exited during the session", (int)pid);
	if (!out[0])
		cli_msg("saw %llu allocations (no recording%s)",
			(unsigned long long)res->final.alloc_calls, snapshots ? ": snapshots only" : "");
	else
		cli_msg("recorded %llu allocations to %s", (unsigned long long)res->final.alloc_calls,
			out);
	if (res->end_reason == WIRE_END_STOP || res->end_reason == WIRE_END_ERROR) {
		if (res->slots_left)
			cli_msg("restored %llu GOT slots in %d; %llu no longer held heaptap's hook "
				"and were left as they are",
				(unsigned long long)res->slots_restored, (int)pid,
				(unsigned long long)res->slots_left);
		else
			cli_msg("restored %llu GOT slots in %d", (unsigned long long)res->slots_restored,
				(int)pid);
	} else if (res->end_reason != WIRE_END_EXIT) {
		cli_msg("attach: warning: %d did not confirm that it restored its GOT slots (it "
			"does so by itself when the connection closes)", (int)pid);
	}
	if (out[0])
		cli_msg("run \"heaptap report %s\"", out);
	if (res->end_reason == WIRE_END_ERROR) {
		/* the library gave up on its own (inject/thread.c, track/session.c) */
		if (res->lib_error[0])
			cli_msg("attach %d: heaptap's library in it ended the session on an error of "
				"its own: %s; the recording stops there", (int)pid, res->lib_error);
		else
			cli_msg("attach %d: heaptap's library in it ended the session on an error of "
				"its own (it gave no reason: an older library, or it lost its socket); "
				"the recording stops there", (int)pid);
		return CLI_EXIT_FAIL;
	}
	if (res->lib_error[0])
		cli_msg("attach: library error: %s", res->lib_error);
	return CLI_EXIT_OK;
}

int cli_cmd_attach(int argc, char **argv)
{
	struct cli_attach_args a;
	char err[256];

	err[0] = '\0';
	if (cli_attach_parse(argc, argv, &a, err, sizeof(err)) < 0) {
		cli_msg("attach: %s (see heaptap attach --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (a.help) {
		cli_usage_attach(stdout);
		return CLI_EXIT_OK;
	}
	return cli_attach_session(&a, NULL);
}

/* One attach: what its steps share, from the arguments to the summary. */
struct attach_run {
	struct cli_attach_args a;
	const struct cli_live *live;
	pid_t pid;
	int code;			/* the exit code so far */
	struct att_ctx *ctx;
	struct cli_ctl *ctl;		/* the session's control socket (detach_ctl.c) */
	struct cli_ctl_holder holder;
	struct cli_ctl_result *fin;
	struct cli_attach_dir d;
	struct cli_attach_thread sess;
	struct cli_attach_duration dur;
	struct cli_snap snap;
	struct att_stats ast;
	char lib[PATH_MAX + 64], sysroot[64];
	int was_loaded;
	uint64_t t[6];			/* phase times, see cli_attach_print_phases */
};

/* check_outputs - -o and --out are usable before anything is touched. 0 or the exit code. */
static int check_outputs(const struct cli_attach_args *a)
{
	struct stat st;
	int ret;

	if (a->output && lstat(a->output, &st) == 0) {
		cli_msg("attach: %s: %s", a->output, strerror(EEXIST));
		return CLI_EXIT_FAIL;
	}
	if (a->out_dir) {
		ret = stat(a->out_dir, &st) < 0		   ? -errno
		      : !S_ISDIR(st.st_mode)		   ? -ENOTDIR
		      : access(a->out_dir, W_OK | X_OK) < 0 ? -errno
							   : 0;
		if (ret < 0) {
			cli_msg("attach: --out %s: %s", a->out_dir, strerror(-ret));
			return CLI_EXIT_FAIL;
		}
	}
	ret = cli_check_output_dir(a->output);
	if (ret < 0) {
		cli_msg("attach: %s: %s", a->output ? a->output : "working directory",
			strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/*
 * open_session - preflight, the session's control socket (one session
 * per process: taken before anything is touched, held to the end), the
 * library and the session directory. 0, or -1 after saying why.
 */
static int open_session(struct attach_run *r)
{
	enum att_reason why;
	char err[256], libdir[PATH_MAX];
	pid_t pid = r->pid;
	int ret;

	err[0] = '\0';
	why = att_preflight(r->ctx);
	if (why != ATT_OK) {
		r->code = attach_fail(pid, r->ctx, why);
		return -1;
	}
	r->fin = calloc(1, sizeof(*r->fin));
	ret = r->fin ? cli_ctl_open(pid, &cli_attach_stop, &r->ctl, &r->holder) : -ENOMEM;
	if (ret == -EBUSY) {
		cli_ctl_describe(&r->holder, err, sizeof(err));
		cli_msg("attach %d: a heaptap session is already running in it: %s; end it with "
			"\"heaptap detach %d\"", (int)pid, err, (int)pid);
		return -1;
	}
	if (ret == -EPERM) {
		/* a squatter cannot keep us out; "heaptap detach" then stops the library directly */
		cli_ctl_describe(&r->holder, err, sizeof(err));
		cli_msg("attach %d: warning: its session name is %s; going on without it", (int)pid,
			err);
		ret = 0;
	}
	if (ret < 0) {
		cli_msg("attach %d: session control socket: %s", (int)pid, strerror(-ret));
		return -1;
	}
	ret = cli_find_libdir(INJ_LIB_NAME, libdir, sizeof(libdir));
	if (ret < 0) {
		const char *env = getenv("HEAPTAP_LIBDIR");

		if (env && *env)
			cli_msg("attach: HEAPTAP_LIBDIR=%s: no %s there", env, INJ_LIB_NAME);
		else
			cli_msg("attach: cannot find %s (looked in ../lib and ../lib/heaptap beside "
				"heaptap; set HEAPTAP_LIBDIR)", INJ_LIB_NAME);
		return -1;
	}
	snprintf(r->lib, sizeof(r->lib), "%s/%s", libdir, INJ_LIB_NAME);
	ret = cli_attach_dir_open(&r->d, pid);
	if (ret < 0) {
		cli_msg("attach %d: session directory in its /tmp: %s", (int)pid,
			r->d.why[0] ? r->d.why : strerror(-ret));
		return -1;
	}
	return 0;
}

/* prepare - att_prepare: file work, nothing stopped. 0, or -1 after saying why. */
static int prepare(struct attach_run *r)
{
	enum att_reason why;

	r->t[1] = util_mono_ns();
	why = att_prepare(r->ctx, r->lib);
	if (why != ATT_OK) {
		r->code = attach_fail(r->pid, r->ctx, why);
		return -1;
	}
	if (cli_attach_stop) {
		cli_msg("attach %d: interrupted before attaching; nothing was changed",
			(int)r->pid);
		return -1;
	}
	r->was_loaded = inject_loaded(r->pid);
	return 0;
}

/* start_thread - what the session thread needs to interpret, then the thread. 0 or -errno. */
static int start_thread(struct attach_run *r)
{
	pid_t pid = r->pid;

	r->dur.secs = r->a.duration;
	r->dur.armed = 0;
	r->sysroot[0] = '\0';
	if (!same_view(pid))
		snprintf(r->sysroot, sizeof(r->sysroot), "/proc/%d/root", (int)pid);
	if (r->a.out_dir) {
		/* no recording unless -o names one: a session may run for days */
		r->snap.dir = r->a.out_dir;
		r->snap.pid = pid;
	}
	r->sess.d = &r->d;
	r->sess.ctl = r->ctl;
	r->sess.pid = pid;
	r->sess.a = &r->a;
	r->sess.sysroot = r->sysroot[0] ? r->sysroot : NULL;
	r->sess.dur = &r->dur;
	r->sess.snap = r->a.out_dir ? &r->snap : NULL;
	r->sess.live = r->live;
	return cli_attach_thread_start(&r->sess);
}

/*
 * seize_and_load - att_seize, the session thread, att_inject_start (the
 * held thread only creates a loader thread; dlopen runs there),
 * att_release and the loader's outcome. 0 with the thread released and
 * ctx freed, or -1 after saying why (the thread may still be held).
 */
static int seize_and_load(struct attach_run *r)
{
	struct att_inject_result ir;
	enum att_reason why;
	pid_t pid = r->pid;
	int ret;

	r->t[2] = util_mono_ns();
	why = att_seize(r->ctx);
	if (why != ATT_OK) {
		r->code = attach_fail(pid, r->ctx, why);
		return -1;
	}
	if (cli_attach_stop) {
		/* a signal during the seize: let the thread go untouched */
		cli_msg("attach %d: interrupted before loading the library; nothing was changed",
			(int)pid);
		return -1;
	}
	r->t[3] = util_mono_ns();
	memset(&ir, 0, sizeof(ir));
	ret = start_thread(r);
	if (ret < 0) {
		cli_msg("attach %d: session thread: %s", (int)pid, strerror(-ret));
		return -1;
	}
	why = att_inject_start(r->ctx, r->lib, INJ_START_SYMBOL, r->d.target_sock);
	if (why == ATT_OK) {
		att_release(r->ctx);
		why = att_inject_wait(r->ctx, CLI_ATTACH_LOAD_MS, &ir);
	}
	if (why != ATT_OK) {
		cli_attach_thread_join(&r->sess, 1);
		if (why == ATT_E_START && ir.start_ret == -EBUSY)
			cli_msg("attach %d: %s: a heaptap session is already running in it (end it "
				"first)", (int)pid, att_strerror(why));
		else if (why == ATT_E_START && ir.start_ret < 0)
			cli_msg("attach %d: %s: %s", (int)pid, att_strerror(why),
				strerror(-ir.start_ret));
		else
			attach_fail(pid, r->ctx, why);
		r->code = att_exit_code(why);
		return -1;
	}
	att_release(r->ctx);
	test_delay("after-inject");
	r->t[4] = util_mono_ns();
	att_get_stats(r->ctx, &r->ast);
	att_free(r->ctx);
	r->ctx = NULL;
	return 0;
}

/*
 * await_library - the session thread accepts: CLI_ATTACH_LOAD_MS +
 * CLI_ATTACH_ACCEPT_MS from the inject on at most. 0, or -1 after saying
 * why (the thread joined).
 */
static int await_library(struct attach_run *r)
{
	pid_t pid = r->pid;
	int ret;

	ret = cli_attach_thread_accepted(&r->sess);
	if (ret == -ESRCH) {
		cli_msg("attach %d: it exited before its tracking library connected", (int)pid);
		cli_attach_thread_join(&r->sess, 1);
		return -1;
	}
	if (ret < 0) {
		cli_msg("attach %d: the library was loaded but its thread did not connect to %s "
			"within %u ms (%s); it stays loaded and inert", (int)pid, r->d.target_sock,
			CLI_ATTACH_ACCEPT_MS, strerror(-ret));
		cli_attach_thread_join(&r->sess, 1);
		return -1;
	}
	r->t[5] = r->sess.t_conn;
	return 0;
}

/*
 * run_session - the session runs on its thread (and the viewer, if any,
 * on this one) until it ends; then what it ended with. Sets r->code.
 */
static void run_session(struct attach_run *r)
{
	struct itp_result *res = &r->sess.res;
	const struct cli_live *live = r->live;
	char out[PATH_MAX];
	pid_t pid = r->pid;
	int ret;

	if (r->a.verbose)
		cli_attach_print_phases(pid, r->t, &r->ast);
	if (!(r->a.langs_off & (1u << WIRE_LANG_JAVA))) /* off: the JVM is not asked (cli.h langs_off) */
		cli_java_frames(pid, r->a.verbose, &cli_attach_stop);
	if (isatty(STDERR_FILENO) && !live)
		cli_msg("attached to %d (thread %d stopped %.2f ms); %s to detach", (int)pid,
			(int)r->ast.tid, (double)r->ast.pause_ns / 1e6,
			r->a.duration > 0 ? "Ctrl+C or the duration" : "Ctrl+C");
	if (live && live->run) {
		live->run(live->arg, &cli_attach_stop); /* the viewer, until it is done */
		cli_attach_stop = 1;
	}

	cli_attach_thread_join(&r->sess, 0); /* the session runs there until it ends */
	ret = r->sess.ret;
	snprintf(out, sizeof(out), "%s", r->sess.out);
	if (r->a.out_dir)
		cli_msg("attach: wrote %u pprof snapshots to %s%s", r->snap.written, r->a.out_dir,
			r->snap.errors ? " (some failed, see above)" : "");
	if (ret == CLI_NO_NAME)
		return; /* the join closed conn: the library restores its slots */
	if (r->a.verbose && cli_attach_stop_sig)
		cli_msg("attach %d: session ended by %s", (int)pid,
			cli_attach_stop_sig == SIGALRM ? "--duration"
						       : strsignal(cli_attach_stop_sig));
	if (r->a.verbose) {
		cli_attach_print_startup(pid, &res->start, r->t[0]);
		cli_input_stats("attach", &res->input);
		if (r->a.out_dir)
			cli_snap_stats(res);
	}
	r->code = summarize(pid, out, ret, res, r->was_loaded, r->a.out_dir != NULL);
	if (r->code == CLI_EXIT_OK)
		cli_sample_summary("attach", r->a.sample, res);
	cli_sym_summary("attach", res);
	r->fin->end_reason = res->end_reason;
	r->fin->allocs = res->final.alloc_calls;
	r->fin->restored = res->slots_restored;
	r->fin->left = res->slots_left;
	if (r->code == CLI_EXIT_OK && out[0] && !realpath(out, r->fin->out))
		snprintf(r->fin->out, sizeof(r->fin->out), "%s", out);
}

int cli_attach_session(const struct cli_attach_args *ap, const struct cli_live *live)
{
	struct attach_run run, *r = &run;
	struct cli_signals old;
	char err[512];
	int code;

	if (att_env_check(err, sizeof(err)) < 0) {
		cli_msg("attach %d: %s", (int)ap->pid, err);
		return CLI_EXIT_USAGE;
	}
	code = check_outputs(ap);
	if (code)
		return code;
	memset(r, 0, sizeof(*r));
	r->a = *ap;
	r->live = live;
	r->code = CLI_EXIT_FAIL;
	errno = 0;
	r->sess.nice = getpriority(PRIO_PROCESS, 0); /* this thread's, before any hold */
	if (r->sess.nice == -1 && errno)
		r->sess.nice = 0;
	r->d.parent_fd = r->d.dir_fd = r->d.listen_fd = -1;
	if (live)
		r->a.duration = 0;
	r->pid = r->a.pid;

	cli_attach_stop_install(&old);
	r->t[0] = util_mono_ns();

	r->ctx = att_new(r->pid);
	if (!r->ctx) {
		cli_msg("attach %d: %s", (int)r->pid, strerror(errno));
		goto out_signals;
	}
	if (open_session(r) < 0)
		goto out_free;
	if (prepare(r) < 0)
		goto out_dir;
	if (seize_and_load(r) < 0)
		goto out_release;
	if (await_library(r) < 0)
		goto out_dir;
	run_session(r);
	goto out_dir;

out_release:
	att_release(r->ctx);
out_dir:
	cli_attach_dir_close(&r->d);
out_free:
	att_free(r->ctx);
	if (r->fin) {
		/* a `heaptap detach` waiting for us learns how it ended */
		r->fin->code = r->code;
		cli_ctl_finish(r->ctl, r->fin);
	}
	cli_ctl_close(r->ctl);
	free(r->fin);
out_signals:
	cli_signals_restore(&old);
	return r->code;
}
