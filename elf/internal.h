/* elf/internal.h - layouts and helpers shared by the elf/ sources */
/* SPDX-License-Identifier: MIT */
/*
 * Nothing here allocates; everything may run inside a target process.
 * Internal cross-file helpers are named elfr__*.
 */
#ifndef HEAPTAP_ELF_INTERNAL_H
#define HEAPTAP_ELF_INTERNAL_H

#include "elf/elfr.h"

#include <elf.h>

/* Relocation types this build patches, per machine. */
#if defined(__x86_64__)
#define ELFR_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define ELFR_R_GLOB_DAT R_X86_64_GLOB_DAT
#define ELFR_R_ABS R_X86_64_64
#define ELFR_NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define ELFR_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define ELFR_R_GLOB_DAT R_AARCH64_GLOB_DAT
#define ELFR_R_ABS R_AARCH64_ABS64
#define ELFR_NATIVE_MACHINE EM_AARCH64
#elif defined(__i386__)
#define ELFR_R_JUMP_SLOT R_386_JMP_SLOT
#define ELFR_R_GLOB_DAT R_386_GLOB_DAT
#define ELFR_R_ABS R_386_32
#define ELFR_NATIVE_MACHINE EM_386
#else
#error "elf/: relocation types for this machine are not known"
#endif

#if __ELF_NATIVE_CLASS == 64
#define ELFR_NATIVE_CLASS ELFCLASS64
#define ELFR_R_SYM(i) ELF64_R_SYM(i)
#define ELFR_R_TYPE(i) ELF64_R_TYPE(i)
#define ELFR_ST_BIND(i) ELF64_ST_BIND(i)
#else
#define ELFR_NATIVE_CLASS ELFCLASS32
#define ELFR_R_SYM(i) ELF32_R_SYM(i)
#define ELFR_R_TYPE(i) ELF32_R_TYPE(i)
#define ELFR_ST_BIND(i) ELF32_ST_BIND(i)
#endif

/*
 * The tables PT_DYNAMIC names, as runtime addresses once elfr__tables()
 * has checked them. A zero address means "absent".
 *
 *   strtab [0 .. strsz)           last byte NUL, inside one readable segment
 *   symtab [0 .. nsyms) x Sym     nsyms from DT_GNU_HASH or DT_HASH
 *   versym [0 .. nsyms) x Half    optional
 *   jmprel [0 .. pltrelsz)        entries of pltrel (DT_REL or DT_RELA)
 *   rela   [0 .. relasz)          Rela entries
 *   rel    [0 .. relsz)           Rel entries
 */
/*
 * Where a hash table's arrays are, once checked. GNU: buckets[nbuckets],
 * chain[nsyms - symoffset], every chain inside the table's segment.
 * SysV: buckets[nbuckets], chain[nsyms] (symoffset 0).
 */
struct elfr_hashtab {
	uint32_t nbuckets;
	uint32_t symoffset;
	uintptr_t buckets;
	uintptr_t chain;
};

struct elfr_tables {
	uintptr_t strtab, strsz;
	uintptr_t symtab;
	size_t nsyms;
	uintptr_t versym;
	uintptr_t jmprel, pltrelsz;
	int64_t pltrel; /* DT_REL or DT_RELA */
	uintptr_t rela, relasz, relacount;
	uintptr_t rel, relsz, relcount;
	struct elfr_hashtab ht;
	bool dptr_relocated;
	uint8_t hash_kind; /* enum elfr_hash_kind */
	bool has_relocs;
	bool has_symbols; /* strtab/symtab/count valid */
};

/* True when [addr, addr + len) lies inside one PT_LOAD segment having all of flags. */
bool elfr__inside(const struct elfr_mod *m, uintptr_t addr, size_t len, uint32_t flags);

/* End of the first PT_LOAD segment with all of flags containing addr, or 0. */
uintptr_t elfr__seg_end(const struct elfr_mod *m, uintptr_t addr, uint32_t flags);

/* Bounded read: range check (readable segment), then the module's reader. */
bool elfr__read(const struct elfr_mod *m, uintptr_t addr, void *dst, size_t len);

/*
 * Read PT_DYNAMIC, decide whether d_ptr values are relocated, and check
 * every table's range. want_symbols: also fail when there are no
 * relocations but symbols are asked for (elfr_mod_symbol).
 */
enum elfr_reason elfr__tables(const struct elfr_mod *m, struct elfr_tables *t, bool want_symbols);

/* Symbol count from DT_GNU_HASH at gh; symtab bounds the chain walk. */
enum elfr_reason elfr__count_gnu(const struct elfr_mod *m, uintptr_t gh, uintptr_t symtab,
				 size_t *count, struct elfr_hashtab *ht);

/* Symbol count from DT_HASH (nchain) at h. */
enum elfr_reason elfr__count_sysv(const struct elfr_mod *m, uintptr_t h, size_t *count,
				  struct elfr_hashtab *ht);

/* The hash functions of DT_GNU_HASH and DT_HASH. */
uint32_t elfr__gnu_hash(const char *name);
uint32_t elfr__sysv_hash(const char *name);

/* The wanted names of one walk, with their lengths. */
struct elfr_names {
	const char *const *names;
	size_t n;
	size_t lens[ELFR_MAX_NAMES];
	size_t maxlen;
};

/*
 * Which names[] entry the string at st_name is (*want, -1 for none).
 * ELFR_E_NAME_RANGE when st_name is not below DT_STRSZ.
 */
enum elfr_reason elfr__match_name(const struct elfr_mod *m, const struct elfr_tables *t,
				  const struct elfr_names *nm, uint32_t st_name, int *want);

/* Symbol indices carrying a wanted name; a handful per name (versions). */
#define ELFR_MAX_HITS 256
struct elfr_hits {
	size_t n;
	uint32_t sym[ELFR_MAX_HITS];
	uint16_t want[ELFR_MAX_HITS];
};

/*
 * Find every symbol index whose name is wanted, through the hash table.
 * ELFR_E_NO_ROOM when there are more than ELFR_MAX_HITS (the caller then
 * matches names relocation by relocation), or a reason the module is
 * malformed.
 */
enum elfr_reason elfr__resolve(const struct elfr_mod *m, const struct elfr_tables *t,
			       const struct elfr_names *nm, struct elfr_hits *h);

/*
 * elfr_find_slots() with a choice of method: by_name reads each
 * relocation's symbol name (the fallback); otherwise names are resolved
 * through the hash table first. For tests that compare the two.
 */
enum elfr_reason elfr__find_slots(const struct elfr_mod *m, const char *const *names, size_t nnames,
				  struct elfr_slot *slots, size_t cap, struct elfr_info *info,
				  bool by_name);

/* The file view (file.c, filefunc.c): heaptap only, never inside a target. */
struct elfr_file {
	int fd;
	struct Elf *elf;
};

#endif /* HEAPTAP_ELF_INTERNAL_H */
