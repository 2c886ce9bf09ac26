/* tests/lib/check_session.h - a track/ session inside a test: the socketpair and the thread reading it (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * The track/ suites run real sessions in the test process: the hooks are
 * called directly (as inject/'s GOT slots would call them) and the library
 * writes its stream into one end of a socketpair. The other end is heaptap's;
 * here a thread reads it until EOF and keeps every byte:
 *
 *   struct ck_reader r;
 *   struct trk_config cfg = { 0 };
 *
 *   cfg.fd = ck_reader_start(&r);     the library's end
 *   trk_start(&cfg); ... trk_stop(WIRE_END_STOP);
 *   ck_reader_join(&r);               EOF seen; r.buf holds r.len bytes
 *   ... decode r.buf (tests/lib/check_decode.h) ...; free(r.buf);
 *
 * r.fd is heaptap's end: a test writes WIRE_CTL_* records into it, before
 * trk_start (a CTL_SAMPLE waiting) or while the session runs. While the
 * thread runs, r.buf and r.len are read under r.lock (a test that waits
 * for something to arrive). ck_reader_join closes r.fd; the library's end
 * is the session's (trk_stop closes it).
 *
 * Needs track/wire.h only; static inline, so no build file lists it.
 */
#ifndef HEAPTAP_TESTS_LIB_CHECK_SESSION_H
#define HEAPTAP_TESTS_LIB_CHECK_SESSION_H

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct ck_reader {
	int fd;		      /* heaptap's end */
	pthread_mutex_t lock; /* buf and len, while the thread runs */
	uint8_t *buf;	      /* all that was read, malloc'd: the caller frees it */
	size_t len, cap;
	pthread_t th;
};

static inline void *ck_reader_main(void *arg)
{
	struct ck_reader *r = arg;
	uint8_t tmp[65536];

	for (;;) {
		ssize_t n = read(r->fd, tmp, sizeof(tmp));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		pthread_mutex_lock(&r->lock);
		if (r->cap - r->len < (size_t)n) {
			r->cap = r->cap ? r->cap * 2 : 1 << 20;
			while (r->cap - r->len < (size_t)n)
				r->cap *= 2;
			r->buf = realloc(r->buf, r->cap);
			ck_assert_ptr_nonnull(r->buf);
		}
		memcpy(r->buf + r->len, tmp, (size_t)n);
		r->len += (size_t)n;
		pthread_mutex_unlock(&r->lock);
	}
}

/* ck_reader_start - a socketpair whose heaptap end r reads from a thread; returns the library's end */
static inline int ck_reader_start(struct ck_reader *r)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->fd = sv[1];
	ck_assert_int_eq(pthread_create(&r->th, NULL, ck_reader_main, r), 0);
	return sv[0];
}

/* ck_reader_join - wait for the thread (EOF: the session ended), close heaptap's end */
static inline void ck_reader_join(struct ck_reader *r)
{
	pthread_join(r->th, NULL);
	close(r->fd);
	pthread_mutex_destroy(&r->lock);
}

#endif /* HEAPTAP_TESTS_LIB_CHECK_SESSION_H */
