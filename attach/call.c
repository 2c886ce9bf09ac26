/* attach/call.c - call a function in the seized thread and get its return value */
/* SPDX-License-Identifier: MIT */
/*
 * Bracket: att_call_begin() saves registers, XSAVE area and mask, blocks
 * asynchronous signals and saves errno (glibc's errno lives in the thread's
 * TLS; __errno_location() in the target tells where); att_call_end() puts
 * errno, mask and registers back. Between them any number of att_call_raw()
 * calls, each starting from the saved registers with a fresh frame (see
 * arch/x86_64.c) and ending at the SIGSEGV its return to address 0 raises,
 * which is suppressed (never delivered).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>

#include "attach/internal.h"

static enum att_reason need_stopped(struct att_ctx *ctx)
{
	if (!ctx->have_thr || ctx->thr.state != ATT_TS_STOPPED)
		return att_fail(ctx, ATT_E_STATE, 0, "no stopped thread (att_seize first)");
	return ATT_OK;
}

enum att_reason att_call_raw(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			     uint64_t *ret)
{
	struct att_thread *thr = &ctx->thr;
	struct user_regs_struct gp = thr->saved.gp;
	uint64_t slot, zero = ATT_RETURN_ADDR, t0;
	enum att_reason why = ATT_OK;
	enum att_event ev;
	enum att_disp d;
	int status, err;

	if (need_stopped(ctx) || !thr->regs_saved)
		return att_fail(ctx, ATT_E_STATE, 0, "remote call without saved registers");
	if (nargs > 6)
		return att_fail(ctx, ATT_E_STATE, 0, "%u arguments, at most 6", nargs);
	att_arch_setup_call(&gp, fn, args, nargs, &slot);
	err = att_mem_write(thr->tid, slot, &zero, sizeof(zero));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write return address at %#llx",
				(unsigned long long)slot);
	if (ptrace(PTRACE_SETREGS, thr->tid, 0, &gp) < 0) {
		err = errno;
		return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SETREGS thread %d", (int)thr->tid);
	}
	t0 = att_now_ns();
	/* from the previous call's SIGSEGV stop, data 0 suppresses that signal */
	if (ptrace(PTRACE_CONT, thr->tid, 0, 0) < 0) {
		err = errno;
		return att_fail(ctx, err == ESRCH ? ATT_E_EXITED : ATT_E_PTRACE, err,
				"PTRACE_CONT thread %d", (int)thr->tid);
	}
	thr->state = ATT_TS_CALLING;
	thr->at_signal_stop = false;
	do {
		ev = att_wait(ctx, thr, ctx->call_timeout_ms, &status);
		if (ev == ATT_EV_TIMEOUT && !thr->interrupting) {
			/* stop it where it is; registers are put back by att_call_end */
			thr->interrupting = true;
			if (ptrace(PTRACE_INTERRUPT, thr->tid, 0, 0) == 0)
				continue;
		}
		d = att_dispatch(ctx, thr, ATT_PH_CALLING, ev, status, &why);
	} while (d == ATT_D_AGAIN);
	thr->interrupting = false;
	ctx->st.call_ns += att_now_ns() - t0;
	ctx->st.calls++;
	if (d != ATT_D_DONE)
		return why;
	if (ptrace(PTRACE_GETREGS, thr->tid, 0, &gp) < 0) {
		err = errno;
		return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_GETREGS thread %d", (int)thr->tid);
	}
	*ret = att_arch_ret(&gp);
	return ATT_OK;
}

/*
 * Defer the signals that would end heaptap while the target's thread holds
 * our registers (see attach.h): blocked in this thread, they stay pending
 * and arrive once att_call_end() put everything back.
 */
static void defer_own_signals(struct att_ctx *ctx)
{
	sigset_t set;

	if (ctx->own_mask_saved)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGALRM);
	if (pthread_sigmask(SIG_BLOCK, &set, &ctx->own_mask) == 0)
		ctx->own_mask_saved = true;
}

void att_own_signals_restore(struct att_ctx *ctx)
{
	if (!ctx->own_mask_saved)
		return;
	pthread_sigmask(SIG_SETMASK, &ctx->own_mask, NULL);
	ctx->own_mask_saved = false;
}

enum att_reason att_call_begin(struct att_ctx *ctx)
{
	struct att_thread *thr = &ctx->thr;
	enum att_reason why;
	uint64_t addr;
	int32_t value;
	int err;

	why = need_stopped(ctx);
	if (why)
		return why;
	if (!thr->regs_saved) {
		why = att_regs_save(ctx, thr);
		if (why)
			return why;
	}
	defer_own_signals(ctx);
	if (att_fault(ctx, "regs"))
		return ATT_E_FAULT;
	why = att_mask_block(ctx, thr);
	if (why)
		return why;
	if (att_fault(ctx, "mask"))
		return ATT_E_FAULT;
	why = att_resolve_funcs(ctx);
	if (why)
		return why;
	why = att_call_raw(ctx, ctx->fn_errno, NULL, 0, &addr);
	if (why)
		return why;
	err = att_mem_read(thr->tid, addr, &value, sizeof(value));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "read errno at %#llx", (unsigned long long)addr);
	thr->errno_addr = addr;
	thr->errno_value = value;
	thr->errno_saved = true;
	if (att_fault(ctx, "errno"))
		return ATT_E_FAULT;
	return ATT_OK;
}

void att_call_end(struct att_ctx *ctx, enum att_reason *why)
{
	struct att_thread *thr = &ctx->thr;
	enum att_reason r;
	int err;

	if (thr->state != ATT_TS_STOPPED) {
		/* gone, or stuck running our code: nothing left to put back */
		thr->regs_saved = thr->mask_changed = thr->errno_saved = false;
		att_own_signals_restore(ctx);
		return;
	}
	if (thr->errno_saved) {
		err = att_mem_write(thr->tid, thr->errno_addr, &thr->errno_value,
				    sizeof(thr->errno_value));
		if (err && *why == ATT_OK)
			*why = att_fail(ctx, ATT_E_MEMORY, -err, "restore errno");
		thr->errno_saved = false;
	}
	r = att_regs_restore(ctx, thr);
	if (r && *why == ATT_OK)
		*why = r;
	if (r == ATT_OK) {
		thr->regs_saved = false;
		att_own_signals_restore(ctx);
	}
}

enum att_reason att_call(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			 uint64_t *ret)
{
	enum att_reason why;

	why = att_call_begin(ctx);
	if (why == ATT_OK)
		why = att_call_raw(ctx, fn, args, nargs, ret);
	att_call_end(ctx, &why);
	return why;
}
