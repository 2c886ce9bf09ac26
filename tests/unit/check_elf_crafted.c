/* tests/unit/check_elf_crafted.c - elf/ walker on crafted, malformed module images */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a small module image byte by byte, breaks one thing and
 * checks the walker's reason. The image (vaddr = buffer offset):
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
#include "elf/elfr.h"
#include "elf/internal.h"

#include <check.h>
#include <elf.h>
#include <string.h>

Suite *elfr_crafted_suite(void);

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

static ElfW(Phdr) * ph(int i)
{
	return (ElfW(Phdr) *)(im.b + 0x40) + i;
}

static ElfW(Sym) * sym(int i)
{
	return (ElfW(Sym) *)(im.b + SYM) + i;
}

static ElfW(Rela) * plt(int i)
{
	return (ElfW(Rela) *)(im.b + PLT) + i;
}

static ElfW(Dyn) * dyn(void)
{
	return (ElfW(Dyn) *)(im.b + DYN);
}

static uint32_t *gnu(void)
{
	return (uint32_t *)(im.b + GNU);
}

/*
 * GNU hash words: header[4], bloom (one Addr = 2 words), bucket[1], chain[1].
 * Imports (malloc, free) are below symoffset 3, unhashed, as linkers do.
 */
#define GNU_BUCKET 6
#define GNU_CHAIN 7

static void put_dyn(ElfW(Sxword) tag, uintptr_t val)
{
	dyn()[im.ndyn].d_tag = tag;
	dyn()[im.ndyn].d_un.d_val = val;
	im.ndyn++;
	dyn()[im.ndyn].d_tag = DT_NULL;
	ph(PH_DYN)->p_memsz = (im.ndyn + 1) * sizeof(ElfW(Dyn));
	ph(PH_DYN)->p_filesz = ph(PH_DYN)->p_memsz;
}

static ElfW(Dyn) * find_dyn(ElfW(Sxword) tag)
{
	for (size_t i = 0; i < im.ndyn; i++)
		if (dyn()[i].d_tag == tag)
			return &dyn()[i];
	ck_abort_msg("no tag %ld", (long)tag);
	return NULL;
}

static void set_dyn(ElfW(Sxword) tag, uintptr_t val)
{
	find_dyn(tag)->d_un.d_val = val;
}

static void del_dyn(ElfW(Sxword) tag)
{
	ElfW(Dyn) *d = find_dyn(tag);
	size_t i = (size_t)(d - dyn());

	memmove(d, d + 1, (im.ndyn - i) * sizeof(*d)); /* includes DT_NULL */
	im.ndyn--;
	ph(PH_DYN)->p_memsz = (im.ndyn + 1) * sizeof(ElfW(Dyn));
}

/* Add bias to every d_ptr, as glibc does. */
static void relocate_dptrs(uintptr_t bias)
{
	static const ElfW(Sxword)
	    ptrs[] = {DT_STRTAB, DT_SYMTAB, DT_HASH, DT_GNU_HASH, DT_JMPREL, DT_RELA};

	for (size_t i = 0; i < im.ndyn; i++)
		for (size_t j = 0; j < sizeof(ptrs) / sizeof(ptrs[0]); j++)
			if (dyn()[i].d_tag == ptrs[j])
				dyn()[i].d_un.d_ptr += bias;
}

static void set_phdr(int i, uint32_t type, uint32_t flags, uintptr_t vaddr, uintptr_t size)
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

static void set_rela(ElfW(Rela) * r, uintptr_t off, uint32_t symidx, uint32_t type)
{
	r->r_offset = off;
	r->r_info = ELF64_R_INFO(symidx, type);
	r->r_addend = 0;
}

static void build(void)
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

static enum elfr_reason walk_len(uintptr_t bias, size_t len, size_t cap)
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

static enum elfr_reason walk(void)
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
static void check_dyn_cases(const struct dyn_case *c, size_t n)
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
static void check_by_name(uintptr_t bias)
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

static void check_good_slots(uintptr_t bias)
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

START_TEST(test_good_raw)
{
	build();
	ck_reason(walk(), ELFR_OK);
	check_good_slots(BIAS);
	ck_assert(!info.dptr_relocated);
	ck_assert_int_eq(info.hash_kind, ELFR_HASH_GNU);
}
END_TEST

START_TEST(test_good_relocated)
{
	build();
	relocate_dptrs(BIAS);
	ck_reason(walk(), ELFR_OK);
	check_good_slots(BIAS);
	ck_assert(info.dptr_relocated);
}
END_TEST

START_TEST(test_good_bias0)
{
	build();
	ck_reason(walk_len(0, IMG_SIZE, 8), ELFR_OK);
	check_good_slots(0);
}
END_TEST

START_TEST(test_good_sysv_only)
{
	build();
	del_dyn(DT_GNU_HASH);
	ck_reason(walk(), ELFR_OK);
	check_good_slots(BIAS);
	ck_assert_int_eq(info.hash_kind, ELFR_HASH_SYSV);
}
END_TEST

START_TEST(test_slot_in_relro)
{
	build();
	plt(0)->r_offset = 0x2400;
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(slots[0].addr, BIAS + 0x2400);
	ck_assert_int_eq(slots[0].relro, 1);
}
END_TEST

/* A REL-type DT_JMPREL with an overlapping DT_REL: every slot reported once. */
START_TEST(test_rel_overlap)
{
	ElfW(Rel) *r = (ElfW(Rel) *)(im.b + PLT);

	build();
	memset(im.b + PLT, 0, 0x100);
	r[0].r_offset = GOT;
	r[0].r_info = ELF64_R_INFO(1, R_X86_64_GLOB_DAT);
	r[1].r_offset = GOT + 8;
	r[1].r_info = ELF64_R_INFO(2, R_X86_64_JUMP_SLOT);
	set_dyn(DT_PLTREL, DT_REL);
	del_dyn(DT_RELA);
	del_dyn(DT_RELASZ);
	del_dyn(DT_RELAENT);
	put_dyn(DT_REL, PLT); /* DT_REL covers DT_JMPREL and one entry more */
	put_dyn(DT_RELSZ, 2 * sizeof(*r));
	set_dyn(DT_JMPREL, PLT + sizeof(*r));
	set_dyn(DT_PLTRELSZ, sizeof(*r));
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 2);
	ck_assert_uint_eq(slots[0].addr, BIAS + GOT + 8); /* from DT_JMPREL first */
	ck_assert_uint_eq(slots[1].addr, BIAS + GOT);
}
END_TEST

/*
 * DT_RELACOUNT leading entries are RELATIVE to glibc whatever their type,
 * so they are skipped; a count larger than the table is harmless.
 */
START_TEST(test_relacount)
{
	build();
	put_dyn(DT_RELACOUNT, 1); /* covers the GLOB_DAT entry */
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 2);
	ck_assert_int_eq(slots[1].kind, ELFR_SLOT_JUMP);
	build();
	put_dyn(DT_RELACOUNT, 0x7fffffff);
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 2);
	build();
	put_dyn(DT_RELACOUNT, 0);
	ck_reason(walk(), ELFR_OK);
	check_good_slots(BIAS);
}
END_TEST

START_TEST(test_sym_index_past_count)
{
	build();
	plt(1)->r_info = ELF64_R_INFO(9, R_X86_64_JUMP_SLOT);
	ck_reason(walk(), ELFR_E_SYM_INDEX);
	/* DT_HASH's nchain bounds the index too (chain 2 -> 1 -> end, puts left out). */
	build();
	del_dyn(DT_GNU_HASH);
	((uint32_t *)(im.b + HASH))[1] = 3;
	((uint32_t *)(im.b + HASH))[2] = 2;
	ck_reason(walk(), ELFR_E_SYM_INDEX);
}
END_TEST

START_TEST(test_name_past_strsz)
{
	build();
	sym(2)->st_name = sizeof(strtab);
	ck_reason(walk(), ELFR_E_NAME_RANGE);
}
END_TEST

START_TEST(test_strtab_broken)
{
	static const struct dyn_case cases[] = {
		{ DT_STRSZ, 0, ELFR_E_STRTAB_EMPTY },
		{ DT_STRSZ, sizeof(strtab) - 1, ELFR_E_STRTAB_UNTERMINATED }, /* ends inside "puts" */
		{ DT_STRSZ, 0x1e01, ELFR_E_STRTAB_RANGE },
		{ DT_SYMENT, 16, ELFR_E_SYMENT },
	};

	check_dyn_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
END_TEST

START_TEST(test_reloc_table_past_size)
{
	static const struct dyn_case cases[] = {
		{ DT_PLTRELSZ, 0x1000 * sizeof(ElfW(Rela)), ELFR_E_REL_RANGE },
		{ DT_JMPREL, 0x1ff0, ELFR_E_REL_RANGE }, /* starts in R, would end in RW */
		{ DT_RELASZ, 2 * sizeof(ElfW(Rela)) - 4, ELFR_E_RELSZ_ODD },
		{ DT_RELAENT, 16, ELFR_E_RELENT },
	};

	check_dyn_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
END_TEST

START_TEST(test_slot_outside)
{
	build();
	plt(0)->r_offset = 0x100000;
	ck_reason(walk(), ELFR_E_SLOT_RANGE);
	build();
	plt(0)->r_offset = 0x100; /* inside the module, but read-only */
	ck_reason(walk(), ELFR_E_SLOT_RANGE);
	build();
	plt(0)->r_offset = 0x2ffc; /* the word would end past the segment */
	ck_reason(walk(), ELFR_E_SLOT_RANGE);
	build();
	plt(0)->r_offset = (uintptr_t)-8; /* wraps */
	ck_reason(walk(), ELFR_E_SLOT_RANGE);
	build();
	plt(0)->r_offset = GOT + 1;
	ck_reason(walk(), ELFR_E_SLOT_ALIGN);
}
END_TEST

START_TEST(test_gnu_chain_without_end)
{
	build();
	gnu()[GNU_CHAIN] &= ~1u; /* no end bit; zeros follow to the segment's end */
	ck_reason(walk(), ELFR_E_GNU_CHAIN_END);
	/* Symbol table near the end of its segment: the chain runs past it. */
	build();
	memcpy(im.b + 0x1f80, im.b + SYM, 4 * sizeof(ElfW(Sym)));
	set_dyn(DT_SYMTAB, 0x1f80);
	gnu()[GNU_CHAIN] &= ~1u;
	memset(im.b + GNU + 4 * (GNU_CHAIN + 1), 0x02, 0x1f80 - GNU - 4 * (GNU_CHAIN + 1));
	ck_reason(walk(), ELFR_E_GNU_CHAIN_END);
}
END_TEST

START_TEST(test_gnu_hash_broken)
{
	build();
	gnu()[0] = 0;
	ck_reason(walk(), ELFR_E_GNU_HASH_EMPTY);
	build();
	gnu()[2] = 0x10000000; /* bloom runs far past the segment */
	ck_reason(walk(), ELFR_E_GNU_HASH_RANGE);
	build();
	gnu()[0] = 0x1000; /* buckets run past the segment */
	ck_reason(walk(), ELFR_E_GNU_HASH_RANGE);
	build();
	gnu()[1] = 4; /* bucket 3 below symoffset 4 */
	ck_reason(walk(), ELFR_E_GNU_HASH_BUCKET);
	build();
	gnu()[GNU_BUCKET] = 0; /* all buckets empty: count = symoffset = 3 */
	ck_reason(walk(), ELFR_E_SYM_INDEX);
	build();
	set_dyn(DT_GNU_HASH, 0x1ffc);
	ck_reason(walk(), ELFR_E_GNU_HASH_RANGE);
}
END_TEST

START_TEST(test_sysv_hash_broken)
{
	build();
	del_dyn(DT_GNU_HASH);
	((uint32_t *)(im.b + HASH))[0] = 0;
	ck_reason(walk(), ELFR_E_HASH_EMPTY);
	build();
	del_dyn(DT_GNU_HASH);
	((uint32_t *)(im.b + HASH))[1] = 0x10000000;
	ck_reason(walk(), ELFR_E_HASH_RANGE);
	/* More symbols than the table's segment holds. */
	build();
	del_dyn(DT_GNU_HASH);
	((uint32_t *)(im.b + HASH))[1] = 0x200; /* the hash table fits, 0x200 symbols do not */
	ck_reason(walk(), ELFR_E_SYMTAB_RANGE);
	/* A chain to an index past nchain, and a chain that loops. */
	build();
	del_dyn(DT_GNU_HASH);
	((uint32_t *)(im.b + HASH))[2] = 7;
	ck_reason(walk(), ELFR_E_HASH_CHAIN);
	build();
	del_dyn(DT_GNU_HASH);
	((uint32_t *)(im.b + HASH))[2 + 1 + 2] = 3; /* chain[2] = 3, chain[3] = 2 */
	ck_reason(walk(), ELFR_E_HASH_CHAIN);
}
END_TEST

START_TEST(test_missing_tables)
{
	static const struct {
		ElfW(Sxword) tag;
		enum elfr_reason want;
	} cases[] = {
	    {DT_STRTAB, ELFR_E_NO_STRTAB}, {DT_SYMTAB, ELFR_E_NO_SYMTAB},
	    {DT_STRSZ, ELFR_E_NO_STRSZ},   {DT_PLTRELSZ, ELFR_E_NO_RELSZ},
	    {DT_PLTREL, ELFR_E_NO_PLTREL}, {DT_RELASZ, ELFR_E_NO_RELSZ},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		build();
		del_dyn(cases[i].tag);
		ck_reason(walk(), cases[i].want);
	}
	build();
	del_dyn(DT_GNU_HASH);
	del_dyn(DT_HASH);
	ck_reason(walk(), ELFR_E_NO_HASH);
	build();
	ph(PH_DYN)->p_type = PT_NULL;
	ck_reason(walk(), ELFR_E_NO_DYNAMIC);
	/* No relocation tables at all: nothing to patch, not an error. */
	build();
	del_dyn(DT_JMPREL);
	del_dyn(DT_RELA);
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 0);
	ck_assert(!info.has_relocs);
}
END_TEST

START_TEST(test_bad_pltrel)
{
	static const struct dyn_case cases[] = {
		{ DT_PLTREL, DT_RELASZ, ELFR_E_BAD_PLTREL },
		{ DT_PLTREL, (uintptr_t)-1, ELFR_E_BAD_PLTREL },
		/* DT_REL claimed for RELA data: 72 bytes are not whole 16-byte entries. */
		{ DT_PLTREL, DT_REL, ELFR_E_RELSZ_ODD },
	};

	check_dyn_cases(cases, sizeof(cases) / sizeof(cases[0]));
}
END_TEST

START_TEST(test_zero_sized_tables)
{
	build();
	set_dyn(DT_PLTRELSZ, 0);
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 1);
	ck_assert_int_eq(slots[0].kind, ELFR_SLOT_GLOB_DAT);
	build();
	set_dyn(DT_RELASZ, 0);
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 2);
	build();
	set_dyn(DT_PLTRELSZ, 0);
	set_dyn(DT_RELASZ, 0);
	ck_reason(walk(), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 0);
	/* A zero-sized dynamic segment has no DT_NULL. */
	build();
	ph(PH_DYN)->p_memsz = 0;
	ck_reason(walk(), ELFR_E_DYN_UNTERMINATED);
}
END_TEST

START_TEST(test_dynamic_broken)
{
	build();
	ph(PH_DYN)->p_memsz = im.ndyn * sizeof(ElfW(Dyn)); /* DT_NULL left out */
	ck_reason(walk(), ELFR_E_DYN_UNTERMINATED);
	build();
	ph(PH_DYN)->p_vaddr = 0x5000;
	ck_reason(walk(), ELFR_E_DYN_RANGE);
	build();
	ph(PH_DYN)->p_memsz = 0x2000; /* runs past the RW segment */
	ck_reason(walk(), ELFR_E_DYN_RANGE);
	build();
	set_dyn(DT_STRTAB, 0x9000);
	ck_reason(walk(), ELFR_E_DPTR_RANGE);
}
END_TEST

/*
 * A bias smaller than the module's span: DT_STRTAB 0x1200 lies inside both
 * as a runtime address and as a link-time one. Entry 0 of each table
 * decides; when both readings look right, the walker refuses to guess.
 */
START_TEST(test_dptr_ambiguous)
{
	const uintptr_t small = 0x1000;

	build();
	relocate_dptrs(small);
	ck_reason(walk_len(small, IMG_SIZE, 8), ELFR_E_DPTR_AMBIGUOUS);
	build();
	relocate_dptrs(small);
	im.b[0x1200] = 'x'; /* the link-time reading's strtab[0] is not NUL */
	ck_reason(walk_len(small, IMG_SIZE, 8), ELFR_OK);
	ck_assert(info.dptr_relocated);
	check_good_slots(small);
}
END_TEST

START_TEST(test_no_room)
{
	build();
	ck_reason(walk_len(BIAS, IMG_SIZE, 1), ELFR_E_NO_ROOM);
	ck_assert_uint_eq(info.nslots, 3);
	ck_assert_uint_eq(slots[0].addr, BIAS + GOT);
	ck_assert_uint_eq(slots[1].addr, 0); /* untouched past cap */
}
END_TEST

START_TEST(test_short_buffer)
{
	build();
	ck_reason(walk_len(BIAS, 0x1000, 8), ELFR_E_READ);
	ck_reason(walk_len(BIAS, 0x20, 8), ELFR_E_NOT_ELF);
}
END_TEST

START_TEST(test_header_broken)
{
	ElfW(Ehdr) *eh = (ElfW(Ehdr) *)im.b;

	build();
	eh->e_ident[1] = 'X';
	ck_reason(walk(), ELFR_E_NOT_ELF);
	build();
	eh->e_ident[EI_CLASS] = ELFCLASS32;
	ck_reason(walk(), ELFR_E_CLASS);
	build();
	eh->e_machine = EM_AARCH64;
	ck_reason(walk(), ELFR_E_MACHINE);
	build();
	eh->e_phnum = 0;
	ck_reason(walk(), ELFR_E_PHDR);
	build();
	eh->e_phoff = IMG_SIZE - 8;
	ck_reason(walk(), ELFR_E_PHDR);
	build();
	ph(PH_LOAD_RW)->p_memsz = (uintptr_t)-0x1000; /* wraps */
	ck_reason(walk(), ELFR_E_LOAD_RANGE);
}
END_TEST

START_TEST(test_symbol_lookup)
{
	struct elfr_buf buf = {.data = im.b, .len = IMG_SIZE, .base = BIAS};
	struct elfr_mod m;
	uintptr_t v = 0;

	build();
	ck_reason(elfr_mod_from_image(&m, "crafted", &buf), ELFR_OK);
	ck_reason(elfr_mod_symbol(&m, "puts", &v), ELFR_OK);
	ck_assert_uint_eq(v, BIAS + 0x1000);
	ck_reason(elfr_mod_symbol(&m, "malloc", &v), ELFR_E_NO_SYMBOL); /* undefined here */
	ck_reason(elfr_mod_symbol(&m, "", &v), ELFR_E_ARG);
	sym(3)->st_name = 0x4000;
	ck_reason(elfr_mod_symbol(&m, "puts", &v), ELFR_E_NAME_RANGE);
}
END_TEST

START_TEST(test_bad_args)
{
	const char *const many[ELFR_MAX_NAMES + 1] = {"x"};
	const char *const null_name[] = {NULL};
	char longname[ELFR_MAX_NAME_LEN + 2];
	const char *const long_names[] = {longname};
	struct elfr_buf buf = {.data = im.b, .len = IMG_SIZE, .base = BIAS};
	struct elfr_mod m;

	build();
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_reason(elfr_mod_from_image(&m, "crafted", &buf), ELFR_OK);
	ck_reason(elfr_find_slots(&m, many, ELFR_MAX_NAMES + 1, slots, 8, &info), ELFR_E_ARG);
	ck_reason(elfr_find_slots(&m, null_name, 1, slots, 8, &info), ELFR_E_ARG);
	ck_reason(elfr_find_slots(&m, long_names, 1, slots, 8, &info), ELFR_E_ARG);
	ck_reason(elfr_find_slots(NULL, names, 2, slots, 8, &info), ELFR_E_ARG);
	ck_reason(elfr_find_slots(&m, names, 2, NULL, 8, &info), ELFR_E_ARG);
	ck_reason(elfr_mod_init(&m, "x", 0, NULL, 0, elfr_read_self, NULL), ELFR_E_PHDR);
}
END_TEST

START_TEST(test_strerror)
{
	for (int i = 0; i < ELFR_E_COUNT; i++) {
		const char *s = elfr_strerror((enum elfr_reason)i);

		ck_assert_str_ne(s, "unknown reason");
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(s, elfr_strerror((enum elfr_reason)j));
	}
	ck_assert_str_eq(elfr_strerror(ELFR_E_COUNT), "unknown reason");
	ck_assert_str_eq(elfr_strerror((enum elfr_reason) - 1), "unknown reason");
	ck_assert_str_eq(elfr_strerror(ELFR_E_GNU_CHAIN_END),
			 "DT_GNU_HASH chain runs past the symbol table");
	ck_assert_str_eq(elfr_machine_name(EM_386), "i386");
	ck_assert_ptr_null(elfr_machine_name(0xfffe));
}
END_TEST

Suite *elfr_crafted_suite(void)
{
	Suite *s = suite_create("elf-crafted");
	TCase *tc = tcase_create("crafted");

	tcase_add_test(tc, test_good_raw);
	tcase_add_test(tc, test_good_relocated);
	tcase_add_test(tc, test_good_bias0);
	tcase_add_test(tc, test_good_sysv_only);
	tcase_add_test(tc, test_slot_in_relro);
	tcase_add_test(tc, test_rel_overlap);
	tcase_add_test(tc, test_relacount);
	tcase_add_test(tc, test_sym_index_past_count);
	tcase_add_test(tc, test_name_past_strsz);
	tcase_add_test(tc, test_strtab_broken);
	tcase_add_test(tc, test_reloc_table_past_size);
	tcase_add_test(tc, test_slot_outside);
	tcase_add_test(tc, test_gnu_chain_without_end);
	tcase_add_test(tc, test_gnu_hash_broken);
	tcase_add_test(tc, test_sysv_hash_broken);
	tcase_add_test(tc, test_missing_tables);
	tcase_add_test(tc, test_bad_pltrel);
	tcase_add_test(tc, test_zero_sized_tables);
	tcase_add_test(tc, test_dynamic_broken);
	tcase_add_test(tc, test_dptr_ambiguous);
	tcase_add_test(tc, test_no_room);
	tcase_add_test(tc, test_short_buffer);
	tcase_add_test(tc, test_header_broken);
	tcase_add_test(tc, test_symbol_lookup);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_strerror);
	suite_add_tcase(s, tc);
	return s;
}
