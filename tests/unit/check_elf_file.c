/* tests/unit/check_elf_file.c - elf/ file view (libelf): ident, build-id, symbols, PT_LOAD, eh table */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "elf/elfr.h"

#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Suite *elfr_file_suite(void);

struct where {
	const char *needle;
	char path[4096];
	uintptr_t bias;
	bool found;
};

static int where_cb(struct dl_phdr_info *dl, size_t size, void *data)
{
	struct where *w = data;

	(void)size;
	if (!dl->dlpi_name || !strstr(dl->dlpi_name, w->needle))
		return 0;
	snprintf(w->path, sizeof(w->path), "%s", dl->dlpi_name);
	w->bias = dl->dlpi_addr;
	w->found = true;
	return 1;
}

static void where(struct where *w, const char *needle)
{
	memset(w, 0, sizeof(*w));
	w->needle = needle;
	dl_iterate_phdr(where_cb, w);
	ck_assert_msg(w->found, "%s not loaded", needle);
}

/* Build-id as `readelf -n` prints it, in bytes. */
static size_t readelf_build_id(const char *path, unsigned char *out, size_t cap)
{
	char cmd[4200], line[512], *p;
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "Build ID: ");
		if (!p || n)
			continue;
		p += strlen("Build ID: ");
		while (n < cap && sscanf(p, "%2hhx", &out[n]) == 1) {
			n++;
			p += 2;
		}
	}
	pclose(f);
	return n;
}

/* Copy a file to a temporary one; the caller unlinks it. */
static void copy_to_tmp(const char *src, char *tmpl, unsigned char **bytes, size_t *len)
{
	FILE *in = fopen(src, "rb");
	int fd;

	ck_assert_ptr_nonnull(in);
	fseek(in, 0, SEEK_END);
	*len = (size_t)ftell(in);
	rewind(in);
	*bytes = malloc(*len);
	ck_assert_uint_eq(fread(*bytes, 1, *len, in), *len);
	fclose(in);
	fd = mkstemp(tmpl);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void write_file(const char *path, const unsigned char *bytes, size_t len)
{
	FILE *out = fopen(path, "wb");

	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(fwrite(bytes, 1, len, out), len);
	fclose(out);
}

START_TEST(test_libc_file)
{
	unsigned char id[64], want[64];
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	struct elfr_ident ident;
	struct elfr_file *f;
	const char *which = NULL;
	uintptr_t addr = 0;
	size_t len = 0, wlen;
	struct where w;

	ck_assert_ptr_nonnull(h);
	where(&w, "libc.so.6");
	ck_assert_int_eq(elfr_file_open(w.path, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_check_native(f, &ident), ELFR_OK);
	ck_assert_int_eq(ident.elfclass, ELFCLASS64);
	ck_assert_int_eq(ident.type, ET_DYN);
#if defined(__x86_64__)
	ck_assert_int_eq(ident.machine, EM_X86_64);
#endif
	ck_assert_int_eq(elfr_file_build_id(f, id, sizeof(id), &len), ELFR_OK);
	wlen = readelf_build_id(w.path, want, sizeof(want));
	ck_assert_uint_eq(len, wlen);
	ck_assert_uint_gt(len, 0);
	ck_assert_mem_eq(id, want, len);

	ck_assert_int_eq(elfr_file_dlopen(f, w.bias, &addr, &which), ELFR_OK);
	ck_assert_str_eq(which, "dlopen");
	ck_assert_ptr_eq((void *)addr, dlsym(h, "dlopen"));
	ck_assert_int_eq(elfr_file_symbol(f, "malloc", w.bias, &addr), ELFR_OK);
	ck_assert_ptr_eq((void *)addr, dlsym(h, "malloc"));
	ck_assert_int_eq(elfr_file_symbol(f, "no_such_symbol_here", w.bias, &addr),
			 ELFR_E_NO_SYMBOL);
	elfr_file_close(f);
	dlclose(h);
}
END_TEST

START_TEST(test_fixture_symbol_and_stripped)
{
	char tmp[] = "/tmp/check_elf_XXXXXX";
	void *h = dlopen(ELFR_FX_GNU, RTLD_NOW);
	unsigned char *bytes, id1[64], id2[64];
	size_t len, l1 = 0, l2 = 0;
	uintptr_t a1 = 0, a2 = 0;
	struct elfr_file *f;
	ElfW(Ehdr) * eh;
	struct where w;

	ck_assert_ptr_nonnull(h);
	where(&w, "libelfr_fx_gnu.so");
	ck_assert_int_eq(elfr_file_open(ELFR_FX_GNU, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_symbol(f, "fx_run", w.bias, &a1), ELFR_OK);
	ck_assert_ptr_eq((void *)a1, dlsym(h, "fx_run"));
	ck_assert_int_eq(elfr_file_build_id(f, id1, sizeof(id1), &l1), ELFR_OK);
	/* Imported only: not defined here. */
	ck_assert_int_eq(elfr_file_symbol(f, "malloc", w.bias, &a2), ELFR_E_NO_SYMBOL);
	elfr_file_close(f);

	/* Without section headers: the PT_DYNAMIC fallback finds the same address. */
	copy_to_tmp(ELFR_FX_GNU, tmp, &bytes, &len);
	eh = (ElfW(Ehdr) *)bytes;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_symbol(f, "fx_run", w.bias, &a2), ELFR_OK);
	ck_assert_uint_eq(a1, a2);
	ck_assert_int_eq(elfr_file_symbol(f, "malloc", w.bias, &a2), ELFR_E_NO_SYMBOL);
	ck_assert_int_eq(elfr_file_build_id(f, id2, sizeof(id2), &l2), ELFR_OK);
	ck_assert_uint_eq(l1, l2);
	ck_assert_mem_eq(id1, id2, l1);
	elfr_file_close(f);

	/* No PT_NOTE: no build-id. */
	for (size_t i = 0; i < eh->e_phnum; i++) {
		ElfW(Phdr) *ph = (ElfW(Phdr) *)(bytes + eh->e_phoff) + i;

		if (ph->p_type == PT_NOTE)
			ph->p_type = PT_NULL;
	}
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_build_id(f, id2, sizeof(id2), &l2), ELFR_E_NO_BUILD_ID);
	elfr_file_close(f);

	unlink(tmp);
	free(bytes);
}
END_TEST

START_TEST(test_foreign_targets)
{
	char tmp[] = "/tmp/check_elf_XXXXXX";
	struct elfr_ident id;
	struct elfr_file *f;
	unsigned char *bytes;
	ElfW(Ehdr) * eh;
	size_t len;
	enum elfr_reason r;

	copy_to_tmp(ELFR_FX_PLT, tmp, &bytes, &len);
	eh = (ElfW(Ehdr) *)bytes;
#if defined(__aarch64__)
	eh->e_machine = EM_RISCV;
#else
	eh->e_machine = EM_AARCH64;
#endif
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_check_native(f, &id), ELFR_E_MACHINE);
	ck_assert_int_eq(id.machine, eh->e_machine);
	ck_assert_ptr_nonnull(elfr_machine_name(id.machine));
	elfr_file_close(f);

	/* A 32-bit object (header only; libelf reads it as such). */
	memset(bytes + sizeof(Elf32_Ehdr), 0, len - sizeof(Elf32_Ehdr));
	memset(bytes + EI_NIDENT, 0, sizeof(Elf32_Ehdr) - EI_NIDENT);
	bytes[EI_CLASS] = ELFCLASS32;
	((Elf32_Ehdr *)bytes)->e_type = ET_DYN;
	((Elf32_Ehdr *)bytes)->e_machine = EM_386;
	((Elf32_Ehdr *)bytes)->e_version = EV_CURRENT;
	((Elf32_Ehdr *)bytes)->e_ehsize = sizeof(Elf32_Ehdr);
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	r = elfr_file_check_native(f, &id);
	ck_assert_int_eq(r, ELFR_E_CLASS);
	ck_assert_int_eq(id.elfclass, ELFCLASS32);
	ck_assert_str_eq(elfr_machine_name(id.machine), "i386");
	elfr_file_close(f);

	/* Not ELF at all. */
	write_file(tmp, (const unsigned char *)"hello, world\n", 13);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_E_NOT_ELF);
	ck_assert_ptr_null(f);

	unlink(tmp);
	errno = 0;
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_E_OPEN);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(f);
	elfr_file_close(NULL);
	free(bytes);
}
END_TEST

/* elfr_layout on bad input. */
START_TEST(test_layout_bad)
{
	unsigned char small[16] = {0x7f, 'E', 'L', 'F'};
	unsigned char *img = (unsigned char *)1;
	size_t ilen = 1;
	ElfW(Ehdr) eh;

	ck_assert_int_eq(elfr_layout(small, sizeof(small), 1 << 20, &img, &ilen), ELFR_E_NOT_ELF);
	ck_assert_ptr_null(img);
	ck_assert_uint_eq(ilen, 0);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_phentsize = sizeof(ElfW(Phdr));
	eh.e_phnum = 1;
	eh.e_phoff = 4096; /* past the end */
	ck_assert_int_eq(elfr_layout(&eh, sizeof(eh), 1 << 20, &img, &ilen), ELFR_E_PHDR);
}
END_TEST

/*
 * elfr_file_first_load and elfr_file_eh_table against the program headers
 * read by hand from the file's bytes; then with the headers they use taken
 * away, and with the header table out of the file.
 */
START_TEST(test_first_load_eh_table)
{
	uint64_t lo = UINT64_MAX, hi = 0, first = UINT64_MAX, vaddr = 0;
	char tmp[] = "/tmp/check_elf_XXXXXX";
	struct elfr_eh_table t;
	ElfW(Phdr) *ph, *eh_ph = NULL;
	struct elfr_file *f;
	unsigned char *bytes;
	ElfW(Ehdr) * eh;
	uint32_t count;
	size_t len;

	copy_to_tmp(ELFR_FX_GNU, tmp, &bytes, &len);
	eh = (ElfW(Ehdr) *)bytes;
	ph = (ElfW(Phdr) *)(bytes + eh->e_phoff);
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			if (first == UINT64_MAX)
				first = ph[i].p_vaddr & ~(uint64_t)(ph[i].p_align - 1);
			if (ph[i].p_vaddr < lo)
				lo = ph[i].p_vaddr;
			if (ph[i].p_vaddr + ph[i].p_memsz > hi)
				hi = ph[i].p_vaddr + ph[i].p_memsz;
		} else if (ph[i].p_type == PT_GNU_EH_FRAME) {
			eh_ph = &ph[i];
		}
	}
	ck_assert_uint_ne(first, UINT64_MAX);
	ck_assert_ptr_nonnull(eh_ph);
	memcpy(&count, bytes + eh_ph->p_offset + 8, sizeof(count));
	ck_assert_uint_gt(count, 0);

	ck_assert_int_eq(elfr_file_open(ELFR_FX_GNU, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_first_load(f, &vaddr), ELFR_OK);
	ck_assert_uint_eq(vaddr, first);
	ck_assert_int_eq(elfr_file_eh_table(f, &t), ELFR_OK);
	ck_assert_uint_eq(t.hdr_vaddr, eh_ph->p_vaddr);
	ck_assert_uint_eq(t.lo_vaddr, lo);
	ck_assert_uint_eq(t.hi_vaddr, hi);
	ck_assert_uint_eq(t.fde_count, count);
	elfr_file_close(f);

	/* No PT_GNU_EH_FRAME: no table; the first PT_LOAD is still found. */
	eh_ph->p_type = PT_NULL;
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	vaddr = 0;
	ck_assert_int_eq(elfr_file_first_load(f, &vaddr), ELFR_OK);
	ck_assert_uint_eq(vaddr, first);
	ck_assert_int_eq(elfr_file_eh_table(f, &t), ELFR_E_NO_EH_TABLE);
	elfr_file_close(f);

	/* No PT_LOAD either. */
	for (size_t i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD)
			ph[i].p_type = PT_NULL;
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_first_load(f, &vaddr), ELFR_E_PHDR);
	ck_assert_int_eq(elfr_file_eh_table(f, &t), ELFR_E_NO_EH_TABLE);
	elfr_file_close(f);

	/* The header table past the end of the file: unreadable. */
	eh->e_phoff = len;
	write_file(tmp, bytes, len);
	ck_assert_int_eq(elfr_file_open(tmp, &f), ELFR_OK);
	ck_assert_int_eq(elfr_file_first_load(f, &vaddr), ELFR_E_PHDR);
	ck_assert_int_eq(elfr_file_eh_table(f, &t), ELFR_E_PHDR);
	elfr_file_close(f);

	ck_assert_int_eq(elfr_file_first_load(NULL, &vaddr), ELFR_E_ARG);
	ck_assert_int_eq(elfr_file_eh_table(NULL, &t), ELFR_E_ARG);
	unlink(tmp);
	free(bytes);
}
END_TEST

/*
 * Versions needed from "libc.so.6" against what a libc defines: the fixture
 * needs GLIBC_2.2.5 and GLIBC_2.34; the old fake libc lacks 2.34 (newest
 * 2.17, above 2.3 in version order), the new one has both; a file without
 * version sections (the plain fixture) has nothing to compare with; nothing
 * is needed from another soname.
 */
START_TEST(test_version_missing)
{
	struct elfr_file *need = NULL, *old = NULL, *new = NULL, *plain = NULL, *libc = NULL;
	char miss[64], newest[64];
	struct where w;

	ck_assert_int_eq(elfr_file_open(ELFR_FX_VERSIONED, &need), ELFR_OK);
	ck_assert_int_eq(elfr_file_open(ELFR_FX_LIBC_OLD, &old), ELFR_OK);
	ck_assert_int_eq(elfr_file_open(ELFR_FX_LIBC_NEW, &new), ELFR_OK);
	ck_assert_int_eq(elfr_file_open(ELFR_FX_PLT, &plain), ELFR_OK);

	ck_assert_int_eq(elfr_file_version_missing(need, "libc.so.6", old, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "GLIBC_2.34");
	ck_assert_str_eq(newest, "GLIBC_2.17");
	/* the soname may come as a path */
	ck_assert_int_eq(elfr_file_version_missing(need, "/lib/x86_64-linux-gnu/libc.so.6", old,
						   miss, sizeof(miss), newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "GLIBC_2.34");

	ck_assert_int_eq(elfr_file_version_missing(need, "libc.so.6", new, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "");
	ck_assert_int_eq(elfr_file_version_missing(need, "libother.so.1", old, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "");
	ck_assert_int_eq(elfr_file_version_missing(need, "libc.so.6", plain, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "");
	/* a file needing nothing from that soname: the plain fixture from "libc.so.1" */
	ck_assert_int_eq(elfr_file_version_missing(plain, "libc.so.1", old, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "");

	/* the fixture against this machine's own libc: it defines GLIBC_2.34 */
	where(&w, "libc.so");
	ck_assert(w.found);
	ck_assert_int_eq(elfr_file_open(w.path, &libc), ELFR_OK);
	ck_assert_int_eq(elfr_file_version_missing(need, "libc.so.6", libc, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_OK);
	ck_assert_str_eq(miss, "");
	ck_assert_int_eq(elfr_file_version_missing(need, "libc.so.6", NULL, miss, sizeof(miss),
						   newest, sizeof(newest)), ELFR_E_ARG);

	elfr_file_close(libc);
	elfr_file_close(plain);
	elfr_file_close(new);
	elfr_file_close(old);
	elfr_file_close(need);
}
END_TEST

Suite *elfr_file_suite(void)
{
	Suite *s = suite_create("elf-file");
	TCase *tc = tcase_create("file");

	tcase_add_test(tc, test_libc_file);
	tcase_add_test(tc, test_fixture_symbol_and_stripped);
	tcase_add_test(tc, test_foreign_targets);
	tcase_add_test(tc, test_layout_bad);
	tcase_add_test(tc, test_first_load_eh_table);
	tcase_add_test(tc, test_version_missing);
	suite_add_tcase(s, tc);
	return s;
}
