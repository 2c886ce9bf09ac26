/* cli/cmd_attach.c - heaptap attach: load the tracking library into a live process, record, detach */
/* SPDX-License-Identifier: MIT */
/*
 * Steps, each undone on every path (goto cleanup, reverse order):
 *
 *   preflight (/proc only) -> take the session's control socket (one
 *   heaptap per process; `heaptap detach` talks to it, detach_ctl.c) ->
 *   find libheaptap_inject.so -> session dir and
 *   socket in the target's /tmp -> att_prepare (file work, nothing stopped)
 *   -> att_seize (one thread stopped) -> att_inject (dlopen + start function
 *   with the socket path as the target sees it) -> att_release (the thread
 *   runs on) -> accept the library's connection (SO_PEERCRED = PID) ->
 *   itp_run until a stop signal or --duration -> the library restores its
 *   GOT slots and sends END -> remove the session directory.
 *
 * All ptrace work happens in this (the main) thread: ptrace ties the
 * tracee to the thread that seized it.
 *
 * Signals. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM
 * (the --duration timer) only set stop_flag, installed before anything is
 * touched. While the target's thread runs our code, attach/ blocks them
 * and they arrive after the registers are back (docs/attach.md). A stop
 * before the seize ends the command with nothing changed; a stop after
 * the injection is handed to itp_run, which sends WIRE_CTL_STOP at once,
 * so the library restores its slots and ends cleanly. SIGPIPE is ignored.
 * Globals here: the signal flag (docs/design.md "Globals").
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "attach/attach.h"
#include "cli/cli.h"
#include "inject/inject.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"
#include "track/wire.h"
#include "util/clock.h"

#define ACCEPT_MS 5000	     /* the library's thread connects within microseconds */
#define LOAD_MS 10000	     /* the loader thread's dlopen: ~10 ms, more under load */

static volatile sig_atomic_t stop_flag; /* itp_options.stop */
static volatile sig_atomic_t stop_sig;	/* the signal that set it (0 = none) */

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* session_join's wake-up of the session thread is not a second stop */
	if (si->si_code == SI_TKILL && si->si_pid == getpid())
		return;
	/* a second stop: the interpreter ends at once, the recording cut short */
	stop_flag = stop_flag ? 2 : 1;
	if (!stop_sig)
		stop_sig = sig;
}

/* stop_set - the set of stop_signals. */
static void stop_set(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < NSTOP; i++)
		sigaddset(set, stop_signals[i]);
}

struct saved_signals {
	struct sigaction act[NSTOP];
	struct sigaction pipe;
};

static void install_signals(struct saved_signals *o)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: interrupt poll and read */
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sa, &o->act[i]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &o->pipe);
}

static void restore_signals(const struct saved_signals *o)
{
	struct itimerval off;
	size_t i;

	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_REAL, &off, NULL);
	for (i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &o->act[i], NULL);
	sigaction(SIGPIPE, &o->pipe, NULL);
}

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
static int att_fail(pid_t pid, struct att_ctx *ctx, enum att_reason why)
{
	const char *detail = ctx ? att_detail(ctx) : "";

	cli_msg("attach %d: %s%s%s", (int)pid, att_strerror(why), detail[0] ? ": " : "", detail);
	return att_exit_code(why);
}

static void on_log(int level, const char *msg, size_t len, void *arg)
{
	static const char *const what[] = { "library", "library warning", "library error" };

	(void)arg;
	if (level < 0 || level > 2)
		level = 2;
	if (level == WIRE_LOG_ERROR)
		return; /* kept in itp_result.lib_error: summarize() says it in its error line */
	cli_msg("attach: %s: %.*s", what[level], (int)(len > 1000 ? 1000 : len), msg);
}

/* attach -v: how the library's start went (WIRE_REC_START), ms from its start call. */
static void print_startup(pid_t pid, const struct itp_start *s, uint64_t t0)
{
	const uint64_t *f = s->f;
	char defer[400] = "", call[80] = "";
	uint64_t c = f[WIRE_START_CALL_MONO_NS];

	if (!s->have) {
		cli_msg("attach %d: the library sent no start-up timings (an older library, or the "
			"session ended before its first patch pass)", (int)pid);
		return;
	}
	if (f[WIRE_START_DEFERRED])
		snprintf(defer, sizeof(defer), " (RELRO still writable %llu, a slot's page not in "
			 "/proc/self/maps %llu, a slot not relocated %llu; first: %s)",
			 (unsigned long long)f[WIRE_START_DEF_RELRO],
			 (unsigned long long)f[WIRE_START_DEF_UNMAPPED],
			 (unsigned long long)f[WIRE_START_DEF_UNRELOC], s->deferred);
	/* the target's monotonic clock is ours unless it lives in a time namespace */
	if (c >= t0 && c - t0 < 3600ull * 1000000000ull)
		snprintf(call, sizeof(call), "; the start call came %.2f ms after the command started",
			 (double)(c - t0) / 1e6);
	cli_msg("attach %d: library start-up, ms after its start call: connected %.2f, sampling "
		"rate %s %.2f, session started %.2f, waited %.2f for heaptap to read, first pass "
		"done %.2f (took %.3f, %llu pass%s, %llu modules, %llu words patched); %llu modules "
		"deferred%s%s", (int)pid, (double)f[WIRE_START_CONNECT_NS] / 1e6,
		f[WIRE_START_RATE_GOT] ? "came" : "waited out", (double)f[WIRE_START_RATE_NS] / 1e6,
		(double)f[WIRE_START_SESSION_NS] / 1e6, (double)f[WIRE_START_DRAIN_NS] / 1e6,
		(double)f[WIRE_START_PASS_DONE_NS] / 1e6, (double)f[WIRE_START_PASS_NS] / 1e6,
		(unsigned long long)f[WIRE_START_PASSES], f[WIRE_START_PASSES] == 1 ? "" : "es",
		(unsigned long long)f[WIRE_START_MODULES], (unsigned long long)f[WIRE_START_PATCHED],
		(unsigned long long)f[WIRE_START_DEFERRED], defer, call);
}

static void start_timer(double secs);

/*
 * --duration counts from the start of the library's session (its stream
 * header), not from the connection: the library may take a while between
 * connecting and starting (a loaded machine), and the time asked for is
 * time recorded. The interpreter's status callback (every 250 ms) sees
 * elapsed_ns turn nonzero once the header came; the timer is armed then
 * for what is left.
 */
struct duration {
	double secs; /* 0 = none */
	int armed;
};

static void on_status(const struct itp_status *st, void *arg)
{
	struct duration *d = arg;
	double left;

	/*
	 * elapsed_ns stays 0 when the target's monotonic clock is not ours (a
	 * time namespace): then the first events or trace nodes tell that the
	 * session runs.
	 */
	if (!d->secs || d->armed || (!st->elapsed_ns && !st->alloc_calls && !st->traces))
		return;
	d->armed = 1;
	left = d->secs - (double)st->elapsed_ns / 1e9;
	if (left <= 0)
		stop_flag = 1;
	else
		start_timer(left);
}

/* itp_run into opt_out, or the first free default name (out gets the name used). */
static int interpret(int conn, const struct cli_attach_args *a, pid_t pid, const char *sysroot,
		     struct duration *dur, struct cli_snap *snap, const struct cli_live *live, char *out,
		     size_t outlen, struct itp_result *res)
{
	struct itp_options opt;
	char comm[64];
	double every = a->snapshot_every;

	memset(&opt, 0, sizeof(opt));
	cli_sample_options(&opt, a->sample);
	/* pins the modules it maps; the symbolizer runs as its user when we are root */
	if (cli_sym_options(&opt, pid, a->max_memory, a->debuginfod) < 0)
		opt.no_symbols = 1; /* it is gone, or its user is unknown: no files read for it */
	if (snap) {
		opt.snapshot = cli_snap_write;
		opt.snapshot_arg = snap;
		opt.snapshot_ns = (uint64_t)(every * 1e9);
	}
	opt.stop = &stop_flag;
	opt.log = on_log;
	opt.sysroot = sysroot;
	opt.status = on_status;
	opt.status_arg = dur;
	if (live && live->options)
		live->options(live->arg, &opt, conn);
	cli_read_comm(pid, NULL, comm, sizeof(comm));
	return cli_interpret(conn, &opt, a->output, "attach", comm, pid, out, outlen, res);
}

static double ms_since(uint64_t t0, uint64_t t1)
{
	return (double)(t1 - t0) / 1e6;
}

static void start_timer(double secs)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = (time_t)secs;
	it.it_value.tv_usec = (suseconds_t)((secs - (double)(time_t)secs) * 1e6);
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

/*
 * The session thread. It accepts the library's connection, answers its
 * sampling rate at once and runs the interpreter, while the main thread
 * still finishes the attach (reads the loader's outcome, lets go of
 * ptrace). Before it, all of that waited for the main thread: the
 * library's start waited for the rate (TRK_SAMPLE_WAIT_MS, 2 s at most)
 * and then for heaptap to read its header before patching (INJ_DRAIN_MS,
 * 3 s at most) while heaptap's main thread was still in att_inject_wait,
 * so any delay of that thread (a CPU it did not get, the loader thread
 * writing its outcome late) came on top of the first event: the rate could
 * come 149 ms after the start call of a library ready after 9 ms.
 *
 * It starts with every signal blocked and unblocks the stop signals once
 * it has accepted (the injection is done by then: the library connects
 * from its start function), so a stop interrupts the interpreter's wait
 * at once; the main thread blocks them when it has nothing left to do.
 * Only the main thread touches ptrace; only this thread touches d and the
 * connection between session_start and the join.
 */
struct session {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int running;	   /* the thread exists (join it) */
	int accepted;	   /* the accept ended: acc_ret says how (under lock) */
	int acc_ret;	   /* cli_attach_dir_accept's return */
	int conn;	   /* the library's connection, -1 */
	uint64_t t_conn;   /* when it was accepted */
	/* in */
	struct cli_attach_dir *d;
	struct cli_ctl *ctl;
	pid_t pid;
	int nice;	   /* heaptap's nice before the hold raised the main thread's */
	const struct cli_attach_args *a;
	const char *sysroot;
	struct duration *dur;
	struct cli_snap *snap;
	const struct cli_live *live;
	/* out: interpret()'s return, the recording's name, the result */
	int ret;
	int interpreted;
	char out[PATH_MAX];
	struct itp_result res;
};

static void *session_main(void *arg)
{
	struct session *s = arg;
	sigset_t stops;
	int conn = -1, ret;

	/*
	 * A new thread inherits its creator's nice, and the main thread runs
	 * raised (nice -20) while it holds the target's thread: the session
	 * must not keep that, or the interpreter (and the reader it starts,
	 * 10 below this) would take the target's CPUs for the whole session
	 * (a busy target thread went 113 ms without a CPU). Lowering one's
	 * own priority is always allowed.
	 */
	setpriority(PRIO_PROCESS, (id_t)gettid(), s->nice);
	ret = cli_attach_dir_accept(s->d, s->pid, LOAD_MS + ACCEPT_MS, &conn);
	if (ret == 0) {
		/* at once: the library's start waits for it (docs/inject.md) */
		cli_sample_start(conn, s->a->sample);
		/*
		 * The connection is all we need: remove the socket and the
		 * directory now, so nobody else can connect and nothing is left
		 * behind even if heaptap is killed during the session.
		 */
		cli_attach_dir_close(s->d);
		cli_ctl_set_conn(s->ctl, conn); /* `heaptap ctl PID sample` reaches the library now */
	}
	pthread_mutex_lock(&s->lock);
	s->t_conn = util_mono_ns();
	s->conn = conn;
	s->acc_ret = ret;
	s->accepted = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (ret < 0)
		return NULL;
	stop_set(&stops);
	pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
	s->ret = interpret(conn, s->a, s->pid, s->sysroot, s->dur, s->snap, s->live, s->out,
			   sizeof(s->out), &s->res);
	s->interpreted = 1;
	if (s->live && s->live->ended)
		s->live->ended(s->live->arg, s->ret, &s->res);
	return NULL;
}

/* session_start - the thread, with every signal blocked. 0 or -errno. */
static int session_start(struct session *s)
{
	sigset_t all, old;
	int ret;

	s->conn = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&s->th, NULL, session_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	s->running = 1;
	return 0;
}

/* session_accepted - wait until the thread's accept ended; its return. */
static int session_accepted(struct session *s)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	while (!s->accepted)
		pthread_cond_wait(&s->cond, &s->lock);
	ret = s->acc_ret;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/*
 * session_join - the main thread is done with the attach: stop signals go
 * to the session thread from now on (one that came to us meanwhile is
 * passed on), then wait for it. abort: the attach failed after all, so an
 * accepting thread gives up and a running session is stopped (the
 * library restores its slots) and its recording removed.
 */
static void session_join(struct session *s, int abort)
{
	sigset_t stops;

	if (!s->running)
		return;
	if (abort) {
		s->d->cancel = 1;
		pthread_mutex_lock(&s->lock);
		if (s->accepted && s->acc_ret == 0)
			stop_flag = 1;
		pthread_mutex_unlock(&s->lock);
	}
	stop_set(&stops);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	pthread_mutex_lock(&s->lock);
	if (stop_flag && s->accepted && s->acc_ret == 0)
		pthread_kill(s->th, stop_sig ? stop_sig : SIGINT); /* wake its wait at once */
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->th, NULL);
	pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
	s->running = 0;
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	if (abort && s->interpreted && s->out[0])
		unlink(s->out);
	if (s->conn >= 0) {
		cli_ctl_set_conn(s->ctl, -1);
		close(s->conn);
		s->conn = -1;
	}
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
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop_flag)
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
		if (res->err == ITP_E_TRUNCATED && !res->end_reason)
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

int cli_attach_session(const struct cli_attach_args *ap, const struct cli_live *live)
{
	struct cli_attach_args a = *ap;
	struct cli_attach_dir d;
	struct saved_signals old;
	struct att_inject_result ir;
	struct att_stats ast;
	struct session sess;
	struct itp_result *res = &sess.res;
	struct att_ctx *ctx = NULL;
	struct cli_ctl *ctl = NULL; /* the session's control socket (detach_ctl.c) */
	struct cli_ctl_holder holder;
	struct cli_ctl_result *fin = NULL;
	enum att_reason why;
	char err[256], libdir[PATH_MAX], lib[PATH_MAX + 64], out[PATH_MAX], sysroot[64];
	struct stat st;
	int ret, code = CLI_EXIT_FAIL, was_loaded;
	uint64_t t[6];
	struct duration dur;
	struct cli_snap snap;
	pid_t pid;

	memset(&d, 0, sizeof(d));
	memset(&snap, 0, sizeof(snap));
	memset(&sess, 0, sizeof(sess));
	errno = 0;
	sess.nice = getpriority(PRIO_PROCESS, 0); /* this thread's, before any hold */
	if (sess.nice == -1 && errno)
		sess.nice = 0;
	d.parent_fd = d.dir_fd = d.listen_fd = -1;
	err[0] = '\0';
	if (live)
		a.duration = 0;
	pid = a.pid;
	if (a.output && lstat(a.output, &st) == 0) {
		cli_msg("attach: %s: %s", a.output, strerror(EEXIST));
		return CLI_EXIT_FAIL;
	}
	if (a.out_dir) {
		ret = stat(a.out_dir, &st) < 0		  ? -errno
		      : !S_ISDIR(st.st_mode)		  ? -ENOTDIR
		      : access(a.out_dir, W_OK | X_OK) < 0 ? -errno
							  : 0;
		if (ret < 0) {
			cli_msg("attach: --out %s: %s", a.out_dir, strerror(-ret));
			return CLI_EXIT_FAIL;
		}
	}
	ret = cli_check_output_dir(a.output);
	if (ret < 0) {
		cli_msg("attach: %s: %s", a.output ? a.output : "working directory", strerror(-ret));
		return CLI_EXIT_FAIL;
	}

	stop_flag = 0;
	stop_sig = 0;
	install_signals(&old);
	t[0] = util_mono_ns();

	ctx = att_new(pid);
	if (!ctx) {
		cli_msg("attach %d: %s", (int)pid, strerror(errno));
		goto out_signals;
	}
	why = att_preflight(ctx);
	if (why != ATT_OK) {
		code = att_fail(pid, ctx, why);
		goto out_free;
	}
	/* one session per process: taken before anything is touched, held to the end */
	fin = calloc(1, sizeof(*fin));
	ret = fin ? cli_ctl_open(pid, &stop_flag, &ctl, &holder) : -ENOMEM;
	if (ret == -EBUSY) {
		cli_ctl_describe(&holder, err, sizeof(err));
		cli_msg("attach %d: a heaptap session is already running in it: %s; end it with "
			"\"heaptap detach %d\"", (int)pid, err, (int)pid);
		goto out_free;
	}
	if (ret == -EPERM) {
		/* a squatter cannot keep us out; "heaptap detach" then stops the library directly */
		cli_ctl_describe(&holder, err, sizeof(err));
		cli_msg("attach %d: warning: its session name is %s; going on without it", (int)pid, err);
		ret = 0;
	}
	if (ret < 0) {
		cli_msg("attach %d: session control socket: %s", (int)pid, strerror(-ret));
		goto out_free;
	}
	ret = cli_find_libdir(INJ_LIB_NAME, libdir, sizeof(libdir));
	if (ret < 0) {
		const char *env = getenv("HEAPTAP_LIBDIR");

		if (env && *env)
			cli_msg("attach: HEAPTAP_LIBDIR=%s: no %s there", env, INJ_LIB_NAME);
		else
			cli_msg("attach: cannot find %s (looked in ../lib and ../lib/heaptap beside "
				"heaptap; set HEAPTAP_LIBDIR)", INJ_LIB_NAME);
		goto out_free;
	}
	snprintf(lib, sizeof(lib), "%s/%s", libdir, INJ_LIB_NAME);
	ret = cli_attach_dir_open(&d, pid);
	if (ret < 0) {
		cli_msg("attach %d: session directory in its /tmp: %s", (int)pid, d.why[0] ? d.why : strerror(-ret));
		goto out_free;
	}
	t[1] = util_mono_ns();
	why = att_prepare(ctx, lib);
	if (why != ATT_OK) {
		code = att_fail(pid, ctx, why);
		goto out_dir;
	}
	if (stop_flag) {
		cli_msg("attach %d: interrupted before attaching; nothing was changed", (int)pid);
		goto out_dir;
	}
	was_loaded = inject_loaded(pid);
	t[2] = util_mono_ns();
	why = att_seize(ctx);
	if (why != ATT_OK) {
		code = att_fail(pid, ctx, why);
		goto out_free_dir;
	}
	if (stop_flag) {
		/* a signal during the seize: let the thread go untouched */
		cli_msg("attach %d: interrupted before loading the library; nothing was changed",
			(int)pid);
		goto out_free_dir;
	}
	t[3] = util_mono_ns();
	memset(&ir, 0, sizeof(ir));
	/* what the session thread needs to interpret, set before it starts */
	dur.secs = a.duration;
	dur.armed = 0;
	sysroot[0] = '\0';
	if (!same_view(pid))
		snprintf(sysroot, sizeof(sysroot), "/proc/%d/root", (int)pid);
	if (a.out_dir) {
		/* no recording unless -o names one: a session may run for days */
		snap.dir = a.out_dir;
		snap.pid = pid;
	}
	sess.d = &d;
	sess.ctl = ctl;
	sess.pid = pid;
	sess.a = &a;
	sess.sysroot = sysroot[0] ? sysroot : NULL;
	sess.dur = &dur;
	sess.snap = a.out_dir ? &snap : NULL;
	sess.live = live;
	ret = session_start(&sess);
	if (ret < 0) {
		cli_msg("attach %d: session thread: %s", (int)pid, strerror(-ret));
		goto out_free_dir;
	}
	/* the held thread only creates a loader thread; dlopen runs there */
	why = att_inject_start(ctx, lib, INJ_START_SYMBOL, d.target_sock);
	if (why == ATT_OK) {
		att_release(ctx);
		why = att_inject_wait(ctx, LOAD_MS, &ir);
	}
	if (why != ATT_OK) {
		session_join(&sess, 1);
		if (why == ATT_E_START && ir.start_ret == -EBUSY)
			cli_msg("attach %d: %s: a heaptap session is already running in it (end it "
				"first)", (int)pid, att_strerror(why));
		else if (why == ATT_E_START && ir.start_ret < 0)
			cli_msg("attach %d: %s: %s", (int)pid, att_strerror(why),
				strerror(-ir.start_ret));
		else
			att_fail(pid, ctx, why);
		code = att_exit_code(why);
		goto out_free_dir;
	}
	att_release(ctx);
	test_delay("after-inject");
	t[4] = util_mono_ns();
	att_get_stats(ctx, &ast);
	att_free(ctx);
	ctx = NULL;

	/* the session thread accepts: LOAD_MS + ACCEPT_MS from the inject on at most */
	ret = session_accepted(&sess);
	if (ret == -ESRCH) {
		cli_msg("attach %d: it exited before its tracking library connected", (int)pid);
		session_join(&sess, 1);
		goto out_dir;
	}
	if (ret < 0) {
		cli_msg("attach %d: the library was loaded but its thread did not connect to %s "
			"within %u ms (%s); it stays loaded and inert", (int)pid, d.target_sock,
			ACCEPT_MS, strerror(-ret));
		session_join(&sess, 1);
		goto out_dir;
	}
	t[5] = sess.t_conn;
	if (a.verbose) {
		/* the session thread accepts while the main thread reads the loader's outcome */
		cli_msg("attach %d: preflight and session directory %.2f ms, prepare %.2f ms, seize "
			"%.2f ms, inject and release %.2f ms, library connected at %.2f ms (accepted "
			"on heaptap's session thread); %.2f ms in all", (int)pid, ms_since(t[0], t[1]),
			ms_since(t[1], t[2]), ms_since(t[2], t[3]), ms_since(t[3], t[4]),
			ms_since(t[0], t[5]), ms_since(t[0], t[5] > t[4] ? t[5] : t[4]));
		cli_msg("attach %d: thread %d (%s %ld) stopped %.3f ms: stop %.3f ms, stack check "
			"%.3f ms, %u calls %.3f ms; %u of %u threads were candidates, %u rejected",
			(int)pid, (int)ast.tid, ast.syscall < 0 ? "user code" : "syscall",
			ast.syscall, (double)ast.pause_ns / 1e6, (double)ast.stop_ns / 1e6,
			(double)ast.unwind_ns / 1e6, ast.calls, (double)ast.call_ns / 1e6,
			ast.candidates, ast.threads, ast.rejected);
		if (ast.resumed[0])
			cli_msg("attach %d: thread %d was in %s", (int)pid, (int)ast.tid, ast.resumed);
		if (ast.hold_sched_ok)
			cli_msg("attach %d: the hold: %u stops, heaptap waited %.3f ms for them and worked "
				"%.3f ms (%s); the thread ran %.3f ms and waited %.3f ms for a CPU, heaptap "
				"ran %.3f ms and was off a CPU %.3f ms while working", (int)pid, ast.hold_stops,
				(double)ast.hold_wait_ns / 1e6,
				(double)(ast.pause_ns - ast.hold_wait_ns) / 1e6,
				ast.hold_boost == 2 ? "SCHED_FIFO" : ast.hold_boost == 1 ? "nice raised"
										: "priority as it was",
				(double)ast.hold_thr_run_ns / 1e6, (double)ast.hold_thr_wait_ns / 1e6,
				(double)ast.hold_own_run_ns / 1e6, (double)ast.hold_own_wait_ns / 1e6);
	}
	if (isatty(STDERR_FILENO) && !live)
		cli_msg("attached to %d (thread %d stopped %.2f ms); %s to detach", (int)pid,
			(int)ast.tid, (double)ast.pause_ns / 1e6,
			a.duration > 0 ? "Ctrl+C or the duration" : "Ctrl+C");
	if (live && live->run) {
		live->run(live->arg, &stop_flag); /* the viewer, until it is done */
		stop_flag = 1;
	}

	session_join(&sess, 0); /* the session runs there until it ends */
	ret = sess.ret;
	snprintf(out, sizeof(out), "%s", sess.out);
	if (a.out_dir)
		cli_msg("attach: wrote %u pprof snapshots to %s%s", snap.written, a.out_dir,
			snap.errors ? " (some failed, see above)" : "");
	if (ret == CLI_NO_NAME)
		goto out_dir; /* session_join closed conn: the library restores its slots */
	if (a.verbose && stop_sig)
		cli_msg("attach %d: session ended by %s", (int)pid,
			stop_sig == SIGALRM ? "--duration" : strsignal(stop_sig));
	if (a.verbose) {
		print_startup(pid, &res->start, t[0]);
		cli_input_stats("attach", &res->input);
		if (a.out_dir)
			cli_snap_stats(res);
	}
	code = summarize(pid, out, ret, res, was_loaded, a.out_dir != NULL);
	if (code == CLI_EXIT_OK)
		cli_sample_summary("attach", a.sample, res);
	cli_sym_summary("attach", res);
	fin->end_reason = res->end_reason;
	fin->allocs = res->final.alloc_calls;
	fin->restored = res->slots_restored;
	fin->left = res->slots_left;
	if (code == CLI_EXIT_OK && out[0] && !realpath(out, fin->out))
		snprintf(fin->out, sizeof(fin->out), "%s", out);

	goto out_dir;
out_free_dir:
	att_release(ctx);
out_dir:
	cli_attach_dir_close(&d);
out_free:
	att_free(ctx);
	if (fin) {
		/* a `heaptap detach` waiting for us learns how it ended */
		fin->code = code;
		cli_ctl_finish(ctl, fin);
	}
	cli_ctl_close(ctl);
	free(fin);
out_signals:
	restore_signals(&old);
	return code;
}
