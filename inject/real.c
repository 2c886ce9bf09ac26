/* inject/real.c - the real allocator functions, track's hooks, modules to leave alone */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the library's thread before any slot is touched.
 *
 * The library is dlopen'ed, not preloaded, so dlsym(RTLD_NEXT) would search
 * only what comes after it and is wrong here. The real function is the one
 * every GOT slot of the name resolves to: the first definition in the
 * global scope, dlsym(RTLD_DEFAULT) (libc's, or an allocator the program
 * links that interposes it). It is never taken from a slot: a lazily bound
 * slot that was not called yet holds its module's PLT stub, and calling a
 * stub from track would bind that module's slot behind our back.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sys/auxv.h>

#include "inject/internal.h"

const char *const inj_names[INJ_NNAMES] = {
    "malloc",	      "free",	       "calloc",   "realloc", "reallocarray",
    "posix_memalign", "aligned_alloc", "memalign", "valloc",  "pvalloc",
};

/* This library's ELF header: its first byte, so an address inside it. */
extern const char __ehdr_start[] INJ_HIDDEN;
/* From the libunwind track uses (our own GOT gives its address there). */
extern int unw_backtrace(void **buffer, int size);

/*
 * Stand-ins for a name the process does not define (e.g. pvalloc on musl):
 * trk_real needs every member, and no slot of such a name is ever patched
 * (inj_g.realv stays 0), so these are only reached through a direct call.
 */
static void *none_1(size_t a)
{
	(void)a;
	errno = ENOMEM;
	return NULL;
}

static void *none_2(size_t a, size_t b)
{
	(void)a;
	(void)b;
	errno = ENOMEM;
	return NULL;
}

static void *none_r3(void *p, size_t a, size_t b)
{
	(void)p;
	(void)a;
	(void)b;
	errno = ENOMEM;
	return NULL;
}

static int none_pm(void **m, size_t a, size_t s)
{
	(void)m;
	(void)a;
	(void)s;
	return ENOMEM;
}

/*
 * Canonical PLT entries: when a non-PIE executable takes the address of
 * malloc, the linker gives it a PLT entry that stands for malloc's address
 * everywhere, and dlsym(RTLD_DEFAULT) returns that entry. It jumps through
 * the executable's own JUMP_SLOT, which we patch: forwarding there would
 * recurse. So the function track forwards to must be a definition: if the
 * address dlsym gave is not a defined symbol of the module it lies in, the
 * first module (load order) that defines the name is used instead, and the
 * entry's address stays acceptable as a slot value (inj_g.altv).
 */
struct def_search {
	const char *name;
	uintptr_t addr;	 /* what dlsym returned */
	bool owner_only; /* phase 1: look at the module addr lies in only */
	uintptr_t found; /* the definition found */
};

static int def_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct def_search *d = data;
	struct elfr_mod m;
	uintptr_t v = 0;
	bool owner = false, self = false;

	(void)size;
	if (elfr_mod_init(&m, info->dlpi_name, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
			  elfr_read_self, NULL) != ELFR_OK)
		return 0;
	for (size_t i = 0; i < m.nload; i++) {
		if (d->addr >= m.load[i].start && d->addr < m.load[i].end)
			owner = true;
		if ((uintptr_t)__ehdr_start >= m.load[i].start &&
		    (uintptr_t)__ehdr_start < m.load[i].end)
			self = true;
	}
	if (self || (d->owner_only && !owner))
		return 0;
	if (elfr_mod_symbol(&m, d->name, &v) != ELFR_OK || !v)
		return d->owner_only; /* phase 1: owner looked at, stop */
	if (d->owner_only && v != d->addr)
		return 1;
	d->found = v;
	return 1;
}

/* definition - addr if it is a definition of name in its own module, else the first one. */
static uintptr_t definition(const char *name, uintptr_t addr)
{
	struct def_search d = {.name = name, .addr = addr, .owner_only = true};

	dl_iterate_phdr(def_cb, &d);
	if (d.found)
		return d.found;
	d.owner_only = false;
	dl_iterate_phdr(def_cb, &d);
	return d.found ? d.found : addr;
}

#define PICK(i, fallback) (inj_g.realv[i] ? (void *)inj_g.realv[i] : (void *)(fallback))

int inj_real_find(void)
{
	struct trk_real *r = &inj_g.real;

	for (size_t i = 0; i < INJ_NNAMES; i++) {
		uintptr_t a = (uintptr_t)dlsym(RTLD_DEFAULT, inj_names[i]);

		inj_g.realv[i] = a ? definition(inj_names[i], a) : 0;
		inj_g.altv[i] = a != inj_g.realv[i] ? a : 0;
	}
	/* without these four nothing sensible can be recorded or forwarded */
	if (!inj_g.realv[0] || !inj_g.realv[1] || !inj_g.realv[2] || !inj_g.realv[3])
		return -ENOENT;
	r->malloc = (void *(*)(size_t))inj_g.realv[0];
	r->free = (void (*)(void *))inj_g.realv[1];
	r->calloc = (void *(*)(size_t, size_t))inj_g.realv[2];
	r->realloc = (void *(*)(void *, size_t))inj_g.realv[3];
	r->reallocarray = (void *(*)(void *, size_t, size_t))PICK(4, none_r3);
	r->posix_memalign = (int (*)(void **, size_t, size_t))PICK(5, none_pm);
	r->aligned_alloc = (void *(*)(size_t, size_t))PICK(6, none_2);
	r->memalign = (void *(*)(size_t, size_t))PICK(7, none_2);
	r->valloc = (void *(*)(size_t))PICK(8, none_1);
	r->pvalloc = (void *(*)(size_t))PICK(9, none_1);

	inj_g.hookv[0] = (uintptr_t)trk_malloc;
	inj_g.hookv[1] = (uintptr_t)trk_free;
	inj_g.hookv[2] = (uintptr_t)trk_calloc;
	inj_g.hookv[3] = (uintptr_t)trk_realloc;
	inj_g.hookv[4] = (uintptr_t)trk_reallocarray;
	inj_g.hookv[5] = (uintptr_t)trk_posix_memalign;
	inj_g.hookv[6] = (uintptr_t)trk_aligned_alloc;
	inj_g.hookv[7] = (uintptr_t)trk_memalign;
	inj_g.hookv[8] = (uintptr_t)trk_valloc;
	inj_g.hookv[9] = (uintptr_t)trk_pvalloc;

	inj_g.self_addr = (uintptr_t)__ehdr_start;
	inj_g.ldso_base = getauxval(AT_BASE);
	inj_g.vdso_addr = getauxval(AT_SYSINFO_EHDR);
	inj_g.unwind_addr = (uintptr_t)unw_backtrace;
	return 0;
}
