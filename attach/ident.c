/* attach/ident.c - is the process we stopped the one the preflight checked? */
/* SPDX-License-Identifier: MIT */
/*
 * Between the preflight and the seize the process may exit and its pid be
 * given to another process (of another user, another program), or it may
 * execute another program. The preflight therefore takes a pidfd (which
 * always names the process it was opened for), its start time (field 22 of
 * /proc/PID/stat) and its program's (dev, inode); once a thread is held,
 * all three are checked again, and a different process is let go at once,
 * untouched: only PTRACE_SEIZE, PTRACE_INTERRUPT and PTRACE_DETACH reached it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/internal.h"

/* Field 22 of procdir/stat (start time, clock ticks since boot). 0 or -errno. */
static int start_time(const char *procdir, unsigned long long *st)
{
	char path[96], buf[1024];
	const char *p;
	int field;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stat", procdir);
	n = att_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	if (!p)
		return -EINVAL;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", st) != 1)
		return -EINVAL;
	return 0;
}

static bool pidfd_alive(int pidfd)
{
	return pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

enum att_reason att_ident_take(struct att_ctx *ctx)
{
	char path[96];
	struct stat st;
	int ret;

	if (ctx->pidfd < 0) {
		ctx->pidfd = (int)syscall(SYS_pidfd_open, ctx->pid, 0);
		if (ctx->pidfd < 0 && errno != ENOSYS)
			return att_fail(ctx, errno == ESRCH ? ATT_E_NO_PROCESS : ATT_E_PTRACE,
					errno, "pidfd_open %d", (int)ctx->pid);
	}
	ret = start_time(ctx->procdir, &ctx->start_time);
	if (ret < 0)
		return att_fail(ctx, ATT_E_NO_PROCESS, -ret, "%s/stat", ctx->procdir);
	snprintf(path, sizeof(path), "%s/exe", ctx->procdir);
	if (stat(path, &st) < 0)
		return att_fail(ctx, ATT_E_ZOMBIE, errno, "%s", path);
	ctx->exe_dev = st.st_dev;
	ctx->exe_ino = st.st_ino;
	/* still the pidfd's process: what was read is its own */
	if (!pidfd_alive(ctx->pidfd))
		return att_fail(ctx, ATT_E_NO_PROCESS, ESRCH, "process %d exited", (int)ctx->pid);
	ctx->ident = true;
	return ATT_OK;
}

enum att_reason att_ident_recheck(struct att_ctx *ctx)
{
	unsigned long long now = 0;
	enum att_reason why = ATT_OK;
	char path[96];
	struct stat st;

	if (!ctx->ident)
		return ATT_OK;
	snprintf(path, sizeof(path), "%s/exe", ctx->procdir);
	if (att_fault(ctx, ATT_F_IDENT) || !pidfd_alive(ctx->pidfd) ||
	    start_time(ctx->procdir, &now) < 0 || now != ctx->start_time)
		why = att_fail(
		    ctx, ATT_E_EXITED, 0,
		    "the process checked before the stop is gone; pid %d now names another "
		    "process, which was let go untouched",
		    (int)ctx->pid);
	else if (stat(path, &st) < 0 || st.st_dev != ctx->exe_dev || st.st_ino != ctx->exe_ino)
		why = att_fail(
		    ctx, ATT_E_EXEC, 0,
		    "it runs another program than the one checked before the stop; it was let "
		    "go untouched");
	return why;
}
