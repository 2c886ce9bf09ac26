/* tests/sample/check_tick.c - the timer thread's slower tick while sampling, and what must not wait for it */
/* SPDX-License-Identifier: MIT */
/*
 * Real sessions inside the test process over a socketpair, with the timer
 * thread (docs/track.md "Timer thread": 100 ms while sampling, 10 ms when
 * tracing fully). The hooks are called directly, as inject/'s GOT slots
 * would. Checked:
 *   - sampling_ticks_slowly: over a second and a half of sampling, no more
 *     TICKs than one per 100 ms (fails with the 10-ms tick), and at least
 *     one (waited for: a loaded machine may hold the timer back);
 *   - stop_not_held_by_tick: with an hour's tick while sampling, a STOP is
 *     answered (END, reason stop) at all (fails if a STOP waited for the
 *     tick);
 *   - full_tracing_ticks_fast: with an hour's tick while sampling, a
 *     CTL_SAMPLE 0 switches to full tracing at once and TICKs come every
 *     10 ms again (fails if the timer kept the deadline it had while
 *     sampling);
 *   - stop_while_owner_busy: a thread is inside its buffer's append
 *     (preempted there, or waiting) when STOP comes: the end's flush waits
 *     for it, and the library keeps sending (TICKs) while it waits, so
 *     heaptap, which takes seconds of silence after a STOP for a dead
 *     library, sees it alive. The thread is let go only once two TICKs came
 *     after the STOP (fails if the end waits in silence: then it is let go
 *     after 30 s, and no TICK came meanwhile); then END, reason stop;
 *   - sites_every_second: SITES goes out every second of time while
 *     sampling, not every 100 ticks: the second SITES comes before the
 *     100th TICK (counted in the stream: at most one TICK per 100 ms, so a
 *     timer that a loaded machine holds back sends fewer, never more).
 * The tests wait for what they expect with bounds of many seconds and never
 * assert how long it took: CI has 2 cores and other jobs.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/track.h"
#include "tests/lib/check_libc_real.h"
#include "tests/sample/check_peer.h"
#include "track/sample_internal.h"
#include "track/wire.h"

/* start - a sampled session with the timer thread; tick_ms: its tick while sampling. */
static void start(struct peer *p, uint64_t tick_ms)
{
	struct trk_config cfg = { 0 };
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(p, 0, sizeof(*p));
	p->fd = sv[1];
	trk_tick_smp_ns = tick_ms * 1000000ull;
	trk_set_real(&libc_real);
	cfg.fd = sv[0];
	cfg.sample_given = 1;
	cfg.sample_rate = 4096;
	cfg.sample_seed = 1;
	cfg.timerless = 0;
	ck_assert_int_eq(trk_start(&cfg), 0);
	ck_assert(trk_smp_sampling());
}

/* finish - STOP (unless sent), the END, and the session fully over; what the stream held. */
static struct counts finish(struct peer *p, int send_stop)
{
	struct counts c;

	if (send_stop)
		send_ctl(p->fd, WIRE_CTL_STOP, 0);
	drain(p, 20000);
	ck_assert_int_eq(p->eof, 1);
	for (int i = 0; i < 5000 && atomic_load(&trk_g.started); i++)
		usleep(1000);
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
	c = count(p);
	ck_assert_int_eq(c.end_reason, WIRE_END_STOP);
	close(p->fd);
	free(p->buf);
	return c;
}

/* an hour: a tick that never comes while a test runs */
#define TICK_NEVER_MS 3600000ull

static int one_tick(const struct peer *p)
{
	return count(p).ticks >= 1;
}

START_TEST(sampling_ticks_slowly)
{
	struct peer p;
	struct counts c;
	uint64_t t0, span;

	start(&p, 100);
	t0 = now_ms();
	churn(&p, 1500, NULL, 1000);
	/* a timer that waited for a CPU all along: the first TICK may be late */
	churn(&p, 20000, one_tick, 1000);
	span = now_ms() - t0;
	c = count(&p);
	/* the timer's deadlines step by the period: never more than one tick per 100 ms */
	ck_assert_msg(c.ticks <= span / 100 + 2, "%u TICKs in %lu ms while sampling", c.ticks,
		      (unsigned long)span);
	ck_assert_uint_ge(c.ticks, 1);
	c = finish(&p, 1);
	ck_assert_uint_ge(c.ticks, 2); /* and the last one before END */
}
END_TEST

START_TEST(stop_not_held_by_tick)
{
	struct peer p;

	start(&p, TICK_NEVER_MS);
	churn(&p, 200, NULL, 1000);
	send_ctl(p.fd, WIRE_CTL_STOP, 0);
	/* a STOP that waited for the tick would not be answered within the hour */
	drain(&p, 30000);
	ck_assert_msg(p.eof, "no END within 30 s of the STOP");
	(void)finish(&p, 0);
}
END_TEST

/* fast_ticks - 6 TICKs came */
static int fast_ticks(const struct peer *p)
{
	struct counts c = count(p);

	return c.ticks >= 6;
}

START_TEST(full_tracing_ticks_fast)
{
	struct peer p;
	struct counts c;

	start(&p, TICK_NEVER_MS);
	churn(&p, 200, NULL, 1000);
	c = count(&p);
	ck_assert_uint_eq(c.ticks, 0); /* the first tick is an hour away */
	send_ctl(p.fd, WIRE_CTL_SAMPLE, 0);
	churn(&p, 30000, fast_ticks, 1000);
	c = count(&p);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 0); /* full tracing */
	/* a timer that kept the sampling deadline would send none within the hour */
	ck_assert_msg(c.ticks >= 6, "%u TICKs within 30 s of full tracing", c.ticks);
	(void)finish(&p, 1);
}
END_TEST

/* the thread of stop_while_owner_busy: inside its buffer's append until let go (30 s at most) */
static struct {
	_Atomic int inside;
	_Atomic int release;
} owner;

static void *owner_main(void *arg)
{
	struct trk_thr *t;

	(void)arg;
	trk_free(site(100));
	t = trk_thr_get();
	ck_assert_ptr_nonnull(t);
	trk_thr_enter(t);
	atomic_store(&owner.inside, 1);
	for (int i = 0; i < 30000 && !atomic_load(&owner.release); i++)
		usleep(1000);
	trk_thr_exit(t);
	return NULL;
}

START_TEST(stop_while_owner_busy)
{
	struct peer p;
	pthread_t th;
	unsigned before;
	int alive = 0;

	start(&p, 100);
	churn(&p, 200, NULL, 1000);
	atomic_store(&owner.inside, 0);
	atomic_store(&owner.release, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, owner_main, NULL), 0);
	for (int i = 0; i < 30000 && !atomic_load(&owner.inside); i++)
		usleep(1000);
	ck_assert(atomic_load(&owner.inside));
	drain(&p, 0);
	before = count(&p).ticks;
	send_ctl(p.fd, WIRE_CTL_STOP, 0);
	/* one TICK may have been on its way before the STOP was read: two */
	for (int i = 0; i < 3000 && !alive; i++) {
		drain(&p, 10);
		alive = count(&p).ticks >= before + 2;
		ck_assert_msg(!p.eof, "the session ended while a thread was still appending");
	}
	atomic_store(&owner.release, 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_msg(alive, "nothing came for 30 s after the STOP while a thread was appending "
			     "(%u TICKs before, %u after)", before, count(&p).ticks);
	(void)finish(&p, 0);
}
END_TEST

static int two_sites(const struct peer *p)
{
	return count(p).sites >= 2;
}

START_TEST(sites_every_second)
{
	struct peer p;
	struct counts c;

	start(&p, 100);
	churn(&p, 60000, two_sites, 1000);
	c = count(&p);
	ck_assert_msg(c.sites >= 2, "%u SITES records in 60 s of sampling", c.sites);
	/* per 100 ticks, the second would come with the 200th TICK */
	ck_assert_msg(c.ticks < 100, "the second SITES came after %u TICKs", c.ticks);
	(void)finish(&p, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sample_tick");
	TCase *tc = tcase_create("tick");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, sampling_ticks_slowly);
	tcase_add_test(tc, stop_not_held_by_tick);
	tcase_add_test(tc, full_tracing_ticks_fast);
	tcase_add_test(tc, stop_while_owner_busy);
	tcase_add_test(tc, sites_every_second);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
