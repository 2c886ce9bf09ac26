/* attach/libc.c - locate the target's libc and the functions attach calls in it */
/* SPDX-License-Identifier: MIT */
/*
 * libc is the mapping with file offset 0 named libc.so.6 (glibc >= 2.34 and
 * older sonames), libc-2.NN.so (old glibc), or ld-musl-*.so.1 (musl, whose
 * loader is its libc). The load bias is that mapping's start minus the
 * file's first PT_LOAD address. The file is opened through
 * /proc/PID/map_files/START-END, which names the very inode mapped even in
 * another mount namespace or after an upgrade replaced the file, and, when
 * that is not permitted, through PATH inside /proc/PID/root (both through
 * rootfs.c: regular files only, resolved inside that root). Symbols come from
 * elf/'s file view (elfr_file_symbol: default version wins).
 * att_module_symbols finds glibc < 2.34's libdl and libpthread under their
 * file names too (libdl-2.31.so), and takes from libc a name such a module
 * leaves to it (pthread_self); tests/oldlibc runs both against glibc 2.31.
 */
#include <elf.h>
#include <errno.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/internal.h"
#include "elf/elfr.h"

struct elfr_file *att_elf_open_module(char *path, size_t cap, const char *procdir,
				      const char *mpath, uint64_t *vaddr)
{
	struct elfr_file *f = NULL;
	int i, fd;

	for (i = 0; i < 2; i++) {
		/* rootfs.c: regular files only; the path resolved inside the process's root */
		if (i == 0) {
			fd = att_open_regular(path, NULL);
		} else {	/* map_files needs CAP_SYS_ADMIN on older kernels */
			fd = att_root_open(procdir, mpath, NULL);
			snprintf(path, cap, "%s/root%s", procdir, mpath);
		}
		if (fd < 0) {
			errno = -fd;
			continue;
		}
		f = att_elf_open_fd(fd);
		if (!f)
			continue;
		if (elfr_file_first_load(f, vaddr) == ELFR_OK)
			return f;
		elfr_file_close(f);
		f = NULL;
	}
	return NULL;
}

static enum att_reason libc_locate(struct att_ctx *ctx)
{
	struct att_maps maps;
	const struct att_map *m;
	uint64_t vaddr = 0;
	int ret;

	if (ctx->libc)
		return ATT_OK;
	ret = att_maps_read_at(ctx->procdir, &maps);
	if (ret)
		return att_fail(ctx, ret == -ENOENT || ret == -ESRCH ? ATT_E_EXITED : ATT_E_NO_SYMBOL,
				-ret, "read %s/maps", ctx->procdir);
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
	ctx->libc = att_elf_open_module(ctx->libc_open, sizeof(ctx->libc_open), ctx->procdir, m->path,
					&vaddr);
	ctx->libc_bias = m->start - vaddr;
	att_maps_free(&maps);
	if (!ctx->libc)
		return att_fail(ctx, ATT_E_NO_SYMBOL, errno, "cannot read %s as ELF", ctx->libc_open);
	return ATT_OK;
}

enum att_reason att_libc_symbol(struct att_ctx *ctx, const char *name, uint64_t *addr)
{
	enum att_reason why;
	enum elfr_reason er;
	uintptr_t a = 0;

	why = libc_locate(ctx);
	if (why)
		return why;
	er = elfr_file_symbol(ctx->libc, name, (uintptr_t)ctx->libc_bias, &a);
	if (er)
		return att_fail(ctx, ATT_E_NO_SYMBOL, 0, "%s in %s: %s", name, ctx->libc_path,
				elfr_strerror(er));
	*addr = a;
	return ATT_OK;
}

/*
 * glibc < 2.34 maps its libraries under their file names, which are not
 * their sonames: libdl.so.2 is libdl-2.31.so, libpthread.so.0 is
 * libpthread-2.31.so (the soname is a symlink). For a prefix "libX.so",
 * look for "libX-2." too.
 */
static const struct att_map *old_glibc_module(const struct att_maps *maps, const char *prefix)
{
	char alt[64];
	size_t n = strlen(prefix);

	if (n < 4 || strcmp(prefix + n - 3, ".so") != 0 || n - 3 + sizeof("-2.") > sizeof(alt))
		return NULL;
	snprintf(alt, sizeof(alt), "%.*s-2.", (int)(n - 3), prefix);
	return att_maps_module(maps, alt);
}

/*
 * A name the module does not define, taken from libc: glibc < 2.34's
 * libpthread.so.0 has pthread_create and pthread_detach but not
 * pthread_self, which only libc.so.6 exports. True when found there.
 */
static bool from_libc(struct att_ctx *ctx, const char *name, uintptr_t *a)
{
	*a = 0;
	if (libc_locate(ctx) != ATT_OK)
		return false;
	return elfr_file_symbol(ctx->libc, name, (uintptr_t)ctx->libc_bias, a) == ELFR_OK && *a;
}

enum att_reason att_module_symbols(struct att_ctx *ctx, const char *prefix, const char *const *names,
				   uint64_t *addrs, size_t n)
{
	char path[PATH_MAX + 128];
	struct att_maps maps;
	const struct att_map *m;
	struct elfr_file *f = NULL;
	enum att_reason why = ATT_OK;
	uint64_t vaddr = 0;
	uintptr_t a;
	size_t i;
	int ret;

	ret = att_maps_read_at(ctx->procdir, &maps);
	if (ret)
		return att_fail(ctx, ret == -ENOENT || ret == -ESRCH ? ATT_E_EXITED : ATT_E_NO_SYMBOL,
				-ret, "read %s/maps", ctx->procdir);
	m = att_maps_module(&maps, prefix);
	if (!m)
		m = old_glibc_module(&maps, prefix);
	if (m) {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)ctx->pid,
			 m->start, m->end);
		f = att_elf_open_module(path, sizeof(path), ctx->procdir, m->path, &vaddr);
	}
	if (!f)
		why = att_fail(ctx, ATT_E_NO_SYMBOL, 0, "no readable %s* module in the process", prefix);
	for (i = 0; !why && i < n; i++) {
		a = 0;
		if ((elfr_file_symbol(f, names[i], (uintptr_t)(m->start - vaddr), &a) != ELFR_OK || !a) &&
		    !from_libc(ctx, names[i], &a))
			why = att_fail(ctx, ATT_E_NO_SYMBOL, 0, "%s in %s", names[i], m->path);
		addrs[i] = a;
	}
	elfr_file_close(f);
	att_maps_free(&maps);
	return why;
}

enum att_reason att_libc_dlopen(struct att_ctx *ctx, uint64_t *addr, bool *libc_mode)
{
	enum att_reason why;
	enum elfr_reason er;
	const char *which = NULL;
	uintptr_t a = 0;

	why = libc_locate(ctx);
	if (why)
		return why;
	er = elfr_file_dlopen(ctx->libc, (uintptr_t)ctx->libc_bias, &a, &which);
	if (er)
		return att_fail(ctx, ATT_E_NO_SYMBOL, 0, "dlopen in %s: %s", ctx->libc_path,
				elfr_strerror(er));
	*addr = a;
	*libc_mode = which && strcmp(which, "__libc_dlopen_mode") == 0;
	return ATT_OK;
}

/*
 * An rt_sigreturn stub in libc's code ("mov $15, %rax; syscall", glibc's and
 * musl's __restore_rt, which is not exported): found by its bytes in the
 * target's executable mappings of libc, read before anything is stopped.
 */
enum att_reason att_libc_sigreturn(struct att_ctx *ctx, uint64_t *addr)
{
	enum { CHUNK = 65536, OVERLAP = 16 };
	const unsigned char *pat;
	unsigned char *buf = NULL;
	struct att_maps maps;
	uint64_t a, n, got = 0;
	size_t i, plen;
	unsigned k;
	const char *task;
	pid_t who = ctx->pid;
	void *hit;
	int ret;

	/* a zombie leader has no memory to read: use the live thread procdir names */
	task = strstr(ctx->procdir, "/task/");
	if (task)
		who = (pid_t)atoi(task + 6);
	if (!ctx->libc_path[0])
		return att_fail(ctx, ATT_E_NO_SYMBOL, 0, "libc not located");
	ret = att_maps_read_at(ctx->procdir, &maps);
	if (ret)
		return att_fail(ctx, ret == -ENOENT || ret == -ESRCH ? ATT_E_EXITED : ATT_E_NO_SYMBOL,
				-ret, "read %s/maps", ctx->procdir);
	buf = malloc(CHUNK + OVERLAP);
	for (k = 0; buf && !got && (pat = att_arch_sigreturn_stub(k, &plen)); k++) {
		for (i = 0; i < maps.n && !got; i++) {
			const struct att_map *m = &maps.v[i];

			if (m->perms[2] != 'x' || strcmp(m->path, ctx->libc_path) != 0)
				continue;
			for (a = m->start; a < m->end && !got; a += CHUNK) {
				n = m->end - a < CHUNK + OVERLAP ? m->end - a : CHUNK + OVERLAP;
				if (att_mem_read(who, a, buf, n) < 0)
					break;
				hit = memmem(buf, n, pat, plen);
				if (hit)
					got = a + (uint64_t)((unsigned char *)hit - buf);
			}
		}
	}
	free(buf);
	att_maps_free(&maps);
	if (!got)
		return att_fail(ctx, ATT_E_NO_SYMBOL, 0, "no rt_sigreturn stub in %s", ctx->libc_path);
	*addr = got;
	return ATT_OK;
}

void att_libc_close(struct att_ctx *ctx)
{
	elfr_file_close(ctx->libc);
	ctx->libc = NULL;
}

enum att_reason att_check_exe(const char *path, char *what, size_t cap, int *err)
{
	struct elfr_file *f = NULL;
	struct elfr_ident id = { 0 };
	enum elfr_reason er;
	const char *mname;

	what[0] = '\0';
	*err = 0;
	er = elfr_file_open(path, &f);
	if (er) {
		*err = er == ELFR_E_OPEN ? errno : 0;
		snprintf(what, cap, "%s: %s", path, elfr_strerror(er));
		return ATT_E_EXE;
	}
	er = elfr_file_check_native(f, &id);
	elfr_file_close(f);
	if (er == ELFR_E_CLASS || er == ELFR_E_MACHINE) {
		mname = elfr_machine_name(id.machine);
		snprintf(what, cap, "target is a %u-bit %s program; heaptap is 64-bit x86-64",
			 id.elfclass == ELFCLASS32 ? 32 : 64, mname ? mname : "unknown-machine");
		return ATT_E_ARCH;
	}
	if (er) {
		snprintf(what, cap, "%s: %s", path, elfr_strerror(er));
		return ATT_E_EXE;
	}
	return ATT_OK;
}
