/* elf/dynamic.c - read PT_DYNAMIC, detect relocated d_ptr values, check table ranges */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 *
 * d_ptr values: glibc's loader adds the load bias to the d_ptr entries it
 * uses (DT_STRTAB, DT_SYMTAB, DT_HASH, DT_GNU_HASH, DT_JMPREL, DT_RELA,
 * DT_VERSYM, ...) in the module's own, writable, dynamic section; musl and
 * the kernel's vDSO leave them as link-time addresses. We do not assume
 * either: DT_STRTAB and DT_SYMTAB are tried both ways and the reading that
 * lands inside the module's segments is taken (see detect()). The same
 * reading applies to every other d_ptr of the module.
 */
#include "elf/internal.h"

#include <string.h>

enum dyn_idx {
	D_STRTAB,
	D_STRSZ,
	D_SYMTAB,
	D_SYMENT,
	D_HASH,
	D_GNU_HASH,
	D_VERSYM,
	D_JMPREL,
	D_PLTRELSZ,
	D_PLTREL,
	D_RELA,
	D_RELASZ,
	D_RELAENT,
	D_REL,
	D_RELSZ,
	D_RELENT,
	D_RELACOUNT,
	D_RELCOUNT,
	D_COUNT
};

struct dyn_raw {
	uintptr_t v[D_COUNT];
	bool has[D_COUNT];
};

static int dyn_index(ElfW(Sxword) tag)
{
	switch (tag) {
	case DT_STRTAB:
		return D_STRTAB;
	case DT_STRSZ:
		return D_STRSZ;
	case DT_SYMTAB:
		return D_SYMTAB;
	case DT_SYMENT:
		return D_SYMENT;
	case DT_HASH:
		return D_HASH;
	case DT_GNU_HASH:
		return D_GNU_HASH;
	case DT_VERSYM:
		return D_VERSYM;
	case DT_JMPREL:
		return D_JMPREL;
	case DT_PLTRELSZ:
		return D_PLTRELSZ;
	case DT_PLTREL:
		return D_PLTREL;
	case DT_RELA:
		return D_RELA;
	case DT_RELASZ:
		return D_RELASZ;
	case DT_RELAENT:
		return D_RELAENT;
	case DT_REL:
		return D_REL;
	case DT_RELSZ:
		return D_RELSZ;
	case DT_RELENT:
		return D_RELENT;
	case DT_RELACOUNT:
		return D_RELACOUNT;
	case DT_RELCOUNT:
		return D_RELCOUNT;
	default:
		return -1;
	}
}

/* Read the dynamic entries up to DT_NULL; the last of a repeated tag wins, as in glibc. */
static enum elfr_reason read_dynamic(const struct elfr_mod *m, struct dyn_raw *d)
{
	ElfW(Dyn) batch[32];
	size_t n, i = 0;

	if (!m->has_dyn)
		return ELFR_E_NO_DYNAMIC;
	if (!elfr__inside(m, m->dyn, m->dyn_size, PF_R))
		return ELFR_E_DYN_RANGE;
	n = m->dyn_size / sizeof(ElfW(Dyn));
	while (i < n) {
		size_t k = n - i < 32 ? n - i : 32;

		if (!elfr__read(m, m->dyn + i * sizeof(ElfW(Dyn)), batch, k * sizeof(ElfW(Dyn))))
			return ELFR_E_READ;
		for (size_t j = 0; j < k; j++) {
			int x;

			if (batch[j].d_tag == DT_NULL)
				return ELFR_OK;
			x = dyn_index(batch[j].d_tag);
			if (x < 0)
				continue;
			d->v[x] = batch[j].d_un.d_val;
			d->has[x] = true;
		}
		i += k;
	}
	return ELFR_E_DYN_UNTERMINATED;
}

static bool plausible(const struct elfr_mod *m, uintptr_t strtab, uintptr_t symtab)
{
	return elfr__inside(m, strtab, 1, PF_R) && elfr__inside(m, symtab, sizeof(ElfW(Sym)), PF_R);
}

/* Entry 0 of both tables is empty in every ELF object (STN_UNDEF, ""). */
static bool looks_right(const struct elfr_mod *m, uintptr_t strtab, uintptr_t symtab)
{
	static const ElfW(Sym) zero;
	ElfW(Sym) sym;
	char c;

	if (!elfr__read(m, strtab, &c, 1) || !elfr__read(m, symtab, &sym, sizeof(sym)))
		return false;
	return c == 0 && memcmp(&sym, &zero, sizeof(sym)) == 0;
}

/*
 * Relocated or not? With bias 0 both readings are the same. Otherwise take
 * the reading under which DT_STRTAB and DT_SYMTAB lie in the module; when
 * both do (only possible when the bias is smaller than the module's span),
 * the one whose entry 0 is empty; failing that, give up.
 */
static enum elfr_reason detect(const struct elfr_mod *m, uintptr_t vstr, uintptr_t vsym,
			       bool *relocated)
{
	uintptr_t b = m->bias;
	bool abs_ok, raw_ok;

	*relocated = false;
	if (b == 0)
		return plausible(m, vstr, vsym) ? ELFR_OK : ELFR_E_DPTR_RANGE;
	abs_ok = plausible(m, vstr, vsym);
	raw_ok =
	    vstr <= UINTPTR_MAX - b && vsym <= UINTPTR_MAX - b && plausible(m, b + vstr, b + vsym);
	if (abs_ok && raw_ok) {
		abs_ok = looks_right(m, vstr, vsym);
		raw_ok = looks_right(m, b + vstr, b + vsym);
		if (abs_ok == raw_ok)
			return ELFR_E_DPTR_AMBIGUOUS;
	}
	if (!abs_ok && !raw_ok)
		return ELFR_E_DPTR_RANGE;
	*relocated = abs_ok;
	return ELFR_OK;
}

/* Runtime address of a d_ptr value under the detected reading; 0 if absent. */
static enum elfr_reason xlate(const struct elfr_mod *m, const struct dyn_raw *d, bool relocated,
			      int idx, uintptr_t *out)
{
	uintptr_t v = d->v[idx];

	*out = 0;
	if (!d->has[idx])
		return ELFR_OK;
	if (!relocated) {
		if (v > UINTPTR_MAX - m->bias)
			return ELFR_E_DPTR_RANGE;
		v += m->bias;
	}
	*out = v;
	return ELFR_OK;
}

static enum elfr_reason check_rel_table(const struct elfr_mod *m, uintptr_t addr, uintptr_t size,
					size_t entsz)
{
	if (size % entsz)
		return ELFR_E_RELSZ_ODD;
	if (size && !elfr__inside(m, addr, size, PF_R))
		return ELFR_E_REL_RANGE;
	return ELFR_OK;
}

static enum elfr_reason check_relocs(const struct elfr_mod *m, const struct dyn_raw *d,
				     struct elfr_tables *t)
{
	enum elfr_reason r;

	if (d->has[D_JMPREL]) {
		if (!d->has[D_PLTRELSZ])
			return ELFR_E_NO_RELSZ;
		if (!d->has[D_PLTREL])
			return ELFR_E_NO_PLTREL;
		if (d->v[D_PLTREL] != DT_RELA && d->v[D_PLTREL] != DT_REL)
			return ELFR_E_BAD_PLTREL;
		t->pltrel = (int64_t)d->v[D_PLTREL];
		t->pltrelsz = d->v[D_PLTRELSZ];
		r = check_rel_table(m, t->jmprel, t->pltrelsz,
				    t->pltrel == DT_RELA ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel)));
		if (r)
			return r;
	}
	if (d->has[D_RELA]) {
		if (!d->has[D_RELASZ])
			return ELFR_E_NO_RELSZ;
		if (d->has[D_RELAENT] && d->v[D_RELAENT] != sizeof(ElfW(Rela)))
			return ELFR_E_RELENT;
		t->relasz = d->v[D_RELASZ];
		t->relacount = d->has[D_RELACOUNT] ? d->v[D_RELACOUNT] : 0;
		r = check_rel_table(m, t->rela, t->relasz, sizeof(ElfW(Rela)));
		if (r)
			return r;
	}
	if (d->has[D_REL]) {
		if (!d->has[D_RELSZ])
			return ELFR_E_NO_RELSZ;
		if (d->has[D_RELENT] && d->v[D_RELENT] != sizeof(ElfW(Rel)))
			return ELFR_E_RELENT;
		t->relsz = d->v[D_RELSZ];
		t->relcount = d->has[D_RELCOUNT] ? d->v[D_RELCOUNT] : 0;
		r = check_rel_table(m, t->rel, t->relsz, sizeof(ElfW(Rel)));
		if (r)
			return r;
	}
	return ELFR_OK;
}

static enum elfr_reason check_symbols(const struct elfr_mod *m, const struct dyn_raw *d,
				      struct elfr_tables *t, uintptr_t hash, uintptr_t gnu_hash)
{
	enum elfr_reason r;
	char last;

	t->strsz = d->v[D_STRSZ];
	if (t->strsz == 0)
		return ELFR_E_STRTAB_EMPTY;
	if (!elfr__inside(m, t->strtab, t->strsz, PF_R))
		return ELFR_E_STRTAB_RANGE;
	/* A NUL at the end makes every name that starts inside end inside. */
	if (!elfr__read(m, t->strtab + t->strsz - 1, &last, 1))
		return ELFR_E_READ;
	if (last != 0)
		return ELFR_E_STRTAB_UNTERMINATED;
	if (d->has[D_SYMENT] && d->v[D_SYMENT] != sizeof(ElfW(Sym)))
		return ELFR_E_SYMENT;

	if (gnu_hash) {
		t->hash_kind = ELFR_HASH_GNU;
		r = elfr__count_gnu(m, gnu_hash, t->symtab, &t->nsyms, &t->ht);
	} else if (hash) {
		t->hash_kind = ELFR_HASH_SYSV;
		r = elfr__count_sysv(m, hash, &t->nsyms, &t->ht);
	} else {
		r = ELFR_E_NO_HASH;
	}
	if (r)
		return r;
	if (t->nsyms > SIZE_MAX / sizeof(ElfW(Sym)))
		return ELFR_E_SYMTAB_RANGE;
	if (t->nsyms && !elfr__inside(m, t->symtab, t->nsyms * sizeof(ElfW(Sym)), PF_R))
		return ELFR_E_SYMTAB_RANGE;
	if (t->versym && t->nsyms &&
	    !elfr__inside(m, t->versym, t->nsyms * sizeof(ElfW(Half)), PF_R))
		return ELFR_E_VERSYM_RANGE;
	t->has_symbols = true;
	return ELFR_OK;
}

enum elfr_reason elfr__tables(const struct elfr_mod *m, struct elfr_tables *t, bool want_symbols)
{
	static const int ptrs[] = {D_SYMTAB, D_HASH, D_GNU_HASH, D_VERSYM, D_JMPREL, D_RELA, D_REL};
	uintptr_t *dst[] = {&t->symtab, NULL, NULL, &t->versym, &t->jmprel, &t->rela, &t->rel};
	uintptr_t hash = 0, gnu_hash = 0;
	struct dyn_raw d;
	enum elfr_reason r;

	memset(t, 0, sizeof(*t));
	memset(&d, 0, sizeof(d));
	dst[1] = &hash;
	dst[2] = &gnu_hash;
	r = read_dynamic(m, &d);
	if (r)
		return r;
	t->has_relocs = d.has[D_JMPREL] || d.has[D_RELA] || d.has[D_REL];
	if (!t->has_relocs && !want_symbols)
		return ELFR_OK;
	if (!d.has[D_STRTAB])
		return ELFR_E_NO_STRTAB;
	if (!d.has[D_SYMTAB])
		return ELFR_E_NO_SYMTAB;
	if (!d.has[D_STRSZ])
		return ELFR_E_NO_STRSZ;
	r = detect(m, d.v[D_STRTAB], d.v[D_SYMTAB], &t->dptr_relocated);
	if (r)
		return r;
	r = xlate(m, &d, t->dptr_relocated, D_STRTAB, &t->strtab);
	for (size_t i = 0; !r && i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		r = xlate(m, &d, t->dptr_relocated, ptrs[i], dst[i]);
	if (r)
		return r;
	r = check_symbols(m, &d, t, hash, gnu_hash);
	if (r)
		return r;
	return check_relocs(m, &d, t);
}
