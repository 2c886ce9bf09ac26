/* attach/regs.c - save and restore a stopped thread's registers and signal mask */
/* SPDX-License-Identifier: MIT */
/*
 * Saved at the stop, before anything is written: the general registers
 * (PTRACE_GETREGS, including orig_rax, fs_base and gs_base), the whole XSAVE
 * area (PTRACE_GETREGSET NT_X86_XSTATE: x87, SSE, AVX, AVX-512, ... with
 * MXCSR and the x87 control word; PTRACE_GETFPREGS when the kernel offers
 * no xstate) and the signal mask (PTRACE_GETSIGMASK). Put back exactly:
 * rax and orig_rax as they were at the stop make the kernel restart an
 * interrupted syscall on its own (see arch/x86_64.c).
 * A restore sets them as the thread resumes with them (att_arch_resume_regs).
 */
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "attach/internal.h"

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

enum att_reason att_regs_save(struct att_ctx *ctx, struct att_thread *thr)
{
	struct iovec iov = { thr->saved.xstate, sizeof(thr->saved.xstate) };
	int err;

	if (ptrace(PTRACE_GETREGS, thr->tid, 0, &thr->saved.gp) < 0) {
		err = errno;
		return att_fail(ctx, err == ESRCH ? ATT_E_EXITED : ATT_E_PTRACE, err,
				"PTRACE_GETREGS thread %d", (int)thr->tid);
	}
	if (ptrace(PTRACE_GETREGSET, thr->tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		thr->saved.xstate_len = iov.iov_len;
	} else {
		thr->saved.xstate_len = 0;
		if (ptrace(PTRACE_GETFPREGS, thr->tid, 0, &thr->saved.fp) < 0) {
			err = errno;
			return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_GETFPREGS thread %d",
					(int)thr->tid);
		}
	}
	if (ptrace(PTRACE_GETSIGMASK, thr->tid, (void *)sizeof(thr->saved.mask), &thr->saved.mask) < 0) {
		err = errno;
		return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_GETSIGMASK thread %d", (int)thr->tid);
	}
	thr->regs_saved = true;
	return ATT_OK;
}

/*
 * Order matters if heaptap dies in between: XSAVE area and mask first (the
 * frame's rt_sigreturn would set the same), the registers last. They are
 * set as the thread resumes with them (att_arch_resume_regs: syscall
 * restart made explicit, orig_rax -1), which is right from any kind of
 * stop, the syscall-exit stops our calls end in included.
 */
enum att_reason att_regs_restore(struct att_ctx *ctx, struct att_thread *thr)
{
	struct iovec iov = { thr->saved.xstate, thr->saved.xstate_len };
	struct user_regs_struct gp;
	enum att_reason why = ATT_OK;
	int err;

	if (thr->regs_saved) {
		if (thr->saved.xstate_len) {
			if (ptrace(PTRACE_SETREGSET, thr->tid, (void *)NT_X86_XSTATE, &iov) < 0) {
				err = errno;
				return att_fail(ctx, ATT_E_PTRACE, err,
						"PTRACE_SETREGSET xstate thread %d", (int)thr->tid);
			}
		} else if (ptrace(PTRACE_SETFPREGS, thr->tid, 0, &thr->saved.fp) < 0) {
			err = errno;
			return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SETFPREGS thread %d",
					(int)thr->tid);
		}
	}
	if (thr->mask_changed) {
		if (ptrace(PTRACE_SETSIGMASK, thr->tid, (void *)sizeof(thr->saved.mask),
			   &thr->saved.mask) < 0) {
			err = errno;
			why = att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SETSIGMASK thread %d",
				       (int)thr->tid);
		} else {
			thr->mask_changed = false;
		}
	}
	if (!thr->regs_saved)
		return why;
	att_hang(ctx, ATT_H_RESTORE_FP);
	att_arch_resume_regs(&thr->saved.gp, &gp, false);
	if (ptrace(PTRACE_SETREGS, thr->tid, 0, &gp) < 0) {
		err = errno;
		return att_fail(ctx, err == ESRCH ? ATT_E_EXITED : ATT_E_PTRACE, err,
				"PTRACE_SETREGS thread %d", (int)thr->tid);
	}
	att_hang(ctx, ATT_H_RESTORED);
	return why;
}

/*
 * Block every signal that can be blocked, except the synchronous ones. A
 * fault while its signal is blocked makes the kernel reset the process's
 * handler to SIG_DFL and unblock it (force_sig_info_to_task): our own
 * return-to-0 SIGSEGV would silently take a JVM's SIGSEGV handler away.
 */
enum att_reason att_mask_block(struct att_ctx *ctx, struct att_thread *thr)
{
	uint64_t mask = ~0ULL;
	int err;

	mask &= ~(1ULL << (SIGSEGV - 1) | 1ULL << (SIGBUS - 1) | 1ULL << (SIGILL - 1) |
		  1ULL << (SIGFPE - 1) | 1ULL << (SIGTRAP - 1) | 1ULL << (SIGSYS - 1));
	if (ctx->end_sig > 0)	/* the trampoline's end signal (call.c) must get through */
		mask &= ~(1ULL << (ctx->end_sig - 1));
	if (ptrace(PTRACE_SETSIGMASK, thr->tid, (void *)sizeof(mask), &mask) < 0) {
		err = errno;
		return att_fail(ctx, ATT_E_PTRACE, err, "PTRACE_SETSIGMASK thread %d", (int)thr->tid);
	}
	thr->mask_changed = true;
	return ATT_OK;
}
