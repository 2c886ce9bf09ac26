/* attach/call.c - one remote call in the seized thread, safe if heaptap dies at any instant */
/* SPDX-License-Identifier: MIT */
/*
 * att_call_run runs one call of a function in the held thread, between
 * att_call_begin (or att_call_map, att_call_map_at) and att_call_end
 * (bracket.c): those save the registers, write the call frame, map the
 * scratch page with the trampoline, save errno, and undo all of it.
 *
 * Why a signal frame: if heaptap is killed while the thread runs our code,
 * the kernel detaches the thread and it runs on by itself. Every call
 * therefore returns into code that ends in rt_sigreturn on that frame,
 * which restores the registers (with the syscall-restart adjustment of
 * att_arch_resume_regs), the signal mask and the XSAVE state: whatever
 * instant heaptap dies at, the thread ends up where it was (only the
 * scratch page stays mapped). While heaptap lives, the thread never gets
 * that far: heaptap takes it back at a stop just before the rt_sigreturn,
 * which the kind of call decides (enum att_call_kind):
 *
 *   kind     returns into                    runs under       taken back at
 *   MMAP     libc's sigreturn stub           PTRACE_SYSCALL   exit stop of its mmap syscall
 *   TRAMP    the trampoline (scratch page)   PTRACE_CONT      delivery stop of the trampoline's
 *                                                             tgkill of an ignored signal
 *   MUNMAP   libc's sigreturn stub           PTRACE_SYSCALL   exit stop of its munmap syscall
 *   CHAIN    the chained frame, then the     PTRACE_CONT      delivery stop of the end signal,
 *            sigreturn stub                                   between the two rt_sigreturns
 *
 * The mmap and munmap wrappers make exactly one syscall, whose result is the
 * call's; the trampoline stores rax in the frame and puts errno back before
 * its tgkill (prepare.c chooses the signal; with no ignored signal it sends
 * 0 and the call runs under PTRACE_SYSCALL up to the tgkill's exit stop).
 * From those stops the next call's registers or the final ones (orig_rax
 * -1) are set without the kernel running another syscall, so no seccomp
 * filter of the target ever sees one of ours but getpid, gettid and tgkill.
 *
 * Order of the steps that change the thread, each safe if heaptap dies
 * right after it: the frame is written (unused stack); the call's registers
 * are set (the thread would run the call and sigreturn); the mask is
 * blocked (sigreturn restores it from the frame). At the end (bracket.c):
 * XSAVE area and mask are put back (sigreturn would set the same), then the
 * registers, which makes the frame unused.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach/internal.h"

#ifndef PTRACE_GET_SYSCALL_INFO
#define PTRACE_GET_SYSCALL_INFO 0x420e
#endif
#define SYSCALL_INFO_EXIT 2	/* PTRACE_SYSCALL_INFO_EXIT: op, the first byte of the info */

enum att_reason att_need_stopped(struct att_ctx *ctx)
{
	if (!ctx->have_thr || ctx->thr.state != ATT_TS_STOPPED)
		return att_fail(ctx, ATT_E_STATE, 0, "no stopped thread (att_seize first)");
	return ATT_OK;
}

/* Is the thread in a syscall-exit stop (not an entry stop)? */
static bool at_syscall_exit(pid_t tid, const struct user_regs_struct *gp)
{
	unsigned char info[128];
	long n;

	n = ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), info);
	if (n > 0)
		return info[0] == SYSCALL_INFO_EXIT;
	return (long)gp->rax != -ENOSYS;	/* kernels before 5.3: entry stops show -ENOSYS */
}

static uint64_t tramp_end(const struct att_ctx *ctx)
{
	size_t len, marker_end;

	att_arch_tramp(&len, &marker_end);
	return ctx->scratch + marker_end;
}

/* Is this syscall stop the end of the call (MMAP, MUNMAP: its syscall; TRAMP: the tgkill)? */
static bool is_end(struct att_ctx *ctx, const struct att_thread *thr,
		   const struct user_regs_struct *gp, enum att_call_kind kind)
{
	switch (kind) {
	case ATT_CALL_MMAP:
		return (long)gp->orig_rax == SYS_mmap && at_syscall_exit(thr->tid, gp);
	case ATT_CALL_MUNMAP:
		return (long)gp->orig_rax == SYS_munmap && at_syscall_exit(thr->tid, gp);
	case ATT_CALL_TRAMP:
		return !ctx->end_sig && (long)gp->orig_rax == SYS_tgkill &&
		       gp->rip == tramp_end(ctx) && at_syscall_exit(thr->tid, gp);
	case ATT_CALL_CHAIN:
		break;
	}
	return false;
}

/* Is this signal stop the trampoline's own end signal (not one sent by someone else)? */
static bool is_end_signal(struct att_ctx *ctx, struct att_thread *thr, int sig,
			  struct user_regs_struct *gp)
{
	siginfo_t si;

	if (!ctx->end_sig || sig != ctx->end_sig)
		return false;
	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GETREGS, thr->tid, 0, gp) < 0 ||
	    ptrace(PTRACE_GETSIGINFO, thr->tid, 0, &si) < 0)
		return false;
	return gp->rip == tramp_end(ctx) && si.si_code == SI_TKILL;
}

/* Is this signal stop the chained frame's end (att_call_map_at)? */
static bool is_chain_end(struct att_ctx *ctx, struct att_thread *thr, int sig,
			 struct user_regs_struct *gp)
{
	if (!ctx->end_sig || sig != ctx->end_sig || ptrace(PTRACE_GETREGS, thr->tid, 0, gp) < 0)
		return false;
	/*
	 * between the two rt_sigreturns: nothing else runs there. The end
	 * signal may be someone else's too (a standard signal pending twice
	 * is delivered once): the process ignores it, suppressing it is what
	 * the kernel would do.
	 */
	return gp->rip == ctx->fn_sigreturn && gp->rsp == thr->frame.addr + 8;
}

/*
 * The chained call's mask: the call mask with the end signal blocked too,
 * then the end signal sent, pending until the chained frame's mask opens it.
 */
static enum att_reason chain_signal(struct att_ctx *ctx, struct att_thread *thr)
{
	uint64_t mask = ~0ULL;
	int err;

	mask &= ~(1ULL << (SIGSEGV - 1) | 1ULL << (SIGBUS - 1) | 1ULL << (SIGILL - 1) |
		  1ULL << (SIGFPE - 1) | 1ULL << (SIGTRAP - 1) | 1ULL << (SIGSYS - 1));
	if (ptrace(PTRACE_SETSIGMASK, thr->tid, (void *)sizeof(mask), &mask) < 0) {
		err = errno;
		return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SETSIGMASK thread %d", (int)thr->tid);
	}
	thr->mask_changed = true;
	att_hang(ctx, ATT_H_MASKED);
	if (att_fault(ctx, ATT_F_MASK))
		return ATT_E_FAULT;
	if (syscall(SYS_tgkill, ctx->pid, thr->tid, ctx->end_sig) < 0) {
		err = errno;
		return att_fail(ctx, err == ESRCH ? ATT_E_EXITED : ATT_E_PTRACE, err,
				"tgkill thread %d", (int)thr->tid);
	}
	att_hang(ctx, ATT_H_SENT);
	return ATT_OK;
}

static enum att_reason set_return(struct att_ctx *ctx, struct att_thread *thr, uint64_t addr)
{
	int err;

	if (thr->frame_ret == addr)
		return ATT_OK;
	err = att_mem_write(thr->tid, thr->frame.addr, &addr, sizeof(addr));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write return address at %#" PRIx64,
				thr->frame.addr);
	thr->frame_ret = addr;
	return ATT_OK;
}

/*
 * The call's registers (from the saved ones) and its return path, then the
 * signal mask: from here the thread would run the call and sigreturn.
 */
static enum att_reason set_call_regs(struct att_ctx *ctx, struct att_thread *thr, uint64_t fn,
				     const uint64_t *args, unsigned nargs, enum att_call_kind kind)
{
	struct user_regs_struct gp = thr->saved.gp;
	enum att_reason why;
	int err;

	if (kind == ATT_CALL_CHAIN) {
		/* fn: the "syscall; ret", args: mmap's; the chained frame is written */
		att_arch_setup_syscall(&gp, fn, SYS_mmap, args, nargs, thr->chain_addr);
	} else {
		why = set_return(ctx, thr, kind == ATT_CALL_TRAMP ? ctx->scratch : ctx->fn_sigreturn);
		if (why)
			return why;
		att_arch_setup_call(&gp, fn, args, nargs, thr->frame.addr);
	}
	if (ptrace(PTRACE_SETREGS, thr->tid, 0, &gp) < 0) {
		err = errno;
		return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SETREGS thread %d", (int)thr->tid);
	}
	att_hang(ctx, ATT_H_CALLREGS);
	if (kind == ATT_CALL_CHAIN)
		/* after the call's registers: both frames' rt_sigreturns set a mask */
		return chain_signal(ctx, thr);
	if (!thr->mask_changed) {
		/* after the call's registers: sigreturn would put the mask back */
		why = att_mask_block(ctx, thr);
		if (why)
			return why;
		att_hang(ctx, ATT_H_MASKED);
		if (att_fault(ctx, ATT_F_MASK))
			return ATT_E_FAULT;
	}
	return ATT_OK;
}

/* Let the call run: trampoline and chained calls with an end signal need no syscall stops. */
static enum att_reason resume_call(struct att_ctx *ctx, struct att_thread *thr,
				   enum att_call_kind kind)
{
	int err;

	thr->call_req = (kind == ATT_CALL_TRAMP && ctx->end_sig) || kind == ATT_CALL_CHAIN
				? PTRACE_CONT : PTRACE_SYSCALL;
	/* data 0 also suppresses the signal of a stop we resume from */
	if (ptrace(thr->call_req, thr->tid, 0, 0) < 0) {
		err = errno;
		return att_fail(ctx, err == ESRCH ? ATT_E_EXITED : ATT_E_PTRACE, err,
				"resume thread %d", (int)thr->tid);
	}
	thr->state = ATT_TS_CALLING;
	thr->at_signal_stop = false;
	att_hang(ctx, ATT_H_RESUMED);
	return ATT_OK;
}

/* Is this signal stop the end of the call (TRAMP: the end signal; CHAIN: between the frames)? */
static bool is_end_stop(struct att_ctx *ctx, struct att_thread *thr, enum att_call_kind kind,
			int sig, struct user_regs_struct *gp)
{
	if (kind == ATT_CALL_TRAMP)
		return is_end_signal(ctx, thr, sig, gp);
	return kind == ATT_CALL_CHAIN && is_chain_end(ctx, thr, sig, gp);
}

/*
 * Wait for the call's end stop: ATT_D_DONE with gp the registers there,
 * else ATT_D_FAIL with *why. A call that does not end within
 * call_timeout_ms is interrupted where it is (att_call_end puts the
 * registers back); other syscall stops are passed through.
 */
static enum att_disp await_end(struct att_ctx *ctx, struct att_thread *thr, enum att_call_kind kind,
			       struct user_regs_struct *gp, enum att_reason *why)
{
	enum att_event ev;
	enum att_disp d;
	int status, err;

	for (;;) {
		ev = att_wait(ctx, thr, ctx->call_timeout_ms, &status);
		if (ev == ATT_EV_TIMEOUT && !thr->interrupting) {
			thr->interrupting = true;
			if (ptrace(PTRACE_INTERRUPT, thr->tid, 0, 0) == 0)
				continue;
		}
		if (ev == ATT_EV_SIGNAL_STOP && is_end_stop(ctx, thr, kind, WSTOPSIG(status), gp)) {
			thr->state = ATT_TS_STOPPED;
			thr->at_signal_stop = true;
			return ATT_D_DONE;
		}
		d = att_dispatch(ctx, thr, ATT_PH_CALLING, ev, status, why);
		if (d == ATT_D_AGAIN)
			continue;
		if (d != ATT_D_SYSCALL)
			return d;
		if (ptrace(PTRACE_GETREGS, thr->tid, 0, gp) < 0) {
			err = errno;
			*why = att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_GETREGS thread %d", (int)thr->tid);
			return ATT_D_FAIL;
		}
		if (is_end(ctx, thr, gp, kind))
			return ATT_D_DONE;
		if (thr->interrupting) {
			/* any ptrace stop consumes a pending PTRACE_INTERRUPT: this is it */
			*why = att_fail(ctx, ATT_E_CALL_TIMEOUT, 0, "thread %d", (int)thr->tid);
			return ATT_D_FAIL;
		}
		ctx->st.syscall_stops++;
		att_hang(ctx, ATT_H_SYSSTOP);
		if (ptrace(thr->call_req, thr->tid, 0, 0) < 0) {
			err = errno;
			*why = att_fail(ctx, err == ESRCH ? ATT_E_EXITED : ATT_E_PTRACE, err,
					"PTRACE_SYSCALL thread %d", (int)thr->tid);
			return ATT_D_FAIL;
		}
		thr->state = ATT_TS_CALLING;
	}
}

/* The call's result at its end stop: the syscall's, the function's rax, or none (CHAIN). */
static enum att_reason call_result(struct att_ctx *ctx, struct att_thread *thr,
				   enum att_call_kind kind, const struct user_regs_struct *gp,
				   uint64_t *ret)
{
	int err;

	switch (kind) {
	case ATT_CALL_CHAIN:
		*ret = 0;	/* the result is gone with the chained frame's registers */
		return ATT_OK;
	case ATT_CALL_MMAP:
	case ATT_CALL_MUNMAP:
		*ret = att_arch_ret(gp);
		return ATT_OK;
	case ATT_CALL_TRAMP:
		break;
	}
	err = att_mem_read(thr->tid, thr->frame.addr + ATT_FRAME_RESULT, ret, sizeof(*ret));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "read the call's result");
	return ATT_OK;
}

enum att_reason att_call_run(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			     enum att_call_kind kind, uint64_t *ret)
{
	struct att_thread *thr = &ctx->thr;
	struct user_regs_struct gp;
	enum att_reason why = ATT_OK;
	enum att_disp d;
	uint64_t t0;

	if (att_need_stopped(ctx) || !thr->regs_saved || !thr->frame_written)
		return att_fail(ctx, ATT_E_STATE, 0, "remote call without saved registers");
	if (nargs > 6)
		return att_fail(ctx, ATT_E_STATE, 0, "%u arguments, at most 6", nargs);
	why = set_call_regs(ctx, thr, fn, args, nargs, kind);
	if (why)
		return why;
	t0 = util_mono_ns();
	why = resume_call(ctx, thr, kind);
	if (why)
		return why;
	d = await_end(ctx, thr, kind, &gp, &why);
	thr->interrupting = false;
	ctx->st.call_ns += util_mono_ns() - t0;
	ctx->st.calls++;
	if (d != ATT_D_DONE)
		return why;
	att_hang(ctx, ATT_H_END);
	return call_result(ctx, thr, kind, &gp, ret);
}

enum att_reason att_call_raw(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			     uint64_t *ret)
{
	if (!ctx->scratch)
		return att_fail(ctx, ATT_E_STATE, 0, "remote call outside att_call_begin");
	return att_call_run(ctx, fn, args, nargs, ATT_CALL_TRAMP, ret);
}
