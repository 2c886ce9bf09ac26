/* attach/loader.c - load the library from a new thread of the target, not the hijacked one */
/* SPDX-License-Identifier: MIT */
/*
 * dlopen of a library and its dependencies takes milliseconds (page
 * faults, relocations, constructors); run in the hijacked thread, all of
 * it is a pause of that thread. Here the hijacked thread only creates a
 * thread, and that thread loads the library:
 *
 *   att_inject_start (thread stopped)          undo on failure
 *     stage                                    att_unstage (att_inject_wait, att_free)
 *     call 1, mmap of 3 pages r-x:             att_call_end: munmap, errno, mask, regs
 *       att_call_map_at (a free fixed address, one stop), else
 *       att_call_map (libc's mmap, two stops)
 *     write stub, loader code and data
 *     call 2, the stub (one stop): errno into  -- (fails: no thread, all 3 pages go;
 *       the frame, mprotect data page rw,          its stage word says whether
 *       pthread_create(&t, NULL, code, data)       pthread_create ran at all)
 *     att_call_end: mask, regs; no munmap (the loader owns the pages)
 *   att_release
 *   att_inject_wait (nothing stopped)          sets go, reads the data page (process_vm_readv)
 *   the loader unmaps all 3 pages after go, only its 2 without (heaptap died)
 *
 * The loader runs with every asynchronous signal blocked (inherited: the
 * hijacked thread's mask is blocked during the calls, and the loader
 * blocks them again itself). Its code (arch/x86_64_loader.c) unmaps its
 * pages at the end. It first waits for heaptap's ack (or 5 s), so that the
 * outcome, dlerror()'s text and its tid can be read. heaptap
 * writes the ack only when the page is certainly still the loader's: the
 * loader waits at least 5 s from the instant it wrote its outcome, which
 * is after the last time heaptap saw it still running (t_ref), and the ack
 * is written only within 3 s of t_ref. A cookie in the page tells a page
 * that was unmapped and reused from ours.
 *
 * If heaptap dies at any point, the hijacked thread comes back through
 * its signal frame (call.c) and the loader, once created, finishes alone:
 * the library's start function then fails to connect and leaves the
 * process as it was. The trampoline page is never unmapped by the loader
 * (the hijacked thread may still be executing it), only its own two.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <unistd.h>

#include "attach/internal.h"
#include "attach/loader_internal.h"

#define PAGE 4096u
#define RTLD_NOW_VALUE 2
#define POLL_US 200

static void put64(unsigned char *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

static void put32(unsigned char *p, size_t off, uint32_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

/* The data page as the loader starts with it. */
static void build_data(const struct att_ctx *ctx, unsigned char *p, uint64_t code, uint64_t data,
		       const char *path, const char *sym, const char *arg)
{
	size_t lp = strlen(path) + 1, ls = strlen(sym) + 1, la = strlen(arg) + 1;
	uint64_t mask = ~0ULL;
	int64_t ts[2] = { 0, ATT_LD_WAIT_NS }, go_ts[2] = { 0, ATT_LD_GO_NS };

	memset(p, 0, PAGE);
	put64(p, ATT_LD_FN_DLOPEN, ctx->fn_dlopen);
	put64(p, ATT_LD_FN_DLSYM, ctx->fn_dlsym);
	put64(p, ATT_LD_FN_DLERROR, ctx->fn_dlerror);
	put64(p, ATT_LD_FN_MUNMAP, ctx->fn_munmap);
	put64(p, ATT_LD_FN_SELF, ctx->fn_pthread_self);
	put64(p, ATT_LD_FN_DETACH, ctx->fn_pthread_detach);
	put64(p, ATT_LD_BASE, code);
	put64(p, ATT_LD_SIZE, 2 * PAGE);
	put64(p, ATT_LD_BASE_GO, code - PAGE);
	put64(p, ATT_LD_SIZE_GO, 3 * PAGE);
	put64(p, ATT_LD_FN_ERRNO, ctx->fn_errno);
	put64(p, ATT_LD_FN_CREATE, ctx->fn_pthread_create);
	put64(p, ATT_LD_CODE, code);
	put64(p, ATT_LD_MPROT, data);
	put64(p, ATT_LD_PATH, data + ATT_LD_STRINGS);
	put64(p, ATT_LD_SYM, data + ATT_LD_STRINGS + lp);
	put64(p, ATT_LD_ARG, data + ATT_LD_STRINGS + lp + ls);
	put32(p, ATT_LD_FLAGS, RTLD_NOW_VALUE | (ctx->libc_mode ? 0x80000000u : 0));
	put32(p, ATT_LD_WAITS, ATT_LD_WAIT_POLLS);
	memcpy(p + ATT_LD_TS, ts, sizeof(ts));
	put32(p, ATT_LD_GO_WAITS, ATT_LD_GO_POLLS);
	memcpy(p + ATT_LD_GO_TS, go_ts, sizeof(go_ts));
	/* as att_mask_block: the synchronous signals stay deliverable */
	mask &= ~(1ULL << (SIGSEGV - 1) | 1ULL << (SIGBUS - 1) | 1ULL << (SIGILL - 1) |
		  1ULL << (SIGFPE - 1) | 1ULL << (SIGTRAP - 1) | 1ULL << (SIGSYS - 1));
	put64(p, ATT_LD_MASK, mask);
	memcpy(p + ATT_LD_NAME, "heaptap-load", sizeof("heaptap-load"));
	put64(p, ATT_LD_COOKIE, ctx->ld.cookie);
	memcpy(p + ATT_LD_STRINGS, path, lp);
	memcpy(p + ATT_LD_STRINGS + lp, sym, ls);
	memcpy(p + ATT_LD_STRINGS + lp + ls, arg, la);
}

/* No loader thread possible: do it the old way and keep the outcome for att_inject_wait. */
static enum att_reason inject_sync(struct att_ctx *ctx, const char *lib_path, const char *sym,
				   const char *arg)
{
	enum att_reason why;

	why = att_inject(ctx, lib_path, sym, arg, &ctx->ld.res);
	ctx->ld.pending = true;
	ctx->ld.threaded = false;
	ctx->ld.sync_why = why;
	ctx->ld.sync_err = ctx->err;
	snprintf(ctx->ld.sync_detail, sizeof(ctx->ld.sync_detail), "%s", ctx->detail);
	return why;
}

/*
 * The three pages: at a fixed free address in one ptrace stop when the
 * process ignores a signal and libc has the "syscall; ret", else through
 * libc's mmap in two (its syscall's entry and exit stops). Not for a
 * thread stopped in a relative sleep (restart block): the chained frame's
 * rt_sigreturn would reset its block, and it would sleep its whole
 * timeout again.
 */
static enum att_reason map_pages(struct att_ctx *ctx)
{
	enum att_reason why;
	uint64_t at = 0;

	if (!ctx->thr.regs_saved) {
		why = att_regs_save(ctx, &ctx->thr);
		if (why)
			return why;
	}
	if (!att_arch_stopped_in_restart_block(&ctx->thr.saved.gp) && ctx->fn_syscall_ret)
		at = ctx->fixed_at;
	if (at && ctx->fault == ATT_F_FIXED)
		at = ctx->fn_syscall_ret & ~(uint64_t)(PAGE - 1);	/* libc's code: EEXIST */
	ctx->fixed_at = 0;	/* once: a second injection of this ctx would find it taken */
	if (at)
		return att_call_map_at(ctx, at, ATT_LD_PAGES * PAGE);
	return att_call_map(ctx, ATT_LD_PAGES * PAGE - ATT_TRAMP_SPACE);
}

/* The stub's outcome: nothing made (all 3 pages go), or a loader thread to wait for. */
static enum att_reason stub_result(struct att_ctx *ctx, uint64_t ret)
{
	if ((int64_t)ret < 0) {
		ctx->scratch_size = ATT_LD_PAGES * PAGE;
		if (ctx->fault == ATT_F_STUB)
			return att_fail(ctx, ATT_E_FAULT, (int)-(int64_t)ret,
					"step stub: its mprotect failed as asked");
		return att_fail(ctx, ATT_E_REMOTE_MMAP, (int)-(int64_t)ret,
				"mprotect of the loader's data page");
	}
	if ((int)ret != 0) {
		ctx->scratch_size = ATT_LD_PAGES * PAGE;
		return att_fail(ctx, ATT_E_THREAD_CREATE, (int)ret, "pthread_create returned %d",
				(int)ret);
	}
	return ATT_OK;
}

/*
 * Map, fill and start: the part that runs in the stopped thread. Two
 * calls: mmap of the three pages (one stop at a fixed address, or its
 * syscall's entry and exit stops), then the stub (one end-signal stop),
 * which does the rest in the target.
 */
static enum att_reason spawn(struct att_ctx *ctx, const char *tpath, const char *sym,
			     const char *arg)
{
	const size_t len = ATT_LD_PAGES * PAGE - ATT_LD_STUB_AT;
	unsigned char *buf = NULL;
	const unsigned char *code, *stub;
	uint64_t args[1], ret = 0, stub_at, code_at, data_at;
	enum att_reason why, r;
	size_t clen, slen;
	uint32_t stage = 0;
	int err;

	why = map_pages(ctx);
	if (why == ATT_E_REMOTE_MMAP && ctx->fault == ATT_F_FIXED)
		return att_fail(ctx, ATT_E_FAULT, 0, "step fixed: the mmap at a taken address failed");
	if (why)
		return why;
	stub_at = ctx->scratch + ATT_LD_STUB_AT;
	code_at = ctx->scratch + PAGE;
	data_at = ctx->scratch + 2 * PAGE;
	stub = att_arch_loader_stub(&slen);
	code = att_arch_loader(&clen);
	buf = calloc(1, len);
	if (!buf)
		return att_fail(ctx, ATT_E_NOMEM, ENOMEM, "loader pages");
	/* one write from the stub to the end of the data page (r-x: /proc/TID/mem) */
	memcpy(buf, stub, slen);
	if (ctx->fault == ATT_F_STUBCRASH)
		memcpy(buf, "\x0f\x0b", 2);	/* ud2: the stub dies of SIGILL at once */
	memcpy(buf + PAGE - ATT_LD_STUB_AT, code, clen);
	ctx->ld.cookie = att_random64();
	build_data(ctx, buf + 2 * PAGE - ATT_LD_STUB_AT, code_at, data_at, tpath, sym, arg);
	if (ctx->fault == ATT_F_STUB)	/* not page-aligned: the stub's mprotect fails */
		put64(buf + 2 * PAGE - ATT_LD_STUB_AT, ATT_LD_MPROT, data_at + 1);
	err = att_mem_write_code(ctx->thr.tid, stub_at, buf, len);
	free(buf);
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write the loader's pages at %#" PRIx64,
				stub_at);
	if (att_fault(ctx, ATT_F_WRITE))
		return ATT_E_FAULT;

	/*
	 * From the stub's pthread_create on the loader may exist and own
	 * pages 2-3: only the trampoline page is unmapped here, unless the
	 * stub says for sure that no thread was made (its stage word, or
	 * its value); after a success nothing is: the loader unmaps all
	 * three pages once heaptap's go says the hijacked thread has left
	 * the trampoline for good (only its own two without).
	 */
	ctx->scratch_size = PAGE;
	ctx->ld.t_spawn = ctx->ld.t_ref = util_mono_ns();
	args[0] = data_at;
	why = att_call_raw(ctx, stub_at, args, 1, &ret);
	r = att_call_slots(ctx, why == ATT_OK, &stage);
	if (why) {
		if (r == ATT_OK && stage == 0)	/* stopped before pthread_create: nothing made */
			ctx->scratch_size = ATT_LD_PAGES * PAGE;
		if (why == ATT_E_CALL_FAULT && ctx->fault == ATT_F_STUBCRASH) {
			char crash[sizeof(ctx->detail)];

			snprintf(crash, sizeof(crash), "%s", ctx->detail);
			why = att_fail(ctx, ATT_E_FAULT, 0, "step stubcrash: %.400s", crash);
		}
		return why;
	}
	why = stub_result(ctx, ret);
	if (why)
		return why;
	ctx->scratch = 0;	/* att_call_end: no munmap, the loader does it */
	ctx->ld.data = data_at;
	ctx->ld.pending = true;
	ctx->ld.threaded = true;
	return ATT_OK;
}

enum att_reason att_inject_start(struct att_ctx *ctx, const char *lib_path, const char *start_symbol,
				 const char *arg)
{
	char tpath[PATH_MAX];
	enum att_reason why;

	memset(&ctx->ld, 0, sizeof(ctx->ld));
	why = att_inject_check(ctx, lib_path, start_symbol, arg);
	if (why)
		return why;
	/*
	 * HEAPTAP_FAULT=dlopen|dlsym|start are steps of the synchronous path
	 * (a loader thread cannot be rolled back after its dlopen), and so is
	 * errno (the stub saves errno here, heaptap does not): take it.
	 */
	if (!ctx->fn_pthread_create || ctx->fault == ATT_F_DLOPEN ||
	    ctx->fault == ATT_F_DLSYM || ctx->fault == ATT_F_START ||
	    ctx->fault == ATT_F_ERRNO)
		return inject_sync(ctx, lib_path, start_symbol, arg);
	why = att_inject_tpath(ctx, lib_path, tpath, sizeof(tpath), &ctx->ld.res.staged);
	if (why)
		return why;
	if (ATT_LD_STRINGS + strlen(tpath) + strlen(start_symbol) + strlen(arg) + 3 > PAGE) {
		att_unstage(ctx);
		ctx->prepared_lib[0] = '\0';
		return inject_sync(ctx, lib_path, start_symbol, arg);
	}
	why = spawn(ctx, tpath, start_symbol, arg);
	att_call_end(ctx, &why);
	why = att_gone_mid_call(ctx, why);
	ctx->prepared_lib[0] = '\0';
	if (why) {
		ctx->ld.pending = false;
		att_unstage(ctx);
	}
	ctx->ld.res.threaded = 1;
	return why;
}

/* Read the loader's page: 1 read, 0 gone (unmapped or reused), -errno otherwise. */
static int read_page(struct att_ctx *ctx, unsigned char *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)ctx->ld.data, len };
	uint64_t cookie;

	if (process_vm_readv(ctx->pid, &l, 1, &r, 1, 0) != (ssize_t)len)
		return errno == EFAULT || errno == ENOMEM || errno == 0 ? 0 : -errno;
	memcpy(&cookie, buf + ATT_LD_COOKIE, sizeof(cookie));
	return cookie == ctx->ld.cookie ? 1 : 0;
}

/*
 * Set a word of the loader's page (ack: it may end; go: it may start),
 * only while the page is surely still its own (see the top of the file).
 */
static void poke(struct att_ctx *ctx, unsigned off)
{
	uint32_t one = 1;
	struct iovec l = { &one, sizeof(one) },
		     r = { (void *)(uintptr_t)(ctx->ld.data + off), sizeof(one) };

	if (util_mono_ns() - ctx->ld.t_ref < (uint64_t)ATT_LD_ACK_MS * 1000000u)
		(void)process_vm_writev(ctx->pid, &l, 1, &r, 1, 0);
}

static enum att_reason outcome(struct att_ctx *ctx, const unsigned char *p, uint32_t state)
{
	struct att_inject_result *r = &ctx->ld.res;
	char text[ATT_LD_ERRCAP];
	int32_t ret;
	pid_t tid;

	memcpy(&r->handle, p + ATT_LD_HANDLE, sizeof(r->handle));
	memcpy(&r->start_addr, p + ATT_LD_START, sizeof(r->start_addr));
	memcpy(&ret, p + ATT_LD_RET, sizeof(ret));
	memcpy(&tid, p + ATT_LD_TID, sizeof(tid));
	r->loader_tid = tid;
	memcpy(text, p + ATT_LD_ERR, sizeof(text));
	text[sizeof(text) - 1] = '\0';
	switch (state) {
	case ATT_LD_S_OK:
		r->start_ret = 0;
		return ATT_OK;
	case ATT_LD_S_DLOPEN:
		return att_fail(ctx, ATT_E_DLOPEN, 0, "%s", text[0] ? text : "dlopen returned NULL");
	case ATT_LD_S_DLSYM:
		return att_fail(ctx, ATT_E_DLSYM, 0, "%s", text[0] ? text : "dlsym returned NULL");
	case ATT_LD_S_START:
		r->start_ret = ret;
		return att_fail(ctx, ATT_E_START, 0, "the start function returned %d", (int)ret);
	default:
		return att_fail(ctx, ATT_E_MEMORY, 0, "loader state %u", state);
	}
}

enum att_reason att_inject_wait(struct att_ctx *ctx, unsigned timeout_ms, struct att_inject_result *res)
{
	unsigned char page[ATT_LD_ERR + ATT_LD_ERRCAP];
	uint64_t deadline, now;
	enum att_reason why;
	uint32_t state;
	int got;

	if (!ctx->ld.pending)
		return att_fail(ctx, ATT_E_STATE, 0, "no loader started (att_inject_start first)");
	if (!ctx->ld.threaded) {
		why = ctx->ld.sync_why;
		ctx->err = ctx->ld.sync_err;
		snprintf(ctx->detail, sizeof(ctx->detail), "%s", ctx->ld.sync_detail);
		goto out;
	}
	ctx->detail[0] = '\0';
	ctx->err = 0;
	deadline = util_mono_ns() + (uint64_t)timeout_ms * 1000000u;
	poke(ctx, ATT_LD_GO);	/* t_ref is still t_spawn: the loader has no outcome before go */
	for (;;) {
		now = util_mono_ns();	/* before the read: t_ref must precede the outcome */
		got = read_page(ctx, page, sizeof(page));
		if (got < 0) {
			why = got == -ESRCH ? att_gone(ctx)
					    : att_gone_mid_call(ctx, att_fail(ctx, ATT_E_MEMORY, -got,
									"read the loader's page"));
			break;
		}
		if (got == 0) {
			/*
			 * Gone before we saw an outcome: the loader unmaps its
			 * page without an ack only 5 s after its outcome, so
			 * heaptap was not scheduled for that long. Unknown.
			 */
			why = att_process_alive(ctx->pid)
				      ? att_fail(ctx, ATT_E_LOAD_TIMEOUT, 0,
						 "it ended before its outcome was read")
				      : att_gone(ctx);
			break;
		}
		memcpy(&state, page + ATT_LD_STATE, sizeof(state));
		if (state != ATT_LD_S_RUNNING) {
			why = outcome(ctx, page, state);
			poke(ctx, ATT_LD_ACK);
			break;
		}
		ctx->ld.t_ref = now;
		if (now >= deadline) {
			why = att_fail(ctx, ATT_E_LOAD_TIMEOUT, 0,
				       "no outcome %u ms after pthread_create; it goes on alone",
				       timeout_ms);
			break;
		}
		usleep(POLL_US);
	}
	ctx->ld.res.load_ns = util_mono_ns() - ctx->ld.t_spawn;
out:
	ctx->ld.pending = false;
	att_unstage(ctx);
	if (res)
		*res = ctx->ld.res;
	return why;
}
