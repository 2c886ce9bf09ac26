/* attach/wait.c - wait for a traced thread with a deadline; classify and dispatch its stops */
/* SPDX-License-Identifier: MIT */
/*
 * One wait function turns a waitpid status into an enum att_event, and one
 * dispatcher acts on it according to the phase:
 *
 *   STOPPING (after PTRACE_INTERRUPT): we await the PTRACE_EVENT_STOP. A
 *     signal-delivery-stop that comes first is delivered at once with its
 *     siginfo untouched (PTRACE_CONT with the signal): exactly once, where
 *     it would have gone. The interrupt is still pending and traps right
 *     after, inside the handler's frame, so the stack check sees a signal
 *     frame and lets that thread go. A group-stop means the process is
 *     being stopped by job control: we give up and leave it stopped.
 *
 *   CALLING (our function runs, resumed with PTRACE_SYSCALL or PTRACE_CONT):
 *     syscall stops go back to the caller (call.c), which knows where the
 *     call ends (it also recognises its end signal before dispatching).
 *     Asynchronous signals are blocked, so only SIGSTOP (not blockable) can
 *     still arrive: it is delivered at once, like any other (heaptap keeps
 *     nothing a kill would lose). The group-stop it starts is let pass for
 *     our thread: the kernel puts it back into the stop when we detach
 *     (__ptrace_unlink re-arms JOBCTL_STOP_PENDING). A synchronous signal is
 *     a crash of the call.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/internal.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static bool is_sync_signal(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP || sig == SIGSYS;
}

/*
 * How att_wait waits for the held thread (hold.c: our priority raised
 * when allowed, our timer slack 1 ns): it sleeps between polls, 10 us for
 * the first 100 us (a nice -20 thread is back on a CPU within
 * microseconds of its timer; most stops are there by the first poll),
 * then 50 us, and from 2 ms on twice as long each time, at most 200 us.
 * It never spins or yields: on a machine with fewer free CPUs than
 * runnable threads a spinning heaptap takes a CPU from the very thread it
 * waits for, and a sched_yield() puts heaptap behind every other runnable
 * thread on its CPU, where it may wait a whole time slice to see the
 * stop. 10 us naps throughout cost heaptap about half a CPU when the
 * thread itself waited for one; 50 us after the first 100 us keeps the
 * hold as short without that cost.
 */
#define NAP_FIRST_NS 10000
#define NAP_FIRST_FOR_NS 100000
#define NAP_NEXT_NS 50000
#define NAP_DOUBLE_FROM_NS 2000000
#define NAP_MAX_NS 200000

enum att_event att_wait(struct att_ctx *ctx, struct att_thread *thr, unsigned timeout_ms, int *status)
{
	uint64_t t0 = util_mono_ns(), deadline = t0 + (uint64_t)timeout_ms * 1000000u, now;
	struct timespec nap = { 0, 20000 };
	bool held = ctx->hold.active && ctx->hold.tid == thr->tid;
	bool sleepy = held;
	int st = 0, sig, event, spins = 0;
	pid_t r;

	if (sleepy)
		nap.tv_nsec = NAP_FIRST_NS;
	for (;;) {
		r = waitpid(thr->tid, &st, __WALL | WNOHANG);
		if (r == thr->tid)
			break;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			*status = 0;
			return ATT_EV_ERROR;
		}
		now = util_mono_ns();
		if (now >= deadline) {
			if (held)
				ctx->hold.wait_ns += now - t0;
			return ATT_EV_TIMEOUT;
		}
		if (sleepy) {
			if (now - t0 >= NAP_FIRST_FOR_NS && nap.tv_nsec < NAP_NEXT_NS)
				nap.tv_nsec = NAP_NEXT_NS;
			if (now - t0 >= NAP_DOUBLE_FROM_NS && nap.tv_nsec < NAP_MAX_NS)
				nap.tv_nsec *= 2;
			nanosleep(&nap, NULL);
			continue;
		}
		/*
		 * The pause of the target's thread includes our reaction time:
		 * yield for the first ~100 polls (a stop or a short call is seen
		 * within microseconds), then nap from 20 us up to 200 us.
		 */
		if (spins++ < 100) {
			sched_yield();
			continue;
		}
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 200000)
			nap.tv_nsec *= 2;
	}
	*status = st;
	if (held) {
		ctx->hold.wait_ns += util_mono_ns() - t0;
		ctx->hold.stops++;
	}
	if (WIFEXITED(st) || WIFSIGNALED(st))
		return ATT_EV_EXITED;
	if (!WIFSTOPPED(st))
		return ATT_EV_ERROR;
	sig = WSTOPSIG(st);
	event = (unsigned)st >> 16;
	if (event == PTRACE_EVENT_STOP)
		return is_stop_signal(sig) ? ATT_EV_GROUP_STOP : ATT_EV_INTERRUPT_STOP;
	if (event == PTRACE_EVENT_EXEC)
		return ATT_EV_EXEC;
	if (event)
		return ATT_EV_OTHER_EVENT;
	if (sig == (SIGTRAP | 0x80))
		return ATT_EV_SYSCALL_STOP;
	return ATT_EV_SIGNAL_STOP;
}

/* Resume thr with sig (PTRACE_CONT, or PTRACE_SYSCALL during calls); ESRCH means it is gone. */
static int resume_req(struct att_thread *thr, int req, int sig)
{
	if (ptrace(req, thr->tid, 0, (void *)(long)sig) < 0)
		return -errno;
	return 0;
}

static int resume(struct att_thread *thr, int sig)
{
	return resume_req(thr, PTRACE_CONT, sig);
}

/* During a call: as the call runs (PTRACE_SYSCALL, or PTRACE_CONT for trampoline calls). */
static int resume_sys(struct att_thread *thr, int sig)
{
	return resume_req(thr, thr->call_req ? thr->call_req : PTRACE_SYSCALL, sig);
}

static enum att_disp gone(struct att_ctx *ctx, struct att_thread *thr, enum att_reason *why)
{
	thr->state = ATT_TS_GONE;
	thr->regs_saved = false;
	thr->mask_changed = false;
	*why = att_fail(ctx, ATT_E_EXITED, 0, "thread %d", (int)thr->tid);
	return ATT_D_FAIL;
}

static enum att_disp disp_stopping(struct att_ctx *ctx, struct att_thread *thr, enum att_event ev,
				   int status, enum att_reason *why)
{
	int sig = WIFSTOPPED(status) ? WSTOPSIG(status) : 0;

	switch (ev) {
	case ATT_EV_INTERRUPT_STOP:
		thr->state = ATT_TS_STOPPED;
		thr->at_signal_stop = false;
		return ATT_D_DONE;
	case ATT_EV_SIGNAL_STOP:
		/* deliver now, exactly once, siginfo unchanged (see file header) */
		ctx->st.delivered_signals++;
		return resume(thr, sig) ? gone(ctx, thr, why) : ATT_D_AGAIN;
	case ATT_EV_GROUP_STOP:
		thr->state = ATT_TS_STOPPED;
		thr->at_signal_stop = false;
		thr->group_stop_seen = true;
		*why = att_fail(ctx, ATT_E_STOPPED, 0, "stopped by signal %d during attach", sig);
		return ATT_D_FAIL;
	case ATT_EV_EXEC:
		thr->state = ATT_TS_STOPPED;
		thr->at_signal_stop = false;
		*why = att_fail(ctx, ATT_E_EXEC, 0, "thread %d", (int)thr->tid);
		return ATT_D_FAIL;
	case ATT_EV_SYSCALL_STOP:
		/*
		 * Only a thread resumed by a call (PTRACE_SYSCALL) has these, and
		 * the stop consumed our PTRACE_INTERRUPT: it is the stop we wait for.
		 */
		thr->state = ATT_TS_STOPPED;
		thr->at_signal_stop = false;
		return ATT_D_DONE;
	case ATT_EV_OTHER_EVENT:
		return resume(thr, 0) ? gone(ctx, thr, why) : ATT_D_AGAIN;
	case ATT_EV_EXITED:
	case ATT_EV_ERROR:
		return gone(ctx, thr, why);
	case ATT_EV_TIMEOUT:
		*why = att_fail(ctx, ATT_E_STOP_TIMEOUT, 0, "thread %d", (int)thr->tid);
		return ATT_D_FAIL;
	}
	return ATT_D_AGAIN;
}

static enum att_disp disp_calling(struct att_ctx *ctx, struct att_thread *thr, enum att_event ev,
				  int status, enum att_reason *why)
{
	int sig = WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
	struct user_regs_struct gp;
	siginfo_t si;

	switch (ev) {
	case ATT_EV_SIGNAL_STOP:
		if (is_sync_signal(sig)) {
			memset(&si, 0, sizeof(si));
			if (ptrace(PTRACE_GETSIGINFO, thr->tid, 0, &si) < 0 ||
			    ptrace(PTRACE_GETREGS, thr->tid, 0, &gp) < 0)
				return gone(ctx, thr, why);
			thr->state = ATT_TS_STOPPED;
			thr->at_signal_stop = true;
			thr->last_sig = sig;
			thr->fault_addr = att_arch_pc(&gp);
			*why = att_fail(ctx, ATT_E_CALL_FAULT, 0, "signal %d (%s) at pc %#llx, address %p",
					sig, strsignal(sig), (unsigned long long)att_arch_pc(&gp),
					si.si_addr);
			return ATT_D_FAIL;
		}
		/* deliver now, exactly once, siginfo unchanged (see file header) */
		ctx->st.delivered_signals++;
		return resume_sys(thr, sig) ? gone(ctx, thr, why) : ATT_D_AGAIN;
	case ATT_EV_GROUP_STOP:
		thr->group_stop_seen = true;
		return resume_sys(thr, 0) ? gone(ctx, thr, why) : ATT_D_AGAIN;
	case ATT_EV_INTERRUPT_STOP:
		if (thr->interrupting) {
			/* the call hung and we stopped it: back in our hands, mid-call */
			thr->interrupting = false;
			thr->state = ATT_TS_STOPPED;
			thr->at_signal_stop = false;
			*why = att_fail(ctx, ATT_E_CALL_TIMEOUT, 0, "thread %d", (int)thr->tid);
			return ATT_D_FAIL;
		}
		return resume_sys(thr, 0) ? gone(ctx, thr, why) : ATT_D_AGAIN;
	case ATT_EV_SYSCALL_STOP:
		thr->state = ATT_TS_STOPPED;
		thr->at_signal_stop = false;
		return ATT_D_SYSCALL;
	case ATT_EV_OTHER_EVENT:
		return resume_sys(thr, 0) ? gone(ctx, thr, why) : ATT_D_AGAIN;
	case ATT_EV_EXEC:
		/* the old program is gone: its saved registers mean nothing now */
		thr->state = ATT_TS_STOPPED;
		thr->at_signal_stop = false;
		thr->regs_saved = false;
		thr->mask_changed = false;
		thr->errno_saved = false;
		*why = att_fail(ctx, ATT_E_EXEC, 0, "thread %d", (int)thr->tid);
		return ATT_D_FAIL;
	case ATT_EV_EXITED:
	case ATT_EV_ERROR:
		return gone(ctx, thr, why);
	case ATT_EV_TIMEOUT:
		*why = att_fail(ctx, ATT_E_CALL_TIMEOUT, 0, "thread %d", (int)thr->tid);
		return ATT_D_FAIL;
	}
	return ATT_D_AGAIN;
}

enum att_disp att_dispatch(struct att_ctx *ctx, struct att_thread *thr, enum att_phase ph,
			   enum att_event ev, int status, enum att_reason *why)
{
	if (ph == ATT_PH_STOPPING)
		return disp_stopping(ctx, thr, ev, status, why);
	return disp_calling(ctx, thr, ev, status, why);
}
