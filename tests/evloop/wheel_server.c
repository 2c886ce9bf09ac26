/* tests/evloop/wheel_server.c - a one-thread epoll server with a timer wheel, as nginx's workers are */
/* SPDX-License-Identifier: MIT */
/*
 * wheel_server: listens on 127.0.0.1 (an ephemeral port), prints
 * "ready pid=N port=P", and serves line requests on one thread:
 *
 *   "N\n"      allocates N bytes through srv_alloc (kept until the
 *              connection closes, one in ten kept for good: a leak) and
 *              answers "ok N patched=0|1\n" (patched: its malloc GOT slot
 *              holds another address than at start, i.e. heaptap's hook)
 *   "stats\n"  "stats eintr=E late_us=L ticks=T closed=C\n"
 *
 * Timers live in a wheel of 64 slots of 5 ms; epoll_wait's timeout is the
 * time to the next slot with a timer. Each connection has an idle timer
 * (5 s) that closes it; a 20 ms tick measures its own lateness (largest,
 * less the time the thread waited for a CPU meanwhile: its schedstat).
 * Every failing call but EINTR ends the server; EINTR is counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/evloop/evloop.h"

#define SLOTS 64
#define SLOT_US 5000
#define MAXCONN 256
#define TICK_US 20000
#define IDLE_US 5000000

struct timer {
	int64_t at;		/* deadline, us; 0 unarmed */
	struct timer *next;
	int conn;		/* -1: the tick */
};

struct conn {
	int fd;
	char in[256];
	size_t len;
	void *blocks[64];
	size_t nblocks;
	struct timer idle;
};

static struct timer *wheel[SLOTS];
static struct conn conns[MAXCONN];
static struct timer tick = { .conn = -1 };
static long eintr, ticks, closed;
static int64_t late_max;
static void *malloc_at_start;
static int schedstat_fd = -1;

__attribute__((noinline)) void *srv_alloc(size_t n)
{
	void *p = malloc(n);

	if (p)
		memset(p, 2, n);
	return p;
}

static void timer_add(struct timer *t, int64_t at)
{
	unsigned s = (unsigned)((at / SLOT_US) % SLOTS);

	t->at = at;
	t->next = wheel[s];
	wheel[s] = t;
}

static void timer_del(struct timer *t)
{
	struct timer **pp;
	unsigned s;

	if (!t->at)
		return;
	s = (unsigned)((t->at / SLOT_US) % SLOTS);
	for (pp = &wheel[s]; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->at = 0;
}

/* Milliseconds to the earliest timer, rounded up (the wheel is scanned: 64 slots). */
static int next_timeout(int64_t now)
{
	int64_t first = 0;
	struct timer *t;
	unsigned s;

	for (s = 0; s < SLOTS; s++)
		for (t = wheel[s]; t; t = t->next)
			if (!first || t->at < first)
				first = t->at;
	if (!first)
		return -1;
	return first <= now ? 0 : (int)((first - now + 999) / 1000);
}

static void conn_close(int i)
{
	size_t k;

	timer_del(&conns[i].idle);
	close(conns[i].fd);
	for (k = 0; k < conns[i].nblocks; k++)
		if (k % 10)
			free(conns[i].blocks[k]);
	conns[i].fd = -1;
	closed++;
}

/* w0, tc: run-queue wait and time when the wait began (a tick already due then is not its fault) */
static void expire(int64_t now, int64_t w0, int64_t tc)
{
	struct timer *due = NULL, **pp, *t;
	unsigned s;

	for (s = 0; s < SLOTS; s++)
		for (pp = &wheel[s]; *pp;) {
			t = *pp;
			if (t->at <= now) {
				*pp = t->next;
				t->next = due;
				due = t;
			} else {
				pp = &t->next;
			}
		}
	while ((t = due)) {
		due = t->next;
		if (t->conn < 0) {
			int64_t waited = evl_rq_wait_us(schedstat_fd) - w0;
			int64_t late = now - (t->at > tc ? t->at : tc) - waited;

			ticks++;
			if (late > late_max)
				late_max = late;
			timer_add(t, t->at + TICK_US > now ? t->at + TICK_US : now + TICK_US);
		} else {
			t->at = 0;
			conn_close(t->conn);
		}
	}
}

static int reply(int fd, const char *out, int n)
{
	return n > 0 && write(fd, out, (size_t)n) == n ? 0 : -1;
}

static void serve(int i)
{
	struct conn *c = &conns[i];
	char *nl, out[160];
	ssize_t n = read(c->fd, c->in + c->len, sizeof(c->in) - 1 - c->len);

	if (n <= 0) {
		if (n < 0 && errno == EINTR)
			eintr++;
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			conn_close(i);
		return;
	}
	c->len += (size_t)n;
	c->in[c->len] = '\0';
	timer_del(&c->idle);
	timer_add(&c->idle, evl_now_us() + IDLE_US);
	while ((nl = strchr(c->in, '\n'))) {
		*nl = '\0';
		if (!strcmp(c->in, "stats")) {
			if (reply(c->fd, out, snprintf(out, sizeof(out), "stats eintr=%ld late_us=%ld "
						       "ticks=%ld closed=%ld\n", eintr, (long)late_max,
						       ticks, closed)) < 0)
				exit(4);
			late_max = 0;
		} else {
			long sz = atol(c->in);
			void *p = srv_alloc((size_t)(sz > 0 ? sz : 1));

			if (!p)
				exit(3);
			if (c->nblocks < 64)
				c->blocks[c->nblocks++] = p;
			if (reply(c->fd, out, snprintf(out, sizeof(out), "ok %ld patched=%d\n", sz,
						       evl_malloc_slot() != malloc_at_start)) < 0)
				exit(4);
		}
		c->len -= (size_t)(nl + 1 - c->in);
		memmove(c->in, nl + 1, c->len + 1);
	}
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct epoll_event ev = { .events = EPOLLIN }, evs[32];
	int lfd, epfd, n, i, k, one = 1;
	int64_t w0, tc;

	malloc_at_start = evl_malloc_slot();
	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY);
	for (i = 0; i < MAXCONN; i++)
		conns[i].fd = -1;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	epfd = epoll_create1(0);
	if (lfd < 0 || epfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 128) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen) < 0)
		return 2;
	ev.data.u32 = MAXCONN;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev) < 0)
		return 2;
	printf("ready pid=%d port=%d\n", (int)getpid(), ntohs(a.sin_port));
	fflush(stdout);
	timer_add(&tick, evl_now_us() + TICK_US);
	for (;;) {
		w0 = evl_rq_wait_us(schedstat_fd);
		tc = evl_now_us();
		n = epoll_wait(epfd, evs, 32, next_timeout(tc));
		if (n < 0) {
			if (errno != EINTR)
				return 5;
			eintr++;
			continue;
		}
		for (k = 0; k < n; k++) {
			if (evs[k].data.u32 == MAXCONN) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);

				if (fd < 0)
					continue;
				for (i = 0; i < MAXCONN && conns[i].fd >= 0; i++)
					;
				if (i == MAXCONN) {
					close(fd);
					continue;
				}
				memset(&conns[i], 0, sizeof(conns[i]));
				conns[i].fd = fd;
				conns[i].idle.conn = i;
				timer_add(&conns[i].idle, evl_now_us() + IDLE_US);
				ev.data.u32 = (uint32_t)i;
				if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
					return 2;
			} else {
				serve((int)evs[k].data.u32);
			}
		}
		expire(evl_now_us(), w0, tc);
	}
}
