/* tests/sample/check_peer.h - heaptap's side of a track/ session over a socketpair, for the sampling suites (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * check_tick.c and check_timerless.c start real sessions inside the test
 * process and play heaptap on the other end of a socketpair: gather what
 * the library sends (drain), count its records (count) and send it
 * control records (send_ctl).
 */
#ifndef HEAPTAP_TESTS_SAMPLE_CHECK_PEER_H
#define HEAPTAP_TESTS_SAMPLE_CHECK_PEER_H

#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "track/track.h"
#include "track/wire.h"

/* What came from the library so far. */
struct peer {
	int fd;
	uint8_t *buf;
	size_t len, cap;
	int eof;
};

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* drain - read what is there (wait_ms > 0: until EOF or that long). */
static inline void drain(struct peer *p, unsigned wait_ms)
{
	uint64_t until = now_ms() + wait_ms;

	while (!p->eof) {
		uint8_t tmp[65536];
		ssize_t n = recv(p->fd, tmp, sizeof(tmp), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

			if (!wait_ms || now_ms() >= until)
				return;
			poll(&pfd, 1, 10);
			continue;
		}
		if (n <= 0) {
			p->eof = 1;
			return;
		}
		if (p->cap - p->len < (size_t)n) {
			p->cap = p->cap ? p->cap * 2 : 1 << 20;
			while (p->cap - p->len < (size_t)n)
				p->cap *= 2;
			p->buf = realloc(p->buf, p->cap);
			ck_assert_ptr_nonnull(p->buf);
		}
		memcpy(p->buf + p->len, tmp, (size_t)n);
		p->len += (size_t)n;
	}
}

/* What the stream holds, record by record (after the header). */
struct counts {
	unsigned ticks, chunks, sites;
	uint64_t first_tick_ns, last_tick_ns; /* the TICKs' own times (since the session's start) */
	int end_reason;			      /* -1: no END */
};

static inline struct counts count(const struct peer *p)
{
	struct counts c = { .end_reason = -1 };
	const uint8_t *q = p->buf, *end = p->buf + p->len;
	struct wire_header h;

	ck_assert_uint_ge(p->len, sizeof(h));
	memcpy(&h, q, sizeof(h));
	ck_assert_uint_le(h.header_len, p->len);
	q += h.header_len;
	while (q < end) {
		uint8_t type = *q++;
		uint64_t len;

		if (wire_get_varint(&q, end, &len) < 0 || len > (uint64_t)(end - q))
			break; /* the rest has not arrived */
		if (type == WIRE_REC_TICK) {
			const uint8_t *e = q;
			uint64_t t;

			ck_assert_int_eq(wire_get_varint(&e, q + len, &t), 0);
			if (!c.ticks++)
				c.first_tick_ns = t;
			c.last_tick_ns = t;
		} else if (type == WIRE_REC_CHUNK) {
			c.chunks++;
		} else if (type == WIRE_REC_SITES) {
			c.sites++;
		} else if (type == WIRE_REC_END) {
			const uint8_t *e = q;
			uint64_t total, reason;

			ck_assert_int_eq(wire_get_varint(&e, q + len, &total), 0);
			ck_assert_int_eq(wire_get_varint(&e, q + len, &reason), 0);
			c.end_reason = (int)reason;
		}
		q += len;
	}
	return c;
}

/* site - one call site of the hooks (its own return address: keep it out of line). */
__attribute__((noinline)) static void *site(size_t n)
{
	void *p = trk_malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

/*
 * churn - allocate and free for ms milliseconds, reading the stream, until
 * done(p) says so (if given); nap_us > 0: that long a nap between rounds of
 * 1000 (a program that also waits), 0: busy throughout.
 */
static inline void churn(struct peer *p, unsigned ms, int (*done)(const struct peer *), unsigned nap_us)
{
	uint64_t until = now_ms() + ms;

	while (now_ms() < until) {
		for (int i = 0; i < 1000; i++)
			trk_free(site(200 + (size_t)(i % 64) * 8));
		drain(p, 0);
		if (done && done(p))
			return;
		if (nap_us)
			usleep(nap_us);
	}
}

/* send_ctl - a control record as heaptap sends it: CTL_SAMPLE with rate (and a seed), or one without payload. */
static inline void send_ctl(int fd, uint8_t type, uint64_t rate)
{
	uint8_t m[2 + 2 * WIRE_VARINT_MAX];
	size_t k = 0;

	m[k++] = type;
	if (type == WIRE_CTL_SAMPLE) {
		uint8_t pl[2 * WIRE_VARINT_MAX];
		size_t n = 0;

		n += wire_put_varint(pl + n, rate);
		n += wire_put_varint(pl + n, 1);
		k += wire_put_varint(m + k, n);
		memcpy(m + k, pl, n);
		k += n;
	} else {
		m[k++] = 0;
	}
	ck_assert_int_eq(write(fd, m, k), (ssize_t)k);
}

#endif
