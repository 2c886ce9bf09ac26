/* interpret/symtab.c - a module's ELF function symbols, sorted for binary search */
/* SPDX-License-Identifier: MIT */
/*
 * dwfl_module_addrname scans the whole symbol table on every call, which
 * for libstdc++ (thousands of symbols, no DWARF installed) costs hundreds of
 * microseconds an ip. The first lookup in a module copies its function
 * symbols (address, size, name owned by libdwfl) into a sorted array; each
 * later lookup is a binary search. A symbol without a size covers up to the
 * next symbol. Among aliases at one address the global one wins.
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>

#include "interpret/sym_internal.h"

static int sym_cmp(const void *a, const void *b)
{
	const struct itp_sym *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* at one address: global before weak before local, then a sized one */
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->hi > x->lo) < (y->hi > y->lo) ? 1 : (x->hi > x->lo) > (y->hi > y->lo) ? -1 : 0;
}

static int build(struct itp_symtab *t, Dwfl_Module *mod)
{
	int nsym = dwfl_module_getsymtab(mod), i;
	size_t n = 0, k;

	t->built = 1;
	if (nsym <= 1)
		return 0;
	t->v = malloc((size_t)nsym * sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	for (i = 1; i < nsym; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

		if (!name || !name[0] || shndx == SHN_UNDEF || !addr)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		t->v[n++] = (struct itp_sym){
		    .lo = addr,
		    .hi = addr + sym.st_size,
		    .name = name,
		    .rank = bind == STB_GLOBAL ? 0
			    : bind == STB_WEAK ? 1
					       : 2,
		};
	}
	qsort(t->v, n, sizeof(*t->v), sym_cmp);
	/* drop aliases (keep the first of an address), give sizeless ones a range */
	for (i = 0, k = 0; (size_t)i < n; i++) {
		if (k && t->v[k - 1].lo == t->v[i].lo)
			continue;
		t->v[k++] = t->v[i];
	}
	for (i = 0; (size_t)i < k; i++)
		if (t->v[i].hi <= t->v[i].lo)
			t->v[i].hi = (size_t)i + 1 < k ? t->v[i + 1].lo : t->v[i].lo + 1;
	t->n = k;
	return 0;
}

const char *itp_symtab_lookup(struct itp_symtab *t, Dwfl_Module *mod, uint64_t ip)
{
	size_t lo = 0, hi;

	if (!t->built && build(t, mod))
		return NULL;
	hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || ip >= t->v[lo - 1].hi)
		return NULL;
	return t->v[lo - 1].name;
}

void itp_symtab_free(struct itp_symtab *t)
{
	free(t->v);
	*t = (struct itp_symtab){0};
}
