/* tests/evloop/idle.c - one thread idle in one waiting call kind, counting what it sees */
/* SPDX-License-Identifier: MIT */
/*
 * idle KIND TIMEOUT_MS [SOCKET_PATH]: one thread, no other, waits in KIND
 * (epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect6,
 * accept, read, sigwaitinfo, pause; nanosleep, clock_nanosleep and futex,
 * a wait with a timeout on a word nobody wakes, which see a line on stdin
 * only when their timer expired), with a timer of TIMEOUT_MS (-1: none)
 * kept as an event loop keeps it: a deadline, and each wait gets what is
 * left of it. The p-variants pass a mask that unblocks SIGUSR2, which the
 * thread otherwise blocks; accept and pause have a SIGUSR2 / SIGUSR1
 * handler without SA_RESTART; read and accept set SO_RCVTIMEO to the
 * timeout. Events: a line on stdin (a socket), a connection to
 * SOCKET_PATH (accept), SIGUSR1 (sigwaitinfo, pause). After each event it
 * allocates through evl_marker and answers on stdout:
 *
 *   ev N eintr=E late_us=L expiries=X early=W maskbad=M patched=0|1
 *
 * N events so far, E calls that failed with EINTR, L the latest expiry of
 * the timer after its deadline or, if the wait began later, after that
 * (microseconds, the largest since the last answer), less
 * the time the thread waited for a CPU during that wait (its schedstat:
 * on a loaded machine that is the scheduler's, not the timer's), X
 * expiries, W wake-ups with nothing to do before the deadline, M times the
 * thread's signal mask was not the one it set, patched: its malloc GOT
 * slot holds another address than at start (heaptap's hook).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tests/evloop/evloop.h"

static long events, eintr, expiries, early, maskbad;
static int64_t late_max;
static void *malloc_at_start;
static volatile sig_atomic_t got_usr1;
static sigset_t own_mask;

static int schedstat_fd = -1;
static int futex_word;

__attribute__((noinline)) void *evl_marker(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 1, n);
	return p;	/* kept: the report shows it as leaked */
}

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
}

static void answer(void)
{
	char line[200];
	int n;

	events++;
	if (!evl_marker(1000 + (size_t)(events % 100)))
		exit(3);
	n = snprintf(line, sizeof(line), "ev %ld eintr=%ld late_us=%lld expiries=%ld early=%ld "
		     "maskbad=%ld patched=%d\n", events, eintr, (long long)late_max, expiries, early,
		     maskbad, evl_malloc_slot() != malloc_at_start);
	if (write(1, line, (size_t)n) != n)
		exit(3);
	late_max = 0;
}

/* one line per event on stdin */
static void drain_stdin(void)
{
	char buf[256];
	ssize_t n = read(0, buf, sizeof(buf)), i;

	if (n == 0)
		exit(0);
	for (i = 0; i < n; i++)
		if (buf[i] == '\n')
			answer();
}

static sigset_t unblock, waitset; /* the p-variants' mask (SIGUSR2 unblocked); sigwaitinfo's set */

/* setup - handlers, masks, the epoll set, SO_RCVTIMEO, accept's socket at path; 0 or exit code 2 */
static int setup(const char *kind, long period, const char *path, int *epfd, int *lfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = 0 };
	struct sigaction sa;
	struct timeval tv;

	malloc_at_start = evl_malloc_slot();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART */
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&own_mask);
	sigaddset(&own_mask, SIGUSR2);
	if (!strcmp(kind, "sigwaitinfo"))
		sigaddset(&own_mask, SIGUSR1);
	sigprocmask(SIG_SETMASK, &own_mask, NULL);
	sigemptyset(&unblock);
	sigemptyset(&waitset);
	sigaddset(&waitset, SIGUSR1);
	if (strstr(kind, "epoll")) {
		*epfd = epoll_create1(0);
		if (*epfd < 0 || epoll_ctl(*epfd, EPOLL_CTL_ADD, 0, &ev) < 0)
			return 2;
	}
	if (period > 0 && (!strcmp(kind, "read") || !strcmp(kind, "accept"))) {
		tv.tv_sec = period / 1000000;
		tv.tv_usec = period % 1000000;
		if (setsockopt(!strcmp(kind, "read") ? 0 : -1, SOL_SOCKET, SO_RCVTIMEO, &tv,
			       sizeof(tv)) < 0 && !strcmp(kind, "read"))
			return 2;
	}
	if (!strcmp(kind, "accept")) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		if (!path)
			return 2;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		*lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (*lfd < 0 || bind(*lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(*lfd, 16) < 0)
			return 2;
		if (period > 0 && setsockopt(*lfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
			return 2;
	}
	return 0;
}

/*
 * wait_once - one wait in kind, for what is left of the timer: left ms,
 * tsp, tvp (-1, NULL, NULL: no timer); read and accept return 1 (their
 * call is the wait, sock_wait). *unknown set: no such kind (or a sleep
 * without a timer).
 */
static int wait_once(const char *kind, int epfd, long left, struct timespec *tsp,
		     struct timeval *tvp, fd_set *rfds, struct pollfd *pfd, int *unknown)
{
	struct epoll_event evs[4];
	siginfo_t si;

	if (!strcmp(kind, "epoll_wait"))
		return epoll_wait(epfd, evs, 4, (int)left);
	if (!strcmp(kind, "epoll_pwait"))
		return epoll_pwait(epfd, evs, 4, (int)left, &unblock);
	if (!strcmp(kind, "epoll_pwait2"))
		return (int)syscall(SYS_epoll_pwait2, epfd, evs, 4, tsp, &unblock, 8);
	if (!strcmp(kind, "poll"))
		return poll(pfd, 1, (int)left);
	if (!strcmp(kind, "ppoll"))
		return ppoll(pfd, 1, tsp, &unblock);
	if (!strcmp(kind, "select"))
		return select(1, rfds, NULL, NULL, tvp);
	if (!strcmp(kind, "pselect6"))
		return pselect(1, rfds, NULL, NULL, tsp, &unblock);
	if (!strcmp(kind, "read") || !strcmp(kind, "accept"))
		return 1;	/* the call itself is the wait, sock_wait */
	if (!strcmp(kind, "sigwaitinfo"))
		return tsp ? sigtimedwait(&waitset, &si, tsp) : sigwaitinfo(&waitset, &si);
	if (!strcmp(kind, "pause"))
		return pause();
	if (!strcmp(kind, "nanosleep") && tsp)
		return nanosleep(tsp, NULL);
	if (!strcmp(kind, "clock_nanosleep") && tsp)
		return (int)syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, tsp, NULL);
	if (!strcmp(kind, "futex") && tsp)
		return (int)syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, tsp, NULL, 0);
	*unknown = 1;
	return -1;
}

/* sock_wait - read's or accept's wait, each event answered: 0, -1 (errno), or 1: end of stdin */
static int sock_wait(const char *kind, int lfd)
{
	if (!strcmp(kind, "read")) {
		char buf[256];
		ssize_t n = read(0, buf, sizeof(buf)), i;

		if (n == 0)
			return 1;
		for (i = 0; i < n; i++)
			if (buf[i] == '\n')
				answer();
		return n > 0 ? 0 : -1;
	} else {
		int c = accept(lfd, NULL, NULL);

		if (c < 0)
			return -1;
		close(c);
		answer();
		return 0;
	}
}

/* woke - what a wait of kind that returned r (not EINTR) saw: answer it */
static void woke(const char *kind, int r, int sleeps, fd_set *rfds, struct pollfd *pfd)
{
	if (!strcmp(kind, "sigwaitinfo") && r == SIGUSR1)
		answer();
	else if (strstr(kind, "epoll") && r > 0)
		drain_stdin();
	else if ((!strcmp(kind, "poll") || !strcmp(kind, "ppoll")) && r > 0)
		drain_stdin();
	else if ((!strcmp(kind, "select") || !strcmp(kind, "pselect6")) && r > 0 &&
		 FD_ISSET(0, rfds))
		drain_stdin();
	else if (sleeps && poll(pfd, 1, 0) > 0)
		drain_stdin();	/* the lines that came while it slept */
}

int main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "";
	long period = argc > 2 ? atol(argv[2]) * 1000 : -1;	/* us */
	int epfd = -1, lfd = -1, r, unknown = 0;
	int sockwait = !strcmp(kind, "read") || !strcmp(kind, "accept");
	int sleeps = strstr(kind, "nanosleep") || !strcmp(kind, "futex");
	sigset_t cur;
	int64_t deadline = 0, left, t, w0, tc;
	struct timespec ts, *tsp;
	struct timeval tv, *tvp;
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	fd_set rfds;

	if (argc < 3)
		return 2;
	if (setup(kind, period, argc > 3 ? argv[3] : NULL, &epfd, &lfd))
		return 2;
	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY);
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	deadline = evl_now_us() + period;
	for (;;) {
		tsp = NULL;
		tvp = NULL;
		if (period > 0) {
			left = deadline - evl_now_us();
			if (left < 0)
				left = 0;
			ts.tv_sec = left / 1000000;
			ts.tv_nsec = left % 1000000 * 1000;
			tv.tv_sec = left / 1000000;
			tv.tv_usec = left % 1000000;
			tsp = &ts;
			tvp = &tv;
		}
		left = period > 0 ? (deadline - evl_now_us() + 999) / 1000 : -1;
		if (period > 0 && left < 0)
			left = 0;
		FD_ZERO(&rfds);
		FD_SET(0, &rfds);
		w0 = evl_rq_wait_us(schedstat_fd);
		tc = evl_now_us();
		errno = 0;
		r = wait_once(kind, epfd, (long)left, tsp, tvp, &rfds, &pfd, &unknown);
		if (unknown)
			return 2;
		if (sleeps && r < 0 && errno == ETIMEDOUT)
			r = 0;	/* the futex's timeout */
		if (sockwait) {	/* SO_RCVTIMEO counts from the call */
			deadline = evl_now_us() + period;
			r = sock_wait(kind, lfd);
			if (r == 1)
				return 0;
		}
		t = evl_now_us();
		sigemptyset(&cur);
		sigprocmask(SIG_SETMASK, NULL, &cur);
		if (memcmp(&cur, &own_mask, 8) && !maskbad++)	/* the kernel's 64 signals */
			fprintf(stderr, "idle: signal mask %#llx, set %#llx\n", *(unsigned long long *)&cur,
				*(unsigned long long *)&own_mask);
		if (r < 0 && errno == EINTR) {
			if (!strcmp(kind, "pause") && got_usr1) {
				got_usr1 = 0;
				answer();
			} else {
				eintr++;
			}
			continue;
		}
		if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return 4;
		woke(kind, r, sleeps, &rfds, &pfd);
		if (period <= 0)
			continue;
		if (t >= deadline) {
			expiries++;
			/* a wait entered after its deadline is not what made it late */
			left = t - (deadline > tc ? deadline : tc) - (evl_rq_wait_us(schedstat_fd) - w0);
			if (left > late_max)
				late_max = left;
			deadline += period;
			if (deadline <= t || sockwait)
				deadline = t + period;
		} else if (r == 0 || (r < 0 && errno == EAGAIN)) {
			early++;
		}
	}
}
