/* elf/resolve.c - symbol indices of the wanted names, through the hash tables */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 *
 * Reading the name of every relocation's symbol is what makes a walk slow
 * on a big module (tens of thousands of absolute relocations in
 * libLLVM). So first find which symbol indices carry a wanted name, then
 * the relocation pass only compares indices:
 *   DT_GNU_HASH: symbols below symoffset are not hashed (imports live
 *     there): scan them; the rest are found through bucket and chain.
 *   DT_HASH: every symbol is hashed: bucket and chain for each name.
 * A chain is bounded by the symbol count, which elfr__tables() checked.
 */
#include "elf/internal.h"

#include <string.h>

#define BATCH 64

enum elfr_reason elfr__match_name(const struct elfr_mod *m, const struct elfr_tables *t,
				  const struct elfr_names *nm, uint32_t st_name, int *want)
{
	char name[ELFR_MAX_NAME_LEN + 2];
	const char *nul;
	size_t n, len;

	*want = -1;
	if (st_name >= t->strsz)
		return ELFR_E_NAME_RANGE;
	/* The table ends in NUL (checked once), so reading a prefix is enough. */
	n = t->strsz - st_name;
	if (n > nm->maxlen + 1)
		n = nm->maxlen + 1;
	if (!elfr__read(m, t->strtab + st_name, name, n))
		return ELFR_E_READ;
	nul = memchr(name, 0, n);
	if (!nul)
		return ELFR_OK; /* longer than any wanted name */
	len = (size_t)(nul - name);
	for (size_t i = 0; i < nm->n; i++) {
		if (nm->lens[i] == len && memcmp(nm->names[i], name, len) == 0) {
			*want = (int)i;
			break;
		}
	}
	return ELFR_OK;
}

static enum elfr_reason add_hit(struct elfr_hits *h, uint32_t sym, int want)
{
	if (h->n == ELFR_MAX_HITS)
		return ELFR_E_NO_ROOM;
	h->sym[h->n] = sym;
	h->want[h->n] = (uint16_t)want;
	h->n++;
	return ELFR_OK;
}

static enum elfr_reason read_sym(const struct elfr_mod *m, const struct elfr_tables *t,
				 uint32_t idx, ElfW(Sym) * s)
{
	if (idx >= t->nsyms)
		return ELFR_E_SYM_INDEX;
	if (!elfr__read(m, t->symtab + (uintptr_t)idx * sizeof(*s), s, sizeof(*s)))
		return ELFR_E_READ;
	return ELFR_OK;
}

/* Symbol idx is a hash hit for names[i]: keep it if its name is names[i]. */
static enum elfr_reason check_hit(const struct elfr_mod *m, const struct elfr_tables *t,
				  const struct elfr_names *nm, uint32_t idx, size_t i,
				  struct elfr_hits *h)
{
	enum elfr_reason r;
	ElfW(Sym) s;
	int want;

	r = read_sym(m, t, idx, &s);
	if (!r)
		r = elfr__match_name(m, t, nm, s.st_name, &want);
	if (!r && want == (int)i)
		r = add_hit(h, idx, want);
	return r;
}

static enum elfr_reason scan_unhashed(const struct elfr_mod *m, const struct elfr_tables *t,
				      const struct elfr_names *nm, struct elfr_hits *h)
{
	size_t end = t->ht.symoffset < t->nsyms ? t->ht.symoffset : t->nsyms;
	ElfW(Sym) syms[BATCH];
	size_t i = 1;

	while (i < end) {
		size_t k = end - i < BATCH ? end - i : BATCH;

		if (!elfr__read(m, t->symtab + i * sizeof(ElfW(Sym)), syms, k * sizeof(ElfW(Sym))))
			return ELFR_E_READ;
		for (size_t j = 0; j < k; j++) {
			enum elfr_reason r;
			int want;

			if (syms[j].st_name == 0)
				continue;
			r = elfr__match_name(m, t, nm, syms[j].st_name, &want);
			if (!r && want >= 0)
				r = add_hit(h, (uint32_t)(i + j), want);
			if (r)
				return r;
		}
		i += k;
	}
	return ELFR_OK;
}

static enum elfr_reason gnu_lookup(const struct elfr_mod *m, const struct elfr_tables *t,
				   const struct elfr_names *nm, size_t i, struct elfr_hits *h)
{
	const struct elfr_hashtab *ht = &t->ht;
	uint32_t hash = elfr__gnu_hash(nm->names[i]), idx, c;
	enum elfr_reason r;

	if (!elfr__read(m, ht->buckets + (uintptr_t)(hash % ht->nbuckets) * 4, &idx, 4))
		return ELFR_E_READ;
	if (idx == 0)
		return ELFR_OK;
	if (idx < ht->symoffset)
		return ELFR_E_GNU_HASH_BUCKET;
	for (;; idx++) {
		if (idx >= t->nsyms)
			return ELFR_E_GNU_CHAIN_END;
		if (!elfr__read(m, ht->chain + (uintptr_t)(idx - ht->symoffset) * 4, &c, 4))
			return ELFR_E_READ;
		if ((c | 1) == (hash | 1)) {
			r = check_hit(m, t, nm, idx, i, h);
			if (r)
				return r;
		}
		if (c & 1)
			return ELFR_OK;
	}
}

static enum elfr_reason sysv_lookup(const struct elfr_mod *m, const struct elfr_tables *t,
				    const struct elfr_names *nm, size_t i, struct elfr_hits *h)
{
	const struct elfr_hashtab *ht = &t->ht;
	uint32_t hash = elfr__sysv_hash(nm->names[i]), idx;
	enum elfr_reason r;

	if (!elfr__read(m, ht->buckets + (uintptr_t)(hash % ht->nbuckets) * 4, &idx, 4))
		return ELFR_E_READ;
	/* nsyms steps visit every symbol once; one more means a loop. */
	for (size_t steps = 0; idx != STN_UNDEF; steps++) {
		if (idx >= t->nsyms || steps >= t->nsyms)
			return ELFR_E_HASH_CHAIN;
		r = check_hit(m, t, nm, idx, i, h);
		if (r)
			return r;
		if (!elfr__read(m, ht->chain + (uintptr_t)idx * 4, &idx, 4))
			return ELFR_E_READ;
	}
	return ELFR_OK;
}

enum elfr_reason elfr__resolve(const struct elfr_mod *m, const struct elfr_tables *t,
			       const struct elfr_names *nm, struct elfr_hits *h)
{
	enum elfr_reason r = ELFR_OK;

	h->n = 0;
	if (t->hash_kind == ELFR_HASH_GNU) {
		r = scan_unhashed(m, t, nm, h);
		for (size_t i = 0; !r && i < nm->n; i++)
			r = gnu_lookup(m, t, nm, i, h);
	} else {
		for (size_t i = 0; !r && i < nm->n; i++)
			r = sysv_lookup(m, t, nm, i, h);
	}
	return r;
}
