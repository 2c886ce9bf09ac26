/* elf/slots.c - find the GOT slots of wanted symbols in a loaded module */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 *
 * The wanted names are first resolved to symbol indices (resolve.c), so
 * the relocation pass reads entries in batches into a stack buffer and
 * compares indices only. When a module has more matching symbols than
 * ELFR_MAX_HITS, each candidate relocation's name is read instead.
 *
 * Entries counted by DT_RELACOUNT / DT_RELCOUNT are skipped: glibc applies
 * them as RELATIVE without looking at their type, so none of them can be a
 * symbol's slot. (In libLLVM they are 335,000 of 355,000 entries.)
 */
#include "elf/internal.h"

#include <string.h>

#define BATCH 64

struct walk {
	const struct elfr_mod *m;
	const struct elfr_tables *t;
	struct elfr_names nm;
	const struct elfr_hits *hits; /* NULL: match by name */
	uint32_t hit_lo, hit_hi;      /* range of hits->sym[] */
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
	const struct elfr_hits *h = w->hits;
	ElfW(Sym) sym;

	*want = -1;
	if (symidx >= t->nsyms)
		return ELFR_E_SYM_INDEX;
	if (h) {
		if (symidx < w->hit_lo || symidx > w->hit_hi)
			return ELFR_OK;
		for (size_t i = 0; i < h->n; i++) {
			if (h->sym[i] == symidx) {
				*want = h->want[i];
				break;
			}
		}
		return ELFR_OK;
	}
	if (!elfr__read(w->m, t->symtab + (uintptr_t)symidx * sizeof(sym), &sym, sizeof(sym)))
		return ELFR_E_READ;
	return elfr__match_name(w->m, t, &w->nm, sym.st_name, want);
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
		s->relro =
		    m->relro_end > m->relro_start && addr >= m->relro_start && addr < m->relro_end;
	}
	w->n++;
	return ELFR_OK;
}

/*
 * Walk one relocation table [addr, addr + size), from entry first on.
 * Entries that lie in [skip, skip + skip_size) are left out: some linkers
 * make DT_RELASZ cover the DT_JMPREL entries too, and those were walked
 * already.
 */
static enum elfr_reason walk_table(struct walk *w, uintptr_t addr, uintptr_t size, bool rela,
				   size_t first, uintptr_t skip, uintptr_t skip_size)
{
	union {
		ElfW(Rela) a[BATCH];
		ElfW(Rel) r[BATCH];
	} buf;
	size_t entsz = rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
	size_t count = size / entsz, i = first;

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

			if (!kind || sym == STN_UNDEF)
				continue;
			if (skip_size && at >= skip && at - skip < skip_size)
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

static enum elfr_reason walk_tables(struct walk *w)
{
	const struct elfr_tables *t = w->t;
	bool plt_rela = t->pltrel == DT_RELA;
	enum elfr_reason r = ELFR_OK;

	if (t->jmprel)
		r = walk_table(w, t->jmprel, t->pltrelsz, plt_rela, 0, 0, 0);
	if (!r && t->rela)
		r = walk_table(w, t->rela, t->relasz, true, t->relacount, t->jmprel,
			       plt_rela ? t->pltrelsz : 0);
	if (!r && t->rel)
		r = walk_table(w, t->rel, t->relsz, false, t->relcount, t->jmprel,
			       plt_rela ? 0 : t->pltrelsz);
	return r;
}

enum elfr_reason elfr__find_slots(const struct elfr_mod *m, const char *const *names, size_t nnames,
				  struct elfr_slot *slots, size_t cap, struct elfr_info *info,
				  bool by_name)
{
	struct elfr_tables t;
	struct elfr_hits hits;
	struct walk w;
	enum elfr_reason r;

	if (info)
		memset(info, 0, sizeof(*info));
	if (!m || !m->read || (!names && nnames) || nnames > ELFR_MAX_NAMES || (!slots && cap))
		return ELFR_E_ARG;
	memset(&w, 0, sizeof(w));
	for (size_t i = 0; i < nnames; i++) {
		if (!names[i])
			return ELFR_E_ARG;
		w.nm.lens[i] = strlen(names[i]);
		if (w.nm.lens[i] > ELFR_MAX_NAME_LEN)
			return ELFR_E_ARG;
		if (w.nm.lens[i] > w.nm.maxlen)
			w.nm.maxlen = w.nm.lens[i];
	}
	w.m = m;
	w.t = &t;
	w.nm.names = names;
	w.nm.n = nnames;
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

	if (!by_name) {
		r = elfr__resolve(m, &t, &w.nm, &hits);
		if (r && r != ELFR_E_NO_ROOM)
			return r;
		if (!r && hits.n == 0)
			return ELFR_OK; /* no wanted symbol: no slot */
		if (!r) {
			w.hits = &hits;
			w.hit_lo = UINT32_MAX;
			for (size_t i = 0; i < hits.n; i++) {
				if (hits.sym[i] < w.hit_lo)
					w.hit_lo = hits.sym[i];
				if (hits.sym[i] > w.hit_hi)
					w.hit_hi = hits.sym[i];
			}
		}
	}
	r = walk_tables(&w);
	if (info)
		info->nslots = w.n;
	if (!r && w.n > cap)
		r = ELFR_E_NO_ROOM;
	return r;
}

enum elfr_reason elfr_find_slots(const struct elfr_mod *m, const char *const *names, size_t nnames,
				 struct elfr_slot *slots, size_t cap, struct elfr_info *info)
{
	return elfr__find_slots(m, names, nnames, slots, cap, info, false);
}
