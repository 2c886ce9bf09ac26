/* attach/reenter.c - a thread stopped in a waiting call that returns EINTR: let it go on unnoticed */
/* SPDX-License-Identifier: MIT */
/*
 * PTRACE_INTERRUPT breaks a blocking call as a signal would. Most calls
 * then return -ERESTART* and the kernel issues them again once the stop
 * ends (regs.c). These do not, and the program would see EINTR:
 *
 *   epoll_wait, epoll_pwait, epoll_pwait2, rt_sigtimedwait (sigwaitinfo,
 *   sigtimedwait), and read/recv/accept/write/send on a socket with a
 *   receive or send timeout (SO_RCVTIMEO/SO_SNDTIMEO): -EINTR;
 *   ppoll, pselect6 and epoll_pwait* with a signal mask: the call has put
 *   a temporary mask in place and keeps the program's own one aside
 *   (TIF_RESTORE_SIGMASK); the first resume puts it back, but only after
 *   heaptap read the temporary one as "the thread's mask" and wrote it
 *   back at the end (PTRACE_SETSIGMASK also drops the saved one).
 *
 * What is done at the stop, per kind, least noticeable first (the table
 * with what the program sees is in docs/attach.md):
 *
 *   no timeout (epoll_wait -1, sigwaitinfo, a NULL timeout): the stop's
 *     registers are rewritten to issue the same call again (rip back over
 *     the 2-byte syscall instruction, rax = its number, orig_rax = -1 so
 *     the kernel adds nothing): nothing to see;
 *   a timeout the kernel keeps (select, pselect6, ppoll write what is left
 *     of it back into the program's struct at the stop): issued again with
 *     that, less the time the thread was held (written at release): no
 *     timer late;
 *   a timeout nobody keeps (epoll_wait's milliseconds, epoll_pwait2's and
 *     sigtimedwait's timespec, a socket timeout): the call ends as its own
 *     timeout would, at once: issued again with timeout 0 (epoll_wait,
 *     epoll_pwait: any events ready are returned), or returns 0 events
 *     (epoll_pwait2) or EAGAIN (sigtimedwait, the socket): a wake-up with
 *     nothing to do, which every event loop handles, and no timer late;
 *   a temporary signal mask: first the program's own call is completed
 *     with a zero timeout (a zero timespec just below the red zone): its
 *     syscall-entry and -exit stops under PTRACE_SYSCALL; the exit path of
 *     the broken call has put the program's mask back by then. If it found
 *     nothing, it is issued again as above (select's fd sets put back);
 *     if it found events, the program gets them; the thread is then held
 *     at that exit stop, as a thread in user code.
 *
 * A signal pending for the thread means the EINTR is the program's own: it
 * is let go untouched. One that comes during the completed call is
 * delivered as if heaptap had not been there (the call's arguments back).
 * One that comes while the thread is held is delivered after the release:
 * a call issued again then returns EINTR after its handler instead of
 * being issued again, as a signal during the wait would have made it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/internal.h"

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516
#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

#define SETS_MAX 1024		/* bytes of one fd_set we keep aside: 8192 descriptors */

static unsigned long long status_mask(const char *status, const char *key)
{
	unsigned long long v = 0;
	const char *p = att_status_field(status, key);

	if (p)
		sscanf(p, "%llx", &v);
	return v;
}

/* Signals pending for the thread or process that it does not block; caught: those it catches. */
static unsigned long long pending_unblocked(pid_t pid, pid_t tid, unsigned long long *caught)
{
	char path[96], buf[4096];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	if (att_read_file(path, buf, sizeof(buf)) < 0) {
		if (caught)
			*caught = 0;
		return ~0ULL;
	}
	if (caught)
		*caught = status_mask(buf, "SigCgt");
	return (status_mask(buf, "SigPnd") | status_mask(buf, "ShdPnd")) & ~status_mask(buf, "SigBlk");
}

bool att_signal_pending(pid_t pid, pid_t tid)
{
	return pending_unblocked(pid, tid, NULL) != 0;
}

static bool is_socket(pid_t pid, unsigned long fd)
{
	char path[96], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%lu", (int)pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	return n > 7 && memcmp(link, "socket:", 7) == 0;
}

static bool sock_call(long nr)
{
	return nr == SYS_read || nr == SYS_readv || nr == SYS_recvfrom || nr == SYS_recvmsg ||
	       nr == SYS_accept || nr == SYS_accept4 || nr == SYS_write || nr == SYS_writev ||
	       nr == SYS_sendto || nr == SYS_sendmsg;
}

static int ts_read(pid_t tid, uint64_t addr, bool timeval, uint64_t *ns)
{
	long v[2];

	if (att_mem_read(tid, addr, v, sizeof(v)) < 0 || v[0] < 0 || v[1] < 0)
		return -1;
	*ns = (uint64_t)v[0] * 1000000000u + (uint64_t)v[1] * (timeval ? 1000u : 1u);
	return 0;
}

static int setregs(struct att_thread *thr, const struct user_regs_struct *gp)
{
	return ptrace(PTRACE_SETREGS, thr->tid, 0, gp) < 0 ? -errno : 0;
}

/* The registers as they are, made to issue the call nr again with its arguments in gp. */
static void reissue_form(struct user_regs_struct *gp, long nr)
{
	gp->rip -= 2;
	gp->rax = (unsigned long long)nr;
	gp->orig_rax = (unsigned long long)-1;
}

static int lost(struct att_ctx *ctx, struct att_thread *thr, enum att_reason *reason, char *why,
		size_t cap, enum att_reason r, const char *what)
{
	if (r == ATT_E_EXITED)
		thr->state = ATT_TS_GONE;
	*reason = att_fail(ctx, r, r == ATT_E_PTRACE ? errno : 0, "thread %d: %s", (int)thr->tid, what);
	snprintf(why, cap, "%s", what);
	return -1;
}

/*
 * Run the call set up in the thread's registers to its syscall-exit stop
 * (PTRACE_SYSCALL: entry stop, exit stop); *e gets the registers there.
 * stop: the registers of the interrupt stop, put back if a signal comes
 * before the call was entered, which is then delivered as the thread is
 * let go (returns 1, thread untraced).
 */
static int run_once(struct att_ctx *ctx, struct att_thread *thr, const struct user_regs_struct *stop,
		    long nr, struct user_regs_struct *e, char *why, size_t cap, enum att_reason *reason)
{
	bool entered = false;
	enum att_event ev;
	int status, sig = 0;

	for (;;) {
		if (ptrace(PTRACE_SYSCALL, thr->tid, 0, (void *)(long)sig) < 0)
			return lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "PTRACE_SYSCALL");
		thr->state = ATT_TS_CALLING;
		sig = 0;
		ev = att_wait(ctx, thr, ctx->stop_timeout_ms, &status);
		if (ev == ATT_EV_TIMEOUT || ev == ATT_EV_ERROR || ev == ATT_EV_EXITED)
			break;
		thr->state = ATT_TS_STOPPED;
		if (ev == ATT_EV_SYSCALL_STOP) {
			if (ptrace(PTRACE_GETREGS, thr->tid, 0, e) < 0)
				return lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "PTRACE_GETREGS");
			if (entered)
				return 0;
			if ((long)e->orig_rax != nr) {
				snprintf(why, cap, "issued %s again, the entry stop shows syscall %ld",
					 att_arch_sysname(nr), (long)e->orig_rax);
				return setregs(thr, stop) ? -1 : 1;
			}
			entered = true;
		} else if (ev == ATT_EV_SIGNAL_STOP && !entered) {
			/* the EINTR is the program's now: the stop as it was, the signal with the detach */
			if (setregs(thr, stop) < 0 ||
			    ptrace(PTRACE_DETACH, thr->tid, 0, (void *)(long)WSTOPSIG(status)) < 0)
				return lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "PTRACE_DETACH");
			thr->state = ATT_TS_UNTRACED;
			ctx->st.delivered_signals++;
			snprintf(why, cap, "%s: signal %d came, the program gets its EINTR",
				 att_arch_sysname(nr), WSTOPSIG(status));
			return 1;
		} else if (ev == ATT_EV_SIGNAL_STOP) {
			sig = WSTOPSIG(status);
		} else if (ev == ATT_EV_GROUP_STOP) {
			thr->group_stop_seen = true;
			if (!entered)
				(void)setregs(thr, stop);
			return lost(ctx, thr, reason, why, cap, ATT_E_STOPPED, "stopped by a signal");
		} else if (ev == ATT_EV_EXEC) {
			return lost(ctx, thr, reason, why, cap, ATT_E_EXEC, "execve");
		}
	}
	if (ev == ATT_EV_TIMEOUT)
		return lost(ctx, thr, reason, why, cap, ATT_E_STOP_TIMEOUT, "the call did not end");
	return lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "gone");
}

struct sets {
	uint64_t addr[3];
	size_t len;
	unsigned char buf[3][SETS_MAX];
};

static int sets_save(pid_t tid, const struct user_regs_struct *gp, struct sets *s)
{
	unsigned long n = gp->rdi;
	int i;

	s->len = (n + 63) / 64 * 8;
	if (s->len > SETS_MAX)
		return -1;
	for (i = 0; i < 3; i++) {
		s->addr[i] = att_arch_sysarg(gp, i + 1);
		if (s->addr[i] && s->len && att_mem_read(tid, s->addr[i], s->buf[i], s->len) < 0)
			return -1;
	}
	return 0;
}

static int sets_put_back(pid_t tid, const struct sets *s)
{
	int i;

	for (i = 0; i < 3; i++)
		if (s->addr[i] && s->len && att_mem_write(tid, s->addr[i], s->buf[i], s->len) < 0)
			return -1;
	return 0;
}

/* Was the timeout in argument targ (kind tkind) infinite? */
static bool no_timeout(const struct user_regs_struct *gp, int targ, int tkind)
{
	uint64_t v = att_arch_sysarg(gp, targ);

	return tkind == 0 ? (int)v < 0 : v == 0;
}

/* Keep what is left of a timeout the kernel wrote back, to subtract the hold at release. */
static void keep_remaining(struct att_thread *thr, const struct user_regs_struct *gp, int targ,
			   int tkind)
{
	uint64_t addr = att_arch_sysarg(gp, targ), ns;

	if (!addr || ts_read(thr->tid, addr, tkind == 2, &ns) < 0)
		return;
	thr->reent.ts_addr = addr;
	thr->reent.ts_timeval = tkind == 2;
	thr->reent.remain_ns = ns;
	thr->reent.t_stop = thr->t_interrupt;
}

/* A call with a temporary signal mask: complete it with a zero timeout first (file comment). */
static int probe(struct att_ctx *ctx, struct att_thread *thr, const struct user_regs_struct *gp,
		 long nr, int targ, int tkind, char *why, size_t cap, enum att_reason *reason)
{
	static const unsigned char zero[16];
	const char *name = att_arch_sysname(nr);
	struct user_regs_struct p = *gp, e;
	static struct sets sets;	/* 3 KB: not on heaptap's stack; one attach at a time */
	bool again = no_timeout(gp, targ, tkind) || nr == SYS_ppoll || nr == SYS_pselect6;
	long res;
	int rc;

	if (nr == SYS_pselect6 && sets_save(thr->tid, gp, &sets) < 0) {
		snprintf(why, cap, "%s: cannot keep its fd sets aside", name);
		return 1;
	}
	reissue_form(&p, nr);
	if (tkind == 0) {
		att_arch_set_sysarg(&p, targ, 0);
	} else {
		uint64_t at = (gp->rsp - 128 - 64) & ~15ULL;	/* below the red zone */

		if (att_mem_write(thr->tid, at, zero, sizeof(zero)) < 0) {
			snprintf(why, cap, "%s: cannot write a zero timeout below its stack", name);
			return 1;
		}
		att_arch_set_sysarg(&p, targ, at);
	}
	if (setregs(thr, &p) < 0)
		return lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "PTRACE_SETREGS");
	rc = run_once(ctx, thr, gp, nr, &e, why, cap, reason);
	if (rc)
		return rc;
	res = (long)e.rax;
	if (res == -ERESTARTNOHAND || res == -EINTR || res == -ERESTARTSYS) {
		/* a signal came meanwhile: its own arguments back, the kernel's rules on release */
		att_arch_set_sysarg(&e, targ, att_arch_sysarg(gp, targ));
		snprintf(why, cap, "%s: a signal came, the program gets its EINTR", name);
		return setregs(thr, &e) < 0 ? lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "SETREGS") : 1;
	}
	if (res == 0 && nr == SYS_pselect6 && sets_put_back(thr->tid, &sets) < 0)
		return lost(ctx, thr, reason, why, cap, ATT_E_MEMORY, "fd sets");
	if (res == 0 && again && !att_signal_pending(ctx->pid, thr->tid)) {
		e = *gp;
		reissue_form(&e, nr);
		if (setregs(thr, &e) < 0)
			return lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "PTRACE_SETREGS");
		thr->reent.reissue = true;
		thr->reent.sysno = nr;
		if (no_timeout(gp, targ, tkind)) {
			snprintf(ctx->st.resumed, sizeof(ctx->st.resumed), "%s (with a signal mask, no "
				 "timeout): completed with timeout 0, nothing was ready, issued again as it "
				 "was; the program sees nothing", name);
		} else {
			keep_remaining(thr, gp, targ, tkind);
			snprintf(ctx->st.resumed, sizeof(ctx->st.resumed), "%s (with a signal mask): "
				 "completed with timeout 0, nothing was ready, issued again with its "
				 "remaining timeout less the hold; the program sees nothing", name);
		}
	} else if (res == 0) {
		snprintf(ctx->st.resumed, sizeof(ctx->st.resumed), "%s (with a signal mask): re-entered "
			 "with timeout 0, the program sees a wake-up with no events", name);
	} else {
		snprintf(ctx->st.resumed, sizeof(ctx->st.resumed), "%s (with a signal mask): re-entered "
			 "with timeout 0, which returned %ld; the program gets that result now", name,
			 res);
	}
	return 0;
}

/* -EINTR without a temporary mask: issue again, or end as the call's timeout would. */
static int unmasked(struct att_ctx *ctx, struct att_thread *thr, struct user_regs_struct *gp,
		    long nr, int targ, int tkind, bool waitcall)
{
	const char *name = att_arch_sysname(nr);
	char *note = ctx->st.resumed;
	size_t cap = sizeof(ctx->st.resumed);

	if (waitcall && (nr == SYS_epoll_wait || nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2 ||
			 nr == SYS_rt_sigtimedwait) && !no_timeout(gp, targ, tkind)) {
		if (tkind == 0) {
			reissue_form(gp, nr);
			att_arch_set_sysarg(gp, targ, 0);
			thr->reent.reissue = true;
			snprintf(note, cap, "%s: re-entered with timeout 0, the program sees a wake-up "
				 "with no events", name);
		} else if (nr == SYS_rt_sigtimedwait) {
			gp->rax = (unsigned long long)-EAGAIN;
			gp->orig_rax = (unsigned long long)-1;
			snprintf(note, cap, "%s: returned EAGAIN at once, the program sees its timeout "
				 "expire early", name);
		} else {
			gp->rax = 0;
			gp->orig_rax = (unsigned long long)-1;
			snprintf(note, cap, "%s: returned 0 events at once, the program sees a wake-up "
				 "with no events", name);
		}
	} else if (sock_call(nr) && is_socket(ctx->pid, gp->rdi)) {
		gp->rax = (unsigned long long)-EAGAIN;
		gp->orig_rax = (unsigned long long)-1;
		snprintf(note, cap, "%s on a socket with a timeout: returned EAGAIN at once, the "
			 "program sees its socket timeout expire early", name);
	} else {
		reissue_form(gp, nr);
		thr->reent.reissue = true;
		snprintf(note, cap, "%s: issued again as it was%s, the program sees nothing", name,
			 waitcall ? " (no timeout)" : "");
	}
	thr->reent.sysno = nr;
	return setregs(thr, gp);
}

int att_reenter(struct att_ctx *ctx, struct att_thread *thr, struct user_regs_struct *gp, char *why,
		size_t cap, enum att_reason *reason)
{
	long nr = (long)gp->orig_rax, rax = (long)gp->rax;
	int targ, tkind, marg, rc;
	bool waitcall, masked;
	unsigned char insn[2];

	ctx->st.resumed[0] = '\0';
	memset(&thr->reent, 0, sizeof(thr->reent));
	if (nr < 0)
		return 0;
	waitcall = att_arch_wait_args(nr, &targ, &tkind, &marg);
	masked = waitcall && marg >= 0 && att_arch_sysarg(gp, marg) != 0;
	if (rax != -EINTR && !(masked && (rax == -ERESTARTNOHAND || rax == -ERESTARTSYS))) {
		/* restarted by the kernel; select, pselect6, ppoll: the hold taken off their timeout */
		if (rax == -ERESTARTNOHAND && waitcall && tkind != 0 && !no_timeout(gp, targ, tkind) &&
		    (nr == SYS_select || nr == SYS_pselect6 || nr == SYS_ppoll))
			keep_remaining(thr, gp, targ, tkind);
		return 0;
	}
	if (att_mem_read(thr->tid, gp->rip - 2, insn, sizeof(insn)) < 0 || insn[0] != 0x0f ||
	    insn[1] != 0x05) {
		snprintf(why, cap, "%s (syscall %ld) returned EINTR, and rip is not after a syscall "
			 "instruction", att_arch_sysname(nr), nr);
		return 1;
	}
	if (att_signal_pending(ctx->pid, thr->tid)) {
		snprintf(why, cap, "%s (syscall %ld) returned EINTR with a signal pending: the EINTR is "
			 "the program's", att_arch_sysname(nr), nr);
		return 1;
	}
	if (masked)
		rc = probe(ctx, thr, gp, nr, targ, tkind, why, cap, reason);
	else if ((rc = unmasked(ctx, thr, gp, nr, targ, tkind, waitcall)) < 0)
		rc = lost(ctx, thr, reason, why, cap, ATT_E_EXITED, "PTRACE_SETREGS");
	if (rc == 0)
		ctx->st.eintr_repaired++;
	return rc;
}

void att_reenter_finish(struct att_ctx *ctx, struct att_thread *thr)
{
	struct user_regs_struct gp;
	unsigned long long pend, caught;
	uint64_t el, rem;
	long v[2];

	if (thr->reent.ts_addr) {
		el = util_mono_ns() - thr->reent.t_stop;
		rem = thr->reent.remain_ns > el ? thr->reent.remain_ns - el : 0;
		v[0] = (long)(rem / 1000000000u);
		v[1] = (long)(rem % 1000000000u);
		if (thr->reent.ts_timeval)
			v[1] /= 1000;
		(void)att_mem_write(thr->tid, thr->reent.ts_addr, v, sizeof(v));
		thr->reent.ts_addr = 0;
	}
	/*
	 * A signal the program catches came while the thread was held: issued
	 * again, the call would go on waiting after its handler; the wait it
	 * broke would have returned EINTR to the program after the handler.
	 */
	if (!thr->reent.reissue)
		return;
	thr->reent.reissue = false;
	pend = pending_unblocked(ctx->pid, thr->tid, &caught);
	if (!(pend & caught) || pend == ~0ULL || ptrace(PTRACE_GETREGS, thr->tid, 0, &gp) < 0)
		return;
	if ((long)gp.orig_rax != -1 || (long)gp.rax != thr->reent.sysno)
		return;
	gp.rip += 2;
	gp.rax = (unsigned long long)-EINTR;
	(void)setregs(thr, &gp);
}
