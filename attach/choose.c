/* attach/choose.c - rank the target's threads by what /proc says they are doing */
/* SPDX-License-Identifier: MIT */
/*
 * Nothing is stopped here: /proc/PID/task/TID/syscall tells, for a thread
 * off the CPU, the syscall it sleeps in and its arguments, and "running"
 * for a thread on a CPU. Ranking, best first:
 *   0  blocked in a transparently restarted syscall; among those first a
 *      thread waiting for another thread of the process to exit
 *      (pthread_join), then futex, nanosleep and clock_nanosleep (pure
 *      waits, nothing in flight), then read/poll/wait, then I/O that may
 *      be mid-transfer; each of them after all others when it restarts
 *      through the restart block
 *   1  running user code
 *   2  in restart_syscall (a timed sleep, poll or futex wait a stop broke
 *      off, going on from its restart block): exact when let go, but if
 *      heaptap dies meanwhile the call returns EINTR (arch/x86_64.c), so
 *      after the re-entered waits that the program cannot notice and
 *      before those that cost it an early wake-up (reenter_rank)
 *
 * Why a joining thread first: it does nothing until the thread it joins
 * exits, nobody waits for it, and it holds no lock of the program. A
 * launcher that starts the real work in another thread and joins it is
 * the common case: the `java` launcher's main thread joins the thread
 * that runs the JVM, and it is not a Java thread, so holding it can never
 * delay a safepoint (docs/jvm.md). glibc's pthread_join waits with
 * futex(&pd->tid, FUTEX_WAIT_BITSET, tid, NULL): the expected value is
 * the tid of the thread joined, which must be another thread of this
 * process. A futex value that only looks like a tid merely moves that
 * waiter to the front of the pure waits, which are all safe.
 * Threads in a waiting call that would return EINTR come last
 * (reenter_rank); rt_sigsuspend, other EINTR-returning syscalls and
 * unknown ones are not candidates at all (see arch/x86_64.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/internal.h"

static int sys_pref(long sysno)
{
	switch (sysno) {
	case SYS_futex:
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_pause:
		return 0;
	case SYS_read:
	case SYS_readv:
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_accept:
	case SYS_accept4:
	case SYS_recvfrom:
	case SYS_recvmsg:
		return 1;
	default:
		return 2;
	}
}

/*
 * Waiting calls that would return EINTR (reenter.c), after every thread
 * that needs nothing of it, in the order of what the program can notice:
 * none of them with no timeout (issued again as they were), then those
 * with a temporary signal mask and no timeout or a timeout the kernel
 * keeps (completed with timeout 0 once, then issued again), then those
 * that end as their own timeout would, at once (a wake-up with nothing to
 * do).
 */
static int reenter_rank(enum att_sysclass cls, long sysno, const unsigned long args[6])
{
	int targ, tkind, marg;
	bool forever;

	if (!att_arch_wait_args(sysno, &targ, &tkind, &marg))
		return 40;
	forever = tkind == 0 ? (int)args[targ] < 0 : args[targ] == 0;
	if (cls == ATT_SC_REENTER)
		return forever ? 20 : 30;
	if (forever)
		return 22;
	return sysno == SYS_ppoll || sysno == SYS_pselect6 ? 24 : 32;
}

/*
 * True when the thread waits, with no timeout, in futex for another thread of
 * pid to exit (see the file comment).
 */
static bool joins_thread(pid_t pid, pid_t tid, long sysno, const unsigned long args[6])
{
	char path[64];
	unsigned cmd = (unsigned)args[1] & 0x7f; /* without PRIVATE and CLOCK_REALTIME */
	unsigned long val = args[2] & 0xffffffffUL;

	if (sysno != SYS_futex || (cmd != 0 && cmd != 9) || args[3] != 0)
		return false;
	if (val == 0 || val > 0x3fffffffUL || (pid_t)val == tid)
		return false; /* PID_MAX_LIMIT is 2^22; be generous but sane */
	snprintf(path, sizeof(path), "/proc/%d/task/%lu", (int)pid, val);
	return access(path, F_OK) == 0;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct att_cand *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Classify one thread from its syscall file. */
static enum att_sysclass classify(pid_t pid, pid_t tid, long *sysno, unsigned long args[6])
{
	char path[96], buf[1024], state;
	unsigned long flags;
	bool running;

	/*
	 * A zombie (the leader after pthread_exit) or dead thread cannot run
	 * a call; an io_uring worker (PF_IO_WORKER) cannot be traced at all.
	 */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (att_read_file(path, buf, sizeof(buf)) < 0 || att_parse_stat(buf, &state, &flags, NULL) < 0 ||
	    state == 'Z' || state == 'X' || state == 'x' || (flags & 0x10))
		return ATT_SC_GONE;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (att_read_file(path, buf, sizeof(buf)) < 0)
		return ATT_SC_GONE;
	if (att_parse_syscall(buf, sysno, args, &running) < 0)
		return ATT_SC_UNKNOWN;
	return att_arch_sysclass(*sysno, args);
}

enum att_reason att_choose_thread(struct att_ctx *ctx)
{
	char path[64];
	struct dirent *de;
	struct att_cand c;
	unsigned threads = 0;
	bool prefer_seen = false;
	long prefer_sys = -1;
	DIR *d;
	char *end;

	ctx->ncand = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)ctx->pid);
	d = opendir(path);
	if (!d)
		return att_fail(ctx, ATT_E_EXITED, errno, "%s", path);
	while ((de = readdir(d)) != NULL) {
		memset(&c, 0, sizeof(c));
		c.tid = (pid_t)strtol(de->d_name, &end, 10);
		if (*end || c.tid <= 0)
			continue;
		threads++;
		c.sysclass = classify(ctx->pid, c.tid, &c.sysno, c.sysargs);
		if (ctx->prefer_tid && c.tid == ctx->prefer_tid) {
			prefer_seen = true;
			prefer_sys = c.sysno;
		}
		if (c.sysclass != ATT_SC_RESTART && c.sysclass != ATT_SC_USER &&
		    c.sysclass != ATT_SC_REENTER && c.sysclass != ATT_SC_PROBE)
			continue;
		if (ctx->prefer_tid && c.tid != ctx->prefer_tid)
			continue;
		if (c.sysclass == ATT_SC_USER)
			c.rank = 10;
		else if (c.sysclass != ATT_SC_RESTART)
			c.rank = reenter_rank(c.sysclass, c.sysno, c.sysargs);
		else if (joins_thread(ctx->pid, c.tid, c.sysno, c.sysargs))
			c.rank = -1;
		else if (c.sysno == SYS_restart_syscall)
			c.rank = 26;
		else
			c.rank = sys_pref(c.sysno) +
				 (att_arch_uses_restart_block(c.sysno, c.sysargs) ? 5 : 0);
		if (ctx->ncand < ATT_MAX_CAND)
			ctx->cand[ctx->ncand++] = c;
	}
	closedir(d);
	ctx->st.threads = threads;
	ctx->st.candidates = (unsigned)ctx->ncand;
	if (threads == 0)
		return att_fail(ctx, ATT_E_EXITED, 0, "no threads left");
	if (ctx->prefer_tid && !prefer_seen)
		return att_fail(ctx, ATT_E_THREAD_UNSAFE, ESRCH, "thread %d is not in process %d",
				(int)ctx->prefer_tid, (int)ctx->pid);
	if (ctx->prefer_tid && ctx->ncand == 0) {
		return att_fail(ctx, ATT_E_THREAD_UNSAFE, 0, "thread %d is in %s (syscall %ld)",
				(int)ctx->prefer_tid, att_arch_sysname(prefer_sys), prefer_sys);
	}
	if (ctx->ncand == 0)
		return att_fail(ctx, ATT_E_NO_THREAD, 0, "%u threads, none interruptible", threads);
	qsort(ctx->cand, ctx->ncand, sizeof(ctx->cand[0]), cand_cmp);
	return ATT_OK;
}
