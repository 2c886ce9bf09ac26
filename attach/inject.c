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
#include "elf/elfr.h"

#define GLIBC_RTLD_DLOPEN 0x80000000	/* __libc_dlopen_mode wants it */
#define RTLD_NOW_VALUE 2

/*
 * The loader thread's functions (loader.c): libc's, or with glibc < 2.34
 * the pthread ones from libpthread.so.0 when the program loaded it.
 * Without them (fn_pthread_create 0) dlopen runs in the hijacked thread.
 */
static void resolve_loader_funcs(struct att_ctx *ctx)
{
	static const char *const pt[] = { "pthread_create", "pthread_self", "pthread_detach" };
	uint64_t a[3];

	ctx->fn_pthread_create = 0;
	if (att_libc_symbol(ctx, "mprotect", &ctx->fn_mprotect))
		return;
	if (att_libc_symbol(ctx, "pthread_create", &a[0]) || att_libc_symbol(ctx, "pthread_self", &a[1]) ||
	    att_libc_symbol(ctx, "pthread_detach", &a[2])) {
		if (att_module_symbols(ctx, "libpthread.so", pt, a, 3) != ATT_OK)
			return;
	}
	ctx->fn_pthread_self = a[1];
	ctx->fn_pthread_detach = a[2];
	ctx->fn_pthread_create = a[0];
}

/*
 * Resolve, before anything is stopped, every function called in the
 * target. glibc >= 2.34 and musl export dlopen/dlsym/dlerror from libc;
 * older glibc has __libc_dlopen_mode/__libc_dlsym (and no dlerror there).
 */
enum att_reason att_resolve_funcs(struct att_ctx *ctx)
{
	enum att_reason why;

	if (ctx->funcs_known)
		return ATT_OK;
	why = att_libc_symbol(ctx, "mmap", &ctx->fn_mmap);
	if (!why)
		why = att_libc_symbol(ctx, "munmap", &ctx->fn_munmap);
	if (!why)
		why = att_libc_symbol(ctx, "__errno_location", &ctx->fn_errno);
	if (!why)
		why = att_libc_sigreturn(ctx, &ctx->fn_sigreturn);
	if (why)
		return why;
	att_choose_end_sig(ctx);
	ctx->fn_dlerror = 0;
	why = att_libc_dlopen(ctx, &ctx->fn_dlopen, &ctx->libc_mode);
	if (why)
		return why;
	if (ctx->libc_mode) {
		/*
		 * glibc < 2.34: dlopen, dlsym and dlerror live in libdl.so.2.
		 * When the program loaded it, use them (dlerror text, no
		 * __RTLD_DLOPEN); else libc's private __libc_dlopen_mode.
		 */
		static const char *const dl[] = { "dlopen", "dlsym", "dlerror" };
		uint64_t a[3];

		if (att_module_symbols(ctx, "libdl.so", dl, a, 3) == ATT_OK) {
			ctx->fn_dlopen = a[0];
			ctx->fn_dlsym = a[1];
			ctx->fn_dlerror = a[2];
			ctx->libc_mode = false;
		} else {
			why = att_libc_symbol(ctx, "__libc_dlsym", &ctx->fn_dlsym);
		}
	} else {
		why = att_libc_symbol(ctx, "dlsym", &ctx->fn_dlsym);
		if (!why)
			why = att_libc_symbol(ctx, "dlerror", &ctx->fn_dlerror);
	}
	if (why)
		return why;
	resolve_loader_funcs(ctx);
	ctx->detail[0] = '\0';
	ctx->funcs_known = true;
	return ATT_OK;
}

/*
 * The glibc symbol versions the library needs from libc.so.6, against the
 * ones the process's libc defines: an older glibc refuses the library in
 * dlopen anyway, and without libdl (glibc < 2.34) its reason is lost.
 * Nothing to compare (musl, no version sections) passes.
 */
static enum att_reason check_libc_versions(struct att_ctx *ctx, const char *lib_path)
{
	char missing[64], newest[64];
	struct elfr_file *lib = NULL;

	if (!ctx->libc || elfr_file_open(lib_path, &lib) != ELFR_OK)
		return ATT_OK;	/* att_stage and dlopen report an unreadable library */
	if (elfr_file_version_missing(lib, "libc.so.6", ctx->libc, missing, sizeof(missing), newest,
				      sizeof(newest)) != ELFR_OK)
		missing[0] = '\0';
	elfr_file_close(lib);
	if (!missing[0])
		return ATT_OK;
	return att_fail(ctx, ATT_E_LIBC_VERSION, 0, "%s needs %s, %s defines up to %s", lib_path,
			missing, ctx->libc_path, newest[0] ? newest : "none");
}

enum att_reason att_prepare(struct att_ctx *ctx, const char *lib_path)
{
	enum att_reason why;

	why = att_resolve_funcs(ctx);
	if (!why)
		why = att_forbidden_build(ctx);
	if (!why && lib_path)
		why = check_libc_versions(ctx, lib_path);
	if (why || !lib_path)
		return why;
	att_unstage(ctx);
	ctx->prepared_lib[0] = '\0';
	why = att_stage(ctx, lib_path, ctx->prepared_tpath, sizeof(ctx->prepared_tpath),
			&ctx->prepared_staged);
	if (!why)
		snprintf(ctx->prepared_lib, sizeof(ctx->prepared_lib), "%s", lib_path);
	return why;
}

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
	if (!ctx->have_thr || ctx->thr.state != ATT_TS_STOPPED)
		return att_fail(ctx, ATT_E_STATE, 0, "no stopped thread (att_seize first)");
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
	if (att_fault(ctx, "write")) {
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
	if (att_fault(ctx, "dlopen")) {
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
	if (att_fault(ctx, "dlsym") || att_fault(ctx, "start")) {
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
