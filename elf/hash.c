/* elf/hash.c - dynamic symbol count from DT_GNU_HASH or DT_HASH */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 *
 * DT_SYMENT is the size of ONE symbol, not a count; the dynamic section has
 * no count at all. DT_HASH says it directly (nchain). DT_GNU_HASH hashes
 * only symbols from symoffset on, so the count is one past the last symbol
 * of the chain that starts at the highest bucket:
 *
 *   u32 nbuckets | u32 symoffset | u32 bloom_size | u32 bloom_shift
 *   Addr bloom[bloom_size]
 *   u32 buckets[nbuckets]          first symbol index of each chain, 0 = empty
 *   u32 chain[]                    hash of symbol symoffset + i; bit 0 ends a chain
 */
#include "elf/internal.h"

#define BATCH 256

enum elfr_reason elfr__count_gnu(const struct elfr_mod *m, uintptr_t gh, uintptr_t symtab,
				 size_t *count, struct elfr_hashtab *ht)
{
	uint32_t hdr[4], words[BATCH], last = 0, h;
	uintptr_t bloom_bytes, buckets, chain, chain_end, sym_end, sym_room;
	size_t nb, i;

	*count = 0;
	if (!elfr__inside(m, gh, sizeof(hdr), PF_R))
		return ELFR_E_GNU_HASH_RANGE;
	if (!elfr__read(m, gh, hdr, sizeof(hdr)))
		return ELFR_E_READ;
	nb = hdr[0];
	if (nb == 0)
		return ELFR_E_GNU_HASH_EMPTY;
	bloom_bytes = (uintptr_t)hdr[2] * sizeof(ElfW(Addr));
	if (bloom_bytes > UINTPTR_MAX - gh - sizeof(hdr))
		return ELFR_E_GNU_HASH_RANGE;
	buckets = gh + sizeof(hdr) + bloom_bytes;
	if (nb * 4 > UINTPTR_MAX - buckets || !elfr__inside(m, buckets, nb * 4, PF_R))
		return ELFR_E_GNU_HASH_RANGE;
	chain = buckets + nb * 4;
	ht->nbuckets = (uint32_t)nb;
	ht->symoffset = hdr[1];
	ht->buckets = buckets;
	ht->chain = chain;

	for (i = 0; i < nb;) {
		size_t k = nb - i < BATCH ? nb - i : BATCH;

		if (!elfr__read(m, buckets + i * 4, words, k * 4))
			return ELFR_E_READ;
		for (size_t j = 0; j < k; j++)
			if (words[j] > last)
				last = words[j];
		i += k;
	}
	if (last == 0) {
		/* Every bucket empty: only the unhashed symbols below symoffset. */
		*count = hdr[1];
		return ELFR_OK;
	}
	if (last < hdr[1])
		return ELFR_E_GNU_HASH_BUCKET;

	/*
	 * Walk the last chain to its end marker. The chain must stay inside
	 * the hash table's segment, and each symbol it names inside the symbol
	 * table's: that bounds a chain without an end.
	 */
	chain_end = elfr__seg_end(m, gh, PF_R);
	sym_end = elfr__seg_end(m, symtab, PF_R);
	sym_room = sym_end ? (sym_end - symtab) / sizeof(ElfW(Sym)) : 0;
	if (chain_end < chain)
		return ELFR_E_GNU_CHAIN_END; /* overlapping segments: be strict */
	for (;;) {
		uintptr_t off = ((uintptr_t)last - hdr[1]) * 4;

		if (last >= sym_room)
			return ELFR_E_GNU_CHAIN_END;
		if (off >= chain_end - chain || chain_end - chain - off < 4)
			return ELFR_E_GNU_CHAIN_END;
		if (!elfr__read(m, chain + off, &h, 4))
			return ELFR_E_READ;
		if (h & 1)
			break;
		last++;
	}
	*count = (size_t)last + 1;
	return ELFR_OK;
}

enum elfr_reason elfr__count_sysv(const struct elfr_mod *m, uintptr_t h, size_t *count,
				  struct elfr_hashtab *ht)
{
	uint32_t hdr[2];
	uintptr_t words;

	*count = 0;
	if (!elfr__inside(m, h, sizeof(hdr), PF_R))
		return ELFR_E_HASH_RANGE;
	if (!elfr__read(m, h, hdr, sizeof(hdr)))
		return ELFR_E_READ;
	if (hdr[0] == 0)
		return ELFR_E_HASH_EMPTY;
	/* The chain array must be there too: nchain words after the buckets. */
	words = 2 + (uintptr_t)hdr[0] + hdr[1];
	if (!elfr__inside(m, h, words * 4, PF_R))
		return ELFR_E_HASH_RANGE;
	*count = hdr[1];
	ht->nbuckets = hdr[0];
	ht->symoffset = 0;
	ht->buckets = h + 8;
	ht->chain = h + 8 + (uintptr_t)hdr[0] * 4;
	return ELFR_OK;
}

uint32_t elfr__gnu_hash(const char *name)
{
	uint32_t h = 5381;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

uint32_t elfr__sysv_hash(const char *name)
{
	uint32_t h = 0, g;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h = (h << 4) + *p;
		g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}
