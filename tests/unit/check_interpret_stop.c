/* tests/unit/check_interpret_stop.c - interpret/ after a stop: the wait for END counts from the last byte */
/* SPDX-License-Identifier: MIT */
/*
 * A thread plays the library on one end of a socketpair: the header, then
 * its last events, paced, the way each test says (and END after
 * WIRE_CTL_STOP when it says so), while itp_run (stop asked from the
 * start, stop_timeout_ms short) reads the other end. What must hold (docs/stream.md, "Ending"):
 *   - a library that sends its last events for longer than the stop
 *     timeout, but never pauses that long, gets its END read;
 *   - one that goes silent without END is given up stop_timeout_ms after
 *     its last byte, with everything it sent before applied;
 *   - one that keeps streaming forever is given up STOP_BOUND_FACTOR (12)
 *     stop timeouts after the request.
 * Timing: a run in which the fake library itself was held off the CPU
 * (this machine is shared) is run again, see run_lib.
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_harness.h"

#define STEP_MS 50	  /* the fake library's pause between two of its records */
#define STEP_ALLOCS 100 /* allocations in each of its chunks */

struct lib {
	int fd;
	int steps;	     /* chunks sent after STOP, STEP_MS apart */
	int end;	     /* then END (else: silent, the socket open until released) */
	int forever;	     /* chunks until released */
	volatile int release;
	int got_stop;
	double max_gap; /* its longest delay beyond STEP_MS before a chunk (s) */
	double dur;	/* from its start to its last chunk (s) */
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* one chunk of STEP_ALLOCS mallocs of thread 1, numbered from *seq */
static void send_chunk(int fd, uint64_t *seq)
{
	struct sbuf s = {0};
	struct chunkb c;
	int i;

	ck_begin(&c, 1, *seq);
	for (i = 0; i < STEP_ALLOCS; i++, (*seq)++)
		ck_alloc(&c, *seq, WIRE_KIND_MALLOC, 32, 0, 0x10000000ull + *seq * 32);
	ck_end(&s, &c);
	ck_send_all(fd, s.p, s.len);
	sb_free(&s);
}

static void *lib_main(void *arg)
{
	struct lib *l = arg;
	struct sbuf s = {0};
	uint8_t msg[2];
	uint64_t seq = 0;
	double last, t_start;
	int i;

	last = t_start = mono_s();
	header(&s);
	ck_send_all(l->fd, s.p, s.len);
	sb_free(&s);
	/* stop is asked from itp_run's start: the flush begins at once, STOP comes meanwhile */
	for (i = 0; (i < l->steps || l->forever) && !l->release; i++) {
		pause_ms(STEP_MS);
		send_chunk(l->fd, &seq);
		if (mono_s() - last - STEP_MS / 1000.0 > l->max_gap)
			l->max_gap = mono_s() - last - STEP_MS / 1000.0;
		last = mono_s();
		l->dur = last - t_start;
	}
	if (l->end) {
		if (read(l->fd, msg, 2) != 2 || msg[0] != WIRE_CTL_STOP)
			goto out;
		l->got_stop = 1;
		sb_end(&s, seq, WIRE_END_STOP);
		ck_send_all(l->fd, s.p, s.len);
		sb_free(&s);
		/* held off the CPU before END went out counts too */
		if (mono_s() - last > l->max_gap)
			l->max_gap = mono_s() - last;
	}
	while (!l->end && !l->release)
		pause_ms(1);
out:
	shutdown(l->fd, SHUT_WR);
	return NULL;
}

/*
 * One run; again (5 runs at most) when the fake library itself was held
 * off the CPU for a third of the stop timeout beyond its pause between two
 * chunks, or its flush took half the bound longer than planned: then it
 * did not do what the test says it does (a loaded machine).
 */
static int run_once(struct lib *l, unsigned stop_ms, struct itp_result *res);

static int run_lib(struct lib *l, unsigned stop_ms, struct itp_result *res)
{
	struct lib orig = *l;
	int rc = 0, k;

	for (k = 0; k < 5; k++) {
		*l = orig;
		rc = run_once(l, stop_ms, res);
		if (l->max_gap < stop_ms / 3000.0 &&
		    (l->forever || l->dur < l->steps * STEP_MS / 1000.0 + stop_ms * 6 / 1000.0))
			break;
		fprintf(stderr, "the fake library was %.3f s late for a chunk, sent for %.3f s: "
			"again\n", l->max_gap, l->dur);
	}
	return rc;
}

static int run_once(struct lib *l, unsigned stop_ms, struct itp_result *res)
{
	volatile sig_atomic_t stop = 1;
	struct itp_options opt = {.stop = &stop, .stop_timeout_ms = stop_ms, .no_symbols = 1};
	pthread_t th;
	int sv[2], rc;

	snprintf(outpath, sizeof(outpath), "%s/stop%d.htap", ck_tmpdir, nrun++);
	opt.output = outpath;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	l->fd = sv[1];
	ck_assert_int_eq(pthread_create(&th, NULL, lib_main, l), 0);
	rc = itp_run(sv[0], &opt, res);
	l->release = 1;
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	ck_assert_int_eq(l->got_stop, l->end);
	return rc;
}

/*
 * Run l with a stop timeout of stop_ms (run_lib): itp_run returns rc, the
 * stream's end reason is end_reason, the stop was given up or not, the
 * detail holds detail (NULL: anything), the recording opens; *res is the
 * result.
 */
static void expect_run(struct lib *l, unsigned stop_ms, int rc, int end_reason, int gave_up,
		       const char *detail, struct itp_result *res)
{
	int got = run_lib(l, stop_ms, res);

	ck_assert_msg(got == rc, "itp_run: %d, not %d: %s", got, rc, res->detail);
	ck_assert_int_eq(res->end_reason, end_reason);
	if (detail)
		ck_assert_msg(strstr(res->detail, detail), "detail: %s", res->detail);
	ck_assert_int_eq(res->stop_gave_up, gave_up);
	rec_close(open_rec());
}

/*
 * The library's last events take 30 steps of 50 ms (1.5 s), five times the
 * stop timeout, with no pause as long as it: END is read, every event is in.
 */
START_TEST(end_behind_a_long_flush)
{
	struct lib l = {.steps = 30, .end = 1};
	struct itp_result res;

	expect_run(&l, 300, 0, WIRE_END_STOP, 0, NULL, &res);
	ck_assert_uint_eq(res.final.alloc_calls, 30 * STEP_ALLOCS);
}
END_TEST

/* Some events, then silence with the socket open: given up, what came is kept. */
START_TEST(silent_after_some)
{
	struct lib l = {.steps = 10};
	struct itp_result res;

	expect_run(&l, 300, -ITP_E_TRUNCATED, 0, 1, "nothing came for 300 ms", &res);
	ck_assert_uint_eq(res.final.alloc_calls, 10 * STEP_ALLOCS);
}
END_TEST

/* A stream that never ends: given up 12 stop timeouts after the request. */
START_TEST(endless_stream_bounded)
{
	struct lib l = {.forever = 1};
	struct itp_result res;

	expect_run(&l, 250, -ITP_E_TRUNCATED, 0, 1, "within 3000 ms", &res);
	/* it went on well past one stop timeout: the bound, not the silence, ended it */
	ck_assert_uint_ge(res.final.alloc_calls, 10 * STEP_ALLOCS);
}
END_TEST

static Suite *interpret_stop_suite(void)
{
	Suite *s = suite_create("interpret_stop");
	TCase *tc = tcase_create("stop");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_set_timeout(tc, 120); /* retries on a starved machine */
	tcase_add_test(tc, end_behind_a_long_flush);
	tcase_add_test(tc, silent_after_some);
	tcase_add_test(tc, endless_stream_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(interpret_stop_suite());
}
