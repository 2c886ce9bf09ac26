/* attach/hang.c - HEAPTAP_HANG=<step>[@N][:kill]: stop or kill heaptap at one instant, for kill tests */
/* SPDX-License-Identifier: MIT */
/*
 * The tests of "heaptap dies mid-attach" (tests/attach, case killed-*) need
 * heaptap gone at a chosen instant of the remote calls: at the Nth time
 * step is reached (N defaults to 1) heaptap stops itself with SIGSTOP (the
 * test then SIGKILLs it while the target's thread is in that state) or,
 * with ":kill", kills itself at once (the thread is then mid-call, running).
 * Steps: stopped, saved, callregs, masked, resumed, sysstop, end, errno,
 * restore-fp, restored (see call.c and seize.c). Read once by att_new.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/internal.h"

void att_hang(struct att_ctx *ctx, const char *step)
{
	char name[48];
	const char *at, *end;
	size_t n;
	unsigned want = 1;
	bool kill_self;

	if (!ctx->hang[0])
		return;
	end = strchr(ctx->hang, ':');
	kill_self = end && strcmp(end, ":kill") == 0;
	n = end ? (size_t)(end - ctx->hang) : strlen(ctx->hang);
	if (n >= sizeof(name))
		return;
	memcpy(name, ctx->hang, n);
	name[n] = '\0';
	at = strchr(name, '@');
	if (at) {
		want = (unsigned)strtoul(at + 1, NULL, 10);
		name[at - name] = '\0';
	}
	if (strcmp(name, step) != 0 || ++ctx->hang_seen != want)
		return;
	raise(kill_self ? SIGKILL : SIGSTOP);
}
