/* track/timer.c - the timer thread: ticks, idle flushes, module checks, control */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, in a thread of its own that has every signal blocked
 * (it is created with a full mask, so no signal of the program is ever
 * delivered to it) and holds the recursion guard for its whole life, so
 * nothing it does is recorded. Every TRK_TICK_NS it
 *   - compares dl_iterate_phdr's counters and announces module changes,
 *   - flushes every thread buffer it can lock (so a sequence gap left by an
 *     idle thread closes within one tick),
 *   - sends WIRE_REC_TICK (time since start, RSS, sequence counter).
 * When the socket is full (hooks wait for heaptap to read), the tick's
 * writes wait for room too, but give up as soon as heaptap sends something
 * (trk_sock_lock_room_ctl): a STOP is read at once, never queued behind
 * the hooks' chunks.
 * In between it polls the socket for control records from heaptap:
 * WIRE_CTL_STOP ends the session (WIRE_END_STOP), so does EOF (heaptap
 * died: the END cannot arrive, but inject/'s restore still runs, as it
 * does when a write failed).
 * It is the only closer of the socket while it runs (see trk_end).
 *
 * While the session samples the tick is TRK_TICK_SMP_NS (100 ms), not
 * 10 ms: docs/track.md "Timer thread". Nothing that needs 10 ms depends
 * on the tick then: control records wake the poll at once (a STOP or a
 * rate change is acted on when it arrives, not at the next tick), the
 * 10-s rule is the writes' own (sock.c), and a sampling stream is a few
 * hundred KB/s, so what the tick does (TICK with RSS, flush requests to
 * busy threads, flushes of idle ones, module check) is fresh enough ten
 * times a second, while every tick wakes the timer, each busy thread's
 * flush, heaptap's reader and its interpreter: on the bench service
 * (bench/sample/svc_cpu) about 100 wake-ups of
 * heaptap and 200 sendmsg of the workers a second at 10 ms. A switch to
 * full tracing (read here) brings the next tick within 10 ms again. The
 * site counts go out every TRK_SMP_SITES_NS (1 s) of time, not per tick
 * count.
 *
 * Without a timer thread (docs/track.md "Without a timer thread"): a
 * thread makes glibc take its arena lock in every malloc and free of a
 * single-threaded program that misses the tcache (sample_prog +11..19 %
 * with an idle thread alone). So a preloaded session that samples in a
 * process with one thread starts none: trk_tl_poll, called from the
 * hooks' slow path (samples, new sites, a thread's first call), does the
 * tick's work when a tick's worth of time passed, and starts the thread
 * when the hooks cannot serve: a second thread exists (glibc takes the
 * lock anyway then), full tracing (no slow path to poll from), or the
 * program was quiet for TRK_TL_QUIET_NS (a STOP could wait for it).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/xframe_internal.h"
#include "track/sample_internal.h"
#include "util/procread.h"

#define TRK_TICK_NS 10000000ull
#define TRK_TICK_SMP_NS 100000000ull /* the timer thread's tick while sampling */
#define TRK_TL_QUIET_NS 1000000000ull /* hooks quiet this long: the timer thread takes over */
#define TRK_TL_RETRY_NS 1000000000ull /* a failed thread start is tried again after this */
#define CTL_BUF 256

struct ctl {
	uint8_t buf[CTL_BUF];
	size_t len;
	uint64_t skip; /* bytes of an oversized record still to discard */
};

/*
 * What heaptap sent and was not parsed yet: the hooks' polls and then the
 * timer thread read on from the same state. Reset when a session starts.
 */
static struct ctl ctl_state;

_Atomic int trk_tl_on;
_Atomic uint32_t trk_xf_off;
uint64_t trk_tl_quiet_ns = TRK_TL_QUIET_NS;
uint64_t trk_tick_smp_ns = TRK_TICK_SMP_NS;

/* The hooks' timer (one thread only: polled while glibc says single-threaded). */
static struct {
	uint64_t next;	     /* the next tick is due (coarse clock) */
	uint64_t seen;	     /* the last poll */
	uint64_t sites;	     /* the last SITES record */
	uint64_t retry;	     /* no thread start before this (one failed) */
	long nvcsw;	     /* the thread's voluntary context switches at the last tick */
} tl;

/* nvcsw - the calling thread's voluntary context switches (it blocked); -1 if unknown. */
static long nvcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nvcsw;
}

static uint64_t rss_bytes(void)
{
	char buf[128];
	uint64_t v = 0;
	int i = 0, err;

	/* opened per tick: no fd of ours stays open for the program to trip over */
	err = util_read_file("/proc/self/statm", buf, sizeof(buf), NULL);
	if (err && err != -EFBIG) /* the second number comes within the first 127 bytes */
		return 0;
	/* "size resident shared ...": the second number */
	while (buf[i] && buf[i] != ' ')
		i++;
	while (buf[i] == ' ')
		i++;
	while (buf[i] >= '0' && buf[i] <= '9')
		v = v * 10 + (uint64_t)(buf[i++] - '0');
	return v * (uint64_t)trk_g.page_size;
}

void trk_send_tick(bool from_timer)
{
	uint8_t p[3 * WIRE_VARINT_MAX];
	size_t n = 0;
	uint64_t seq = atomic_load(&trk_g.seq) & TRK_SEQ_MASK;

	n += wire_put_varint(p + n, util_mono_ns() - trk_g.start_mono_ns);
	n += wire_put_varint(p + n, rss_bytes());
	n += wire_put_varint(p + n, seq);
	if (!from_timer) {
		trk_sock_send(WIRE_REC_TICK, p, n);
		return;
	}
	if (trk_sock_lock_room_ctl(n + 1 + WIRE_VARINT_MAX) == -EAGAIN)
		return; /* a control record first; the next tick has the numbers */
	{
		struct iovec v = { .iov_base = p, .iov_len = n };

		trk_sock_send_locked(WIRE_REC_TICK, &v, 1);
	}
	pthread_mutex_unlock(&trk_g.sock_lock);
}

/* tick_ns - the timer thread's period now: longer while sampling (see the file header). */
static uint64_t tick_ns(void)
{
	return trk_smp_sampling() ? trk_tick_smp_ns : TRK_TICK_NS;
}

/* tick - the timer thread's tick; *sites: when SITES last went out (monotonic ns). */
static void tick(uint64_t now, uint64_t *sites)
{
	trk_mod_check(trk_g.timer_thr);
	trk_thr_flush_idle();
	trk_xf_drain(true);
	trk_smp_sites_due(now, sites);
	trk_send_tick(true);
}

/*
 * read_ctl - read what heaptap sent and act on it. Returns 1 to go on,
 * 0 when the session is over (STOP handled, EOF, error).
 */
int trk_xframe_wanted(unsigned lang)
{
	return lang >= 32 || !(atomic_load_explicit(&trk_xf_off, memory_order_relaxed) & (1u << lang));
}

static int read_ctl(struct ctl *c)
{
	size_t off = 0;
	ssize_t r;

	/* never read from an fd the program closed and reused: its data is not ours */
	if (!trk_sock_ours())
		return 0;
	r = recv(trk_g.fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	if (r < 0)
		return errno == EINTR || errno == EAGAIN;
	if (r == 0)
		return 0;
	c->len += (size_t)r;
	while (off < c->len) {
		const uint8_t *p = c->buf + off + 1, *end = c->buf + c->len;
		uint64_t len;
		uint8_t type;

		if (c->skip) {
			size_t k = c->len - off < c->skip ? c->len - off : (size_t)c->skip;

			off += k;
			c->skip -= k;
			continue;
		}
		type = c->buf[off];
		if (wire_get_varint(&p, end, &len) < 0) {
			if (end - (c->buf + off) > 1 + WIRE_VARINT_MAX)
				return 0; /* garbage: give up */
			break;
		}
		if (type == WIRE_CTL_STOP)
			return 0;
		if (type == WIRE_CTL_SAMPLE && len <= 4 * WIRE_VARINT_MAX) {
			if (len > (uint64_t)(end - p))
				break; /* the rest has not arrived yet */
			trk_smp_ctl(p, (size_t)len); /* a malformed one changes nothing */
			off = (size_t)(p - c->buf) + (size_t)len;
			continue;
		}
		if (type == WIRE_CTL_XFRAMES && len <= WIRE_VARINT_MAX) {
			const uint8_t *q = p;
			uint64_t mask;

			if (len > (uint64_t)(end - p))
				break; /* the rest has not arrived yet */
			if (wire_get_varint(&q, p + len, &mask) == 0)
				atomic_store_explicit(&trk_xf_off, (uint32_t)mask, memory_order_relaxed);
			off = (size_t)(p - c->buf) + (size_t)len;
			continue;
		}
		/* unknown types: skipped */
		off = (size_t)(p - c->buf);
		c->skip = len;
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 1;
}

static void *timer_main(void *arg)
{
	struct ctl *c = &ctl_state; /* a lazy start reads on where the hooks stopped */
	uint64_t next, sites, period, want;

	(void)arg;
	trk_tls_guard = 1;
	/* the timer owns its buffer from now on */
	trk_thr_enter(trk_g.timer_thr);
	trk_thr_flush_locked(trk_g.timer_thr);
	trk_g.timer_thr->tid = trk_gettid();
	trk_thr_exit(trk_g.timer_thr);
	sites = util_mono_ns();
	period = tick_ns();
	next = sites + period;
	while (atomic_load(&trk_g.state) == TRK_ON) {
		uint64_t now = util_mono_ns();
		struct pollfd pfd = { .fd = trk_g.fd, .events = POLLIN };
		int ms = now >= next ? 0 : (int)((next - now + 999999) / 1000000);

		if (poll(&pfd, 1, ms) > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
			if (!read_ctl(c)) {
				trk_end(WIRE_END_STOP);
				break;
			}
		}
		now = util_mono_ns();
		want = tick_ns();
		/* a rate change read just now: full tracing ticks within 10 ms again */
		if (want < period && next > now + want)
			next = now + want;
		period = want;
		if (now >= next && atomic_load(&trk_g.state) == TRK_ON) {
			tick(now, &sites);
			next += period;
			if (next < now)
				next = now + period;
		}
	}
	{
		/*
		 * A session that died with its socket (failed write) never went
		 * through trk_end: inject/'s restore must still happen.
		 */
		uint64_t restored = 0, left = 0;

		trk_run_before_end(&restored, &left);
	}
	/*
	 * Whoever ended the session may still be flushing: close only after
	 * its END went out (trk_end sets ended last, under the socket lock).
	 */
	for (;;) {
		struct timespec ms = { 0, 1000000 };

		pthread_mutex_lock(&trk_g.sock_lock);
		if (trk_g.ended)
			break;
		pthread_mutex_unlock(&trk_g.sock_lock);
		nanosleep(&ms, NULL);
	}
	trk_sock_close_locked();
	pthread_mutex_unlock(&trk_g.sock_lock);
	/* the session has fully ended: the next may start (its own timer, buffer reused) */
	atomic_store(&trk_g.started, 0);
	return NULL;
}

/* thread_start - create the timer thread (timer_ok set first: trk_end leaves it the fd). */
static int thread_start(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	int ret;

	ret = pthread_attr_init(&attr);
	if (ret)
		return -ret;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	trk_g.timer_ok = 1; /* before it runs: trk_end must leave it the fd */
	ret = pthread_create(&trk_g.timer, &attr, timer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret) {
		trk_g.timer_ok = 0;
		return -ret;
	}
	return 0;
}

int trk_timer_start(bool timerless)
{
	memset(&ctl_state, 0, sizeof(ctl_state));
	if (timerless && __libc_single_threaded && trk_smp_sampling()) {
		uint64_t now = util_clock_ns(CLOCK_MONOTONIC_COARSE);

		tl.next = now + TRK_TICK_NS;
		tl.seen = now;
		tl.sites = now;
		tl.retry = 0;
		tl.nvcsw = nvcsw();
		atomic_store(&trk_tl_on, 1);
		return 0;
	}
	atomic_store(&trk_tl_on, 0);
	return thread_start();
}

/*
 * tl_take_over - the hooks cannot do the timer's work any more: start the
 * thread. Under the socket lock, so trk_end either sees timer_ok (and
 * leaves the fd to the thread) or has ended the session before (no start).
 * A failed start keeps the hooks polling and is tried again later.
 */
static void tl_take_over(uint64_t now)
{
	int ret = 0;

	if (now < tl.retry)
		return;
	pthread_mutex_lock(&trk_g.sock_lock);
	if (!trk_g.timer_ok && !trk_g.ended && atomic_load(&trk_g.state) == TRK_ON)
		ret = thread_start();
	pthread_mutex_unlock(&trk_g.sock_lock);
	if (ret < 0)
		tl.retry = now + TRK_TL_RETRY_NS;
	else
		atomic_store(&trk_tl_on, 0);
}

/*
 * not_ours - a vfork child (posix_spawn) runs on our memory and descriptors
 * until it execs: it must neither eat heaptap's control records nor start
 * a thread. getpid is a system call: asked only on the rare paths.
 */
static bool not_ours(void)
{
	return getpid() != trk_g.pid;
}

/* hand_over - read what heaptap sent (it may be a STOP), then start the thread. */
static void hand_over(uint64_t now)
{
	if (not_ours())
		return;
	if (!read_ctl(&ctl_state)) {
		trk_end(WIRE_END_STOP);
		return;
	}
	tl_take_over(now);
}

void trk_tl_poll(struct trk_thr *t)
{
	static atomic_flag busy = ATOMIC_FLAG_INIT;
	uint64_t now = util_clock_ns(CLOCK_MONOTONIC_COARSE), gap;

	if (!__libc_single_threaded) {
		/*
		 * The program made a thread: glibc locks anyway, the thread
		 * costs nothing more. Several threads may poll now: one at a
		 * time, and never once the timer thread reads the socket.
		 */
		if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
			return;
		if (atomic_load(&trk_tl_on))
			hand_over(now);
		atomic_flag_clear_explicit(&busy, memory_order_release);
		return;
	}
	/* one thread: no other poller, no timer thread (it would make a second) */
	gap = now - tl.seen;
	tl.seen = now;
	if (gap >= trk_tl_quiet_ns) {
		/*
		 * The program stopped allocating for long: a STOP must not wait
		 * for it. Unless it never blocked meanwhile (no voluntary switch:
		 * preempted on a busy machine, or computing): that is no pause
		 * in a system call, and it allocates again without one.
		 */
		long v = nvcsw();

		if (v < 0 || v != tl.nvcsw) {
			hand_over(now);
			return;
		}
	}
	if (now < tl.next || not_ours())
		return;
	tl.next = now + TRK_TICK_NS;
	if (!read_ctl(&ctl_state)) {
		trk_end(WIRE_END_STOP);
		return;
	}
	if (!trk_smp_sampling()) {
		/* full tracing records without the slow path we poll from */
		tl_take_over(now);
		return;
	}
	trk_mod_check(t);
	trk_thr_enter(t);
	trk_thr_flush_locked(t);
	trk_thr_exit(t);
	trk_xf_drain(true);
	trk_smp_sites_due(now, &tl.sites);
	trk_send_tick(true);
	/* after our own waits for heaptap: they are not the program's pauses */
	tl.seen = util_clock_ns(CLOCK_MONOTONIC_COARSE);
	tl.nvcsw = nvcsw();
}
