/* elf/slots.c - find the GOT slots of wanted symbols in a loaded module */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 * Relocations are read in batches into a stack buffer; each candidate's
 * symbol and the first bytes of its name are read through the bounded
 * reader, so the cost is a few reads per relocation of a patchable type.
 */
#include "elf/internal.h"

#include <string.h>

#define BATCH 64

struct walk {
	const struct elfr_mod *m;
	const struct elfr_tables *t;
	const char *const *names;
	size_t nnames;
	size_t lens[ELFR_MAX_NAMES];
	size_t maxlen;
	struct elfr_slot *slots;
	size_t cap;
	size_t n;
};

static int slot_kind(uint32_t type)
{
	if (type == ELFR_R_JUMP_SLOT)
		return ELFR_SLOT_JUMP;
	if (type == ELFR_R_GLOB_DAT)
		return ELFR_SLOT_GLOB_DAT;
	if (type == ELFR_R_ABS)
		return ELFR_SLOT_ABS;
	return 0;
}

/* Index into names[] of symbol symidx, or -1; a reason when the module is malformed. */
static enum elfr_reason match(const struct walk *w, uint32_t symidx, int *want)
{
	const struct elfr_tables *t = w->t;
	char name[ELFR_MAX_NAME_LEN + 2];
	ElfW(Sym) sym;
	size_t n, len;
	const char *nul;

	*want = -1;
	if (symidx >= t->nsyms)
		return ELFR_E_SYM_INDEX;
	if (!elfr__read(w->m, t->symtab + (uintptr_t)symidx * sizeof(sym), &sym, sizeof(sym)))
		return ELFR_E_READ;
	if (sym.st_name >= t->strsz)
		return ELFR_E_NAME_RANGE;
	/* The table ends in NUL (checked once), so reading a prefix is enough. */
	n = t->strsz - sym.st_name;
	if (n > w->maxlen + 1)
		n = w->maxlen + 1;
	if (!elfr__read(w->m, t->strtab + sym.st_name, name, n))
		return ELFR_E_READ;
	nul = memchr(name, 0, n);
	if (!nul)
		return ELFR_OK; /* longer than any wanted name */
	len = (size_t)(nul - name);
	for (size_t i = 0; i < w->nnames; i++) {
		if (w->lens[i] == len && memcmp(w->names[i], name, len) == 0) {
			*want = (int)i;
			break;
		}
	}
	return ELFR_OK;
}

static enum elfr_reason add_slot(struct walk *w, uintptr_t r_offset, int64_t addend, uint32_t sym,
				 int want, int kind)
{
	const struct elfr_mod *m = w->m;
	uintptr_t addr;

	if (r_offset > UINTPTR_MAX - m->bias)
		return ELFR_E_SLOT_RANGE;
	addr = m->bias + r_offset;
	if (!elfr__inside(m, addr, sizeof(uintptr_t), PF_W))
		return ELFR_E_SLOT_RANGE;
	if (addr % sizeof(uintptr_t))
		return ELFR_E_SLOT_ALIGN;
	if (w->n < w->cap) {
		struct elfr_slot *s = &w->slots[w->n];

		s->addr = addr;
		s->addend = addend;
		s->sym = sym;
		s->want = (uint16_t)want;
		s->kind = (uint8_t)kind;
		s->relro = m->relro_end > m->relro_start && addr >= m->relro_start &&
			   addr < m->relro_end;
	}
	w->n++;
	return ELFR_OK;
}

/*
 * Walk one relocation table [addr, addr + size). Entries that lie in
 * [skip, skip + skip_size) are left out: some linkers make DT_RELASZ cover
 * the DT_JMPREL entries too, and those were walked already.
 */
static enum elfr_reason walk_table(struct walk *w, uintptr_t addr, uintptr_t size, bool rela,
				   uintptr_t skip, uintptr_t skip_size)
{
	union {
		ElfW(Rela) a[BATCH];
		ElfW(Rel) r[BATCH];
	} buf;
	size_t entsz = rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
	size_t count = size / entsz, i = 0;

	while (i < count) {
		size_t k = count - i < BATCH ? count - i : BATCH;
		uintptr_t at = addr + i * entsz;

		if (!elfr__read(w->m, at, &buf, k * entsz))
			return ELFR_E_READ;
		for (size_t j = 0; j < k; j++, at += entsz) {
			uintptr_t off = rela ? buf.a[j].r_offset : buf.r[j].r_offset;
			uintptr_t info = rela ? buf.a[j].r_info : buf.r[j].r_info;
			int64_t addend = rela ? (int64_t)buf.a[j].r_addend : 0;
			uint32_t sym = (uint32_t)ELFR_R_SYM(info);
			int kind = slot_kind((uint32_t)ELFR_R_TYPE(info));
			enum elfr_reason r;
			int want;

			if (skip_size && at >= skip && at - skip < skip_size)
				continue;
			if (!kind || sym == STN_UNDEF)
				continue;
			r = match(w, sym, &want);
			if (r)
				return r;
			if (want < 0)
				continue;
			r = add_slot(w, off, addend, sym, want, kind);
			if (r)
				return r;
		}
		i += k;
	}
	return ELFR_OK;
}

enum elfr_reason elfr_find_slots(const struct elfr_mod *m, const char *const *names,
				 size_t nnames, struct elfr_slot *slots, size_t cap,
				 struct elfr_info *info)
{
	struct elfr_tables t;
	struct walk w;
	enum elfr_reason r;
	bool plt_rela;

	if (info)
		memset(info, 0, sizeof(*info));
	if (!m || !m->read || (!names && nnames) || nnames > ELFR_MAX_NAMES || (!slots && cap))
		return ELFR_E_ARG;
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < nnames; i++) {
		if (!names[i])
			return ELFR_E_ARG;
		w.lens[i] = strlen(names[i]);
		if (w.lens[i] > ELFR_MAX_NAME_LEN)
			return ELFR_E_ARG;
		if (w.lens[i] > w.maxlen)
			w.maxlen = w.lens[i];
	}
	w.m = m;
	w.t = &t;
	w.names = names;
	w.nnames = nnames;
	w.slots = slots;
	w.cap = cap;

	r = elfr__tables(m, &t, false);
	if (info) {
		info->nsyms = t.nsyms;
		info->dptr_relocated = t.dptr_relocated;
		info->hash_kind = t.hash_kind;
		info->has_relocs = t.has_relocs;
	}
	if (r || !t.has_relocs || !nnames)
		return r;

	plt_rela = t.pltrel == DT_RELA;
	if (t.jmprel)
		r = walk_table(&w, t.jmprel, t.pltrelsz, plt_rela, 0, 0);
	if (!r && t.rela)
		r = walk_table(&w, t.rela, t.relasz, true, t.jmprel,
			       plt_rela ? t.pltrelsz : 0);
	if (!r && t.rel)
		r = walk_table(&w, t.rel, t.relsz, false, t.jmprel,
			       plt_rela ? 0 : t.pltrelsz);
	if (info)
		info->nslots = w.n;
	if (!r && w.n > cap)
		r = ELFR_E_NO_ROOM;
	return r;
}
