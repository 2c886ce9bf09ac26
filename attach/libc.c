/* attach/libc.c - locate the target's libc and the functions attach calls in it */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "attach/internal.h"

/*
 * libc is the mapping with file offset 0 named libc.so.6 (glibc >= 2.34 and
 * older sonames), libc-2.NN.so (old glibc), or ld-musl-*.so.1 (musl, whose
 * loader is its libc). The bias is that mapping's start minus the file's
 * first PT_LOAD address. The file is opened through
 * /proc/PID/map_files/START-END, which names the very inode mapped even in
 * another mount namespace or after an upgrade replaced the file, and, when
 * that is not permitted, through /proc/PID/root/PATH.
 */
static enum att_reason libc_locate(struct att_ctx *ctx)
{
	struct att_maps maps;
	const struct att_map *m;
	uint64_t vaddr = 0, dummy;
	int ret;

	if (ctx->libc_known)
		return ATT_OK;
	ret = att_maps_read(ctx->pid, &maps);
	if (ret)
		return att_fail(ctx, ret == -ENOENT || ret == -ESRCH ? ATT_E_EXITED : ATT_E_NO_SYMBOL,
				-ret, "read /proc/%d/maps", (int)ctx->pid);
	m = att_maps_module(&maps, "libc.so");
	if (!m)
		m = att_maps_module(&maps, "libc-2.");
	if (!m)
		m = att_maps_module(&maps, "ld-musl");
	if (!m) {
		att_maps_free(&maps);
		return att_fail(ctx, ATT_E_NO_SYMBOL, 0, "no libc mapping in /proc/%d/maps",
				(int)ctx->pid);
	}
	snprintf(ctx->libc_path, sizeof(ctx->libc_path), "%s", m->path);
	snprintf(ctx->libc_open, sizeof(ctx->libc_open), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 (int)ctx->pid, m->start, m->end);
	ret = att_elf_symbol(ctx->libc_open, NULL, &dummy, &vaddr);
	if (ret) {
		snprintf(ctx->libc_open, sizeof(ctx->libc_open), "/proc/%d/root%s", (int)ctx->pid,
			 m->path);
		ret = att_elf_symbol(ctx->libc_open, NULL, &dummy, &vaddr);
	}
	if (ret) {
		att_maps_free(&maps);
		return att_fail(ctx, ATT_E_NO_SYMBOL, -ret, "read %s", ctx->libc_open);
	}
	ctx->libc_bias = m->start - vaddr;
	ctx->libc_known = true;
	att_maps_free(&maps);
	return ATT_OK;
}

enum att_reason att_libc_symbol(struct att_ctx *ctx, const char *name, uint64_t *addr)
{
	enum att_reason why;
	uint64_t value;
	int ret;

	why = libc_locate(ctx);
	if (why)
		return why;
	ret = att_elf_symbol(ctx->libc_open, name, &value, NULL);
	if (ret)
		return att_fail(ctx, ATT_E_NO_SYMBOL, ret == -ENOENT ? 0 : -ret, "%s in %s", name,
				ctx->libc_path);
	*addr = ctx->libc_bias + value;
	return ATT_OK;
}
