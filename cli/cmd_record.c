/* cli/cmd_record.c - heaptap record: run a program with the tracking library, record it */
/* SPDX-License-Identifier: MIT */
/*
 * Steps, each undone on every path (goto cleanup, reverse order):
 *
 *   find libheaptap_preload.so -> session dir + listening socket ->
 *   spawn PROGRAM (LD_PRELOAD, HEAPTAP_SOCKET, HEAPTAP_DEPTH) ->
 *   accept its connection (or see it exit without one) -> itp_run into the
 *   output file -> remove the session -> wait for the program -> exit with
 *   its status.
 *
 * Signals. The program runs in heaptap's process group, so Ctrl+C on a
 * terminal reaches both; heaptap does not pass such a signal on a second
 * time. A SIGINT, SIGTERM or SIGHUP sent to heaptap alone (kill(2): si_code
 * is not SI_KERNEL) is passed on to the program, even when heaptap was
 * started with it ignored (a background job of a script): the program then
 * has it ignored too, unless it installs a handler. An ignored SIGHUP
 * (nohup) stays ignored. Either way heaptap keeps
 * recording while the program winds down; if it has not ended after
 * STOP_GRACE_S seconds, heaptap sets the interpreter's stop flag, which
 * makes the library stop tracking and finish the stream, so the recording
 * is complete, and then waits for the program. A second such signal sets
 * the flag to 2: the interpreter ends at once and closes the recording as
 * cut short. Globals here: the signal flags (docs/design.md "Globals").
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"
#include "track/track.h"

#define STOP_GRACE_S 2

static volatile sig_atomic_t stop_flag;	  /* itp_options.stop */
static volatile sig_atomic_t child_pid;	  /* where signals are passed on, 0 = none yet */
static volatile sig_atomic_t pending_sig; /* to pass on once child_pid is known */
static volatile sig_atomic_t stop_signals; /* stop signals seen: the second ends at once */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)uc;
	if (sig == SIGALRM) {
		stop_flag = 1;
	} else {
		if (si->si_code != SI_KERNEL) {
			/* The program may run before cli_spawn() returned
			 * its pid: keep the signal for then. */
			if (child_pid > 0)
				kill((pid_t)child_pid, sig);
			else
				pending_sig = sig;
		}
		alarm(STOP_GRACE_S);
		/* a second one: finish now, the recording is closed as cut short */
		if (++stop_signals >= 2)
			stop_flag = 2;
	}
	errno = saved;
}

struct saved_signals {
	struct sigaction intr, term, hup, alrm, pipe;
	sigset_t deflt;	 /* signals the program must get back as SIG_DFL */
	sigset_t ignore; /* signals the program must get back as SIG_IGN */
};

static int was_ignored(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN;
}

/*
 * Catch sig with on_signal. The program must see the disposition heaptap
 * found: a caught signal is back to SIG_DFL after exec by itself; one that
 * was ignored (a background job of a non-interactive shell ignores SIGINT)
 * is put back to SIG_IGN in the child (o->ignore). With keep_ignored, an
 * ignored sig stays ignored in heaptap too (SIGHUP under nohup).
 */
static void catch_signal(struct saved_signals *o, int sig, struct sigaction *old, int keep_ignored)
{
	struct sigaction sa;

	sigaction(sig, NULL, old);
	if (was_ignored(old)) {
		if (keep_ignored)
			return;
		sigaddset(&o->ignore, sig);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: interrupt poll and read */
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void install_signals(struct saved_signals *o)
{
	struct sigaction sa;

	sigemptyset(&o->deflt);
	sigemptyset(&o->ignore);
	catch_signal(o, SIGINT, &o->intr, 0);
	catch_signal(o, SIGTERM, &o->term, 0);
	catch_signal(o, SIGHUP, &o->hup, 1); /* a closed terminal: finish the file too */
	catch_signal(o, SIGALRM, &o->alrm, 0); /* our own grace timer */
	/*
	 * A target that dies while we write a control record must not kill
	 * us. An ignored SIGPIPE would survive exec, so the program gets the
	 * default back when that is what heaptap found.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &o->pipe);
	if (!was_ignored(&o->pipe))
		sigaddset(&o->deflt, SIGPIPE);
}

static void restore_signals(const struct saved_signals *o)
{
	alarm(0);
	sigaction(SIGINT, &o->intr, NULL);
	sigaction(SIGTERM, &o->term, NULL);
	sigaction(SIGHUP, &o->hup, NULL);
	sigaction(SIGALRM, &o->alrm, NULL);
	sigaction(SIGPIPE, &o->pipe, NULL);
}

/* Publish the program's pid to the handler, and pass on what came before. */
static void set_child(pid_t pid)
{
	sigset_t block, old;
	int sig;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	child_pid = pid;
	sig = pending_sig;
	pending_sig = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (sig)
		kill(pid, sig);
}

void cli_usage_record(FILE *f)
{
	fputs("usage: heaptap record [-o FILE] [--depth N] [--sample BYTES] [--] PROGRAM [ARGS...]\n"
	      "\n"
	      "Run PROGRAM with the heaptap tracking library preloaded and record every\n"
	      "allocation with its call stack until PROGRAM exits. heaptap exits with\n"
	      "PROGRAM's exit status (128 + signal if it was killed).\n"
	      "\n"
	      "options:\n"
	      "  -o, --output FILE  write the recording to FILE (never overwritten); default\n"
	      "                     heaptap.COMM.PID.htap in the working directory\n"
	      "      --depth N      keep at most N frames per call stack (1-256, default 64)\n"
	      "      --sample BYTES sample one allocation per BYTES allocated on average\n"
	      "                     (e.g. 512K): stacks are estimates, totals stay exact\n"
	      "      --max-memory BYTES\n"
	      "                     memory for the session's tables (default a quarter of\n"
	      "                     the RAM); reaching it ends the recording there\n"
	      "      --debuginfod   let symbolization ask the DEBUGINFOD_URLS servers\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "See heaptap-record(1).\n",
	      f);
}

int cli_record_parse(int argc, char **argv, struct cli_record_args *a, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "depth", required_argument, NULL, 'd' },
		{ "sample", required_argument, NULL, 'S' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "debuginfod", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	err[0] = '\0';
	cli_getopt_reset();
	/* "+": stop at PROGRAM, its own options are not ours */
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_output(optarg, &a->output, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'd': {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v < 1 ||
			    v > TRK_DEPTH_MAX) {
				snprintf(err, errlen, "--depth '%s': not a number from 1 to %u", optarg,
					 TRK_DEPTH_MAX);
				return -EINVAL;
			}
			a->depth = (unsigned)v;
			break;
		}
		case 'S':
			if (cli_parse_sample(optarg, &a->sample, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'M':
			if (cli_parse_max_memory(optarg, &a->max_memory, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'D':
			a->debuginfod = 1;
			break;
		case 'h':
			a->help = 1;
			return 0;
		default: /* ':' (missing argument) or '?' */
			return cli_getopt_error(c, argv, err, errlen);
		}
	}
	if (optind >= argc) {
		snprintf(err, errlen, "no program to record");
		return -EINVAL;
	}
	a->argc = argc - optind;
	a->argv = argv + optind;
	return 0;
}

static void on_log(int level, const char *msg, size_t len, void *arg)
{
	static const char *const what[] = { "library", "library warning", "library error" };

	(void)arg;
	if (level < 0 || level > 2)
		level = 2;
	cli_msg("record: %s: %.*s", what[level], (int)(len > 1000 ? 1000 : len), msg);
}

/* Interpret the stream on conn into opt_out or the first free default name (out gets it). */
static int interpret(int conn, const struct cli_record_args *a, pid_t pid, const char *prog,
		     char *out, size_t outlen, struct itp_result *res)
{
	struct itp_options opt;
	char comm[64];

	memset(&opt, 0, sizeof(opt));
	cli_sample_options(&opt, a->sample);
	/* our own child: its ids are readable while it runs (a zombie, at worst) */
	(void)cli_sym_options(&opt, pid, a->max_memory, a->debuginfod);
	opt.launched = 1;
	opt.stop = &stop_flag;
	opt.log = on_log;
	/* cli_interpret adds the live status line when stderr is a terminal */
	opt.status = NULL;
	cli_read_comm(pid, prog, comm, sizeof(comm));
	return cli_interpret(conn, &opt, a->output, "record", comm, pid, out, outlen, res);
}

/* Say what the interpreter could not do; the recording may still hold data. */
static void report_itp(const char *prog, const char *out, const struct itp_result *res)
{
	const char *what = itp_strerror(res->err);

	if (res->err == ITP_E_TRUNCATED && !res->end_reason)
		/* No END record: the program called _exit() or was killed,
		 * so its library had no chance to send what it still held. */
		cli_msg("record: warning: %s ended without closing the event stream (killed, or "
			"_exit); its last events may be missing", prog);
	else if (res->err == ITP_E_OUTPUT)
		cli_msg("record: %s: %s%s%s", out, rec_strerror(res->rec_error),
			res->detail[0] ? ": " : "", res->detail);
	else if (res->err == ITP_E_IO)
		cli_msg("record: reading the event stream: %s", strerror(res->sys_errno));
	else
		cli_msg("record: event stream: %s%s%s", what, res->detail[0] ? ": " : "",
			res->detail);
}

int cli_cmd_record(int argc, char **argv)
{
	struct cli_record_args a;
	struct cli_session s = { .dir = "", .sock = "", .listen_fd = -1 };
	struct saved_signals old;
	struct itp_result res;
	char err[256], libdir[PATH_MAX], lib[PATH_MAX + 64], preload[PATH_MAX * 2];
	char env_preload[PATH_MAX * 2 + 16], env_sock[256], env_depth[64], env_sample[64];
	char out[PATH_MAX];
	char *overrides[5];
	const char *prog;
	struct stat st;
	int ret, conn = -1, exited = 0, status = 0, n = 0, code = CLI_EXIT_FAIL;
	int signals_set = 0, have_child = 0;
	pid_t pid = -1;

	ret = cli_record_parse(argc, argv, &a, err, sizeof(err));
	if (ret < 0) {
		cli_msg("record: %s (see heaptap record --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (a.help) {
		cli_usage_record(stdout);
		return CLI_EXIT_OK;
	}
	prog = a.argv[0];
	if (a.output && lstat(a.output, &st) == 0) {
		cli_msg("record: %s: %s", a.output, strerror(EEXIST));
		return CLI_EXIT_FAIL;
	}
	ret = cli_check_output_dir(a.output);
	if (ret < 0) {
		cli_msg("record: %s: %s", a.output ? a.output : "working directory", strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	ret = cli_find_libdir(CLI_PRELOAD_LIB, libdir, sizeof(libdir));
	if (ret < 0) {
		const char *env = getenv("HEAPTAP_LIBDIR");

		if (env && *env)
			cli_msg("record: HEAPTAP_LIBDIR=%s: no %s there", env, CLI_PRELOAD_LIB);
		else
			cli_msg("record: cannot find %s (looked in ../lib and ../lib/heaptap beside "
				"heaptap; set HEAPTAP_LIBDIR)", CLI_PRELOAD_LIB);
		return CLI_EXIT_FAIL;
	}
	snprintf(lib, sizeof(lib), "%s/%s", libdir, CLI_PRELOAD_LIB);
	if (cli_preload_value(lib, getenv("LD_PRELOAD"), preload, sizeof(preload)) < 0) {
		cli_msg("record: LD_PRELOAD: %s", strerror(ENAMETOOLONG));
		return CLI_EXIT_FAIL;
	}

	ret = cli_session_open(&s);
	if (ret < 0) {
		cli_msg("record: session directory: %s", strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload);
	snprintf(env_sock, sizeof(env_sock), "HEAPTAP_SOCKET=%s", s.sock);
	overrides[n++] = env_preload;
	overrides[n++] = env_sock;
	if (a.depth) {
		snprintf(env_depth, sizeof(env_depth), "HEAPTAP_DEPTH=%u", a.depth);
		overrides[n++] = env_depth;
	}
	/* the library starts with the rate at once (no wait for cli_sample_start's record) */
	snprintf(env_sample, sizeof(env_sample), "HEAPTAP_SAMPLE=%llu,%llu",
		 (unsigned long long)a.sample,
		 (unsigned long long)(a.sample ? cli_sample_seed() : 0));
	overrides[n++] = env_sample;
	overrides[n] = NULL;

	stop_flag = 0;
	stop_signals = 0;
	child_pid = 0;
	pending_sig = 0;
	install_signals(&old);
	signals_set = 1;
	pid = cli_spawn(a.argv, overrides, &old.deflt, &old.ignore);
	if (pid < 0) {
		cli_msg("record: %s: %s", prog, strerror(-pid));
		goto out_session;
	}
	set_child(pid);
	have_child = 1;

	ret = cli_session_accept(&s, pid, &conn, &exited, &status);
	if (ret >= 0 && conn >= 0)
		cli_sample_start(conn, a.sample);
	if (ret == -ECHILD) {
		have_child = 0; /* reaped */
		cli_msg("record: %s did not load the tracking library (statically linked?)", prog);
		goto out_session;
	}
	if (ret < 0) {
		cli_msg("record: waiting for %s to connect: %s", prog, strerror(-ret));
		kill(pid, SIGTERM);
		goto out_session;
	}
	if (exited)
		have_child = 0;

	ret = interpret(conn, &a, pid, prog, out, sizeof(out), &res);
	if (ret == CLI_NO_NAME) {
		/* closing conn makes the library go inert; the program runs on */
		code = CLI_EXIT_FAIL;
		goto out_session;
	}
	if (ret < 0 && !(res.err == ITP_E_OUTPUT && lstat(out, &st) < 0))
		report_itp(prog, out, &res);
	if (res.err == ITP_E_OUTPUT && lstat(out, &st) < 0) {
		/* Nothing was written: the library sees the socket close and
		 * goes inert; the program runs on to its end. */
		cli_msg("record: %s: %s", out, rec_strerror(res.rec_error));
		code = CLI_EXIT_FAIL;
	} else {
		if (res.events_dropped)
			cli_msg("record: warning: the library lost %llu events",
				(unsigned long long)res.events_dropped);
		cli_msg("recorded %llu allocations to %s",
			(unsigned long long)res.final.alloc_calls, out);
		cli_sample_summary("record", a.sample, &res);
		cli_sym_summary("record", &res);
		cli_msg("run \"heaptap report %s\"", out);
		code = CLI_EXIT_OK;
	}

out_session:
	if (conn >= 0)
		close(conn);
	cli_session_close(&s);
	if (have_child) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		exited = 1;
	}
	if (signals_set)
		restore_signals(&old);
	/* The program's status when it ran and a recording exists. */
	if (code == CLI_EXIT_OK && exited)
		code = cli_exit_status(status);
	return code;
}
