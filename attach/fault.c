/* attach/fault.c - HEAPTAP_FAULT=<step>: make one attach step fail for rollback tests */
/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "attach/internal.h"

/*
 * Each step calls att_fault() right after its action succeeded, so the
 * failure path has something to undo. Steps: seize, interrupt, choose,
 * regs, mask, errno (also: the loader path takes the synchronous one),
 * scratch, write, stage, dlopen, dlsym, start.
 */
bool att_fault(struct att_ctx *ctx, const char *step)
{
	if (!ctx->fault[0] || strcmp(ctx->fault, step) != 0)
		return false;
	att_fail(ctx, ATT_E_FAULT, 0, "step %s", step);
	return true;
}
