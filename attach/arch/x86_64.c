/* attach/arch/x86_64.c - x86-64 specifics: syscall classes, call frames, registers */
/* SPDX-License-Identifier: MIT */
#include <cpuid.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>

#include "attach/internal.h"

/*
 * How a syscall behaves when a ptrace stop (PTRACE_INTERRUPT) breaks the
 * wait and no handler runs: the kernel returns -ERESTARTSYS, -ERESTARTNOHAND,
 * -ERESTARTNOINTR or -ERESTART_RESTARTBLOCK, and if we put the registers
 * back as they were at the stop, the exit to user space rewinds rip by 2
 * and re-issues the call (arch/x86/kernel/signal.c). Measured on this
 * kernel for futex, read, clock_nanosleep and checked again by tests/attach
 * (one test per thread kind). epoll_wait and friends return -EINTR instead,
 * which the program would see: reenter.c rewrites them at the stop
 * (ATT_SC_REENTER). pselect6, ppoll and epoll_pwait* with a signal mask
 * install a temporary mask that the exit path restores on our first
 * resume, after we read it as the thread's own: reenter.c first completes
 * the call with a zero timeout (ATT_SC_PROBE). rt_sigsuspend has no
 * timeout to do that with: never interrupted. Anything else unknown: not a
 * candidate.
 *
 * restart_syscall: a relative nanosleep/clock_nanosleep, poll or futex
 * wait with a timeout that a stop (SIGSTOP/SIGCONT, a debugger, an earlier
 * heaptap) broke off goes on in restart_syscall, from the thread's restart
 * block, which holds the call's absolute end. Stopped there, it returns
 * -ERESTART_RESTARTBLOCK again with the block unchanged, and resumed with
 * restart_syscall it ends when the original call would have (measured:
 * a 2-s sleep of each kind, held 300 ms, slept 2.000 s, no EINTR).
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
	case SYS_restart_syscall: /* a sleep, poll or timed futex wait restarted: see above */
		return ATT_SC_RESTART;
	case SYS_ppoll:
		return args[3] ? ATT_SC_PROBE : ATT_SC_RESTART;
	case SYS_pselect6:
		return args[5] ? ATT_SC_PROBE : ATT_SC_RESTART;
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return args[4] ? ATT_SC_PROBE : ATT_SC_REENTER;
	case SYS_epoll_wait:
	case SYS_rt_sigtimedwait:
		return ATT_SC_REENTER;
	case SYS_rt_sigsuspend:
		return ATT_SC_MASKSWAP;
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

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

bool att_arch_wait_args(long sysno, int *targ, int *tkind, int *marg)
{
	*marg = -1;
	switch (sysno) {
	case SYS_epoll_wait:
		*targ = 3, *tkind = 0;
		return true;
	case SYS_epoll_pwait:
		*targ = 3, *tkind = 0, *marg = 4;
		return true;
	case SYS_epoll_pwait2:
		*targ = 3, *tkind = 1, *marg = 4;
		return true;
	case SYS_ppoll:
		*targ = 2, *tkind = 1, *marg = 3;
		return true;
	case SYS_pselect6:
		*targ = 4, *tkind = 1, *marg = 5;
		return true;
	case SYS_select:
		*targ = 4, *tkind = 2;
		return true;
	case SYS_poll:
		*targ = 2, *tkind = 0;
		return true;
	case SYS_rt_sigtimedwait:
		*targ = 2, *tkind = 1;
		return true;
	default:
		*targ = -1, *tkind = 0;
		return false;
	}
}

uint64_t att_arch_sysarg(const struct user_regs_struct *gp, int i)
{
	switch (i) {
	case 0: return gp->rdi;
	case 1: return gp->rsi;
	case 2: return gp->rdx;
	case 3: return gp->r10;
	case 4: return gp->r8;
	default: return gp->r9;
	}
}

void att_arch_set_sysarg(struct user_regs_struct *gp, int i, uint64_t v)
{
	switch (i) {
	case 0: gp->rdi = v; break;
	case 1: gp->rsi = v; break;
	case 2: gp->rdx = v; break;
	case 3: gp->r10 = v; break;
	case 4: gp->r8 = v; break;
	default: gp->r9 = v; break;
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
	case SYS_restart_syscall:
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
	case SYS_epoll_pwait2: return "epoll_pwait2";
	case SYS_readv: return "readv";
	case SYS_sendto: return "sendto";
	case SYS_sendmsg: return "sendmsg";
	case SYS_wait4: return "wait4";
	case SYS_accept: return "accept";
	case SYS_accept4: return "accept4";
	case SYS_recvfrom: return "recvfrom";
	case SYS_recvmsg: return "recvmsg";
	case SYS_rt_sigtimedwait: return "rt_sigtimedwait";
	case SYS_rt_sigsuspend: return "rt_sigsuspend";
	case SYS_pause: return "pause";
	case SYS_restart_syscall: return "restart_syscall";
	default: return "syscall";
	}
}

/*
 * Every remote call runs on a frame that also holds a kernel signal frame
 * (struct rt_sigframe) describing the thread as it was at the stop, so that
 * the call ends in an rt_sigreturn that puts the thread back by itself if
 * heaptap is gone (killed) at any instant:
 *
 *   old rsp ->  | ...                        |
 *               | red zone, 128 B            |  untouched (the interrupted leaf's)
 *               | slack, 256 B               |
 *               | fpstate (XSAVE image), 64-byte aligned, + FP_XSTATE_MAGIC2
 *               | siginfo, 128 B             |  unused by rt_sigreturn; our result
 *               |                            |  and errno slots live here
 *               | ucontext, 304 B            |  registers, mask, fpstate pointer
 *   frame ->    | return address             |  trampoline or libc's sigreturn
 *                                               stub; rsp at the callee's entry
 *
 * The callee returns into it with rsp at the ucontext, which is where
 * rt_sigreturn looks for its frame (rsp - 8). frame + 8 is 16-byte aligned,
 * as after a call. orig_rax = -1 keeps the kernel from treating our resume
 * as a syscall to restart into our call; rax = 0 tells a variadic callee no
 * vector registers carry arguments; DF is cleared as the ABI requires at a
 * call; TF is cleared.
 */
void att_arch_setup_call(struct user_regs_struct *gp, uint64_t fn, const uint64_t *args,
			 unsigned nargs, uint64_t frame)
{
	uint64_t a[6] = { 0 };

	if (args && nargs)
		memcpy(a, args, (nargs > 6 ? 6 : nargs) * sizeof(a[0]));
	gp->rsp = frame;
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

/*
 * A bare syscall at insn (a "syscall; ret" of libc): sysno in rax,
 * arguments in rdi, rsi, rdx, r10, r8, r9, rsp at sp (its ret pops the
 * word there).
 */
void att_arch_setup_syscall(struct user_regs_struct *gp, uint64_t insn, long sysno,
			    const uint64_t *args, unsigned nargs, uint64_t sp)
{
	att_arch_setup_call(gp, insn, args, nargs, sp);
	gp->r10 = gp->rcx;
	gp->rax = (unsigned long long)sysno;
}

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/*
 * The registers a thread resumes with from a stop, made explicit: what the
 * kernel's exit path does for a syscall interrupted without a handler
 * (arch/x86/kernel/signal.c): -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND
 * re-issue the syscall (rax = orig_rax, rip back over the 2-byte syscall
 * instruction); -ERESTART_RESTARTBLOCK issues restart_syscall, which
 * continues from the thread's restart block (the remaining sleep). With
 * orig_rax = -1 the kernel then does nothing more, whichever stop the
 * thread leaves from (interrupt, signal or syscall-exit stop).
 *
 * via_sigreturn: the state rt_sigreturn restores if heaptap dies. rt_sigreturn
 * resets the restart block (restart_syscall would return EINTR), so an
 * -ERESTART_RESTARTBLOCK syscall is re-issued with its own arguments instead:
 * a relative sleep starts over (sleeps longer, never EINTR). A thread already
 * in restart_syscall cannot be re-issued (which call it continues is known
 * only to its block, which rt_sigreturn reset): it gets EINTR, as after a
 * signal handler.
 * That happens only if heaptap dies while the thread runs its calls
 * (choose.c ranks such threads after every wait that needs nothing of it).
 */
void att_arch_resume_regs(const struct user_regs_struct *stop, struct user_regs_struct *out,
			  bool via_sigreturn)
{
	long rax = (long)stop->rax;

	*out = *stop;
	out->orig_rax = (unsigned long long)-1;
	if ((long)stop->orig_rax < 0)
		return;
	switch (rax) {
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
		out->rax = stop->orig_rax;
		out->rip -= 2;
		break;
	case -ERESTART_RESTARTBLOCK:
		if (!via_sigreturn) {
			out->rax = SYS_restart_syscall;
			out->rip -= 2;
		} else if ((long)stop->orig_rax != SYS_restart_syscall) {
			out->rax = stop->orig_rax;
			out->rip -= 2;
		} else {
			out->rax = (unsigned long long)-4;	/* -EINTR */
		}
		break;
	default:
		break;
	}
}

/*
 * Was the thread stopped in a syscall that resumes through its restart
 * block? Any rt_sigreturn it runs resets that block (a chained frame's
 * included), after which only a re-issue (a whole sleep again) is left.
 */
bool att_arch_stopped_in_restart_block(const struct user_regs_struct *stop)
{
	return (long)stop->orig_rax >= 0 && (long)stop->rax == -ERESTART_RESTARTBLOCK;
}

/* Kernel layouts (arch/x86/include/uapi/asm/sigcontext.h, asm-generic/ucontext.h). */
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved1[8];
};

struct k_ucontext {
	uint64_t uc_flags;
	uint64_t uc_link;
	uint64_t ss_sp;		/* stack_t uc_stack */
	int32_t ss_flags;
	int32_t ss_pad;
	uint64_t ss_size;
	struct k_sigcontext mc;
	uint64_t sigmask;
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "sigcontext layout");
_Static_assert(sizeof(struct k_ucontext) == 304, "ucontext layout");
_Static_assert(offsetof(struct k_ucontext, mc) == 40, "ucontext layout");
_Static_assert(ATT_FRAME_UC == 8 && ATT_FRAME_INFO == 8 + 304, "frame layout");
_Static_assert(ATT_CHAIN_LEN == 8 + 304 + 128, "chained frame layout");

#define UC_FP_XSTATE 0x1
#define UC_SIGCONTEXT_SS 0x2
#define UC_STRICT_RESTORE_SS 0x4
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#define XFEATURE_XTILEDATA 18

/*
 * The XSAVE image for the frame: NT_X86_XSTATE gives the standard
 * (uncompacted) layout with XCR0 in the first word of the software area
 * (bytes 464..511); rt_sigreturn wants struct _fpx_sw_bytes there instead
 * (magic1, extended size, features, size) and magic2 right after the image,
 * else it restores x87/SSE only (fpu/signal.c: check_xstate_in_sigframe).
 * The size must not exceed the thread's own: on a CPU with AMX a thread
 * that never asked for it has no room for XTILEDATA, so an image that does
 * not use it stops before it.
 */
static size_t put_fpstate(const struct att_regs *saved, unsigned char *out)
{
	uint64_t xcr0, bv;
	uint32_t sw[12] = { 0 }, magic2 = FP_XSTATE_MAGIC2, size;
	unsigned a = 0, b = 0, c = 0, d = 0;

	if (!saved->xstate_len) {
		memcpy(out, &saved->fp, sizeof(saved->fp));	/* fxsave image, no magic: FP/SSE only */
		return sizeof(saved->fp);
	}
	memcpy(out, saved->xstate, saved->xstate_len);
	memcpy(&xcr0, saved->xstate + 464, sizeof(xcr0));
	memcpy(&bv, saved->xstate + 512, sizeof(bv));
	size = (uint32_t)saved->xstate_len;
	if ((xcr0 & (1ULL << XFEATURE_XTILEDATA)) && !(bv & (1ULL << XFEATURE_XTILEDATA))) {
		__cpuid_count(0xd, XFEATURE_XTILEDATA, a, b, c, d);
		if (b >= 576 && b < size) {
			size = b;
			xcr0 &= ~(1ULL << XFEATURE_XTILEDATA);
		}
	}
	sw[0] = FP_XSTATE_MAGIC1;
	sw[1] = size + (uint32_t)sizeof(magic2);
	memcpy(&sw[2], &xcr0, sizeof(xcr0));
	sw[4] = size;
	memcpy(out + 464, sw, sizeof(sw));
	memcpy(out + size, &magic2, sizeof(magic2));
	(void)c;
	(void)d;
	return size + sizeof(magic2);
}

void att_arch_frame_build(const struct att_regs *saved, struct att_frame *f)
{
	const struct user_regs_struct *g = &saved->gp;
	struct user_regs_struct r;
	struct k_ucontext uc;
	unsigned char *fp_img = f->buf + sizeof(f->buf) - ATT_FRAME_FPMAX;
	uint64_t top, fpaddr, base;
	size_t fplen;

	fplen = put_fpstate(saved, fp_img);
	top = (g->rsp - 128 - 256) & ~(uint64_t)63;
	fpaddr = (top - fplen) & ~(uint64_t)63;
	base = (fpaddr - (ATT_FRAME_INFO + 128 - 8)) & ~(uint64_t)15;	/* frame + 8 */
	f->addr = base - 8;
	f->len = (size_t)(fpaddr + fplen - f->addr);
	memset(f->buf, 0, (size_t)(fpaddr - f->addr));
	memmove(f->buf + (fpaddr - f->addr), fp_img, fplen);

	att_arch_resume_regs(g, &r, true);
	memset(&uc, 0, sizeof(uc));
	uc.uc_flags = UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	/*
	 * rt_sigreturn also sets the alternate signal stack from uc_stack; a
	 * mode that is neither 0, SS_ONSTACK nor SS_DISABLE makes that fail
	 * with EINVAL, which it ignores: the thread's own stays as it is.
	 */
	uc.ss_flags = 3;
	uc.mc.r8 = r.r8;
	uc.mc.r9 = r.r9;
	uc.mc.r10 = r.r10;
	uc.mc.r11 = r.r11;
	uc.mc.r12 = r.r12;
	uc.mc.r13 = r.r13;
	uc.mc.r14 = r.r14;
	uc.mc.r15 = r.r15;
	uc.mc.rdi = r.rdi;
	uc.mc.rsi = r.rsi;
	uc.mc.rbp = r.rbp;
	uc.mc.rbx = r.rbx;
	uc.mc.rdx = r.rdx;
	uc.mc.rax = r.rax;
	uc.mc.rcx = r.rcx;
	uc.mc.rsp = r.rsp;
	uc.mc.rip = r.rip;
	uc.mc.eflags = r.eflags;
	uc.mc.cs = (uint16_t)r.cs;
	uc.mc.ss = (uint16_t)r.ss;
	uc.mc.fpstate = fpaddr;
	uc.sigmask = saved->mask;
	memcpy(f->buf + ATT_FRAME_UC, &uc, sizeof(uc));
}

/*
 * A second signal frame below the call frame f0, for a call that has no
 * trampoline to return into yet (the fixed-address mmap of loader.c):
 *
 *   chain ->  | via (libc's sigreturn stub)  |  the call's return address
 *             | ucontext: f0's, but rip = via, rsp = f0 + 8, mask = mask
 *             | siginfo, 128 B (rt_sigreturn checks it is accessible)
 *   f0 ->     | the call frame               |
 *
 * The call returns into via, whose rt_sigreturn on this frame sets the
 * thread to run via again with rsp at f0's ucontext (the same XSAVE
 * image, the given mask); that second rt_sigreturn puts the thread back
 * as it was. With the end signal pending, blocked during the call and
 * open in mask, the first rt_sigreturn's exit delivers it: the thread
 * stops there, between the two. Returns the frame's length (at *addr).
 */
size_t att_arch_chain_build(const struct att_frame *f0, uint64_t via, uint64_t mask,
			    unsigned char *buf, uint64_t *addr)
{
	struct k_ucontext uc;

	*addr = (f0->addr - ATT_CHAIN_LEN) & ~(uint64_t)15;
	memset(buf, 0, ATT_CHAIN_LEN);
	memcpy(buf, &via, sizeof(via));
	memcpy(&uc, f0->buf + ATT_FRAME_UC, sizeof(uc));
	uc.mc.rip = via;
	uc.mc.rsp = f0->addr + 8;
	uc.sigmask = mask;
	memcpy(buf + ATT_FRAME_UC, &uc, sizeof(uc));
	return ATT_CHAIN_LEN;
}

/*
 * The trampoline a remote call returns into, at the start of the scratch
 * mapping; rsp points at the frame's ucontext. It stores rax in the
 * frame, puts errno back (when its address is known), and sends its own
 * thread the frame's end signal with tgkill(getpid(), gettid(), sig):
 * heaptap takes the thread back at that signal's delivery stop (or, with
 * sig 0, at the tgkill's syscall-exit stop) and never lets it go further.
 * The signal is one the process ignores, so when heaptap is gone it is
 * dropped as it is sent, and the thread runs the rt_sigreturn that puts it
 * back as it was.
 */
static const unsigned char tramp[] = {
	0x48, 0x89, 0x84, 0x24, 0x30, 0x01, 0x00, 0x00,	/* mov %rax, 0x130(%rsp)  result */
	0x48, 0x8b, 0x94, 0x24, 0x38, 0x01, 0x00, 0x00,	/* mov 0x138(%rsp), %rdx  &errno */
	0x48, 0x85, 0xd2,				/* test %rdx, %rdx */
	0x74, 0x09,					/* je 1f */
	0x8b, 0x8c, 0x24, 0x40, 0x01, 0x00, 0x00,	/* mov 0x140(%rsp), %ecx  errno */
	0x89, 0x0a,					/* mov %ecx, (%rdx) */
	0xb8, 0x27, 0x00, 0x00, 0x00,			/* 1: mov $SYS_getpid, %eax */
	0x0f, 0x05,					/* syscall */
	0x48, 0x89, 0xc7,				/* mov %rax, %rdi */
	0xb8, 0xba, 0x00, 0x00, 0x00,			/* mov $SYS_gettid, %eax */
	0x0f, 0x05,					/* syscall */
	0x48, 0x89, 0xc6,				/* mov %rax, %rsi */
	0x8b, 0x94, 0x24, 0x48, 0x01, 0x00, 0x00,	/* mov 0x148(%rsp), %edx  end signal */
	0xb8, 0xea, 0x00, 0x00, 0x00,			/* mov $SYS_tgkill, %eax */
	0x0f, 0x05,					/* syscall                 the end */
	0xb8, 0x0f, 0x00, 0x00, 0x00,			/* mov $SYS_rt_sigreturn, %eax */
	0x0f, 0x05,					/* syscall */
	0x0f, 0x0b,					/* ud2 */
};

_Static_assert(ATT_FRAME_RESULT - 8 == 0x130 && ATT_FRAME_ERRNO_ADDR - 8 == 0x138 &&
	       ATT_FRAME_ERRNO_VAL - 8 == 0x140 && ATT_FRAME_END_SIG - 8 == 0x148,
	       "trampoline offsets");
_Static_assert(sizeof(tramp) <= ATT_TRAMP_SPACE, "the scratch strings start after the trampoline");

const unsigned char *att_arch_tramp(size_t *len, size_t *marker_end)
{
	*len = sizeof(tramp);
	*marker_end = 0x40;
	return tramp;
}

/*
 * "mov $15, %rax; syscall" (glibc's and musl's __restore_rt) or
 * "mov $15, %eax; syscall": where a call returns when there is no
 * trampoline yet (mmap) or any more (munmap).
 */
const unsigned char *att_arch_sigreturn_stub(unsigned i, size_t *len)
{
	static const unsigned char a[] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };
	static const unsigned char b[] = { 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

	if (i == 0) {
		*len = sizeof(a);
		return a;
	}
	if (i == 1) {
		*len = sizeof(b);
		return b;
	}
	return NULL;
}

/*
 * Offset of a "syscall; ret" in the code of libc's getpid ("mov $39, %eax;
 * syscall; ret" in glibc 2.25 on), or -1 when the bytes differ.
 */
long att_arch_syscall_ret(const unsigned char *code, size_t len)
{
	static const unsigned char getpid[] = { 0xb8, 0x27, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3 };

	if (len < sizeof(getpid) || memcmp(code, getpid, sizeof(getpid)) != 0)
		return -1;
	return 5;
}

uint64_t att_arch_ret(const struct user_regs_struct *gp)
{
	return gp->rax;
}

uint64_t att_arch_pc(const struct user_regs_struct *gp)
{
	return gp->rip;
}
