/* elf/self.c - walk every module of the own process for GOT slots */
/* SPDX-License-Identifier: MIT */
/*
 * Runs inside the target (inject/, on its own thread): no allocation, no
 * printing. dl_iterate_phdr takes the loader's lock for the whole walk, so
 * the callback must not load or unload modules.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "elf/internal.h"

#include <errno.h>

struct self_walk {
	const char *const *names;
	size_t nnames;
	struct elfr_slot *slots;
	size_t cap;
	elfr_module_fn fn;
	void *arg;
};

static int one_module(struct dl_phdr_info *dl, size_t size, void *data)
{
	struct self_walk *sw = data;
	struct elfr_info info = {0};
	struct elfr_mod m;
	enum elfr_reason r;
	size_t n;

	(void)size;
	r = elfr_mod_init(&m, dl->dlpi_name, dl->dlpi_addr, dl->dlpi_phdr, dl->dlpi_phnum,
			  elfr_read_self, NULL);
	if (!r)
		r = elfr_find_slots(&m, sw->names, sw->nnames, sw->slots, sw->cap, &info);
	n = info.nslots < sw->cap ? info.nslots : sw->cap;
	if (r && r != ELFR_E_NO_ROOM)
		n = 0; /* a malformed module's slots are not to be trusted */
	return sw->fn(sw->arg, &m, r, &info, sw->slots, n);
}

int elfr_walk_self(const char *const *names, size_t nnames, struct elfr_slot *slots, size_t cap,
		   elfr_module_fn fn, void *arg)
{
	struct self_walk sw = {
	    .names = names,
	    .nnames = nnames,
	    .slots = slots,
	    .cap = cap,
	    .fn = fn,
	    .arg = arg,
	};

	if (!fn)
		return -EINVAL;
	return dl_iterate_phdr(one_module, &sw);
}
