/* attach/seize.c - stop one safe thread (seize, interrupt, vet), and let it go again */
/* SPDX-License-Identifier: MIT */
/*
 * Only the thread we will use is ever seized: PTRACE_SEIZE attaches to a
 * single tid without stopping it, PTRACE_INTERRUPT stops just that one.
 * Candidates are tried best first (choose.c); each is stopped, its
 * registers and stack checked, and let go at once if unsafe. No
 * PTRACE_O_EXITKILL: if heaptap dies, the kernel detaches and the target
 * runs on. PTRACE_O_TRACEEXEC reports an execve as an event instead of a
 * plain SIGTRAP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/internal.h"

#define ERESTARTSYS 512	/* for check_stop_regs */
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

enum try_result {
	TRY_OK,
	TRY_NEXT,	/* gone or unsafe: try the next candidate */
	TRY_REFUSED,	/* PTRACE_SEIZE refused (EPERM) for this thread: try the next */
	TRY_FATAL,	/* give up; *why says why */
};

/* Await a stop after PTRACE_INTERRUPT. */
static enum att_reason await_stop(struct att_ctx *ctx, struct att_thread *thr, unsigned timeout_ms)
{
	enum att_reason why = ATT_OK;
	enum att_event ev;
	enum att_disp d;
	int status;

	do {
		ev = att_wait(ctx, thr, timeout_ms, &status);
		d = att_dispatch(ctx, thr, ATT_PH_STOPPING, ev, status, &why);
	} while (d == ATT_D_AGAIN);
	return d == ATT_D_DONE ? ATT_OK : why;
}

static int check_stop_regs(struct att_ctx *ctx, struct att_thread *thr, char *why, size_t cap,
			   enum att_reason *fatal);

void att_thread_detach(struct att_ctx *ctx, struct att_thread *thr)
{
	enum att_state was = thr->state;
	enum att_reason why;
	char reason[96];

	if (thr->state == ATT_TS_UNTRACED || thr->state == ATT_TS_GONE)
		return;
	if (thr->state == ATT_TS_SEIZED || thr->state == ATT_TS_CALLING) {
		/* PTRACE_DETACH needs a stop */
		if (ptrace(PTRACE_INTERRUPT, thr->tid, 0, 0) < 0 && errno == ESRCH) {
			thr->state = ATT_TS_GONE;
			return;
		}
		why = await_stop(ctx, thr, 10000);
		if (why && thr->state != ATT_TS_STOPPED)
			return;	/* gone, or still not stopped: our exit detaches it */
		/*
		 * Never stopped before (the stop came after its deadline, or a
		 * failure right after the seize): our interrupt broke its call
		 * as at any first stop, so a waiting call that returned EINTR
		 * is set up to go on (reenter.c) before it is let go.
		 */
		if (was == ATT_TS_SEIZED && thr->state == ATT_TS_STOPPED)
			(void)check_stop_regs(ctx, thr, reason, sizeof(reason), &why);
		if (thr->state == ATT_TS_GONE || thr->state == ATT_TS_UNTRACED)
			return;	/* gone, or let go with a signal of its own (reenter.c) */
	}
	if (thr->regs_saved || thr->mask_changed) {
		why = ATT_OK;
		att_call_end(ctx, &why);
	}
	att_reenter_finish(ctx, thr);
	/* data 0: a crash stop's signal is not delivered */
	if (ptrace(PTRACE_DETACH, thr->tid, 0, 0) < 0 && errno != ESRCH) {
		att_fail(ctx, ATT_E_PTRACE, errno, "PTRACE_DETACH thread %d", (int)thr->tid);
		return;
	}
	thr->state = ATT_TS_UNTRACED;
}

void att_release(struct att_ctx *ctx)
{
	if (!ctx->have_thr)
		return;
	att_thread_detach(ctx, &ctx->thr);
	ctx->st.pause_ns = util_mono_ns() - ctx->thr.t_interrupt;
	ctx->st.hold_stops = ctx->hold.stops;
	ctx->st.hold_wait_ns = ctx->hold.wait_ns;
	att_hold_end(ctx, true);
	ctx->have_thr = false;
	att_own_signals_restore(ctx);	/* in case registers could not be put back */
	if (!(ctx->ld.pending && ctx->ld.threaded))	/* a loader thread still needs the file */
		att_unstage(ctx);
}

/*
 * The stop registers tell what the thread really was in. A waiting call the
 * stop broke off with EINTR (or one with a temporary signal mask) is set up
 * by reenter.c to go on as if never stopped; other syscalls that would not
 * restart are refused. Returns 0, 1 (let it go: why) or -1 (*fatal).
 */
static int check_stop_regs(struct att_ctx *ctx, struct att_thread *thr, char *why, size_t cap,
			   enum att_reason *fatal)
{
	struct user_regs_struct gp;
	unsigned long args[6];
	long rax, nr;
	int rc;

	ctx->st.resumed[0] = '\0';
	if (ptrace(PTRACE_GETREGS, thr->tid, 0, &gp) < 0) {
		snprintf(why, cap, "PTRACE_GETREGS: %s", strerror(errno));
		return 1;
	}
	nr = (long)gp.orig_rax;
	rax = (long)gp.rax;
	thr->sysno = nr;
	ctx->st.stop_rax = rax;
	if (nr < 0)
		return 0;
	rc = att_reenter(ctx, thr, &gp, why, cap, fatal);
	if (rc || ctx->st.resumed[0])
		return rc;
	args[0] = gp.rdi;
	args[1] = gp.rsi;
	args[2] = gp.rdx;
	args[3] = gp.r10;
	args[4] = gp.r8;
	args[5] = gp.r9;
	if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR || rax == -ERESTARTNOHAND ||
	    rax == -ERESTART_RESTARTBLOCK) {
		if (att_arch_sysclass(nr, args) != ATT_SC_RESTART) {
			snprintf(why, cap, "stopped in %s (syscall %ld), not safe to restart",
				 att_arch_sysname(nr), nr);
			return 1;
		}
		if (nr == SYS_restart_syscall)
			snprintf(ctx->st.resumed, sizeof(ctx->st.resumed),
				 "restart_syscall: resumed there, the call it restarts ends when it "
				 "would have");
	}
	return 0;
}

static enum try_result try_thread(struct att_ctx *ctx, const struct att_cand *c, enum att_reason *why)
{
	struct att_thread *thr = &ctx->thr;
	struct att_maps maps;
	char reason[96], path[64], status[4096], tracer[32];
	const char *v;
	uint64_t t0, t1;
	int err, rc;

	memset(thr, 0, sizeof(*thr));
	thr->tid = c->tid;
	thr->sysno = c->sysno;
	thr->sysclass = c->sysclass;
	if (ptrace(PTRACE_SEIZE, c->tid, 0,
		   (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC)) < 0) {
		err = errno;
		if (err == ESRCH)
			return TRY_NEXT;	/* the thread exited meanwhile */
		snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
		if (err == EPERM && att_read_file(path, status, sizeof(status)) > 0 &&
		    (v = att_status_field(status, "TracerPid")) && atoi(v) > 0) {
			snprintf(path, sizeof(path), "/proc/%d/comm", atoi(v));
			if (att_read_file(path, tracer, sizeof(tracer)) <= 0)
				snprintf(tracer, sizeof(tracer), "?");
			tracer[strcspn(tracer, "\n")] = '\0';
			*why = att_fail(ctx, ATT_E_TRACED, err, "traced by %d (%s)", atoi(v), tracer);
			return TRY_FATAL;
		}
		/* e.g. an io_uring worker slipped through, or an LSM says no for this one */
		*why = att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SEIZE thread %d", (int)c->tid);
		return err == EPERM ? TRY_REFUSED : TRY_FATAL;
	}
	thr->state = ATT_TS_SEIZED;
	ctx->have_thr = true;
	if (att_fault(ctx, ATT_F_SEIZE)) {
		*why = ATT_E_FAULT;
		goto out_detach_fatal;
	}
	att_hold_begin(ctx, c->tid);
	t0 = util_mono_ns();
	thr->t_interrupt = t0;
	if (ptrace(PTRACE_INTERRUPT, c->tid, 0, 0) < 0) {
		err = errno;
		if (err == ESRCH) {
			thr->state = ATT_TS_GONE;
			ctx->have_thr = false;
			att_hold_end(ctx, false);
			return TRY_NEXT;
		}
		*why = att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_INTERRUPT thread %d", (int)c->tid);
		goto out_detach_fatal;
	}
	*why = await_stop(ctx, thr, ctx->stop_timeout_ms);
	if (*why) {
		if (thr->state == ATT_TS_GONE && att_process_alive(ctx->pid)) {
			ctx->have_thr = false;
			att_hold_end(ctx, false);
			return TRY_NEXT;
		}
		goto out_detach_fatal;
	}
	t1 = util_mono_ns();
	ctx->st.stop_ns = t1 - t0;
	att_hang(ctx, ATT_H_STOPPED);
	if (att_fault(ctx, ATT_F_INTERRUPT)) {
		*why = ATT_E_FAULT;
		goto out_detach_fatal;
	}
	rc = check_stop_regs(ctx, thr, reason, sizeof(reason), why);
	if (rc < 0) {
		if (thr->state == ATT_TS_GONE && att_process_alive(ctx->pid)) {
			ctx->have_thr = false;
			att_hold_end(ctx, false);
			return TRY_NEXT;
		}
		goto out_detach_fatal;
	}
	if (rc == 0) {
		rc = att_maps_read_at(ctx->procdir, &maps);
		if (rc) {
			snprintf(reason, sizeof(reason), "read maps: %s", strerror(-rc));
		} else {
			rc = att_stack_check(ctx, thr, &maps, reason, sizeof(reason));
			att_maps_free(&maps);
		}
	}
	ctx->st.unwind_ns = util_mono_ns() - t1;
	if (rc) {
		att_thread_detach(ctx, thr);
		att_hold_end(ctx, false);
		ctx->have_thr = false;
		ctx->st.rejected++;
		snprintf(ctx->st.reject_why, sizeof(ctx->st.reject_why), "%d: %s", (int)c->tid, reason);
		if (util_mono_ns() - t0 > ctx->st.max_reject_ns)
			ctx->st.max_reject_ns = util_mono_ns() - t0;
		return TRY_NEXT;
	}
	if (att_fault(ctx, ATT_F_CHOOSE)) {
		*why = ATT_E_FAULT;
		goto out_detach_fatal;
	}
	ctx->st.tid = c->tid;
	ctx->st.syscall = thr->sysno;
	return TRY_OK;

out_detach_fatal:
	att_thread_detach(ctx, thr);
	att_hold_end(ctx, false);
	ctx->have_thr = false;
	return TRY_FATAL;
}

/* The held thread's process is still the one checked, or the thread is let go untouched. */
static enum att_reason recheck(struct att_ctx *ctx)
{
	enum att_reason why = att_ident_recheck(ctx);

	if (why) {
		att_thread_detach(ctx, &ctx->thr);
		att_hold_end(ctx, false);
		ctx->have_thr = false;
	}
	return why;
}

enum att_reason att_seize(struct att_ctx *ctx)
{
	enum att_reason why = ATT_OK;
	unsigned round;
	size_t i, refused;
	bool had_cand = false;

	if (!ctx->preflight_ok || ctx->have_thr)
		return att_fail(ctx, ATT_E_STATE, 0, "att_seize needs a passed preflight and no held thread");
	ctx->st.rejected = 0;
	/* everything that reads files is done now, while nothing is stopped */
	why = att_prepare(ctx, NULL);
	if (why)
		return why;
	for (round = 0; round < ATT_SEIZE_ROUNDS; round++) {
		ctx->st.rounds = round + 1;
		if (round > 0)
			att_sleep_ms(ATT_ROUND_PAUSE_MS);
		if (!att_process_alive(ctx->pid))
			return att_gone(ctx);
		why = att_choose_thread(ctx);
		if (why == ATT_E_NO_THREAD || why == ATT_E_THREAD_UNSAFE)
			continue;	/* states change: look again after a pause */
		if (why)
			return why;
		had_cand = true;
		refused = 0;
		for (i = 0; i < ctx->ncand; i++) {
			switch (try_thread(ctx, &ctx->cand[i], &why)) {
			case TRY_OK:
				return recheck(ctx);
			case TRY_FATAL:
				return why;
			case TRY_REFUSED:
				refused++;
				break;
			case TRY_NEXT:
				break;
			}
		}
		if (refused == ctx->ncand)
			return ATT_E_PTRACE;	/* every candidate refused: detail of the last */
	}
	if (!had_cand)
		return why;	/* ATT_E_NO_THREAD or ATT_E_THREAD_UNSAFE, detail from the last look */
	return att_fail(ctx, ATT_E_NO_SAFE_THREAD, 0, "%u rounds, %u threads let go; last: %s",
			ctx->st.rounds, ctx->st.rejected, ctx->st.reject_why);
}
