/* attach/hang.c - HEAPTAP_HANG=<step>[@N][:kill]: stop or kill heaptap at one instant, for kill tests */
/* SPDX-License-Identifier: MIT */
/*
 * The tests of "heaptap dies mid-attach" (tests/attach, case killed-*) need
 * heaptap gone at a chosen instant of the remote calls: at the Nth time
 * step is reached (N defaults to 1) heaptap stops itself with SIGSTOP (the
 * test then SIGKILLs it while the target's thread is in that state) or,
 * with ":kill", kills itself at once (the thread is then mid-call, running).
 * The steps are an enum (internal.h), named below; att_new refuses a
 * variable that names none of them (att_env_check). The command layer's
 * steps, reached through att_hang_env, are in the same table:
 * session-bound (the session socket bound, its directory still
 * heaptap's) and session-owned (handed over to the target's user, before
 * its path is used; cli/attach_session.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/internal.h"

static const char *const hang_names[ATT_H_COUNT] = {
	[ATT_H_PREFLIGHTED] = "preflighted",	/* preflight.c: the process checked, nothing touched */
	[ATT_H_STOPPED] = "stopped",		/* seize.c: the interrupt stop */
	[ATT_H_SAVED] = "saved",		/* bracket.c: the frame written */
	[ATT_H_CALLREGS] = "callregs",		/* call.c: a call's registers set */
	[ATT_H_MASKED] = "masked",		/* call.c: the mask blocked */
	[ATT_H_SENT] = "sent",			/* call.c: the fixed-address mmap's end signal queued */
	[ATT_H_RESUMED] = "resumed",		/* call.c: a call running */
	[ATT_H_SYSSTOP] = "sysstop",		/* call.c: a syscall stop inside a call */
	[ATT_H_END] = "end",			/* call.c: a call's end stop */
	[ATT_H_ERRNO] = "errno",		/* bracket.c: errno saved */
	[ATT_H_RESTORE_FP] = "restore-fp",	/* regs.c: XSAVE area and mask back, registers not yet */
	[ATT_H_RESTORED] = "restored",		/* regs.c: the registers back */
	[ATT_H_SESSION_BOUND] = "session-bound",
	[ATT_H_SESSION_OWNED] = "session-owned",
};

const char *att_hang_name(enum att_hang_step step)
{
	return step > ATT_H_NONE && step < ATT_H_COUNT ? hang_names[step] : NULL;
}

/* The names, ", "-separated, after err's first used bytes. */
static void list_names(char *err, size_t cap, size_t used)
{
	int i;

	for (i = ATT_H_NONE + 1; i < ATT_H_COUNT && used < cap; i++)
		used += (size_t)snprintf(err + used, cap - used, "%s%s", hang_names[i],
					 i + 1 < ATT_H_COUNT ? ", " : ")");
}

int att_hang_parse(const char *spec, struct att_hang_spec *h, char *err, size_t cap)
{
	const char *end = spec ? spec + strcspn(spec, "@:") : NULL;
	unsigned long n = 1;
	char *num_end;
	int i;

	memset(h, 0, sizeof(*h));
	if (!spec || !spec[0])
		return 0;
	if (*end == '@') {
		if (end[1] < '0' || end[1] > '9')
			goto bad_count;
		errno = 0;
		n = strtoul(end + 1, &num_end, 10);
		if (errno || n < 1 || n > 1000000)
			goto bad_count;
	} else {
		num_end = (char *)end;
	}
	if (*num_end && strcmp(num_end, ":kill") != 0) {
		snprintf(err, cap, "HEAPTAP_HANG=%.40s: '%.20s' is not ':kill'", spec, num_end);
		return -EINVAL;
	}
	for (i = ATT_H_NONE + 1; i < ATT_H_COUNT; i++)
		if (strlen(hang_names[i]) == (size_t)(end - spec) &&
		    !strncmp(spec, hang_names[i], (size_t)(end - spec))) {
			h->step = (enum att_hang_step)i;
			h->nth = (unsigned)n;
			h->kill_self = *num_end != '\0';
			return 0;
		}
	list_names(err, cap, (size_t)snprintf(err, cap, "HEAPTAP_HANG=%.40s: no such step (", spec));
	return -EINVAL;
bad_count:
	snprintf(err, cap, "HEAPTAP_HANG=%.40s: @N wants a count from 1", spec);
	return -EINVAL;
}

void att_hang(struct att_ctx *ctx, enum att_hang_step step)
{
	if (ctx->hang.step == ATT_H_NONE || ctx->hang.step != step)
		return;
	/* count only this step's visits */
	if (++ctx->hang_seen == ctx->hang.nth)
		raise(ctx->hang.kill_self ? SIGKILL : SIGSTOP);
}

void att_hang_env(enum att_hang_env_step step)
{
	struct att_hang_spec h;
	char err[8];

	if (att_hang_parse(getenv("HEAPTAP_HANG"), &h, err, sizeof(err)) < 0 || h.nth != 1)
		return;
	if ((step == ATT_HANG_SESSION_BOUND && h.step == ATT_H_SESSION_BOUND) ||
	    (step == ATT_HANG_SESSION_OWNED && h.step == ATT_H_SESSION_OWNED))
		raise(h.kill_self ? SIGKILL : SIGSTOP);
}
