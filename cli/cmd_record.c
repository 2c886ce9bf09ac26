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
#include "cli/signals.h"
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

/* the signals heaptap catches: passed_signals go on to the program, SIGALRM is the grace timer */
static const int caught_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGALRM };
static const int passed_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NCAUGHT (sizeof(caught_signals) / sizeof(caught_signals[0]))
#define NPASSED (sizeof(passed_signals) / sizeof(passed_signals[0]))

/*
 * Catch the signals, the flags cleared. A caught signal the program must
 * get back ignored is in o->ignore; a SIGHUP that heaptap found ignored
 * (nohup) stays ignored: a closed terminal ends neither.
 */
static void install_signals(struct cli_signals *o)
{
	sigset_t keep;

	stop_flag = 0;
	stop_signals = 0;
	child_pid = 0;
	pending_sig = 0;
	sigemptyset(&keep);
	sigaddset(&keep, SIGHUP);
	cli_signals_install(o, caught_signals, NCAUGHT, on_signal, &keep);
}

/* Publish the program's pid to the handler, and pass on what came before. */
static void set_child(pid_t pid)
{
	sigset_t block, old;
	int sig;

	cli_signals_set(&block, passed_signals, NPASSED);
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
	      "      --no-python-frames\n"
	      "                     native stacks only, no Python frames in a CPython\n"
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
		{ "no-python-frames", no_argument, NULL, 'P' },
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
		case 'P':
			a->langs_off |= 1u << WIRE_LANG_PYTHON;
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

/* One recording: what its steps share. */
struct record_run {
	struct cli_record_args a;
	const char *prog;
	struct cli_session s;
	char lib[PATH_MAX + 64], preload[PATH_MAX * 2];
	char env_preload[PATH_MAX * 2 + 16], env_sock[256], env_depth[64], env_sample[64];
	char *overrides[6];
	char out[PATH_MAX];
	struct itp_result res;
	int conn, exited, status, have_child;
	pid_t pid;
};

/* check_output - -o is usable before anything starts. 0 or the exit code. */
static int check_output(const struct cli_record_args *a)
{
	struct stat st;
	int ret;

	if (a->output && lstat(a->output, &st) == 0) {
		cli_msg("record: %s: %s", a->output, strerror(EEXIST));
		return CLI_EXIT_FAIL;
	}
	ret = cli_check_output_dir(a->output);
	if (ret < 0) {
		cli_msg("record: %s: %s", a->output ? a->output : "working directory", strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	return 0;
}

/* find_library - libheaptap_preload.so and the LD_PRELOAD it goes in. 0, or -1 after saying why. */
static int find_library(struct record_run *r)
{
	char libdir[PATH_MAX];

	if (cli_find_libdir(CLI_PRELOAD_LIB, libdir, sizeof(libdir)) < 0) {
		const char *env = getenv("HEAPTAP_LIBDIR");

		if (env && *env)
			cli_msg("record: HEAPTAP_LIBDIR=%s: no %s there", env, CLI_PRELOAD_LIB);
		else
			cli_msg("record: cannot find %s (looked in ../lib and ../lib/heaptap beside "
				"heaptap; set HEAPTAP_LIBDIR)", CLI_PRELOAD_LIB);
		return -1;
	}
	snprintf(r->lib, sizeof(r->lib), "%s/%s", libdir, CLI_PRELOAD_LIB);
	if (cli_preload_value(r->lib, getenv("LD_PRELOAD"), r->preload, sizeof(r->preload)) < 0) {
		cli_msg("record: LD_PRELOAD: %s", strerror(ENAMETOOLONG));
		return -1;
	}
	return 0;
}

/* program_env - what the program's environment gets: the library, the socket, the depth, the rate. */
static void program_env(struct record_run *r)
{
	static char env_pyframes[] = "HEAPTAP_PYFRAMES=0";
	int n = 0;

	snprintf(r->env_preload, sizeof(r->env_preload), "LD_PRELOAD=%s", r->preload);
	snprintf(r->env_sock, sizeof(r->env_sock), "HEAPTAP_SOCKET=%s", r->s.sock);
	r->overrides[n++] = r->env_preload;
	r->overrides[n++] = r->env_sock;
	if (r->a.depth) {
		snprintf(r->env_depth, sizeof(r->env_depth), "HEAPTAP_DEPTH=%u", r->a.depth);
		r->overrides[n++] = r->env_depth;
	}
	/* the library starts with the rate at once (no wait for cli_sample_start's record) */
	snprintf(r->env_sample, sizeof(r->env_sample), "HEAPTAP_SAMPLE=%llu,%llu",
		 (unsigned long long)r->a.sample,
		 (unsigned long long)(r->a.sample ? cli_sample_seed() : 0));
	r->overrides[n++] = r->env_sample;
	/* no producer registered at all: the library starts with the program */
	if (r->a.langs_off & (1u << WIRE_LANG_PYTHON))
		r->overrides[n++] = env_pyframes;
	r->overrides[n] = NULL;
}

/*
 * start_program - spawn PROGRAM and accept its library's connection.
 * 0 with r->conn, or -1 after saying why; r->have_child says whether
 * there is a program left to wait for.
 */
static int start_program(struct record_run *r, const struct cli_signals *sigs)
{
	int ret;

	r->pid = cli_spawn(r->a.argv, r->overrides, &sigs->deflt, &sigs->ignore);
	if (r->pid < 0) {
		cli_msg("record: %s: %s", r->prog, strerror(-r->pid));
		return -1;
	}
	set_child(r->pid);
	r->have_child = 1;

	ret = cli_session_accept(&r->s, r->pid, &r->conn, &r->exited, &r->status);
	if (ret >= 0 && r->conn >= 0)
		cli_sample_start(r->conn, r->a.sample);
	if (ret == -ECHILD) {
		r->have_child = 0; /* reaped */
		cli_msg("record: %s did not load the tracking library (statically linked?)", r->prog);
		return -1;
	}
	if (ret < 0) {
		cli_msg("record: waiting for %s to connect: %s", r->prog, strerror(-ret));
		kill(r->pid, SIGTERM);
		return -1;
	}
	if (r->exited)
		r->have_child = 0;
	return 0;
}

/* record_stream - the stream into the recording, then what it holds. The exit code. */
static int record_stream(struct record_run *r)
{
	struct itp_result *res = &r->res;
	struct stat st;
	int ret;

	ret = interpret(r->conn, &r->a, r->pid, r->prog, r->out, sizeof(r->out), res);
	if (ret == CLI_NO_NAME)
		return CLI_EXIT_FAIL; /* closing conn makes the library go inert; the program runs on */
	if (ret < 0 && !(res->err == ITP_E_OUTPUT && lstat(r->out, &st) < 0))
		report_itp(r->prog, r->out, res);
	if (res->err == ITP_E_OUTPUT && lstat(r->out, &st) < 0) {
		/* Nothing was written: the library sees the socket close and
		 * goes inert; the program runs on to its end. */
		cli_msg("record: %s: %s", r->out, rec_strerror(res->rec_error));
		return CLI_EXIT_FAIL;
	}
	if (res->events_dropped)
		cli_msg("record: warning: the library lost %llu events",
			(unsigned long long)res->events_dropped);
	cli_msg("recorded %llu allocations to %s", (unsigned long long)res->final.alloc_calls,
		r->out);
	cli_sample_summary("record", r->a.sample, res);
	cli_sym_summary("record", res);
	cli_msg("run \"heaptap report %s\"", r->out);
	return CLI_EXIT_OK;
}

int cli_cmd_record(int argc, char **argv)
{
	struct record_run run, *r = &run;
	struct cli_signals old;
	char err[256];
	int ret, code;

	memset(r, 0, sizeof(*r));
	r->s.listen_fd = -1;
	r->conn = -1;
	r->pid = -1;
	ret = cli_record_parse(argc, argv, &r->a, err, sizeof(err));
	if (ret < 0) {
		cli_msg("record: %s (see heaptap record --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (r->a.help) {
		cli_usage_record(stdout);
		return CLI_EXIT_OK;
	}
	r->prog = r->a.argv[0];
	code = check_output(&r->a);
	if (code)
		return code;
	if (find_library(r) < 0)
		return CLI_EXIT_FAIL;
	ret = cli_session_open(&r->s);
	if (ret < 0) {
		cli_msg("record: session directory: %s", strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	program_env(r);

	install_signals(&old);
	code = CLI_EXIT_FAIL;
	if (start_program(r, &old) == 0)
		code = record_stream(r);

	if (r->conn >= 0)
		close(r->conn);
	cli_session_close(&r->s);
	if (r->have_child) {
		while (waitpid(r->pid, &r->status, 0) < 0 && errno == EINTR)
			;
		r->exited = 1;
	}
	cli_signals_restore(&old);
	/* The program's status when it ran and a recording exists. */
	if (code == CLI_EXIT_OK && r->exited)
		code = cli_exit_status(r->status);
	return code;
}
