/* tests/lib/check_stream.h - crafted streams handed to itp_run over a socketpair, part by part (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * A suite builds a stream the library could have sent with the builder of
 * tests/unit/check_interpret_wire.h (sb_header, ck_begin .. ck_end,
 * sb_sites, sb_tick, sb_end), in one part or several, and hands it to
 * itp_run the way a target's library would: through a socketpair, written
 * by a thread of its own while itp_run reads the other end in the test's
 * thread.
 *
 *   struct ck_feed f = { 0 };
 *
 *   ck_feed_add(&f, &head, 0);          at once
 *   ck_feed_add(&f, &tail, 400);        400 ms after the part before
 *   rc = ck_feed_run(&f, &opt, &res);   itp_run(fd, &opt, &res)'s result
 *
 * Each part is written whole after its pause; a part whose due_ns is set
 * is written no earlier than that CLOCK_MONOTONIC time as well (a library
 * whose rounds are read late, in bursts); a part whose raise is set sets
 * *raise = 1 after its pause, before it is written (heaptap's stop asked
 * while the library still sends: opt.stop). A part of NULL writes
 * nothing: a pause, a raise. After the last part the thread shuts its side
 * for writing (the library's end of the stream); with back_ms it then
 * waits up to back_ms for what itp_run wrote to the library (WIRE_CTL_*)
 * and keeps up to sizeof(back) bytes of it in back, nback (-1: nothing
 * came). ck_feed_run returns once itp_run has and the thread ended; the
 * parts stay the caller's to free.
 *
 * ck_send_all is the one loop that writes a buffer into a socket (send
 * with MSG_NOSIGNAL until all is written or the peer is gone), for the
 * suites' own feeders too.
 *
 * Needs heaptap_interpret; static inline, so no build file lists it.
 */
#ifndef HEAPTAP_TESTS_LIB_CHECK_STREAM_H
#define HEAPTAP_TESTS_LIB_CHECK_STREAM_H

#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "interpret/interpret.h"
#include "tests/unit/check_interpret_wire.h"

#define CK_FEED_PARTS 32

struct ck_feed {
	size_t n;
	struct ck_feed_part {
		const struct sbuf *s;
		unsigned pause_ms;	      /* before this part */
		uint64_t due_ns;	      /* nonzero: not before this CLOCK_MONOTONIC time */
		volatile sig_atomic_t *raise; /* set to 1 after the pause */
	} part[CK_FEED_PARTS];
	int back_ms;	  /* after the stream: wait this long for what itp_run sent */
	uint8_t back[64]; /* what it sent */
	ssize_t nback;	  /* its length, -1 if nothing came */
	int fd;		  /* the library's end, while ck_feed_run runs */
};

/* ck_send_all - write n bytes of p into socket fd; stops early if the peer is gone */
static inline void ck_send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		b += w;
		n -= (size_t)w;
	}
}

/* ck_feed_add - part s (NULL: none) after pause_ms; returns the part, for due_ns or raise */
static inline struct ck_feed_part *ck_feed_add(struct ck_feed *f, const struct sbuf *s,
					       unsigned pause_ms)
{
	struct ck_feed_part *p;

	ck_assert_uint_lt(f->n, CK_FEED_PARTS);
	p = &f->part[f->n++];
	p->s = s;
	p->pause_ms = pause_ms;
	p->due_ns = 0;
	p->raise = NULL;
	return p;
}

static inline uint64_t ck_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void *ck_feed_main(void *arg)
{
	struct ck_feed *f = arg;

	for (size_t i = 0; i < f->n; i++) {
		const struct ck_feed_part *p = &f->part[i];

		if (p->pause_ms)
			usleep((useconds_t)p->pause_ms * 1000);
		if (p->due_ns) {
			uint64_t now = ck_mono_ns();

			if (p->due_ns > now)
				usleep((useconds_t)((p->due_ns - now) / 1000));
		}
		if (p->raise)
			*p->raise = 1;
		if (p->s)
			ck_send_all(f->fd, p->s->p, p->s->len);
	}
	shutdown(f->fd, SHUT_WR);
	f->nback = -1;
	if (f->back_ms) {
		struct pollfd pfd = { .fd = f->fd, .events = POLLIN };

		if (poll(&pfd, 1, f->back_ms) > 0)
			f->nback = recv(f->fd, f->back, sizeof(f->back), MSG_DONTWAIT);
	}
	return NULL;
}

/* ck_feed_run - the parts of f through itp_run(fd, opt, res); its return value */
static inline int ck_feed_run(struct ck_feed *f, const struct itp_options *opt,
			      struct itp_result *res)
{
	pthread_t th;
	int sv[2], rc;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f->fd = sv[1];
	ck_assert_int_eq(pthread_create(&th, NULL, ck_feed_main, f), 0);
	rc = itp_run(sv[0], opt, res);
	pthread_join(th, NULL);
	close(sv[0]);
	close(sv[1]);
	f->fd = -1;
	return rc;
}

#endif /* HEAPTAP_TESTS_LIB_CHECK_STREAM_H */
