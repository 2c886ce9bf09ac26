/* elf/symbol.c - find a defined dynamic symbol of a loaded module by name */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 * A linear walk: the symbol count bounds it, and exported names are looked
 * up rarely (attach looks up dlopen once), so the hash lookup is not worth
 * a second bounded walker.
 */
#include "elf/internal.h"

#include <string.h>

#define BATCH 64
#define VERSYM_HIDDEN 0x8000

static bool exported(const ElfW(Sym) * s)
{
	int bind = ELFR_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF)
		return false;
	return bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE;
}

enum elfr_reason elfr_mod_symbol(const struct elfr_mod *m, const char *name, uintptr_t *value)
{
	char buf[ELFR_MAX_NAME_LEN + 2];
	ElfW(Sym) syms[BATCH];
	struct elfr_tables t;
	enum elfr_reason r;
	bool have_hidden = false;
	uintptr_t hidden = 0;
	size_t len, i = 0;

	if (!m || !m->read || !name || !value)
		return ELFR_E_ARG;
	*value = 0;
	len = strlen(name);
	if (len == 0 || len > ELFR_MAX_NAME_LEN)
		return ELFR_E_ARG;
	r = elfr__tables(m, &t, true);
	if (r)
		return r;

	while (i < t.nsyms) {
		size_t k = t.nsyms - i < BATCH ? t.nsyms - i : BATCH;

		if (!elfr__read(m, t.symtab + i * sizeof(ElfW(Sym)), syms, k * sizeof(ElfW(Sym))))
			return ELFR_E_READ;
		for (size_t j = 0; j < k; j++) {
			const ElfW(Sym) *s = &syms[j];
			ElfW(Half) ver = 0;

			if (!exported(s))
				continue;
			if (s->st_name >= t.strsz)
				return ELFR_E_NAME_RANGE;
			if (t.strsz - s->st_name < len + 1)
				continue;
			if (!elfr__read(m, t.strtab + s->st_name, buf, len + 1))
				return ELFR_E_READ;
			if (memcmp(buf, name, len + 1) != 0)
				continue;
			if (t.versym &&
			    !elfr__read(m, t.versym + (i + j) * sizeof(ver), &ver, sizeof(ver)))
				return ELFR_E_READ;
			if (s->st_value > UINTPTR_MAX - m->bias)
				return ELFR_E_DPTR_RANGE;
			if (!(ver & VERSYM_HIDDEN)) {
				*value = m->bias + s->st_value;
				return ELFR_OK;
			}
			if (!have_hidden) {
				have_hidden = true;
				hidden = m->bias + s->st_value;
			}
		}
		i += k;
	}
	if (!have_hidden)
		return ELFR_E_NO_SYMBOL;
	*value = hidden;
	return ELFR_OK;
}
