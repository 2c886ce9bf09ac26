/* tests/unit/check_elf_image.h - unit.elf's crafted module image and the walk over it (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * build() writes a good module image into im, a test of check_elf_crafted.c
 * then breaks one thing and walk() gives the walker's reason; slots and
 * info hold what the last walk found. The image (vaddr = buffer offset):
 *
 *   0x0000  Ehdr, Phdrs at 0x40
 *   0x0200  dynstr   "\0malloc\0free\0puts\0"          (18 bytes)
 *   0x0300  dynsym   [0] null, [1] malloc, [2] free (undefined), [3] puts (defined)
 *   0x0400  DT_HASH  nbucket 1, nchain 4
 *   0x0600  rela.plt JUMP_SLOT malloc@0x2800, free@0x2808, puts@0x2810
 *   0x0700  rela.dyn GLOB_DAT malloc@0x2818, RELATIVE @0x2820
 *   0x1f00  DT_GNU_HASH (near the end of the segment, so a chain without
 *           an end runs out of it)
 *   0x2000  dynamic   | RW segment [0x2000, 0x3000), RELRO [0x2000, 0x2800)
 *   0x2800  GOT
 * Segments: PT_LOAD R [0, 0x2000), PT_LOAD RW [0x2000, 0x3000).
 */
#ifndef HEAPTAP_TESTS_UNIT_CHECK_ELF_IMAGE_H
#define HEAPTAP_TESTS_UNIT_CHECK_ELF_IMAGE_H

#include "elf/elfr.h"
#include "elf/internal.h"

#include <check.h>
#include <elf.h>
#include <string.h>

#define IMG_SIZE 0x3000
#define STR 0x200
#define SYM 0x300
#define HASH 0x400
#define PLT 0x600
#define RELDYN 0x700
#define GNU 0x1f00
#define DYN 0x2000
#define GOT 0x2800
#define BIAS ((uintptr_t)0x7f0000000000ull)

#define PH_LOAD_R 0
#define PH_LOAD_RW 1
#define PH_DYN 2
#define PH_RELRO 3
#define NPH 4

static const char strtab[] = "\0malloc\0free\0puts"; /* + final NUL: 18 bytes */
static const char *const names[] = {"malloc", "free"};

struct img {
	unsigned char b[IMG_SIZE];
	size_t ndyn; /* entries before DT_NULL */
};

static struct img im;

static inline ElfW(Phdr) * ph(int i)
{
	return (ElfW(Phdr) *)(im.b + 0x40) + i;
}

static inline ElfW(Sym) * sym(int i)
{
	return (ElfW(Sym) *)(im.b + SYM) + i;
}

static inline ElfW(Rela) * plt(int i)
{
	return (ElfW(Rela) *)(im.b + PLT) + i;
}

static inline ElfW(Dyn) * dyn(void)
{
	return (ElfW(Dyn) *)(im.b + DYN);
}

static inline uint32_t *gnu(void)
{
	return (uint32_t *)(im.b + GNU);
}

/*
 * GNU hash words: header[4], bloom (one Addr = 2 words), bucket[1], chain[1].
 * Imports (malloc, free) are below symoffset 3, unhashed, as linkers do.
 */
#define GNU_BUCKET 6
#define GNU_CHAIN 7

static inline void put_dyn(ElfW(Sxword) tag, uintptr_t val)
{
	dyn()[im.ndyn].d_tag = tag;
	dyn()[im.ndyn].d_un.d_val = val;
	im.ndyn++;
	dyn()[im.ndyn].d_tag = DT_NULL;
	ph(PH_DYN)->p_memsz = (im.ndyn + 1) * sizeof(ElfW(Dyn));
	ph(PH_DYN)->p_filesz = ph(PH_DYN)->p_memsz;
}

static inline ElfW(Dyn) * find_dyn(ElfW(Sxword) tag)
{
	for (size_t i = 0; i < im.ndyn; i++)
		if (dyn()[i].d_tag == tag)
			return &dyn()[i];
	ck_abort_msg("no tag %ld", (long)tag);
	return NULL;
}

static inline void set_dyn(ElfW(Sxword) tag, uintptr_t val)
{
	find_dyn(tag)->d_un.d_val = val;
}

static inline void del_dyn(ElfW(Sxword) tag)
{
	ElfW(Dyn) *d = find_dyn(tag);
	size_t i = (size_t)(d - dyn());

	memmove(d, d + 1, (im.ndyn - i) * sizeof(*d)); /* includes DT_NULL */
	im.ndyn--;
	ph(PH_DYN)->p_memsz = (im.ndyn + 1) * sizeof(ElfW(Dyn));
}

/* Add bias to every d_ptr, as glibc does. */
static inline void relocate_dptrs(uintptr_t bias)
{
	static const ElfW(Sxword)
	    ptrs[] = {DT_STRTAB, DT_SYMTAB, DT_HASH, DT_GNU_HASH, DT_JMPREL, DT_RELA};

	for (size_t i = 0; i < im.ndyn; i++)
		for (size_t j = 0; j < sizeof(ptrs) / sizeof(ptrs[0]); j++)
			if (dyn()[i].d_tag == ptrs[j])
				dyn()[i].d_un.d_ptr += bias;
}

static inline void set_phdr(int i, uint32_t type, uint32_t flags, uintptr_t vaddr, uintptr_t size)
{
	ElfW(Phdr) *p = ph(i);

	p->p_type = type;
	p->p_flags = flags;
	p->p_offset = vaddr;
	p->p_vaddr = vaddr;
	p->p_paddr = vaddr;
	p->p_filesz = size;
	p->p_memsz = size;
	p->p_align = 0x1000;
}

static inline void set_rela(ElfW(Rela) * r, uintptr_t off, uint32_t symidx, uint32_t type)
{
	r->r_offset = off;
	r->r_info = ELF64_R_INFO(symidx, type);
	r->r_addend = 0;
}

static inline void build(void)
{
	ElfW(Ehdr) *eh = (ElfW(Ehdr) *)im.b;
	ElfW(Rela) *rd = (ElfW(Rela) *)(im.b + RELDYN);
	uint32_t *h = (uint32_t *)(im.b + HASH);
	uint32_t *g;

	memset(&im, 0, sizeof(im));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = 0x40;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(ElfW(Phdr));
	eh->e_phnum = NPH;
	set_phdr(PH_LOAD_R, PT_LOAD, PF_R, 0, 0x2000);
	set_phdr(PH_LOAD_RW, PT_LOAD, PF_R | PF_W, 0x2000, 0x1000);
	set_phdr(PH_DYN, PT_DYNAMIC, PF_R | PF_W, DYN, 0);
	set_phdr(PH_RELRO, PT_GNU_RELRO, PF_R, 0x2000, 0x800);

	memcpy(im.b + STR, strtab, sizeof(strtab));
	sym(1)->st_name = 1;
	sym(1)->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym(2)->st_name = 8;
	sym(2)->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym(3)->st_name = 13;
	sym(3)->st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	sym(3)->st_shndx = 1;
	sym(3)->st_value = 0x1000;

	h[0] = 1; /* nbucket */
	h[1] = 4; /* nchain */
	h[2] = 3;
	h[4] = 0;
	h[5] = 1;
	h[6] = 2;

	g = gnu();
	g[0] = 1;	   /* nbuckets */
	g[1] = 3;	   /* symoffset */
	g[2] = 1;	   /* bloom words */
	g[3] = 6;	   /* bloom shift */
	g[4] = g[5] = ~0u; /* bloom */
	g[GNU_BUCKET] = 3;
	g[GNU_CHAIN] = elfr__gnu_hash("puts") | 1; /* end of chain */

	set_rela(plt(0), GOT, 1, R_X86_64_JUMP_SLOT);
	set_rela(plt(1), GOT + 8, 2, R_X86_64_JUMP_SLOT);
	set_rela(plt(2), GOT + 16, 3, R_X86_64_JUMP_SLOT);
	set_rela(&rd[0], GOT + 24, 1, R_X86_64_GLOB_DAT);
	set_rela(&rd[1], GOT + 32, 0, R_X86_64_RELATIVE);
	rd[1].r_addend = 0x1000;

	put_dyn(DT_STRTAB, STR);
	put_dyn(DT_STRSZ, sizeof(strtab));
	put_dyn(DT_SYMTAB, SYM);
	put_dyn(DT_SYMENT, sizeof(ElfW(Sym)));
	put_dyn(DT_HASH, HASH);
	put_dyn(DT_GNU_HASH, GNU);
	put_dyn(DT_JMPREL, PLT);
	put_dyn(DT_PLTRELSZ, 3 * sizeof(ElfW(Rela)));
	put_dyn(DT_PLTREL, DT_RELA);
	put_dyn(DT_RELA, RELDYN);
	put_dyn(DT_RELASZ, 2 * sizeof(ElfW(Rela)));
	put_dyn(DT_RELAENT, sizeof(ElfW(Rela)));
}

static struct elfr_slot slots[8];
static struct elfr_info info;

static inline enum elfr_reason walk_len(uintptr_t bias, size_t len, size_t cap)
{
	struct elfr_buf buf = {.data = im.b, .len = len, .base = bias};
	struct elfr_mod m;
	enum elfr_reason r;

	memset(slots, 0, sizeof(slots));
	r = elfr_mod_from_image(&m, "crafted", &buf);
	if (r)
		return r;
	return elfr_find_slots(&m, names, 2, slots, cap, &info);
}

static inline enum elfr_reason walk(void)
{
	return walk_len(BIAS, IMG_SIZE, 8);
}

#define ck_reason(expr, want)                                                                      \
	do {                                                                                       \
		enum elfr_reason r_ = (expr);                                                      \
		ck_assert_msg(r_ == (want), "got \"%s\", want \"%s\"", elfr_strerror(r_),          \
			      elfr_strerror(want));                                                \
	} while (0)

/* One broken value of the dynamic section and the reason it must give. */
struct dyn_case {
	ElfW(Sxword) tag;
	uintptr_t val;
	enum elfr_reason want;
};

/* For each case: the good image with tag set to val walks to want. */
static inline void check_dyn_cases(const struct dyn_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		enum elfr_reason r;

		build();
		set_dyn(c[i].tag, c[i].val);
		r = walk();
		ck_assert_msg(r == c[i].want, "tag %ld = %#lx: got \"%s\", want \"%s\"",
			      (long)c[i].tag, (unsigned long)c[i].val, elfr_strerror(r),
			      elfr_strerror(c[i].want));
	}
}

/* The by-name fallback must find the same slots as the hash-table method. */
static inline void check_by_name(uintptr_t bias)
{
	struct elfr_buf buf = {.data = im.b, .len = IMG_SIZE, .base = bias};
	struct elfr_slot s2[8];
	struct elfr_info i2;
	struct elfr_mod m;

	ck_assert_int_eq(elfr_mod_from_image(&m, "crafted", &buf), ELFR_OK);
	ck_assert_int_eq(elfr__find_slots(&m, names, 2, s2, 8, &i2, true), ELFR_OK);
	ck_assert_uint_eq(i2.nslots, info.nslots);
	ck_assert_mem_eq(s2, slots, info.nslots * sizeof(s2[0]));
}

static inline void check_good_slots(uintptr_t bias)
{
	check_by_name(bias);
	ck_assert_uint_eq(info.nslots, 3);
	ck_assert_uint_eq(slots[0].addr, bias + GOT);
	ck_assert_int_eq(slots[0].want, 0);
	ck_assert_int_eq(slots[0].kind, ELFR_SLOT_JUMP);
	ck_assert_uint_eq(slots[1].addr, bias + GOT + 8);
	ck_assert_int_eq(slots[1].want, 1);
	ck_assert_uint_eq(slots[2].addr, bias + GOT + 24);
	ck_assert_int_eq(slots[2].want, 0);
	ck_assert_int_eq(slots[2].kind, ELFR_SLOT_GLOB_DAT);
	ck_assert_int_eq(slots[0].relro, 0);
	ck_assert_uint_eq(info.nsyms, 4);
}

#endif /* HEAPTAP_TESTS_UNIT_CHECK_ELF_IMAGE_H */
