/* attach/hold.c - the hijacked thread's hold: where its time goes, and heaptap's own priority meanwhile */
/* SPDX-License-Identifier: MIT */
/*
 * From PTRACE_INTERRUPT to PTRACE_DETACH the hijacked thread is held. On a
 * loaded machine most of that time is nobody working: the thread waiting
 * for a CPU after each resume, or heaptap waiting for one after each stop.
 * The thread's share is measured with the kernel's own scheduler
 * accounting, /proc/PID/task/TID/schedstat (time on a CPU, time runnable
 * but waiting for one), read before the interrupt and after the detach,
 * never while the thread is held; ours with our thread's CPU clock.
 *
 * While the thread is held, heaptap raises the priority of its own thread
 * (never the target's) when it may: nice -20 (root or CAP_SYS_NICE), else
 * as low as RLIMIT_NICE allows; its nice comes back at the detach, and so
 * does its timer slack, lowered to 1 ns for att_wait's short naps (wait.c:
 * it sleeps between polls instead of yielding). Failing to raise it
 * changes nothing else. Measured (docs/attach.md, "attach hold"): without
 * it heaptap waited 1.3-3.4 ms median for a CPU during a hold on the
 * loaded 2-core machine, with it 0.07-0.5 ms. SCHED_FIFO
 * (HEAPTAP_HOLD_PRIO=fifo) took heaptap's own wait to 0.05 ms but made
 * the held thread wait longer for a CPU (0.16-1.2 ms against 0), so nice
 * is the default; HEAPTAP_HOLD_PRIO=none keeps the priority as it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "attach/internal.h"
#include "util/procread.h"

/* "RUN WAIT SLICES\n": ns on a CPU, ns runnable but not running; false if unreadable. */
static bool read_schedstat(const char *path, uint64_t *run, uint64_t *wait)
{
	char buf[96];
	unsigned long long r, w;
	int err = util_read_file(path, buf, sizeof(buf), NULL);

	if (err && err != -EFBIG)
		return false;
	if (sscanf(buf, "%llu %llu", &r, &w) != 2)
		return false;
	*run = r;
	*wait = w;
	return true;
}

static bool thread_schedstat(const struct att_ctx *ctx, pid_t tid, uint64_t *run, uint64_t *wait)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)ctx->pid, (int)tid);
	return read_schedstat(path, run, wait);
}

/*
 * Our own CPU time, from our thread clock. Not schedstat: its CPU time is
 * updated only at scheduler events (for a running thread it may be a tick
 * old), and its wait ("run_delay") came out longer than the whole hold
 * here (6.18: a sleeping thread may stay queued, delayed dequeue), so our
 * time off a CPU is derived: the hold, minus the waits for the thread's
 * stops, minus our CPU time.
 */
static bool own_cpu(uint64_t *run)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return false;
	*run = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return true;
}

/* HEAPTAP_HOLD_PRIO=none|nice|fifo (default nice; fifo falls back to nice): for measurements. */
static int wanted_boost(void)
{
	const char *v = getenv("HEAPTAP_HOLD_PRIO");

	if (v && !strcmp(v, "none"))
		return ATT_BOOST_NONE;
	if (v && !strcmp(v, "fifo"))
		return ATT_BOOST_FIFO;
	return ATT_BOOST_NICE;
}

/* Raise our own thread's priority for the hold; remember how to undo it. */
static void boost(struct att_ctx *ctx)
{
	struct att_hold *h = &ctx->hold;
	struct sched_param sp = { .sched_priority = 1 };
	pid_t self = (pid_t)syscall(SYS_gettid);
	int want = wanted_boost(), nice_now;

	h->boost = ATT_BOOST_NONE;
	if (want == ATT_BOOST_NONE)
		return;
	h->old_policy = sched_getscheduler(self);
	if (h->old_policy < 0 || sched_getparam(self, &h->old_param) < 0)
		return;
	if (h->old_policy != SCHED_OTHER && h->old_policy != SCHED_BATCH)
		return;	/* already real-time or idle by someone's choice: leave it */
	if (want == ATT_BOOST_FIFO && sched_setscheduler(self, SCHED_FIFO, &sp) == 0) {
		h->boost = ATT_BOOST_FIFO;
		return;
	}
	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, (id_t)self);
	if (errno)
		return;
	h->old_nice = nice_now;
	/* the lowest nice we may take: -20, or what RLIMIT_NICE allows */
	for (int n = -20; n < nice_now; n += 5) {
		if (setpriority(PRIO_PROCESS, (id_t)self, n) == 0) {
			h->boost = ATT_BOOST_NICE;
			return;
		}
	}
}

static void unboost(struct att_ctx *ctx)
{
	struct att_hold *h = &ctx->hold;
	pid_t self = (pid_t)syscall(SYS_gettid);

	if (h->boost == ATT_BOOST_FIFO)
		sched_setscheduler(self, h->old_policy, &h->old_param);
	else if (h->boost == ATT_BOOST_NICE)
		setpriority(PRIO_PROCESS, (id_t)self, h->old_nice);
	h->boost = ATT_BOOST_NONE;
}

void att_hold_begin(struct att_ctx *ctx, pid_t tid)
{
	struct att_hold *h = &ctx->hold;

	if (h->active)
		att_hold_end(ctx, false);
	memset(h, 0, sizeof(*h));
	h->tid = tid;
	h->stat_ok = thread_schedstat(ctx, tid, &h->thr_run, &h->thr_wait);
	h->slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (h->slack > 1 && prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) < 0)
		h->slack = -1;
	boost(ctx);
	/* ours last, right before the interrupt: the hold starts now */
	h->stat_ok = h->stat_ok && own_cpu(&h->own_run);
	h->active = true;
}

void att_hold_end(struct att_ctx *ctx, bool kept)
{
	struct att_hold *h = &ctx->hold;
	struct att_stats *st = &ctx->st;
	uint64_t tr = 0, tw = 0, orun = 0, work;
	int boosted = h->boost;

	if (!h->active)
		return;
	h->active = false;
	/* ours first (the hold ended with the detach), then the thread's */
	if (kept && h->stat_ok && own_cpu(&orun) && thread_schedstat(ctx, h->tid, &tr, &tw)) {
		st->hold_thr_run_ns = tr - h->thr_run;
		st->hold_thr_wait_ns = tw - h->thr_wait;
		st->hold_own_run_ns = orun - h->own_run;
		work = st->pause_ns > h->wait_ns ? st->pause_ns - h->wait_ns : 0;
		st->hold_own_wait_ns = work > st->hold_own_run_ns ? work - st->hold_own_run_ns : 0;
		st->hold_sched_ok = 1;
	}
	unboost(ctx);
	if (h->slack > 1)
		prctl(PR_SET_TIMERSLACK, (unsigned long)h->slack, 0, 0, 0);
	if (kept)
		st->hold_boost = boosted;
}
