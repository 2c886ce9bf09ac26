/* inject/thread.c - the library's own thread: connect, start the session, patch, watch for new
 * modules */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, in a thread created with every signal blocked (no
 * signal of the program is ever delivered here). Nothing is patched before
 * track's session started, so any failure before that leaves the process
 * exactly as it was (rule 7): the socket is closed and the thread ends.
 *
 * New modules are noticed by comparing dl_iterate_phdr's dlpi_adds /
 * dlpi_subs every INJ_POLL_MS (one callback call under the loader's lock,
 * well under a microsecond); dlopen is never hooked, so the caller's RPATH
 * and $ORIGIN lookups stay intact.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "inject/internal.h"

/*
 * forget_session_files - remove the socket heaptap made for us and its
 * directory, once we are connected (or nobody listens any more: the
 * heaptap that made them is gone). heaptap removes them too as soon as it
 * accepted, but a heaptap SIGKILLed between letting go of our thread and
 * accepting would leave them behind; we run as the target's user, who owns
 * them (docs/attach-command.md, "The session directory"). Only a path of
 * the form ".../heaptap-XXXXXX/sock" is touched. Stack buffers only.
 */
static void forget_session_files(const char *path)
{
	char dir[sizeof(inj_g.sock_path)];
	const char *slash = strrchr(path, '/'), *base;
	size_t len;

	if (!slash || strcmp(slash, "/sock"))
		return;
	len = (size_t)(slash - path);
	if (len == 0 || len >= sizeof(dir))
		return;
	memcpy(dir, path, len);
	dir[len] = '\0';
	base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	if (strncmp(base, "heaptap-", 8) || strlen(base) != 14)
		return;
	unlink(path);
	rmdir(dir);
}

/* new_session - empty the tables for a session (lock held). */
static void new_session(void)
{
	inj_g.closing = 0;
	inj_g.nmods = 0;
	inj_g.nslots = 0;
	inj_g.nranges = 0;
	inj_g.any_pending = false;
	inj_g.adds = 0;
	inj_g.subs = 0;
	memset(&inj_g.st, 0, sizeof(inj_g.st));
}

/*
 * first_pass - returns 0, or -errno when /proc/self/maps could not be read
 * (no procfs in the process's root, ...): nothing was patched and no later
 * pass would do better, so the caller ends the session with
 * WIRE_END_ERROR rather than record nothing in silence.
 */
static int first_pass(void)
{
	uint64_t t0 = inj_now_ns();
	int ret;

	/* -EAGAIN: a module came or went meanwhile; the poll loop finishes the job */
	ret = inj_patch_pass();
	inj_g.st.first_pass_ns = inj_now_ns() - t0;
	inj_g.st.start_ns = inj_now_ns() - inj_g.t_start;
	return ret == -EAGAIN ? 0 : ret;
}

/*
 * poll_loop - every INJ_POLL_MS, patch what was loaded meanwhile, until
 * before_end sets closing (it also wakes the wait, so a new start call is
 * refused with -EBUSY for microseconds only after a session ends). Only
 * that flag ends the loop: trk_active() turns false a moment before
 * before_end runs, and leaving then could let a new start empty the tables
 * before they were restored.
 */
static void poll_loop(void)
{
	pthread_mutex_lock(&inj_g.lock);
	while (!inj_g.closing) {
		unsigned long long adds, subs;
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += INJ_POLL_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!inj_g.closing &&
		       pthread_cond_clockwait(&inj_g.wake, &inj_g.lock, CLOCK_MONOTONIC, &until) !=
			   ETIMEDOUT)
			;
		if (inj_g.closing)
			break;
		if (atomic_exchange(&inj_g.detach_req, 0)) {
			/* before_end takes the lock and sets closing, which ends the loop */
			pthread_mutex_unlock(&inj_g.lock);
			trk_stop(WIRE_END_STOP);
			pthread_mutex_lock(&inj_g.lock);
			continue;
		}
		inj_counters(&adds, &subs);
		if (adds != inj_g.adds || subs != inj_g.subs || inj_g.any_pending)
			(void)inj_patch_pass();
	}
	pthread_mutex_unlock(&inj_g.lock);
}

void *inj_thread_main(void *arg)
{
	struct trk_config cfg = {.fd = -1};
	uint64_t drain_ns;
	int fd, ret = 0;

	(void)arg;
	/*
	 * A name of our own (track's timer thread inherits it): `heaptap
	 * detach` and the tests tell from /proc/PID/task/TID/comm whether a
	 * session of the library is alive. PR_SET_NAME allocates nothing.
	 */
	prctl(PR_SET_NAME, INJ_THREAD_NAME, 0, 0, 0);
	fd = trk_connect(inj_g.sock_path);
	if (fd >= 0 || fd == -ECONNREFUSED)
		forget_session_files(inj_g.sock_path);
	if (fd < 0)
		goto out_idle;
	if (inj_real_find() < 0)
		goto out_close;
	trk_set_real(&inj_g.real);
	if (!inj_g.atfork_done) {
		/* registered once per process: a handler cannot be removed, and it is harmless when
		 * idle */
		if (pthread_atfork(inj_fork_prepare, inj_fork_parent, inj_fork_child) != 0)
			goto out_close;
		inj_g.atfork_done = 1;
	}
	pthread_mutex_lock(&inj_g.lock);
	new_session();
	pthread_mutex_unlock(&inj_g.lock);

	cfg.fd = fd;
	cfg.flags = WIRE_F_ATTACHED;
	cfg.sample_wait_ms = TRK_SAMPLE_WAIT_MS; /* heaptap's rate: no hook is installed yet */
	cfg.before_end = inj_before_end;
	cfg.before_end_arg = NULL;
	/* not under inj_g.lock: a failing trk_start ends the session, calling before_end */
	if (trk_start(&cfg) < 0)
		goto out_idle; /* track closed the fd; nothing was patched */
	atomic_store(&inj_g.run, INJ_RUNNING);
	/*
	 * Patch only once heaptap reads: the first hooks fill the socket
	 * within a millisecond, and until heaptap's read loop runs (it is
	 * still accepting and opening its recording) they would all wait in
	 * the send, one after the other under the socket lock (~25 ms seen
	 * by every allocating thread). A heaptap that does not read within
	 * INJ_DRAIN_MS gets the slots patched anyway.
	 */
	drain_ns = inj_now_ns();
	(void)trk_wait_drained(INJ_DRAIN_MS);
	drain_ns = inj_now_ns() - drain_ns;

	pthread_mutex_lock(&inj_g.lock);
	inj_g.st.drain_ns = drain_ns;
	if (!inj_g.closing)
		ret = first_pass();
	pthread_mutex_unlock(&inj_g.lock);
	if (ret < 0)
		trk_stop(WIRE_END_ERROR); /* before_end sets closing: poll_loop returns at once */
	poll_loop();
	goto out_idle;

out_close:
	close(fd);
out_idle:
	atomic_store(&inj_g.detach_req, 0);
	atomic_store(&inj_g.run, INJ_IDLE);
	return NULL;
}
