/* attach/arch/x86_64.c - x86-64 specifics: syscall classes, call frames, registers */
/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <sys/syscall.h>

#include "attach/internal.h"

/*
 * How a syscall behaves when a ptrace stop (PTRACE_INTERRUPT) breaks the
 * wait and no handler runs: the kernel returns -ERESTARTSYS, -ERESTARTNOHAND,
 * -ERESTARTNOINTR or -ERESTART_RESTARTBLOCK, and if we put the registers
 * back as they were at the stop, the exit to user space rewinds rip by 2
 * and re-issues the call (arch/x86/kernel/signal.c). Measured on this
 * kernel for futex, read, clock_nanosleep (DESIGN.md) and checked again by
 * tests/attach (one test per thread kind). epoll_wait and friends return
 * -EINTR instead, which the program would see: never interrupt those.
 * pselect6, ppoll with a mask, epoll_pwait*, rt_sigsuspend install a
 * temporary mask that the exit path restores when our first resume finds
 * no signal, which would undo the mask we set and corrupt the saved one:
 * never interrupt those either. Anything else is unknown: not a candidate.
 */
enum att_sysclass att_arch_sysclass(long sysno, const unsigned long args[6])
{
	switch (sysno) {
	case -1:
		return ATT_SC_USER;
	case SYS_read:
	case SYS_write:
	case SYS_readv:
	case SYS_writev:
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_preadv:
	case SYS_pwritev:
	case SYS_poll:		/* -ERESTART_RESTARTBLOCK with the remaining timeout */
	case SYS_select:	/* -ERESTARTNOHAND; timeout updated in place */
	case SYS_pause:
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_accept:
	case SYS_accept4:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_sendto:
	case SYS_sendmsg:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_futex:
	case SYS_flock:
		return ATT_SC_RESTART;
	case SYS_ppoll:
		return args[3] ? ATT_SC_MASKSWAP : ATT_SC_RESTART;
	case SYS_pselect6:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_rt_sigsuspend:
		return ATT_SC_MASKSWAP;
	case SYS_epoll_wait:
	case SYS_rt_sigtimedwait:
	case SYS_io_getevents:
	case SYS_semtimedop:
	case SYS_semop:
	case SYS_msgrcv:
	case SYS_msgsnd:
	case SYS_connect:	/* a restarted connect answers EALREADY */
	case SYS_recvmmsg:
		return ATT_SC_EINTR;
	default:
		return ATT_SC_UNKNOWN;
	}
}

/*
 * Does the syscall, when interrupted, resume through the thread's restart
 * block (-ERESTART_RESTARTBLOCK, restart_syscall)? Any nanosleep or
 * clock_nanosleep our calls made would reset that block at entry, and the
 * restart would then return EINTR. Our own calls do not sleep, but a
 * library's start function might: such threads rank after the others.
 */
bool att_arch_uses_restart_block(long sysno, const unsigned long args[6])
{
	unsigned cmd;

	switch (sysno) {
	case SYS_nanosleep:
	case SYS_poll:
		return true;
	case SYS_clock_nanosleep:
		return !(args[1] & 1);	/* TIMER_ABSTIME gives -ERESTARTNOHAND */
	case SYS_futex:
		cmd = args[1] & 0x7f;	/* without FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME */
		return (cmd == 0 || cmd == 9) && args[3];	/* WAIT, WAIT_BITSET with a timeout */
	default:
		return false;
	}
}

const char *att_arch_sysname(long sysno)
{
	switch (sysno) {
	case -1: return "user code";
	case SYS_read: return "read";
	case SYS_write: return "write";
	case SYS_futex: return "futex";
	case SYS_nanosleep: return "nanosleep";
	case SYS_clock_nanosleep: return "clock_nanosleep";
	case SYS_poll: return "poll";
	case SYS_ppoll: return "ppoll";
	case SYS_select: return "select";
	case SYS_pselect6: return "pselect6";
	case SYS_epoll_wait: return "epoll_wait";
	case SYS_epoll_pwait: return "epoll_pwait";
	case SYS_wait4: return "wait4";
	case SYS_accept: return "accept";
	case SYS_accept4: return "accept4";
	case SYS_recvfrom: return "recvfrom";
	case SYS_recvmsg: return "recvmsg";
	case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
	case SYS_rt_sigsuspend: return "rt_sigsuspend";
	case SYS_pause: return "pause";
	default: return "syscall";
	}
}

/*
 * Call frame, built below the thread's red zone (SysV ABI: 128 bytes below
 * rsp belong to the leaf function that was running):
 *
 *   old rsp ->  | ...                 |
 *               | red zone, 128 B     |  untouched
 *               | slack, 256 B        |
 *   aligned ->  +---------------------+  16-byte aligned
 *   new rsp ->  | return address (0)  |  as if "call fn" had pushed it
 *
 * At fn's first instruction rsp + 8 is 16-byte aligned, as after a call.
 * Returning jumps to address 0: a SIGSEGV with rip 0 that we catch in its
 * signal-delivery-stop and never deliver. orig_rax = -1 keeps the kernel
 * from treating the stop as a syscall to restart into our call; rax = 0
 * tells a variadic callee no vector registers carry arguments; DF is
 * cleared as the ABI requires at a call; TF is cleared.
 */
void att_arch_setup_call(struct user_regs_struct *gp, uint64_t fn, const uint64_t *args,
			 unsigned nargs, uint64_t *ret_slot)
{
	uint64_t a[6] = { 0 };
	uint64_t sp;

	if (args && nargs)
		memcpy(a, args, (nargs > 6 ? 6 : nargs) * sizeof(a[0]));
	sp = (gp->rsp - 128 - 256) & ~(uint64_t)15;
	sp -= 8;
	*ret_slot = sp;
	gp->rsp = sp;
	gp->rip = fn;
	gp->rdi = a[0];
	gp->rsi = a[1];
	gp->rdx = a[2];
	gp->rcx = a[3];
	gp->r8 = a[4];
	gp->r9 = a[5];
	gp->rax = 0;
	gp->orig_rax = (unsigned long long)-1;
	gp->eflags &= ~((1ULL << 10) | (1ULL << 8));	/* DF, TF */
}

uint64_t att_arch_ret(const struct user_regs_struct *gp)
{
	return gp->rax;
}

uint64_t att_arch_pc(const struct user_regs_struct *gp)
{
	return gp->rip;
}

uint64_t att_arch_sp(const struct user_regs_struct *gp)
{
	return gp->rsp;
}
