/* attach/bracket.c - what surrounds the remote calls: saved state, call frame, scratch page, errno */
/* SPDX-License-Identifier: MIT */
/*
 * att_call_begin() saves registers, XSAVE area and mask, writes the call
 * frame below the thread's stack pointer (arch/x86_64.c: a kernel signal
 * frame of the thread as it was), maps a scratch page for the trampoline
 * and the caller's strings, blocks asynchronous signals and saves errno;
 * att_call_end() unmaps the page and puts errno, mask and registers back.
 * Between them any number of att_call_raw() calls (call.c).
 * att_call_map() is the same without the errno call, for a caller whose
 * own code in the scratch mapping saves errno into the frame's slots
 * (loader.c's stub: then the hijacked thread makes two calls in all);
 * att_call_map_at() maps at a fixed free address in one stop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "attach/internal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/*
 * Defer the signals that would end heaptap while the target's thread holds
 * our registers: blocked in this thread, they stay pending and arrive once
 * att_call_end() put everything back (the thread would survive anyway, but
 * the scratch page would stay mapped).
 */
static void defer_own_signals(struct att_ctx *ctx)
{
	sigset_t set;

	if (ctx->own_mask_saved)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigaddset(&set, SIGALRM);
	if (pthread_sigmask(SIG_BLOCK, &set, &ctx->own_mask) == 0)
		ctx->own_mask_saved = true;
}

void att_own_signals_restore(struct att_ctx *ctx)
{
	if (!ctx->own_mask_saved)
		return;
	pthread_sigmask(SIG_SETMASK, &ctx->own_mask, NULL);
	ctx->own_mask_saved = false;
}

/* Build the frame from the saved state and write it below the stack pointer. */
static enum att_reason write_frame(struct att_ctx *ctx, struct att_thread *thr)
{
	int err;

	uint32_t sig = (uint32_t)ctx->end_sig;

	att_arch_frame_build(&thr->saved, &thr->frame);
	memcpy(thr->frame.buf + ATT_FRAME_END_SIG, &sig, sizeof(sig));
	err = att_mem_write(thr->tid, thr->frame.addr, thr->frame.buf, thr->frame.len);
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write %zu-byte call frame at %#" PRIx64,
				thr->frame.len, thr->frame.addr);
	thr->frame_ret = 0;
	thr->frame_written = true;
	return ATT_OK;
}

/* mmap the scratch page (r-x: written through ptrace) and put the trampoline in. */
static enum att_reason map_scratch(struct att_ctx *ctx, size_t data)
{
	const unsigned char *code;
	size_t size, len, marker_end;
	uint64_t args[6], ret = 0;
	enum att_reason why;
	int err;

	size = (ATT_TRAMP_SPACE + data + 4095) & ~(size_t)4095;
	args[0] = 0;
	args[1] = size;
	args[2] = PROT_READ | PROT_EXEC;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	args[4] = (uint64_t)-1;
	args[5] = 0;
	why = att_call_run(ctx, ctx->fn_mmap, args, 6, ATT_CALL_MMAP, &ret);
	if (why)
		return why;
	if (ret >= (uint64_t)-4095 || ret == 0)
		return att_fail(ctx, ATT_E_REMOTE_MMAP, ret ? (int)-(int64_t)ret : 0,
				"mmap of %zu bytes returned %#" PRIx64, size, ret);
	ctx->scratch = ret;
	ctx->scratch_size = size;
	ctx->st.scratch = ret;
	if (att_fault(ctx, ATT_F_SCRATCH))
		return ATT_E_FAULT;
	code = att_arch_tramp(&len, &marker_end);
	err = att_mem_write_code(ctx->thr.tid, ctx->scratch, code, len);
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write trampoline at %#" PRIx64, ctx->scratch);
	return ATT_OK;
}

/* errno's address and value; from then on the trampoline puts it back after every call. */
static enum att_reason save_errno(struct att_ctx *ctx, struct att_thread *thr)
{
	uint64_t addr = 0, slot[2];
	enum att_reason why;
	int32_t value;
	int err;

	why = att_call_raw(ctx, ctx->fn_errno, NULL, 0, &addr);
	if (why)
		return why;
	err = att_mem_read(thr->tid, addr, &value, sizeof(value));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "read errno at %#" PRIx64, addr);
	thr->errno_addr = addr;
	thr->errno_value = value;
	thr->errno_saved = true;
	slot[0] = addr;
	slot[1] = (uint64_t)(uint32_t)value;
	err = att_mem_write(thr->tid, thr->frame.addr + ATT_FRAME_ERRNO_ADDR, slot, sizeof(slot));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write errno slots of the frame");
	att_hang(ctx, ATT_H_ERRNO);
	return ATT_OK;
}

/*
 * What both ways of mapping the scratch pages do first: the registers
 * saved, heaptap's own signals deferred, the target's functions known and
 * the signal frame written below the red zone (each once).
 */
static enum att_reason save_thread(struct att_ctx *ctx, struct att_thread *thr)
{
	enum att_reason why;

	if (!thr->regs_saved) {
		why = att_regs_save(ctx, thr);
		if (why)
			return why;
	}
	defer_own_signals(ctx);
	if (att_fault(ctx, ATT_F_REGS))
		return ATT_E_FAULT;
	why = att_resolve_funcs(ctx);
	if (why)
		return why;
	if (!thr->frame_written) {
		why = write_frame(ctx, thr);
		if (why)
			return why;
	}
	att_hang(ctx, ATT_H_SAVED);
	return ATT_OK;
}

enum att_reason att_call_map(struct att_ctx *ctx, size_t data)
{
	struct att_thread *thr = &ctx->thr;
	enum att_reason why;

	why = att_need_stopped(ctx);
	if (!why)
		why = save_thread(ctx, thr);
	if (why)
		return why;
	if (!ctx->scratch) {
		why = map_scratch(ctx, data);
		if (why)
			return why;
	}
	return ATT_OK;
}

/*
 * PROCMAP_QUERY (Linux 6.11, uapi linux/fs.h): one VMA of /proc/PID/maps
 * by address, without reading the whole file.
 */
struct procmap_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY_IOCTL 0xC0686611UL	/* _IOWR('f', 17, struct procmap_query) */
#define PROCMAP_VMA_R 0x01
#define PROCMAP_VMA_W 0x02
#define PROCMAP_VMA_X 0x04
#define PROCMAP_VMA_SHARED 0x08
_Static_assert(sizeof(struct procmap_query) == 104, "procmap_query layout");

/*
 * Is [at, at + size) one private anonymous r-x mapping? 1 yes, 0 no,
 * -ESRCH the process is gone, other -errno: no answer. PROCMAP_QUERY,
 * else the whole maps file (kernels before 6.11).
 */
static int mapped_exactly(struct att_ctx *ctx, uint64_t at, size_t size)
{
	struct procmap_query q;
	const struct att_map *m;
	struct att_maps maps;
	char path[96];
	int fd, ret, err;

	snprintf(path, sizeof(path), "%s/maps", ctx->procdir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ESRCH : -errno;
	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = at;
	ret = ioctl(fd, PROCMAP_QUERY_IOCTL, &q);
	err = ret < 0 ? errno : 0;
	close(fd);
	if (ret == 0)
		return q.vma_start == at && q.vma_end == at + size && !q.inode &&
		       (q.vma_flags & (PROCMAP_VMA_R | PROCMAP_VMA_W | PROCMAP_VMA_X | PROCMAP_VMA_SHARED)) ==
			       (PROCMAP_VMA_R | PROCMAP_VMA_X);
	if (err == ENOENT)	/* no mapping there */
		return att_process_alive(ctx->pid) ? 0 : -ESRCH;
	if (err == ESRCH)
		return -ESRCH;
	memset(&maps, 0, sizeof(maps));
	ret = att_maps_read_at(ctx->procdir, &maps);
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	m = att_maps_find(&maps, at);
	ret = m && m->start == at && m->end == at + size && !strncmp(m->perms, "r-xp", 4) &&
	      !m->path[0];
	if (maps.n == 0)	/* a live process has mappings: it was killed meanwhile */
		ret = -ESRCH;
	att_maps_free(&maps);
	return ret;
}

/* mmap at a fixed address through the chained frame; then the trampoline. */
static enum att_reason map_scratch_at(struct att_ctx *ctx, uint64_t at, size_t size)
{
	struct att_thread *thr = &ctx->thr;
	unsigned char chain[ATT_CHAIN_LEN];
	const unsigned char *code;
	int mapped;
	uint64_t args[6], ret = 0, mask = ~0ULL;
	size_t len, marker_end;
	enum att_reason why;
	int err;

	/* the chained frame's mask: the call mask (the end signal open) */
	mask &= ~(1ULL << (SIGSEGV - 1) | 1ULL << (SIGBUS - 1) | 1ULL << (SIGILL - 1) |
		  1ULL << (SIGFPE - 1) | 1ULL << (SIGTRAP - 1) | 1ULL << (SIGSYS - 1) |
		  1ULL << (ctx->end_sig - 1));
	len = att_arch_chain_build(&thr->frame, ctx->fn_sigreturn, mask, chain, &thr->chain_addr);
	err = att_mem_write(thr->tid, thr->chain_addr, chain, len);
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write the chained frame at %#" PRIx64,
				thr->chain_addr);
	args[0] = at;
	args[1] = size;
	args[2] = PROT_READ | PROT_EXEC;
	args[3] = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE;
	args[4] = (uint64_t)-1;
	args[5] = 0;
	why = att_call_run(ctx, ctx->fn_syscall_ret, args, 6, ATT_CALL_CHAIN, &ret);
	if (why)
		return why;
	/*
	 * Mapped, or not (EEXIST, ENOMEM): the result went with the chained
	 * frame's registers, so the maps tell. The range was free a moment
	 * ago and lies far from where the kernel places mappings by itself
	 * (loader.c picks it); a mapping of exactly this range, r-x,
	 * anonymous, is ours.
	 */
	mapped = mapped_exactly(ctx, at, size);
	if (mapped == -ESRCH)
		return att_gone(ctx);
	if (mapped < 0)
		return att_fail(ctx, ATT_E_MEMORY, -mapped, "read %s/maps", ctx->procdir);
	if (!mapped)
		return att_fail(ctx, ATT_E_REMOTE_MMAP, 0, "mmap of %zu bytes at %#" PRIx64
				" made nothing there", size, at);
	ctx->scratch = at;
	ctx->scratch_size = size;
	ctx->st.scratch = at;
	if (att_fault(ctx, ATT_F_SCRATCH))
		return ATT_E_FAULT;
	code = att_arch_tramp(&len, &marker_end);
	err = att_mem_write_code(thr->tid, ctx->scratch, code, len);
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "write trampoline at %#" PRIx64, ctx->scratch);
	return ATT_OK;
}

enum att_reason att_call_map_at(struct att_ctx *ctx, uint64_t at, size_t size)
{
	struct att_thread *thr = &ctx->thr;
	enum att_reason why;

	why = att_need_stopped(ctx);
	if (why)
		return why;
	if (!ctx->end_sig || !ctx->fn_syscall_ret || ctx->scratch || !ctx->funcs_known)
		return att_fail(ctx, ATT_E_STATE, 0, "no fixed-address mmap possible");
	why = save_thread(ctx, thr);	/* funcs_known: resolving is a no-op */
	if (why)
		return why;
	return map_scratch_at(ctx, at, size);
}

enum att_reason att_call_begin(struct att_ctx *ctx, size_t data)
{
	struct att_thread *thr = &ctx->thr;
	enum att_reason why;

	why = att_call_map(ctx, data);
	if (why)
		return why;
	why = save_errno(ctx, thr);
	if (why)
		return why;
	if (att_fault(ctx, ATT_F_ERRNO))
		return ATT_E_FAULT;
	return ATT_OK;
}

enum att_reason att_call_slots(struct att_ctx *ctx, bool returned, uint32_t *stage)
{
	struct att_thread *thr = &ctx->thr;
	unsigned char slots[ATT_FRAME_STAGE + 4 - ATT_FRAME_ERRNO_ADDR];
	uint64_t addr;
	int32_t value;
	int err;

	*stage = 0;
	if (att_need_stopped(ctx) || !thr->frame_written)
		return att_fail(ctx, ATT_E_STATE, 0, "no frame to read");
	err = att_mem_read(thr->tid, thr->frame.addr + ATT_FRAME_ERRNO_ADDR, slots, sizeof(slots));
	if (err)
		return att_fail(ctx, ATT_E_MEMORY, -err, "read the frame's slots");
	memcpy(&addr, slots, sizeof(addr));
	memcpy(&value, slots + ATT_FRAME_ERRNO_VAL - ATT_FRAME_ERRNO_ADDR, sizeof(value));
	memcpy(stage, slots + ATT_FRAME_STAGE - ATT_FRAME_ERRNO_ADDR, sizeof(*stage));
	if (addr && !returned) {
		/* the trampoline did not run: att_call_end puts errno back */
		thr->errno_addr = addr;
		thr->errno_value = value;
		thr->errno_saved = true;
	}
	return ATT_OK;
}

static void forget(struct att_ctx *ctx, struct att_thread *thr)
{
	thr->regs_saved = thr->mask_changed = thr->errno_saved = thr->frame_written = false;
	ctx->scratch = 0;
	att_own_signals_restore(ctx);
}

/* att_call_end's steps: munmap, errno, XSAVE area and mask, registers. */
static void end_steps(struct att_ctx *ctx, struct att_thread *thr, enum att_reason *why)
{
	uint64_t args[2], ret = 0;
	enum att_reason r;
	int err;

	if (thr->state != ATT_TS_STOPPED) {
		/* gone, or stuck running our code: nothing left to put back */
		forget(ctx, thr);
		return;
	}
	if (ctx->scratch && thr->frame_written) {
		args[0] = ctx->scratch;
		args[1] = ctx->scratch_size;
		r = att_call_run(ctx, ctx->fn_munmap, args, 2, ATT_CALL_MUNMAP, &ret);
		if (r == ATT_OK && ret != 0)
			r = att_fail(ctx, ATT_E_REMOTE_MMAP, (int)-(int64_t)ret, "munmap of the scratch page");
		if (r && *why == ATT_OK)
			*why = r;
		if (r == ATT_OK)
			ctx->scratch = 0;
		if (thr->state != ATT_TS_STOPPED) {
			forget(ctx, thr);
			return;
		}
	}
	if (thr->errno_saved) {
		err = att_mem_write(thr->tid, thr->errno_addr, &thr->errno_value,
				    sizeof(thr->errno_value));
		if (err && *why == ATT_OK)
			*why = att_fail(ctx, ATT_E_MEMORY, -err, "restore errno");
		thr->errno_saved = false;
	}
	r = att_regs_restore(ctx, thr);
	if (r && *why == ATT_OK)
		*why = r;
	if (r == ATT_OK) {
		thr->regs_saved = false;
		thr->frame_written = false;
		ctx->scratch = 0;	/* left mapped only if munmap failed */
		att_own_signals_restore(ctx);
	}
}

/* Put back the detail and errno of the first failure, which the undo steps may have overwritten. */
static void keep_first(struct att_ctx *ctx, enum att_reason first, const char *detail, int err)
{
	if (first == ATT_OK)
		return;
	snprintf(ctx->detail, sizeof(ctx->detail), "%s", detail);
	ctx->err = err;
}

void att_call_end(struct att_ctx *ctx, enum att_reason *why)
{
	enum att_reason first = *why;
	char detail[sizeof(ctx->detail)];
	int first_err = ctx->err;

	snprintf(detail, sizeof(detail), "%s", ctx->detail);
	end_steps(ctx, &ctx->thr, why);
	keep_first(ctx, first, detail, first_err);
}

enum att_reason att_call(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			 uint64_t *ret)
{
	enum att_reason why;

	why = att_call_begin(ctx, 0);
	if (why == ATT_OK)
		why = att_call_raw(ctx, fn, args, nargs, ret);
	att_call_end(ctx, &why);
	return why;
}
