/* attach/ctx.c - session context: creation, failure records, stats, clocks */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/internal.h"

struct att_ctx *att_new(pid_t pid)
{
	struct att_ctx *ctx = calloc(1, sizeof(*ctx));
	const char *f;

	if (!ctx)
		return NULL;
	ctx->pid = pid;
	snprintf(ctx->procdir, sizeof(ctx->procdir), "/proc/%d", (int)pid);
	ctx->stop_timeout_ms = ATT_STOP_TIMEOUT_MS;
	ctx->call_timeout_ms = ATT_CALL_TIMEOUT_MS;
	ctx->st.syscall = -1;
	ctx->pidfd = -1;
	f = getenv("HEAPTAP_FAULT");
	if (f)
		snprintf(ctx->fault, sizeof(ctx->fault), "%s", f);
	f = getenv("HEAPTAP_HANG");
	if (f)
		snprintf(ctx->hang, sizeof(ctx->hang), "%s", f);
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

enum att_reason att_fail(struct att_ctx *ctx, enum att_reason why, int err, const char *fmt, ...)
{
	va_list ap;

	ctx->err = err;
	va_start(ap, fmt);
	vsnprintf(ctx->detail, sizeof(ctx->detail), fmt, ap);
	va_end(ap);
	return why;
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

uint64_t att_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void att_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
