/* inject/start.c - the exported entry points: start and stop a session */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap_inject_start runs in a thread attach/ hijacked: it must give it
 * back at once. It copies the path, creates the library's thread with every
 * signal blocked (set through the thread attribute, so the caller's own
 * mask is never touched) and returns; the caller's errno is preserved.
 * inj_g, the per-process state, is defined here.
 * heaptap_inject_detach only sets a flag for the library's thread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject/internal.h"

struct inj_global inj_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .run = INJ_IDLE,
};

/* spawn - create the library's thread, detached, all signals blocked. 0 or an errno value. */
static int spawn(void)
{
	pthread_attr_t attr;
	pthread_t thr;
	sigset_t all;
	int ret;

	ret = pthread_attr_init(&attr);
	if (ret)
		return ret;
	sigfillset(&all);
	ret = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!ret)
		ret = pthread_attr_setstacksize(&attr, INJ_STACK);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	if (!ret)
		ret = pthread_attr_setsigmask_np(&attr, &all);
	if (!ret)
		ret = pthread_create(&thr, &attr, inj_thread_main, NULL);
#else
	/* no per-thread initial mask: block in the caller only around the creation */
	if (!ret) {
		sigset_t old;

		pthread_sigmask(SIG_SETMASK, &all, &old);
		ret = pthread_create(&thr, &attr, inj_thread_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
#endif
	pthread_attr_destroy(&attr);
	return ret;
}

int heaptap_inject_start(const char *socket_path)
{
	int saved_errno = errno, expected = INJ_IDLE, ret;
	size_t len;

	if (!socket_path)
		return -EINVAL;
	len = strnlen(socket_path, sizeof(inj_g.sock_path));
	if (len == 0)
		return -EINVAL;
	if (len == sizeof(inj_g.sock_path))
		return -ENAMETOOLONG;
	if (!atomic_compare_exchange_strong(&inj_g.run, &expected, INJ_STARTING))
		return -EBUSY;
	inj_g.t_start = util_mono_ns();
	memcpy(inj_g.sock_path, socket_path, len + 1);
	if (!inj_g.page)
		inj_g.page = sysconf(_SC_PAGESIZE);
	ret = spawn();
	if (ret) {
		atomic_store(&inj_g.run, INJ_IDLE);
		errno = saved_errno;
		return -ret;
	}
	errno = saved_errno;
	return 0;
}

/*
 * At exit the library's destructor ends a running session like preload's
 * does (WIRE_END_EXIT): slots are restored and heaptap gets a complete
 * stream instead of an EOF. It runs from exit() in the exiting thread,
 * after the program's atexit handlers and, as the library was loaded last
 * and nothing depends on it, before the destructors of the other modules
 * (their frees then go to the real functions unrecorded). _exit skips it:
 * heaptap sees EOF with everything up to the last tick.
 */
__attribute__((destructor)) static void inj_fini(void)
{
	int saved_errno = errno;

	if (atomic_load(&inj_g.run) == INJ_RUNNING && trk_active())
		trk_stop(WIRE_END_EXIT);
	errno = saved_errno;
}

int heaptap_inject_stop(void)
{
	int run = atomic_load(&inj_g.run);

	if (run == INJ_STARTING)
		return -EAGAIN;
	if (run != INJ_RUNNING || !trk_active())
		return -ENOENT;
	trk_stop(WIRE_END_STOP);
	return 0;
}

int heaptap_inject_detach(void)
{
	int run = atomic_load(&inj_g.run);

	if (run == INJ_IDLE)
		return -ENOENT;
	/* STARTING: the thread checks the flag once the session runs */
	atomic_store(&inj_g.detach_req, 1);
	return 0;
}
