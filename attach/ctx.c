/* attach/ctx.c - a session's context: att_new, att_free and what the caller sets and reads */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "attach/internal.h"

int att_env_check(char *err, size_t cap)
{
	struct att_hang_spec h;
	enum att_fault_step f;

	if (att_fault_parse(getenv("HEAPTAP_FAULT"), &f, err, cap) < 0 ||
	    att_hang_parse(getenv("HEAPTAP_HANG"), &h, err, cap) < 0)
		return -EINVAL;
	return 0;
}

struct att_ctx *att_new(pid_t pid)
{
	struct att_ctx *ctx = calloc(1, sizeof(*ctx));
	char err[256];

	if (!ctx)
		return NULL;
	if (att_fault_parse(getenv("HEAPTAP_FAULT"), &ctx->fault, err, sizeof(err)) < 0 ||
	    att_hang_parse(getenv("HEAPTAP_HANG"), &ctx->hang, err, sizeof(err)) < 0) {
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->pid = pid;
	snprintf(ctx->procdir, sizeof(ctx->procdir), "/proc/%d", (int)pid);
	ctx->stop_timeout_ms = ATT_STOP_TIMEOUT_MS;
	ctx->call_timeout_ms = ATT_CALL_TIMEOUT_MS;
	ctx->st.syscall = -1;
	ctx->pidfd = -1;
	return ctx;
}

void att_free(struct att_ctx *ctx)
{
	if (!ctx)
		return;
	att_release(ctx);
	att_unstage(ctx);
	att_forbidden_free(ctx);
	att_libc_close(ctx);
	if (ctx->pidfd >= 0)
		close(ctx->pidfd);
	free(ctx);
}

void att_prefer_thread(struct att_ctx *ctx, pid_t tid)
{
	ctx->prefer_tid = tid;
}

void att_set_timeouts(struct att_ctx *ctx, unsigned stop_ms, unsigned call_ms)
{
	if (stop_ms)
		ctx->stop_timeout_ms = stop_ms;
	if (call_ms)
		ctx->call_timeout_ms = call_ms;
}

void att_get_stats(const struct att_ctx *ctx, struct att_stats *st)
{
	*st = ctx->st;
}

const char *att_detail(const struct att_ctx *ctx)
{
	return ctx->detail;
}

int att_errno(const struct att_ctx *ctx)
{
	return ctx->err;
}
