/* attach/fault.c - HEAPTAP_FAULT=<step>: make one attach step fail for rollback tests */
/* SPDX-License-Identifier: MIT */
/*
 * Each step calls att_fault() right after its action succeeded, so the
 * failure path has something to undo. The steps are an enum (internal.h),
 * so a step the code names exists; the names below are what the variable
 * may hold, and att_new refuses any other (att_env_check).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attach/internal.h"

static const char *const fault_names[ATT_F_COUNT] = {
	[ATT_F_SEIZE] = "seize",
	[ATT_F_INTERRUPT] = "interrupt",
	[ATT_F_CHOOSE] = "choose",
	[ATT_F_IDENT] = "ident",
	[ATT_F_REGS] = "regs",
	[ATT_F_MASK] = "mask",
	[ATT_F_ERRNO] = "errno",	/* also: the loader path takes the synchronous one */
	[ATT_F_SCRATCH] = "scratch",
	[ATT_F_WRITE] = "write",
	[ATT_F_STAGE] = "stage",
	[ATT_F_DLOPEN] = "dlopen",	/* dlopen, dlsym, start: steps of the synchronous path */
	[ATT_F_DLSYM] = "dlsym",
	[ATT_F_START] = "start",
	[ATT_F_FIXED] = "fixed",	/* fixed, stub, stubcrash: the loader path's (loader.c) */
	[ATT_F_STUB] = "stub",
	[ATT_F_STUBCRASH] = "stubcrash",
	[ATT_F_SYMBOLIZER] = "symbolizer", /* read by interpret/symchild.c: its child crashes */
};

const char *att_fault_name(enum att_fault_step step)
{
	return step > ATT_F_NONE && step < ATT_F_COUNT ? fault_names[step] : NULL;
}

int att_fault_parse(const char *spec, enum att_fault_step *step, char *err, size_t cap)
{
	size_t used = 0;
	int i;

	*step = ATT_F_NONE;
	if (!spec || !spec[0])
		return 0;
	for (i = ATT_F_NONE + 1; i < ATT_F_COUNT; i++)
		if (!strcmp(spec, fault_names[i])) {
			*step = (enum att_fault_step)i;
			return 0;
		}
	used = (size_t)snprintf(err, cap, "HEAPTAP_FAULT=%.40s: no such step (", spec);
	for (i = ATT_F_NONE + 1; i < ATT_F_COUNT && used < cap; i++)
		used += (size_t)snprintf(err + used, cap - used, "%s%s", fault_names[i],
					 i + 1 < ATT_F_COUNT ? ", " : ")");
	return -EINVAL;
}

bool att_fault(struct att_ctx *ctx, enum att_fault_step step)
{
	if (ctx->fault == ATT_F_NONE || ctx->fault != step)
		return false;
	att_fail(ctx, ATT_E_FAULT, 0, "step %s", fault_names[step]);
	return true;
}
