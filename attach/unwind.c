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
 * Names come from ranges learnt before the stop (symcache.c).
 * An incomplete unwind is treated as unsafe: a frame we cannot see may be
 * one of those.
 */
#include <libunwind-ptrace.h>
#include <stdio.h>
#include <string.h>

#include "attach/internal.h"

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
	int ret = -1, n, step, known;

	why[0] = '\0';
	as = unw_create_addr_space(&_UPT_accessors, 0);
	if (!as) {
		snprintf(why, cap, "libunwind: no address space");
		return -1;
	}
	upt = _UPT_create(thr->tid);
	if (!upt) {
		snprintf(why, cap, "libunwind: _UPT_create failed");
		goto out_as;
	}
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
		if (m && path_is_loader(m->path)) {
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
	_UPT_destroy(upt);
out_as:
	unw_destroy_addr_space(as);
	return ret;
}
