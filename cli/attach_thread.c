/* cli/attach_thread.c - heaptap attach's session thread: accept the library, run the interpreter */
/* SPDX-License-Identifier: MIT */
/*
 * The thread's contract is in attach_int.h (struct cli_attach_thread).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cli/attach_int.h"
#include "track/wire.h"
#include "util/clock.h"

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

static void on_status(const struct itp_status *st, void *arg)
{
	struct cli_attach_duration *d = arg;
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
		cli_attach_stop = 1;
	else
		start_timer(left);
}

/* itp_run into opt_out, or the first free default name (out gets the name used). */
static int interpret(int conn, const struct cli_attach_args *a, pid_t pid, const char *sysroot,
		     struct cli_attach_duration *dur, struct cli_snap *snap,
		     const struct cli_live *live, char *out, size_t outlen, struct itp_result *res)
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
	opt.stop = &cli_attach_stop;
	opt.log = on_log;
	opt.sysroot = sysroot;
	opt.status = on_status;
	opt.status_arg = dur;
	if (live && live->options)
		live->options(live->arg, &opt, conn);
	cli_read_comm(pid, NULL, comm, sizeof(comm));
	return cli_interpret(conn, &opt, a->output, "attach", comm, pid, out, outlen, res);
}

static void *thread_main(void *arg)
{
	struct cli_attach_thread *s = arg;
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
	ret = cli_attach_dir_accept(s->d, s->pid, CLI_ATTACH_LOAD_MS + CLI_ATTACH_ACCEPT_MS, &conn);
	if (ret == 0) {
		/* at once: the library's start waits for it (docs/inject.md) */
		cli_sample_start_xframes(conn, s->a->sample, s->a->langs_off);
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
	cli_attach_stop_set(&stops);
	pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
	s->ret = interpret(conn, s->a, s->pid, s->sysroot, s->dur, s->snap, s->live, s->out,
			   sizeof(s->out), &s->res);
	s->interpreted = 1;
	if (s->live && s->live->ended)
		s->live->ended(s->live->arg, s->ret, &s->res);
	return NULL;
}

/* cli_attach_thread_start - the thread, with every signal blocked. 0 or -errno. */
int cli_attach_thread_start(struct cli_attach_thread *s)
{
	sigset_t all, old;
	int ret;

	s->conn = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&s->th, NULL, thread_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	s->running = 1;
	return 0;
}

/* cli_attach_thread_accepted - wait until the thread's accept ended; its return. */
int cli_attach_thread_accepted(struct cli_attach_thread *s)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	while (!s->accepted)
		pthread_cond_wait(&s->cond, &s->lock);
	ret = s->acc_ret;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* cli_attach_thread_join - see attach_int.h: wake, wait for and clean up the thread. */
void cli_attach_thread_join(struct cli_attach_thread *s, int abort)
{
	sigset_t stops;

	if (!s->running)
		return;
	if (abort) {
		s->d->cancel = 1;
		pthread_mutex_lock(&s->lock);
		if (s->accepted && s->acc_ret == 0)
			cli_attach_stop = 1;
		pthread_mutex_unlock(&s->lock);
	}
	cli_attach_stop_set(&stops);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	pthread_mutex_lock(&s->lock);
	if (cli_attach_stop && s->accepted && s->acc_ret == 0)
		/* wake its wait at once */
		pthread_kill(s->th, cli_attach_stop_sig ? cli_attach_stop_sig : SIGINT);
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
