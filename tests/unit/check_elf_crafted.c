/* tests/unit/check_elf_crafted.c - elf/ walker on crafted, malformed module images */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a small module image byte by byte (check_elf_image.h
 * draws it), breaks one thing and checks the walker's reason.
 */
#include "elf/elfr.h"
#include "elf/internal.h"
#include "tests/unit/check_elf_image.h"

#include <check.h>
#include <elf.h>
#include <string.h>

Suite *elfr_crafted_suite(void);

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
