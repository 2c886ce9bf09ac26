/* tests/sample/check_timerless.c - a sampled session without a timer thread while the process has one */
/* SPDX-License-Identifier: MIT */
/*
 * Real sessions inside the test process over a socketpair, read by this
 * same thread (a reader thread would make the process multi-threaded,
 * which is what the mode avoids). The hooks are called directly, as
 * inject/'s GOT slots would. Checked (docs/track.md "Without a timer
 * thread"):
 *   - hooks_do_the_ticks: no thread appears in /proc/self/task; TICKs and
 *     chunks arrive while the program allocates; a CTL_SAMPLE and then a
 *     STOP are acted on by the hooks (END with reason stop, the next
 *     session may start);
 *   - thread_later: a thread's first allocation starts the timer thread;
 *     then a STOP is answered while no hook runs, with everything flushed;
 *   - quiet_program: a second of no allocations in a system call (sleep)
 *     and the next one starts the timer thread, which answers a STOP while
 *     the program is idle; computing_is_not_quiet: a second of computing
 *     (no voluntary context switch) does not;
 *   - full_tracing_takes_over: a switch to full tracing starts it too;
 *   - vfork_child_leaves_ctl: a vfork child that allocates past a tick does
 *     not read the STOP meant for its parent;
 *   - with timerless off the thread is there from the start (the old way).
 * Each fails without the mode: the thread count, or a STOP that nobody reads.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "track/internal.h"
#include "track/track.h"
#include "tests/lib/check_libc_real.h"
#include "tests/sample/check_peer.h"
#include "track/sample_internal.h"
#include "track/wire.h"

static void start(struct peer *p, uint64_t rate, int timerless)
{
	struct trk_config cfg = { 0 };
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(p, 0, sizeof(*p));
	p->fd = sv[1];
	/* a loaded machine may not run us for a second: only quiet_program tests that rule */
	trk_tl_quiet_ns = 60000000000ull;
	trk_set_real(&libc_real);
	cfg.fd = sv[0];
	cfg.sample_given = 1;
	cfg.sample_rate = rate;
	cfg.sample_seed = 1;
	cfg.timerless = timerless;
	ck_assert_int_eq(trk_start(&cfg), 0);
}

/* after the END: the library closes its end (thread or not), and the next session may start */
static struct counts finish(struct peer *p)
{
	struct counts c;

	drain(p, 20000);
	ck_assert_int_eq(p->eof, 1);
	for (int i = 0; i < 5000 && atomic_load(&trk_g.started); i++)
		usleep(1000);
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
	c = count(p);
	close(p->fd);
	free(p->buf);
	return c;
}

/* stop_by_thread - heaptap's STOP, answered with no hook running: the timer thread ends the session */
static void stop_by_thread(struct peer *p)
{
	struct counts c;

	send_ctl(p->fd, WIRE_CTL_STOP, 0);
	c = finish(p);
	ck_assert_int_eq(c.end_reason, WIRE_END_STOP);
}

/* ticked - 5 TICKs and 5 chunks arrived (a loaded machine may run us seldom: no fixed time) */
static int ticked(const struct peer *p)
{
	struct counts c = count(p);

	return c.ticks >= 5 && c.chunks >= 5;
}

/* tl_on - the hooks do the timer's work (no thread) */
static int tl_on(void)
{
	return atomic_load(&trk_tl_on);
}

static int rate_is_8192(const struct peer *p)
{
	(void)p;
	return atomic_load(&trk_smp.rate) == 8192;
}

static int ended(const struct peer *p)
{
	(void)p;
	return !trk_active();
}

static int timer_running(const struct peer *p)
{
	(void)p;
	return !tl_on();
}

static int full_by_timer(const struct peer *p)
{
	return timer_running(p) && atomic_load(&trk_smp.rate) == 0;
}

START_TEST(hooks_do_the_ticks)
{
	struct peer p;
	struct counts c;

	ck_assert_msg(__libc_single_threaded, "the test process must have one thread");
	start(&p, 4096, 1);
	ck_assert_int_eq(tl_on(), 1);
	churn(&p, 20000, ticked, 0);
	ck_assert_int_eq(ck_tasks(), 1); /* no timer thread */
	c = count(&p);
	ck_assert_uint_ge(c.ticks, 5);	/* a tick every 10 ms from the hooks */
	ck_assert_uint_ge(c.chunks, 5); /* flushed as they go, not only at the end */
	ck_assert_int_eq(c.end_reason, -1);
	/* a rate change is read by the hooks */
	send_ctl(p.fd, WIRE_CTL_SAMPLE, 8192);
	churn(&p, 20000, rate_is_8192, 0);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 8192);
	/* so is a STOP */
	send_ctl(p.fd, WIRE_CTL_STOP, 0);
	churn(&p, 20000, ended, 0);
	ck_assert(!trk_active());
	ck_assert_int_eq(ck_tasks(), 1);
	c = finish(&p);
	ck_assert_int_eq(c.end_reason, WIRE_END_STOP);
	ck_assert_uint_ge(c.sites, 1);
}
END_TEST

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		trk_free(site(300));
	return NULL;
}

START_TEST(thread_later)
{
	struct peer p;
	pthread_t th;

	start(&p, 4096, 1);
	churn(&p, 50, NULL, 0);
	ck_assert_int_eq(ck_tasks(), 1);
	ck_assert_int_eq(pthread_create(&th, NULL, worker, NULL), 0);
	pthread_join(th, NULL);
	/* the worker's first call started the timer thread */
	ck_assert_int_eq(tl_on(), 0);
	ck_assert_int_eq(trk_g.timer_ok, 1);
	/* a joined thread may stay in /proc/self/task a moment longer: wait for it to go (2 s at most) */
	for (int i = 0; i < 2000 && ck_tasks() > 2; i++)
		usleep(1000);
	ck_assert_int_eq(ck_tasks(), 2);
	/* no hook runs from here on: the thread answers */
	stop_by_thread(&p);
}
END_TEST

START_TEST(quiet_program)
{
	struct peer p;

	start(&p, 64, 1); /* nearly every call samples: every call polls */
	trk_tl_quiet_ns = 1000000000ull; /* TRK_TL_QUIET_NS */
	churn(&p, 50, NULL, 0);
	ck_assert_int_eq(ck_tasks(), 1);
	usleep(1200 * 1000); /* quiet for longer than that */
	churn(&p, 20000, timer_running, 0);
	ck_assert_int_eq(tl_on(), 0);
	ck_assert_int_eq(ck_tasks(), 2);
	stop_by_thread(&p); /* while this thread allocates nothing */
}
END_TEST

/*
 * A second without allocations that never blocked (computing, or preempted
 * on a busy machine: no voluntary context switch) is no pause in a system
 * call: the hooks keep the timer's work.
 */
START_TEST(computing_is_not_quiet)
{
	struct peer p;
	struct counts c;
	uint64_t until;
	volatile uint64_t spin = 0;

	start(&p, 64, 1);
	trk_tl_quiet_ns = 1000000000ull; /* TRK_TL_QUIET_NS */
	churn(&p, 50, NULL, 0);
	until = now_ms() + 1200;
	while (now_ms() < until) /* vDSO clock, no system call */
		spin++;
	churn(&p, 200, NULL, 0);
	ck_assert_int_eq(tl_on(), 1);
	ck_assert_int_eq(ck_tasks(), 1);
	send_ctl(p.fd, WIRE_CTL_STOP, 0);
	churn(&p, 20000, ended, 0);
	c = finish(&p);
	ck_assert_int_eq(c.end_reason, WIRE_END_STOP);
}
END_TEST

START_TEST(full_tracing_takes_over)
{
	struct peer p;

	start(&p, 4096, 1);
	churn(&p, 50, NULL, 0);
	send_ctl(p.fd, WIRE_CTL_SAMPLE, 0);
	churn(&p, 20000, full_by_timer, 0);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 0);
	ck_assert_int_eq(tl_on(), 0);
	ck_assert_int_eq(ck_tasks(), 2);
	stop_by_thread(&p);
}
END_TEST

/*
 * A vfork child (posix_spawn's) shares our memory and descriptors until it
 * execs: when it allocates past a tick it must not read heaptap's STOP
 * (trk_end ignores a vfork child, so the STOP would be lost).
 */
START_TEST(vfork_child_leaves_ctl)
{
	struct peer p;
	struct counts c;
	pid_t pid;
	int st;

	start(&p, 64, 1); /* every call samples: every call polls */
	churn(&p, 50, NULL, 0);
	send_ctl(p.fd, WIRE_CTL_STOP, 0);
	pid = vfork();
	if (pid == 0) {
		/* a few allocations over several ticks (the parent, our reader, waits meanwhile) */
		uint64_t until = now_ms() + 50;
		struct timespec ms = { 0, 1000000 };

		while (now_ms() < until) {
			trk_free(site(300));
			nanosleep(&ms, NULL);
		}
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(trk_active()); /* the STOP is still unread */
	churn(&p, 20000, ended, 0);
	c = finish(&p);
	ck_assert_int_eq(c.end_reason, WIRE_END_STOP);
}
END_TEST

START_TEST(timerless_off)
{
	struct peer p;

	start(&p, 4096, 0);
	ck_assert_int_eq(tl_on(), 0);
	ck_assert_int_eq(ck_tasks(), 2);
	stop_by_thread(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("timerless");
	TCase *tc = tcase_create("sessions");
	SRunner *sr;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, hooks_do_the_ticks);
	tcase_add_test(tc, thread_later);
	tcase_add_test(tc, quiet_program);
	tcase_add_test(tc, computing_is_not_quiet);
	tcase_add_test(tc, full_tracing_takes_over);
	tcase_add_test(tc, vfork_child_leaves_ctl);
	tcase_add_test(tc, timerless_off);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* every test in a fresh process: one thread at its start, one session at a time */
	srunner_set_fork_status(sr, CK_FORK);
	return ck_run(sr);
}
