/* cli/top_launch.c - heaptap top -- PROGRAM: a program run under the preload library, watched */
/* SPDX-License-Identifier: MIT */
/*
 * Steps, as heaptap record's, each undone on every path:
 *
 *   find libheaptap_preload.so -> session dir + listening socket -> spawn
 *   PROGRAM (LD_PRELOAD, HEAPTAP_SOCKET, HEAPTAP_SAMPLE; stdin /dev/null,
 *   stdout and stderr to --log FILE or /dev/null, so it never writes over
 *   the screen) -> accept its connection -> the interpreter on a thread,
 *   the screen on this one -> q: stop (the library stops tracking, the
 *   program runs on) -> join -> remove the session.
 *
 * The program stays in heaptap's process group; the screen keeps the
 * terminal in raw mode, so Ctrl+C is a key and reaches nobody. SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT sent to heaptap end the session like q.
 * Globals here: the stop flag (the signal handler's).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/signals.h"
#include "cli/top.h"
#include "recfile/recfile.h"

static volatile sig_atomic_t stop_flag;

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	stop_flag = 1;
}

/*
 * spawn with stdin from /dev/null and stdout/stderr to log (or /dev/null):
 * heaptap's own 0, 1 and 2 are pointed there around the fork and put back.
 */
static pid_t spawn_quiet(const struct cli_top_args *a, char **env, const sigset_t *deflt)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), out, keep[3] = {-1, -1, -1};
	pid_t pid = -ENOMEM;
	int fd;

	if (null < 0)
		return -errno;
	out = a->log ? open(a->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644)
		     : null;
	if (out < 0) {
		pid = -errno;
		close(null);
		return pid;
	}
	for (fd = 0; fd < 3; fd++) {
		keep[fd] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (keep[fd] < 0) {
			pid = -errno;
			goto out_restore;
		}
	}
	if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) {
		pid = -errno;
		goto out_restore;
	}
	pid = cli_spawn(a->argv, env, deflt, NULL);
out_restore:
	for (fd = 0; fd < 3; fd++)
		if (keep[fd] >= 0) {
			dup2(keep[fd], fd);
			close(keep[fd]);
		}
	if (out != null)
		close(out);
	close(null);
	return pid;
}

/* The interpreter's thread. */
struct interp {
	pthread_t th;
	int conn;
	pid_t pid;
	const struct cli_top_args *a;
	const struct cli_live *live;
	char comm[64];
	int ret;
	char out[PATH_MAX];
	struct itp_result res;
};

static void on_log(int level, const char *msg, size_t len, void *arg)
{
	static const char *const what[] = {"library", "library warning", "library error"};

	(void)arg;
	if (level < 0 || level > 2)
		level = 2;
	cli_msg("top: %s: %.*s", what[level], (int)(len > 1000 ? 1000 : len), msg);
}

static void *interp_main(void *arg)
{
	struct interp *s = arg;
	struct itp_options opt;

	memset(&opt, 0, sizeof(opt));
	cli_sample_options(&opt, s->a->sample);
	/* as record's: pinned modules, the symbolizer in a child, as the program's user if not ours */
	(void)cli_sym_options(&opt, s->pid, 0, 0);
	opt.launched = 1;
	opt.stop = &stop_flag;
	opt.log = on_log;
	if (s->live->options)
		s->live->options(s->live->arg, &opt, s->conn);
	s->ret = cli_interpret(s->conn, &opt, s->a->output, "top", s->comm, s->pid, s->out,
			       sizeof(s->out), &s->res);
	if (s->live->ended)
		s->live->ended(s->live->arg, s->ret, &s->res);
	return NULL;
}

/* what the session and the program came to; returns the exit code */
static int summarize(const struct interp *s, const char *prog, int *reaped)
{
	int status, code = CLI_EXIT_OK;
	struct stat st;

	if (s->ret == CLI_NO_NAME)
		return CLI_EXIT_FAIL;
	if (s->res.err == ITP_E_OUTPUT && lstat(s->out, &st) < 0) {
		cli_msg("top: %s: %s%s%s", s->out, rec_strerror(s->res.rec_error),
			s->res.detail[0] ? ": " : "", s->res.detail);
		code = CLI_EXIT_FAIL;
	} else if (s->out[0]) {
		cli_msg("recorded %llu allocations to %s",
			(unsigned long long)s->res.final.alloc_calls, s->out);
		cli_msg("run \"heaptap report %s\"", s->out);
	} else {
		cli_msg("saw %llu allocations (no recording)",
			(unsigned long long)s->res.final.alloc_calls);
	}
	if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
		*reaped = 1;
		if (WIFSIGNALED(status))
			cli_msg("top: %s (pid %d) was killed by signal %d", prog, (int)s->pid,
				WTERMSIG(status));
		else
			cli_msg("top: %s (pid %d) exited with status %d", prog, (int)s->pid,
				WEXITSTATUS(status));
	} else {
		cli_msg("top: %s (pid %d) runs on, no longer tracked", prog, (int)s->pid);
	}
	return code;
}

int top_launch(const struct cli_top_args *a, const struct cli_live *live, struct top_model *m)
{
	struct cli_session ses = {.dir = "", .sock = "", .listen_fd = -1};
	struct interp *s = NULL;
	struct cli_signals old;
	char libdir[PATH_MAX], lib[PATH_MAX + 64], preload[PATH_MAX * 2];
	char env_preload[PATH_MAX * 2 + 16], env_sock[256], env_sample[64];
	char *env[4];
	const char *prog = a->argv[0];
	int ret, exited = 0, status = 0, reaped = 0, code = CLI_EXIT_FAIL;
	struct stat st;
	pid_t pid = -1;

	if (a->output && lstat(a->output, &st) == 0) {
		cli_msg("top: %s: %s", a->output, strerror(EEXIST));
		return CLI_EXIT_FAIL;
	}
	ret = cli_check_output_dir(a->output);
	if (ret < 0) {
		cli_msg("top: %s: %s", a->output ? a->output : "working directory", strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	if (cli_find_libdir(CLI_PRELOAD_LIB, libdir, sizeof(libdir)) < 0) {
		cli_msg(
		    "top: cannot find %s (looked in ../lib and ../lib/heaptap beside heaptap; set "
		    "HEAPTAP_LIBDIR)",
		    CLI_PRELOAD_LIB);
		return CLI_EXIT_FAIL;
	}
	snprintf(lib, sizeof(lib), "%s/%s", libdir, CLI_PRELOAD_LIB);
	if (cli_preload_value(lib, getenv("LD_PRELOAD"), preload, sizeof(preload)) < 0) {
		cli_msg("top: LD_PRELOAD: %s", strerror(ENAMETOOLONG));
		return CLI_EXIT_FAIL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		cli_msg("top: %s", strerror(ENOMEM));
		return CLI_EXIT_FAIL;
	}
	ret = cli_session_open(&ses);
	if (ret < 0) {
		cli_msg("top: session directory: %s", strerror(-ret));
		goto out_free;
	}
	snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", preload);
	snprintf(env_sock, sizeof(env_sock), "HEAPTAP_SOCKET=%s", ses.sock);
	snprintf(env_sample, sizeof(env_sample), "HEAPTAP_SAMPLE=%llu,%llu",
		 (unsigned long long)a->sample,
		 (unsigned long long)(a->sample ? cli_sample_seed() : 0));
	env[0] = env_preload;
	env[1] = env_sock;
	env[2] = env_sample;
	env[3] = NULL;
	stop_flag = 0;
	cli_signals_install(&old, stop_signals, NSTOP, on_signal, NULL);
	pid = spawn_quiet(a, env, &old.deflt);
	if (pid < 0) {
		cli_msg("top: %s: %s", a->log && pid != -ENOENT ? a->log : prog, strerror(-pid));
		goto out_signals;
	}
	pthread_mutex_lock(&m->lock);
	m->pid = pid;
	pthread_mutex_unlock(&m->lock);
	ret = cli_session_accept(&ses, pid, &s->conn, &exited, &status);
	if (ret == -ECHILD) {
		reaped = 1;
		cli_msg("top: %s did not load the tracking library (statically linked?)", prog);
		goto out_signals;
	}
	if (ret < 0) {
		cli_msg("top: waiting for %s to connect: %s", prog, strerror(-ret));
		kill(pid, SIGTERM);
		goto out_signals;
	}
	reaped = exited;
	cli_sample_start(s->conn, a->sample);
	s->pid = pid;
	s->a = a;
	s->live = live;
	cli_read_comm(pid, prog, s->comm, sizeof(s->comm));
	{
		sigset_t all, was;

		/* signals are the main thread's: the interpreter only looks at the flag */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &was);
		ret = pthread_create(&s->th, NULL, interp_main, s);
		pthread_sigmask(SIG_SETMASK, &was, NULL);
	}
	if (ret) {
		cli_msg("top: session thread: %s", strerror(ret));
		goto out_conn; /* the library sees the socket close and goes inert */
	}
	if (live->run)
		live->run(live->arg, &stop_flag);
	stop_flag = 1;
	pthread_join(s->th, NULL);
	code = summarize(s, prog, &reaped);
out_conn:
	close(s->conn);
out_signals:
	cli_signals_restore(&old);
	if (exited && !reaped)
		waitpid(pid, &status, WNOHANG);
	cli_session_close(&ses);
out_free:
	free(s);
	return code;
}
