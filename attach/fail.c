/* attach/fail.c - failure records, and the rule for a process that died mid-call */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "attach/internal.h"

#define GONE_POLLS 20	/* a dying process's threads take a moment to be gone: */
#define GONE_POLL_MS 10 /* look for up to 200 ms */

enum att_reason att_fail(struct att_ctx *ctx, enum att_reason why, int err, const char *fmt, ...)
{
	va_list ap;

	ctx->err = err;
	va_start(ap, fmt);
	vsnprintf(ctx->detail, sizeof(ctx->detail), fmt, ap);
	va_end(ap);
	return why;
}

enum att_reason att_gone(struct att_ctx *ctx)
{
	return att_fail(ctx, ATT_E_EXITED, 0, "process %d is gone", (int)ctx->pid);
}

enum att_reason att_gone_mid_call(struct att_ctx *ctx, enum att_reason why)
{
	int i;

	if (why != ATT_E_PTRACE && why != ATT_E_MEMORY)
		return why;
	for (i = 0; i < GONE_POLLS && att_process_alive(ctx->pid); i++)
		att_sleep_ms(GONE_POLL_MS);
	return att_process_alive(ctx->pid) ? why : att_gone(ctx);
}

void att_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}
