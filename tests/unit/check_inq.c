/* tests/unit/check_inq.c - Check suite for interpret/inq.c: the reader thread's queue keeps order and its bound */
/* SPDX-License-Identifier: MIT */
/*
 * The queue sits between the target's socket and the interpreter
 * (docs/stream.md, "Reading"). What must hold:
 *   - every byte comes out once, in order, however reads and takes are cut;
 *   - it never holds more than its limit: once full it stops reading, so
 *     the writer's socket fills and the writer can write no more (the
 *     library's back-pressure and its 10-s rule depend on that), and it
 *     stops as well when the interpreter takes nothing for a while;
 *   - EOF and read errors come after the bytes read before them;
 *   - a signal still interrupts the interpreter's wait;
 *   - once a stop was asked it reads on, past the limit up to twice it and
 *     with nothing taken, so the library's last bytes never wait for the
 *     interpreter;
 *   - stopping it ends the reader whether it waits for the socket or for room.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "interpret/inq_internal.h"

/* the byte at stream offset i: a pattern where a lost, doubled or moved block shows */
static uint8_t pattern(uint64_t i)
{
	uint64_t x = (i >> 3) * 0x9e3779b97f4a7c15ull;

	return (uint8_t)((x >> 56) ^ (i & 7) ^ (i >> 17));
}

static uint32_t rnd_state = 12345;

static uint32_t rnd(void)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return rnd_state >> 8;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct writer {
	int fd;
	uint64_t total;
	uint64_t sent;
};

/* Send total pattern bytes in writes of random sizes (1 byte .. 200 KiB), then close. */
static void *write_pattern(void *arg)
{
	struct writer *w = arg;
	static uint8_t buf[200 << 10];

	while (w->sent < w->total) {
		size_t n = 1 + rnd() % sizeof(buf), i;
		ssize_t k;

		if (rnd() % 4 == 0)
			n = 1 + rnd() % 64; /* trickles: many small reads share a block */
		if (n > w->total - w->sent)
			n = (size_t)(w->total - w->sent);
		for (i = 0; i < n; i++)
			buf[i] = pattern(w->sent + i);
		k = send(w->fd, buf, n, MSG_NOSIGNAL);
		if (k <= 0)
			break;
		w->sent += (uint64_t)k;
	}
	close(w->fd);
	return NULL;
}

/* Take everything until EOF with takes of random sizes; check each byte. Returns the count. */
static uint64_t take_and_check(struct itp_inq *q, int slow)
{
	static uint8_t buf[300 << 10];
	uint64_t got = 0;

	for (;;) {
		size_t cap = 1 + rnd() % sizeof(buf);
		ssize_t n = itp_inq_take(q, buf, cap, 1000), i;

		if (n == -EAGAIN || n == -EINTR)
			continue;
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		ck_assert_uint_le((size_t)n, cap);
		for (i = 0; i < n; i++)
			if (buf[i] != pattern(got + (uint64_t)i))
				ck_abort_msg("byte %llu: %u, expected %u",
					     (unsigned long long)(got + (uint64_t)i), buf[i],
					     pattern(got + (uint64_t)i));
		got += (uint64_t)n;
		if (slow && rnd() % 8 == 0)
			sleep_ms(1); /* the queue fills meanwhile */
	}
	return got;
}

static void order_run(size_t limit, uint64_t total, int slow)
{
	struct writer w = {.total = total};
	struct itp_input st;
	struct itp_inq *q;
	pthread_t thr;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	w.fd = sv[1];
	ck_assert_int_eq(itp_inq_start(&q, sv[0], limit), 0);
	ck_assert_int_eq(pthread_create(&thr, NULL, write_pattern, &w), 0);
	ck_assert_uint_eq(take_and_check(q, slow), total);
	/* EOF stays EOF */
	ck_assert_int_eq(itp_inq_take(q, &st, 1, 0), 0);
	ck_assert_int_eq(itp_inq_ended(q), 1);
	pthread_join(thr, NULL);
	itp_inq_stop(q, &st);
	ck_assert_uint_eq(w.sent, total);
	ck_assert_uint_eq(st.bytes, total);
	ck_assert_uint_le(st.peak_bytes, !limit ? ITP_INQ_LIMIT : limit < 2 * ITP_INQ_BLOCK ? 2 * ITP_INQ_BLOCK : limit);
	close(sv[0]);
}

/*
 * A socket pair sv whose writing end sv[1] has a 64 KiB send buffer, and a
 * queue *q of limit bytes (0: the default) reading sv[0]; returns the send
 * buffer the kernel gave (it doubles what is asked).
 */
static int start_pair(int sv[2], size_t limit, struct itp_inq **q)
{
	int sndbuf = 64 << 10;
	socklen_t sl = sizeof(sndbuf);

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	ck_assert_int_eq(getsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, &sl), 0);
	ck_assert_int_eq(itp_inq_start(q, sv[0], limit), 0);
	return sndbuf;
}

/* write pattern bytes from *sent without blocking until 300 ms pass without a byte going in */
static void fill_socket(int fd, uint64_t *sent, uint64_t want)
{
	static uint8_t buf[64 << 10];
	int quiet = 0;

	while (*sent < want && quiet < 30) {
		size_t i;
		ssize_t k;

		for (i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(*sent + i);
		k = send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0) {
			*sent += (uint64_t)k;
			quiet = 0;
		} else {
			ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
			sleep_ms(10);
			quiet++;
		}
	}
}

/* take from q until *got reaches upto, at most cap bytes a take, each byte checked against the pattern */
static void take_upto(struct itp_inq *q, uint8_t *buf, size_t cap, uint64_t *got, uint64_t upto)
{
	while (*got < upto) {
		size_t want = upto - *got < cap ? (size_t)(upto - *got) : cap;
		ssize_t n = itp_inq_take(q, buf, want, 1000), i;

		ck_assert_int_gt(n, 0);
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(buf[i], pattern(*got + (uint64_t)i));
		*got += (uint64_t)n;
	}
}

START_TEST(order_default_limit)
{
	order_run(0, 24u << 20, 0);
}
END_TEST

START_TEST(order_small_limit_slow_taker)
{
	/* two blocks: the reader waits for room over and over, blocks are reused */
	order_run(2 * ITP_INQ_BLOCK, 6u << 20, 1);
}
END_TEST

/*
 * The bound: nobody takes, the writer writes without blocking until the
 * socket stays full. It can have written at most the limit plus what the
 * socket holds; a reader that read past its limit lets it write all.
 */
START_TEST(bound_holds_then_resumes)
{
	const size_t limit = 4 * ITP_INQ_BLOCK;
	const uint64_t want = 16u << 20;
	static uint8_t buf[64 << 10];
	struct itp_input st;
	struct itp_inq *q;
	uint64_t sent = 0, got = 0;
	int sv[2], sndbuf = start_pair(sv, limit, &q);

	fill_socket(sv[1], &sent, want);
	ck_assert_msg(sent < want, "the writer never blocked: the reader read %llu bytes past a "
		      "limit of %zu", (unsigned long long)sent, limit);
	/* the reader filled its queue (all but the last block's tail) ... */
	ck_assert_uint_ge(sent, limit - ITP_INQ_MIN_READ);
	/* ... and no further: the rest is in the socket (under SO_SNDBUF, plus at most one more skb) */
	ck_assert_uint_le(sent, limit + 2 * (uint64_t)sndbuf);
	ck_assert_uint_ge(itp_inq_full_ns(q), 1);

	/* taking frees room: everything written so far comes out in order, and more goes in */
	take_upto(q, buf, sizeof(buf), &got, sent);
	{
		ssize_t k;

		memset(buf, 0, sizeof(buf));
		for (size_t i = 0; i < 1000; i++)
			buf[i] = pattern(sent + i);
		k = send(sv[1], buf, 1000, MSG_NOSIGNAL | MSG_DONTWAIT);
		ck_assert_int_eq(k, 1000);
		sent += 1000;
		take_upto(q, buf, sizeof(buf), &got, sent);
	}
	itp_inq_stop(q, &st);
	ck_assert_uint_le(st.peak_bytes, limit);
	ck_assert_uint_ge(st.full_waits, 1);
	ck_assert_uint_eq(st.bytes, sent);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * A stuck interpreter: bytes wait and nothing is taken for the stall time.
 * The reader stops although its queue has room, so the writer blocks long
 * before the limit (and the library's 10-s rule can start); one take lets
 * it go on.
 */
START_TEST(stuck_interpreter_stops_reading)
{
	const uint64_t want = 100 * (64u << 10);
	static uint8_t buf[64 << 10];
	struct itp_input st;
	struct itp_inq *q;
	uint64_t sent = 0, got = 0;
	int sv[2], quiet = 0;

	start_pair(sv, 0, &q); /* 32 MiB: the bound is not what stops it */
	itp_inq_set_stall(q, 200);
	/* a slow stream: 64 KiB every 20 ms, until 300 ms pass without a byte going in */
	while (sent < want && quiet < 15) {
		size_t i;
		ssize_t k;

		for (i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(sent + i);
		k = send(sv[1], buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0) {
			sent += (uint64_t)k;
			quiet = 0;
		} else {
			quiet++;
		}
		sleep_ms(20);
	}
	ck_assert_msg(sent < want, "the reader kept reading for an interpreter that took nothing");
	take_upto(q, buf, sizeof(buf), &got, 1000);
	/* the take woke the reader: the socket drains into the queue again */
	for (quiet = 0; quiet < 100; quiet++) {
		int left = -1;

		ck_assert_int_eq(ioctl(sv[0], FIONREAD, &left), 0);
		if (left == 0)
			break;
		sleep_ms(10);
	}
	ck_assert_int_lt(quiet, 100);
	itp_inq_stop(q, &st);
	ck_assert_uint_ge(st.full_waits, 1);
	ck_assert_uint_eq(st.bytes, sent);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * After itp_inq_stopping the library's last bytes must not wait for the
 * interpreter: the reader, full and with nothing taken for longer than the
 * stall time, reads on up to twice its limit; no further.
 */
START_TEST(stopping_reads_past_the_limit)
{
	const size_t limit = 4 * ITP_INQ_BLOCK;
	const uint64_t want = 16u << 20;
	static uint8_t buf[64 << 10];
	struct itp_input st;
	struct itp_inq *q;
	uint64_t sent = 0, full = 0, got = 0;
	int sv[2], sndbuf = start_pair(sv, limit, &q);

	itp_inq_set_stall(q, 100);
	fill_socket(sv[1], &sent, want);
	ck_assert_uint_le(sent, limit + 2 * (uint64_t)sndbuf);
	full = sent;
	/* the stop: nothing is taken still, more than the stall time passes */
	itp_inq_stopping(q);
	fill_socket(sv[1], &sent, want);
	/* each block may keep up to ITP_INQ_MIN_READ unused: at least half a limit more */
	ck_assert_msg(sent - full >= limit / 2,
		      "after the stop request the reader took %llu bytes more, not half a limit",
		      (unsigned long long)(sent - full));
	ck_assert_msg(sent < want, "the reader read %llu bytes past twice its limit of %zu",
		      (unsigned long long)sent, limit);
	ck_assert_uint_le(sent, 2 * limit + 2 * (uint64_t)sndbuf);
	shutdown(sv[1], SHUT_WR);
	for (;;) {
		ssize_t n = itp_inq_take(q, buf, sizeof(buf), 1000), i;

		ck_assert_int_ge(n, 0);
		if (!n)
			break;
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(buf[i], pattern(got + (uint64_t)i));
		got += (uint64_t)n;
	}
	itp_inq_stop(q, &st);
	ck_assert_uint_eq(got, sent);
	ck_assert_uint_le(st.peak_bytes, 2 * limit);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* Stopping ends the reader wherever it waits: for the socket (idle) or for room (full). */
/*
 * Fill the queue (nobody takes until the reader waits for room: its full
 * time grows; not a guess from a quiet writer, which a loaded machine
 * fools), then take everything, waiting at most wait_ms for more; returns
 * bytes.
 */
static uint64_t fill_then_drain(struct itp_inq *q, int fd, uint64_t *sent, int wait_ms)
{
	static uint8_t buf[64 << 10];
	uint64_t got = 0, start = *sent, full0 = itp_inq_full_ns(q);
	int tries = 0;

	while (itp_inq_full_ns(q) == full0) {
		size_t i;
		ssize_t k;

		ck_assert_int_lt(tries, 3000); /* 30 s */
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(*sent + i);
		k = send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0) {
			*sent += (uint64_t)k;
		} else {
			ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
			sleep_ms(10);
			tries++;
		}
	}
	for (;;) {
		ssize_t n = itp_inq_take(q, buf, sizeof(buf), wait_ms), i;

		if (n == -EAGAIN && start + got == *sent)
			break;
		if (n == -EAGAIN || n == -EINTR)
			continue;
		ck_assert_int_gt(n, 0);
		for (i = 0; i < n; i++)
			if (buf[i] != pattern(start + got + (uint64_t)i))
				ck_abort_msg("byte %llu out of order",
					     (unsigned long long)(start + got + (uint64_t)i));
		got += (uint64_t)n;
	}
	return got;
}

static struct itp_input fill_cycles(int cycles, int wait_ms)
{
	const size_t limit = 8 * ITP_INQ_BLOCK;
	struct itp_input st;
	struct itp_inq *q;
	uint64_t sent = 0, got = 0;
	int sv[2], i;

	start_pair(sv, limit, &q);
	for (i = 0; i < cycles; i++)
		got += fill_then_drain(q, sv[1], &sent, wait_ms);
	itp_inq_stop(q, &st);
	ck_assert_uint_eq(got, sent);
	ck_assert_uint_eq(st.bytes, sent);
	/* each cycle filled the queue */
	ck_assert_uint_ge(sent, (uint64_t)cycles * (limit - ITP_INQ_MIN_READ));
	close(sv[0]);
	close(sv[1]);
	return st;
}

/*
 * Blocks emptied by the interpreter are reused: a queue filled to its limit
 * and emptied three times allocates its blocks once. Freeing all but four
 * of them each time (as before) took 8 + 2 * 4 or more allocations here
 * (20 with five cycles).
 */
START_TEST(blocks_reused)
{
	struct itp_input st = fill_cycles(3, 20);

	ck_assert_uint_ge(st.block_allocs, 7);
	ck_assert_uint_le(st.block_allocs, 8 + 1);
}
END_TEST

/*
 * An idle stream (a take waited ITP_INQ_IDLE_MS in vain) gives the spares
 * back: of the 8 blocks, the emptied tail stays and 4 spares are kept, so
 * the second fill allocates 3 again.
 */
START_TEST(idle_frees_spares)
{
	struct itp_input st = fill_cycles(2, ITP_INQ_IDLE_MS + 20);

	ck_assert_uint_ge(st.block_allocs, 8 + 3);
}
END_TEST

START_TEST(stop_idle_and_full)
{
	static uint8_t buf[64 << 10];
	struct itp_inq *q;
	int sv[2], i;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(itp_inq_start(&q, sv[0], 0), 0);
	ck_assert_int_eq(itp_inq_take(q, buf, sizeof(buf), 20), -EAGAIN);
	itp_inq_stop(q, NULL); /* hangs (test timeout) if the reader does not see the stop */

	ck_assert_int_eq(itp_inq_start(&q, sv[0], 2 * ITP_INQ_BLOCK), 0);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	for (i = 0; i < 200; i++)
		if (send(sv[1], buf, sizeof(buf), MSG_NOSIGNAL) < 0)
			sleep_ms(2);
	ck_assert_uint_ge(itp_inq_full_ns(q), 1); /* it waits for room now */
	itp_inq_stop(q, NULL);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* A failed read comes after the bytes read before it; here: a directory, EISDIR at once. */
START_TEST(read_error)
{
	struct itp_inq *q;
	uint8_t b;
	int fd = open("/", O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(itp_inq_start(&q, fd, 0), 0);
	ck_assert_int_eq(itp_inq_take(q, &b, 1, 5000), -EISDIR);
	ck_assert_int_eq(itp_inq_ended(q), 1);
	itp_inq_stop(q, NULL);
	close(fd);
}
END_TEST

static void on_sig(int sig)
{
	(void)sig;
}

static void *poke(void *arg)
{
	sleep_ms(50);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

/* heaptap's stop signals must wake the interpreter's wait, as they woke its poll on the socket. */
START_TEST(signal_interrupts_take)
{
	struct sigaction sa, old;
	struct itp_inq *q;
	pthread_t self = pthread_self(), thr;
	uint8_t b;
	int sv[2];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig; /* no SA_RESTART, as heaptap's handlers */
	sigaction(SIGUSR1, &sa, &old);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(itp_inq_start(&q, sv[0], 0), 0);
	ck_assert_int_eq(pthread_create(&thr, NULL, poke, &self), 0);
	ck_assert_int_eq(itp_inq_take(q, &b, 1, 30000), -EINTR);
	pthread_join(thr, NULL);
	itp_inq_stop(q, NULL);
	sigaction(SIGUSR1, &old, NULL);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

static Suite *inq_suite(void)
{
	Suite *s = suite_create("inq");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, order_default_limit);
	tcase_add_test(tc, order_small_limit_slow_taker);
	tcase_add_test(tc, bound_holds_then_resumes);
	tcase_add_test(tc, stuck_interpreter_stops_reading);
	tcase_add_test(tc, stopping_reads_past_the_limit);
	tcase_add_test(tc, blocks_reused);
	tcase_add_test(tc, idle_frees_spares);
	tcase_add_test(tc, stop_idle_and_full);
	tcase_add_test(tc, read_error);
	tcase_add_test(tc, signal_interrupts_take);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(inq_suite());
}
