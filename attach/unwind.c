/* attach/unwind.c - is a stopped thread at a safe place? unwind it with libunwind-ptrace */
/* SPDX-License-Identifier: MIT */
/*
 * A thread may run dlopen only if it holds none of the locks dlopen needs
 * and is not in the middle of something dlopen could see half done. So no
 * frame may be
 *   - in the dynamic loader's mapping (ld-linux*.so, ld-*.so): it may hold
 *     the loader lock (dlopen, lazy binding, TLS setup)
 *   - a signal frame (unw_is_signal_frame): the thread runs a handler
 *   - named like an allocator function in any module (malloc, free,
 *     calloc, realloc, memalign, *alloc*, _int_*, tcache*, arena*):
 *     dlopen and our library allocate; a custom allocator may be
 *     interposed in the executable, so all modules are checked
 *   - thread creation or fork (pthread_create, fork, _Fork),
 *     dl_iterate_phdr and the libc dl* entry points (they take the
 *     loader's locks), exit (exit handlers).
 * Names come from ranges learnt before the stop (forbidden.c).
 * An incomplete unwind is treated as unsafe: a frame we cannot see may be
 * one of those.
 *
 * Code without unwind info: a frame whose ip lies in anonymous executable
 * memory (JIT code: a JVM's compiled methods, stubs and interpreter) or in
 * no mapping at all ends the check as unsafe, with that reason. libunwind
 * would go on by guessing from rbp, and JIT code keeps no frame chain, so
 * what follows would be garbage, which could even end "cleanly" and pass.
 * In a JVM this means a thread with Java frames on its stack is let go at
 * once: it is a Java thread, and holding one could delay a safepoint
 * (docs/jvm.md). The vDSO is file-like ([vdso], it has .eh_frame) and is
 * unwound as usual.
 */
#include <libunwind-ptrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach/internal.h"

/* Exported by libunwind (libunwind-ptrace uses it the same way) but not declared in its headers. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					      unw_dyn_info_t *di, unw_proc_info_t *pi,
					      int need_unwind_info, void *arg);

#define UW_PAGES 32
#define UW_PAGE 4096

/*
 * Pages of the stopped thread's memory read so far (stack, .eh_frame,
 * .eh_frame_hdr): one process_vm_readv per page instead of one
 * PTRACE_PEEKDATA per word. Valid for one att_stack_check() call, while
 * the thread is stopped; the unwinder only reads the stack and read-only
 * tables, which other threads do not change.
 */
struct uw_cache {
	pid_t tid;
	unsigned n, next;
	uint64_t base[UW_PAGES];
	unsigned char data[UW_PAGES][UW_PAGE];
};

static __thread const struct att_ctx *uw_ctx;
static __thread struct uw_cache *uw_cache;

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	struct uw_cache *c = uw_cache;
	uint64_t page = addr & ~(uint64_t)(UW_PAGE - 1);
	unsigned i, slot;

	/* writes, no cache, or a word straddling two pages: the plain accessor */
	if (write || !c || (addr & (UW_PAGE - 1)) > UW_PAGE - sizeof(*val))
		return _UPT_access_mem(as, addr, val, write, arg);
	for (i = 0; i < c->n; i++) {
		if (c->base[i] == page) {
			memcpy(val, c->data[i] + (addr - page), sizeof(*val));
			return 0;
		}
	}
	slot = c->next;
	if (att_mem_read(c->tid, page, c->data[slot], UW_PAGE) < 0)
		return _UPT_access_mem(as, addr, val, write, arg);
	c->base[slot] = page;
	c->next = (slot + 1) % UW_PAGES;
	if (c->n < UW_PAGES)
		c->n++;
	memcpy(val, c->data[slot] + (addr - page), sizeof(*val));
	return 0;
}

static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			  int need_unwind_info, void *arg)
{
	const struct att_scanned *m = uw_ctx ? att_unwind_module(uw_ctx, ip) : NULL;
	unw_dyn_info_t di;

	if (!m)
		return _UPT_find_proc_info(as, ip, pi, need_unwind_info, arg);
	memset(&di, 0, sizeof(di));
	di.start_ip = m->ip_lo;
	di.end_ip = m->ip_hi;
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.u.rti.segbase = m->eh_hdr;		/* table entries are relative to the header */
	di.u.rti.table_data = m->eh_hdr + 12;	/* after version, 3 encodings, 2 x 4 bytes */
	di.u.rti.table_len = m->fde_count * 8 / sizeof(unw_word_t);
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

/* Executable memory no ELF file describes: anonymous, named anonymous, memfd. */
static bool jit_like(const struct att_map *m)
{
	return !m->path[0] || strncmp(m->path, "[anon:", 6) == 0 ||
	       strncmp(m->path, "/memfd:", 7) == 0;
}

static bool path_is_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	if (!base)
		return false;
	base++;
	return strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld-2.", 5) == 0 ||
	       strncmp(base, "ld64.so", 7) == 0;
}

int att_stack_check(struct att_ctx *ctx, struct att_thread *thr, const struct att_maps *maps,
		    char *why, size_t cap)
{
	unw_addr_space_t as;
	unw_cursor_t cur;
	unw_word_t ip, off;
	const struct att_map *m;
	char name[256];
	const char *fname = NULL;
	void *upt;
	unw_accessors_t acc = _UPT_accessors;
	int ret = -1, n, step, known;

	why[0] = '\0';
	acc.find_proc_info = find_proc_info;
	acc.access_mem = access_mem;
	uw_cache = calloc(1, sizeof(*uw_cache));	/* NULL: uncached, still correct */
	if (uw_cache)
		uw_cache->tid = thr->tid;
	as = unw_create_addr_space(&acc, 0);
	if (!as) {
		snprintf(why, cap, "libunwind: no address space");
		goto out_cache;
	}
	upt = _UPT_create(thr->tid);
	if (!upt) {
		snprintf(why, cap, "libunwind: _UPT_create failed");
		goto out_as;
	}
	uw_ctx = ctx;
	if (unw_init_remote(&cur, as, upt) < 0) {
		snprintf(why, cap, "cannot start unwinding");
		goto out_upt;
	}
	for (n = 0; n < ATT_MAX_FRAMES; n++) {
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0) {
			snprintf(why, cap, "frame %d: no ip", n);
			goto out_upt;
		}
		if (unw_is_signal_frame(&cur) > 0) {
			snprintf(why, cap, "frame %d: signal frame (in a handler)", n);
			goto out_upt;
		}
		m = att_maps_find(maps, ip);
		if (!m || !strchr(m->perms, 'x') || jit_like(m)) {
			snprintf(why, cap, "frame %d: in code without unwind info at %#lx (%s)", n,
				 (unsigned long)ip,
				 !m ? "no mapping"
				 : !strchr(m->perms, 'x') ? "not executable memory"
							  : "anonymous executable memory: JIT code");
			goto out_upt;
		}
		if (path_is_loader(m->path)) {
			snprintf(why, cap, "frame %d: in the dynamic loader (%#lx)", n,
				 (unsigned long)ip);
			goto out_upt;
		}
		known = att_forbidden_lookup(ctx, ip, &fname);
		if (known > 0) {
			snprintf(why, cap, "frame %d: in %s", n, fname);
			goto out_upt;
		}
		/* a module loaded after the scan: ask libunwind for the name */
		name[0] = '\0';
		if (known < 0 && unw_get_proc_name(&cur, name, sizeof(name), &off) == 0 && name[0] &&
		    att_name_forbidden(name)) {
			snprintf(why, cap, "frame %d: in %s", n, name);
			goto out_upt;
		}
		step = unw_step(&cur);
		if (step == 0)
			break;
		if (step < 0) {
			snprintf(why, cap, "frame %d: unwinding failed (%d)", n, step);
			goto out_upt;
		}
	}
	if (n == ATT_MAX_FRAMES) {
		snprintf(why, cap, "more than %d frames", ATT_MAX_FRAMES);
		goto out_upt;
	}
	ret = 0;
out_upt:
	uw_ctx = NULL;
	_UPT_destroy(upt);
out_as:
	unw_destroy_addr_space(as);
out_cache:
	free(uw_cache);
	uw_cache = NULL;
	return ret;
}
