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
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "inject/internal.h"
#include "pyframes/pyframes.h"

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

#define FIRST_PASS_TRIES 5 /* passes in a row when modules come and go during them */

/*
 * first_pass - returns 0, or -errno when /proc/self/maps could not be read
 * (no procfs in the process's root, ...): nothing was patched and no later
 * pass would do better, so the caller ends the session with
 * WIRE_END_ERROR rather than record nothing in silence.
 *
 * A pass that saw a module come or go (-EAGAIN) is repeated at once, a few
 * times, rather than a tick later: modules it had not reached yet (the
 * main program may be one) are still unpatched. The poll loop finishes
 * the job if they keep changing.
 */
static int first_pass(void)
{
	uint64_t t0 = 0;
	int ret, tries = 0;

	do {
		t0 = util_mono_ns();
		ret = inj_patch_pass();
		tries++;
	} while (ret == -EAGAIN && tries < FIRST_PASS_TRIES && !inj_g.closing);
	inj_g.st.first_pass_ns = util_mono_ns() - t0;
	inj_g.st.start_ns = util_mono_ns() - inj_g.t_start;
	inj_g.st.first_passes = (uint32_t)tries;
	inj_g.defer0 = inj_g.defer;
	return ret == -EAGAIN ? 0 : ret;
}

/*
 * wait_rate - wait up to wait_ms for heaptap's first control record (its
 * sampling rate, sent right after it accepted), so the session starts in
 * the right mode; trk_start then takes it without waiting. 1 when
 * something came, 0 when the wait ran out (or the peer closed: trk_start
 * finds that out).
 */
static int wait_rate(int fd, unsigned wait_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	do
		r = poll(&pfd, 1, (int)wait_ms);
	while (r < 0 && errno == EINTR);
	return r > 0 && (pfd.revents & POLLIN);
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
	uint64_t drain_ns, connect_ns, rate_ns, session_ns;
	int fd, ret = 0, rate_got;

	(void)arg;
	/*
	 * A name of our own (track's timer thread inherits it): `heaptap
	 * detach` and the tests tell from /proc/PID/task/TID/comm whether a
	 * session of the library is alive. PR_SET_NAME allocates nothing.
	 */
	prctl(PR_SET_NAME, INJ_THREAD_NAME, 0, 0, 0);
	fd = trk_connect(inj_g.sock_path);
	connect_ns = util_mono_ns() - inj_g.t_start;
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
	/* heaptap's rate: no hook is installed yet, so only the attach waits */
	rate_got = wait_rate(fd, TRK_SAMPLE_WAIT_MS);
	rate_ns = util_mono_ns() - inj_g.t_start;
	cfg.sample_wait_ms = 0; /* it is there (or will not come): trk_start takes it as it is */
	cfg.before_end = inj_before_end;
	cfg.before_end_arg = NULL;
	/* not under inj_g.lock: a failing trk_start ends the session, calling before_end */
	if (trk_start(&cfg) < 0)
		goto out_idle; /* track closed the fd; nothing was patched */
	/* Python frames (heaptap's WIRE_CTL_XFRAMES may switch them off); a test's fault from the environment */
	{
		const char *ft = getenv("HEAPTAP_FAULT");

		(void)pyf_start(ft && strcmp(ft, "python-version") == 0 ? PYF_FAKE_VERSION : 0);
	}
	session_ns = util_mono_ns() - inj_g.t_start;
	atomic_store(&inj_g.run, INJ_RUNNING);
	/*
	 * Patch only once heaptap reads: the first hooks fill the socket
	 * within a millisecond, and until heaptap's read loop runs (it is
	 * still accepting and opening its recording) they would all wait in
	 * the send, one after the other under the socket lock (~25 ms seen
	 * by every allocating thread). A heaptap that does not read within
	 * INJ_DRAIN_MS gets the slots patched anyway.
	 */
	drain_ns = util_mono_ns();
	(void)trk_wait_drained(INJ_DRAIN_MS);
	drain_ns = util_mono_ns() - drain_ns;

	pthread_mutex_lock(&inj_g.lock);
	inj_g.st.drain_ns = drain_ns;
	inj_g.st.connect_ns = connect_ns;
	inj_g.st.rate_ns = rate_ns;
	inj_g.st.rate_got = (uint32_t)rate_got;
	inj_g.st.session_ns = session_ns;
	if (!inj_g.closing)
		ret = first_pass();
	pthread_mutex_unlock(&inj_g.lock);
	/*
	 * heaptap shows it with -v. Outside the lock: the send may wait for
	 * room, and before_end (heaptap's STOP) must not wait behind it. Only
	 * this thread writes what it reads. After a stop it is not sent.
	 */
	(void)inj_send_start_record();
	if (ret < 0) {
		inj_send_error("cannot read /proc/self/maps", ret);
		trk_stop(WIRE_END_ERROR); /* before_end sets closing: poll_loop returns at once */
	}
	poll_loop();
	goto out_idle;

out_close:
	close(fd);
out_idle:
	atomic_store(&inj_g.detach_req, 0);
	atomic_store(&inj_g.run, INJ_IDLE);
	return NULL;
}
