/* attach/inject.c - load a library into the seized thread's process and call its start function */
/* SPDX-License-Identifier: MIT */
/*
 * Sequence, each step undone in reverse on failure:
 *
 *   stage           make lib visible in the target      -> att_unstage
 *                   (done by att_prepare before the stop when called)
 *   att_call_begin  save regs/xstate/mask/errno, frame, -> att_call_end (munmap,
 *                   scratch page, block the mask            errno, mask, regs)
 *   write           path, symbol, argument into the scratch page
 *   dlopen          (RTLD_NOW)                          (never undone: rule 5)
 *   dlsym           the start function
 *   start(arg)
 *
 * Scratch page layout:  [ trampoline | target path \0 | start symbol \0 | argument \0 ]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "attach/internal.h"

#define GLIBC_RTLD_DLOPEN 0x80000000	/* __libc_dlopen_mode wants it */
#define RTLD_NOW_VALUE 2

/* Text of the target's dlerror(), or "" (f->dlerror 0 or the call failed). */
static void remote_dlerror(struct att_ctx *ctx, char *buf, size_t cap)
{
	uint64_t msg = 0;

	buf[0] = '\0';
	if (!ctx->fn_dlerror || att_call_raw(ctx, ctx->fn_dlerror, NULL, 0, &msg) != ATT_OK || !msg)
		return;
	if (att_mem_read_str(ctx->thr.tid, msg, buf, cap) < 0)
		buf[0] = '\0';
}

/* The stopped thread, the arguments and the target's functions: what both inject paths check first. */
enum att_reason att_inject_check(struct att_ctx *ctx, const char *lib_path, const char *start_symbol,
				 const char *arg)
{
	if (att_need_stopped(ctx))
		return ATT_E_STATE;
	if (!lib_path || !start_symbol || !arg)
		return att_fail(ctx, ATT_E_STATE, EINVAL, "NULL argument");
	ctx->detail[0] = '\0';
	ctx->err = 0;
	return att_resolve_funcs(ctx);
}

/* The library's path as the target sees it: the prepared one, or staged now (thread stopped). */
enum att_reason att_inject_tpath(struct att_ctx *ctx, const char *lib_path, char *tpath, size_t cap,
				 int *staged)
{
	if (ctx->prepared_lib[0] && strcmp(ctx->prepared_lib, lib_path) == 0) {
		snprintf(tpath, cap, "%s", ctx->prepared_tpath);
		*staged = ctx->prepared_staged;
		return ATT_OK;
	}
	return att_stage(ctx, lib_path, tpath, cap, staged);
}

enum att_reason att_inject(struct att_ctx *ctx, const char *lib_path, const char *start_symbol,
			   const char *arg, struct att_inject_result *res)
{
	struct att_inject_result r = { 0 };
	char tpath[PATH_MAX], err_text[400];
	size_t lp, ls, la;
	uint64_t scratch = 0, ret = 0, args[6];
	enum att_reason why;
	char *buf = NULL;
	int err;

	if (res)
		memset(res, 0, sizeof(*res));
	why = att_inject_check(ctx, lib_path, start_symbol, arg);
	if (!why)
		why = att_inject_tpath(ctx, lib_path, tpath, sizeof(tpath), &r.staged);
	if (why)
		return why;

	lp = strlen(tpath) + 1;
	ls = strlen(start_symbol) + 1;
	la = strlen(arg) + 1;
	why = att_call_begin(ctx, lp + ls + la);
	if (why)
		goto out_end;
	scratch = ctx->scratch + ATT_TRAMP_SPACE;

	buf = calloc(1, lp + ls + la);
	if (!buf) {
		why = att_fail(ctx, ATT_E_NOMEM, ENOMEM, "scratch buffer");
		goto out_end;
	}
	memcpy(buf, tpath, lp);
	memcpy(buf + lp, start_symbol, ls);
	memcpy(buf + lp + ls, arg, la);
	err = att_mem_write_code(ctx->thr.tid, scratch, buf, lp + ls + la);
	free(buf);
	if (err) {
		why = att_fail(ctx, ATT_E_MEMORY, -err, "write scratch page at %#" PRIx64, scratch);
		goto out_end;
	}
	if (att_fault(ctx, ATT_F_WRITE)) {
		why = ATT_E_FAULT;
		goto out_end;
	}

	args[0] = scratch;
	args[1] = RTLD_NOW_VALUE | (ctx->libc_mode ? GLIBC_RTLD_DLOPEN : 0);
	why = att_call_raw(ctx, ctx->fn_dlopen, args, 2, &r.handle);
	if (why)
		goto out_end;
	if (!r.handle) {
		remote_dlerror(ctx, err_text, sizeof(err_text));
		why = att_fail(ctx, ATT_E_DLOPEN, 0, "%s", err_text[0] ? err_text : tpath);
		goto out_end;
	}
	if (att_fault(ctx, ATT_F_DLOPEN)) {
		why = ATT_E_FAULT;
		goto out_end;
	}

	args[0] = r.handle;
	args[1] = scratch + lp;
	why = att_call_raw(ctx, ctx->fn_dlsym, args, 2, &r.start_addr);
	if (why)
		goto out_end;
	if (!r.start_addr) {
		remote_dlerror(ctx, err_text, sizeof(err_text));
		why = att_fail(ctx, ATT_E_DLSYM, 0, "%s", err_text[0] ? err_text : start_symbol);
		goto out_end;
	}
	if (att_fault(ctx, ATT_F_DLSYM) || att_fault(ctx, ATT_F_START)) {
		why = ATT_E_FAULT;
		goto out_end;
	}

	args[0] = scratch + lp + ls;
	why = att_call_raw(ctx, r.start_addr, args, 1, &ret);
	if (why)
		goto out_end;
	r.start_ret = (int)(uint32_t)ret;
	if (r.start_ret != 0)
		why = att_fail(ctx, ATT_E_START, 0, "%s returned %d", start_symbol, r.start_ret);

out_end:
	att_call_end(ctx, &why);
	why = att_gone_mid_call(ctx, why);
	/* the mapping keeps the file alive; the name can go (rule 8) */
	att_unstage(ctx);
	ctx->prepared_lib[0] = '\0';
	if (res)
		*res = r;
	return why;
}
