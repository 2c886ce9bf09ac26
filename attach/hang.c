/* attach/hang.c - HEAPTAP_HANG=<step>[@N][:kill]: stop or kill heaptap at one instant, for kill tests */
/* SPDX-License-Identifier: MIT */
/*
 * The tests of "heaptap dies mid-attach" (tests/attach, case killed-*) need
 * heaptap gone at a chosen instant of the remote calls: at the Nth time
 * step is reached (N defaults to 1) heaptap stops itself with SIGSTOP (the
 * test then SIGKILLs it while the target's thread is in that state) or,
 * with ":kill", kills itself at once (the thread is then mid-call, running).
 * Steps: preflighted (preflight.c: the process checked, nothing touched),
 * stopped, saved, callregs, masked, resumed, sysstop, end, errno,
 * restore-fp, restored (see call.c and seize.c). Read once by att_new.
 * The command layer's steps use att_hang_env: session-bound (the session
 * socket bound, its directory still heaptap's) and session-owned (handed
 * over to the target's user, before its path is used; cli/attach_session.c).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/internal.h"

/* Does spec ("step[@N][:kill]") name step at its seen-th time? *kill_self: ":kill". */
static bool hang_match(const char *spec, const char *step, unsigned seen, bool *kill_self)
{
	char name[48];
	const char *at, *end;
	size_t n;
	unsigned want = 1;

	end = strchr(spec, ':');
	*kill_self = end && strcmp(end, ":kill") == 0;
	n = end ? (size_t)(end - spec) : strlen(spec);
	if (n >= sizeof(name))
		return false;
	memcpy(name, spec, n);
	name[n] = '\0';
	at = strchr(name, '@');
	if (at) {
		want = (unsigned)strtoul(at + 1, NULL, 10);
		name[at - name] = '\0';
	}
	return strcmp(name, step) == 0 && seen == want;
}

void att_hang(struct att_ctx *ctx, const char *step)
{
	bool kill_self;
	char name[48];
	const char *end;
	size_t n;

	if (!ctx->hang[0])
		return;
	/* count only this step's visits */
	end = strpbrk(ctx->hang, "@:");
	n = end ? (size_t)(end - ctx->hang) : strlen(ctx->hang);
	if (n >= sizeof(name))
		return;
	memcpy(name, ctx->hang, n);
	name[n] = '\0';
	if (strcmp(name, step) != 0)
		return;
	if (hang_match(ctx->hang, step, ++ctx->hang_seen, &kill_self))
		raise(kill_self ? SIGKILL : SIGSTOP);
}

void att_hang_env(const char *step)
{
	const char *spec = getenv("HEAPTAP_HANG");
	bool kill_self;

	if (spec && hang_match(spec, step, 1, &kill_self))
		raise(kill_self ? SIGKILL : SIGSTOP);
}
