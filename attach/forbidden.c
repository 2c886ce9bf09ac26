/* attach/forbidden.c - where the forbidden functions are in the target, learnt before stopping it */
/* SPDX-License-Identifier: MIT */
/*
 * Looking names up while a thread is stopped (unw_get_proc_name opens and
 * parses an ELF file per frame) cost 1 to 5 ms per stop here. So before
 * anything is stopped, every file-backed module in /proc/PID/maps is
 * scanned once (.symtab and .dynsym, through /proc/PID/map_files or
 * /proc/PID/root) and the address ranges of forbidden functions are kept.
 * While stopped, a frame's ip is checked against those ranges; only an ip
 * in a module loaded after the scan needs unw_get_proc_name. The same scan
 * notes each module's .eh_frame_hdr table, so that unwinding need not map
 * the files either (unwind.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/internal.h"
#include "elf/elfr.h"

bool att_name_forbidden(const char *n)
{
	static const char *const exact[] = {
		"pthread_create", "fork", "_Fork", "__libc_fork", "vfork", "dl_iterate_phdr",
		"dlopen", "dlclose", "dlsym", "dlvsym", "dlmopen", "dladdr", "dladdr1", "dlinfo",
		"__libc_dlopen_mode", "__libc_dlsym", "__libc_dlclose", "exit", "__run_exit_handlers",
		"_exit", "abort", "__cxa_finalize", "__cxa_thread_atexit_impl", "posix_spawn",
		"system",
	};
	size_t i;

	for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(n, exact[i]) == 0)
			return true;
	/* allocators by any name, glibc malloc internals, loader internals */
	return strstr(n, "malloc") || strstr(n, "alloc") || strstr(n, "free") ||
	       strncmp(n, "_int_", 5) == 0 || strstr(n, "tcache") || strstr(n, "arena") ||
	       strncmp(n, "_dl_", 4) == 0 || strstr(n, "memalign");
}

struct scan {
	struct att_ctx *ctx;
	uint64_t bias;
	int err;
};

static void add_range(void *arg, const char *name, uint64_t value, uint64_t size)
{
	struct scan *sc = arg;
	struct att_ctx *ctx = sc->ctx;
	struct att_range *v;
	size_t cap;

	if (sc->err || !att_name_forbidden(name))
		return;
	if (ctx->nforb == ctx->capforb) {
		cap = ctx->capforb ? ctx->capforb * 2 : 256;
		v = realloc(ctx->forb, cap * sizeof(*v));
		if (!v) {
			sc->err = -ENOMEM;
			return;
		}
		ctx->forb = v;
		ctx->capforb = cap;
	}
	v = &ctx->forb[ctx->nforb++];
	v->lo = sc->bias + value;
	v->hi = v->lo + size;
	snprintf(v->name, sizeof(v->name), "%s", name);
}

static int add_scanned(struct att_ctx *ctx, uint64_t lo, uint64_t hi, uint64_t bias,
		       const struct elfr_file *f)
{
	struct elfr_eh_table t;
	struct att_scanned *v, *e;
	size_t cap;

	if (ctx->nscanned == ctx->capscanned) {
		cap = ctx->capscanned ? ctx->capscanned * 2 : 64;
		v = realloc(ctx->scanned, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ctx->scanned = v;
		ctx->capscanned = cap;
	}
	e = &ctx->scanned[ctx->nscanned++];
	memset(e, 0, sizeof(*e));
	e->lo = lo;
	e->hi = hi;
	if (elfr_file_eh_table(f, &t) == ELFR_OK) {
		e->eh_ok = true;
		e->ip_lo = bias + t.lo_vaddr;
		e->ip_hi = bias + t.hi_vaddr;
		e->eh_hdr = bias + t.hdr_vaddr;
		e->fde_count = t.fde_count;
	}
	return 0;
}

/* Extent of all mappings of the module whose offset-0 mapping is maps->v[first]. */
static uint64_t module_end(const struct att_maps *m, size_t first)
{
	uint64_t end = m->v[first].end;
	size_t i;

	for (i = first + 1; i < m->n; i++) {
		if (strcmp(m->v[i].path, m->v[first].path) != 0 || m->v[i].offset == 0)
			break;
		end = m->v[i].end;
	}
	return end;
}

enum att_reason att_forbidden_build(struct att_ctx *ctx)
{
	struct att_maps maps;
	struct scan sc = { .ctx = ctx };
	char path[PATH_MAX + 128];
	struct elfr_file *f;
	uint64_t vaddr;
	size_t i;
	int ret;

	if (ctx->forb_built)
		return ATT_OK;
	att_forbidden_free(ctx);
	ret = att_maps_read_at(ctx->procdir, &maps);
	if (ret)
		return att_fail(ctx, ATT_E_EXITED, -ret, "read %s/maps", ctx->procdir);
	for (i = 0; i < maps.n; i++) {
		const struct att_map *m = &maps.v[i];

		if (m->path[0] != '/' || m->offset != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)ctx->pid,
			 m->start, m->end);
		vaddr = 0;
		sc.bias = 0;
		f = att_elf_open_module(path, sizeof(path), ctx->procdir, m->path, &vaddr);
		if (!f)
			continue;	/* not ELF or unreadable: its frames get unw_get_proc_name */
		sc.bias = m->start - vaddr;
		ret = 0;
		if (elfr_file_foreach_func(f, add_range, &sc) == ELFR_OK && !sc.err)
			ret = add_scanned(ctx, m->start, module_end(&maps, i), sc.bias, f);
		elfr_file_close(f);
		if (sc.err || ret == -ENOMEM) {
			att_maps_free(&maps);
			att_forbidden_free(ctx);
			return att_fail(ctx, ATT_E_NOMEM, ENOMEM, "symbol ranges");
		}
	}
	att_maps_free(&maps);
	ctx->forb_built = true;
	return ATT_OK;
}

int att_forbidden_lookup(const struct att_ctx *ctx, uint64_t ip, const char **name)
{
	size_t i;
	bool known = false;

	for (i = 0; i < ctx->nscanned; i++)
		if (ip >= ctx->scanned[i].lo && ip < ctx->scanned[i].hi)
			known = true;
	if (!known)
		return -1;
	for (i = 0; i < ctx->nforb; i++) {
		if (ip >= ctx->forb[i].lo && ip < ctx->forb[i].hi) {
			*name = ctx->forb[i].name;
			return 1;
		}
	}
	return 0;
}

const struct att_scanned *att_unwind_module(const struct att_ctx *ctx, uint64_t ip)
{
	size_t i;

	for (i = 0; i < ctx->nscanned; i++)
		if (ctx->scanned[i].eh_ok && ip >= ctx->scanned[i].ip_lo && ip < ctx->scanned[i].ip_hi)
			return &ctx->scanned[i];
	return NULL;
}

void att_forbidden_free(struct att_ctx *ctx)
{
	free(ctx->forb);
	free(ctx->scanned);
	ctx->forb = NULL;
	ctx->scanned = NULL;
	ctx->nforb = ctx->capforb = ctx->nscanned = ctx->capscanned = 0;
	ctx->forb_built = false;
}
