/* attach/prepare.c - the work done before anything is stopped: the target's functions, its files */
/* SPDX-License-Identifier: MIT */
/*
 * att_prepare reads files (and a few bytes of the target's memory) while
 * the target runs on, stopping nothing: the functions heaptap calls in it
 * (libc's, or libdl's and libpthread's on glibc < 2.34), the signal its
 * calls end with and what the loader's one-stop mmap needs, the forbidden
 * ranges and unwind tables of its modules (forbidden.c), the library's
 * glibc versions against its libc, and the library staged where the
 * target sees it (stage.c). att_seize runs it (without the library) if
 * the caller did not; the first remote call runs att_resolve_funcs if
 * neither did.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "attach/internal.h"
#include "elf/elfr.h"

#define PAGE 4096u

/* getrandom: one system call, no file (the loader's cookie is made while the thread is held) */
uint64_t att_random64(void)
{
	uint64_t c = 0;

	if (getrandom(&c, sizeof(c), GRND_NONBLOCK) != (ssize_t)sizeof(c))
		c = 0;
	return c ^ util_mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x6865617074617021ull;
}

/*
 * Where the three pages go (att_call_map_at), or 0: the middle half of
 * the largest free range of the address space above 4 GB and below the
 * top of a 47-bit space, if it is at least 4 GB. The kernel places
 * mappings from the top of such a range down, next to the ones there, so
 * nobody else maps this far inside it between this read and the mmap.
 */
static uint64_t free_range(struct att_ctx *ctx)
{
	const uint64_t floor = 1ULL << 32, top = (1ULL << 47) - (1ULL << 32);
	uint64_t lo = floor, hi, best_lo = 0, best_len = 0, at;
	struct att_maps m;
	size_t i;

	memset(&m, 0, sizeof(m));
	if (att_maps_read_at(ctx->procdir, &m))
		return 0;
	for (i = 0; i <= m.n; i++) {
		hi = i < m.n && m.v[i].start < top ? m.v[i].start : top;
		if (hi > lo && hi - lo > best_len) {
			best_len = hi - lo;
			best_lo = lo;
		}
		if (hi == top)
			break;
		if (m.v[i].end > lo)
			lo = m.v[i].end;
	}
	att_maps_free(&m);
	if (best_len < floor)
		return 0;
	/* the middle half of the range, at random */
	at = best_lo + best_len / 4 + att_random64() % (best_len / 2);
	return at & ~(uint64_t)(PAGE - 1);
}

/* libc's "syscall; ret" (att_call_map_at's mmap), or 0. */
static uint64_t syscall_ret(struct att_ctx *ctx)
{
	const char *task = strstr(ctx->procdir, "/task/");
	pid_t who = task ? (pid_t)atoi(task + 6) : ctx->pid;	/* a zombie leader has no memory */
	unsigned char code[16];
	uint64_t fn;
	long off;

	if (att_libc_symbol(ctx, "getpid", &fn) != ATT_OK || att_mem_read(who, fn, code, sizeof(code)))
		return 0;
	off = att_arch_syscall_ret(code, sizeof(code));
	return off < 0 ? 0 : fn + (uint64_t)off;
}

/*
 * What the loader's one-stop mmap (att_call_map_at) needs, found with the
 * end signal: libc's "syscall; ret" and a free range. The range is checked
 * again after the mmap.
 */
static void prepare_fixed_map(struct att_ctx *ctx)
{
	char detail[sizeof(ctx->detail)];
	int err = ctx->err;

	snprintf(detail, sizeof(detail), "%s", ctx->detail);
	ctx->fn_syscall_ret = 0;
	ctx->fixed_at = 0;
	if (ctx->end_sig) {
		ctx->fn_syscall_ret = syscall_ret(ctx);
		if (ctx->fn_syscall_ret)
			ctx->fixed_at = free_range(ctx);
	}
	snprintf(ctx->detail, sizeof(ctx->detail), "%s", detail);	/* a miss is no failure */
	ctx->err = err;
}

/*
 * The signal the trampoline ends with: one the process ignores, so that it
 * is dropped as it is sent when heaptap is gone (a traced thread gets it
 * anyway: the kernel never drops a traced thread's signals). SIGURG,
 * SIGWINCH, SIGCHLD unless the process catches them, else one it sets to
 * SIG_IGN; never SIGCONT (it continues a stopped process even when
 * ignored). None (a Go program catches them all): 0, and the calls end at
 * the tgkill's syscall stop under PTRACE_SYSCALL, two stops per syscall of
 * the call instead of one stop. With an end signal, the loader's one-stop
 * mmap is prepared here too (prepare_fixed_map), before anything stops.
 */
static void choose_end_sig(struct att_ctx *ctx)
{
	static const int pref[] = { SIGURG, SIGWINCH, SIGCHLD };
	unsigned long long ign = 0, cgt = 0;
	char path[96], buf[4096];
	const char *v;
	unsigned i;
	int sig;

	ctx->end_sig = 0;
	ctx->st.end_sig = 0;
	ctx->fn_syscall_ret = ctx->fixed_at = 0;
	snprintf(path, sizeof(path), "%s/status", ctx->procdir);
	if (att_read_file(path, buf, sizeof(buf)) < 0)
		return;
	if (!(v = att_status_field(buf, "SigIgn")) || sscanf(v, "%llx", &ign) != 1 ||
	    !(v = att_status_field(buf, "SigCgt")) || sscanf(v, "%llx", &cgt) != 1)
		return;
	for (i = 0; i < sizeof(pref) / sizeof(pref[0]) && !ctx->end_sig; i++) {
		if (!(cgt & (1ULL << (pref[i] - 1))))
			ctx->end_sig = ctx->st.end_sig = pref[i];
	}
	for (sig = 1; sig <= 64 && !ctx->end_sig; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCONT || sig == SIGSEGV ||
		    sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS)
			continue;
		if ((ign & (1ULL << (sig - 1))) && !(cgt & (1ULL << (sig - 1))))
			ctx->end_sig = ctx->st.end_sig = sig;
	}
	prepare_fixed_map(ctx);
}

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
	choose_end_sig(ctx);
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
