/* elf/filefunc.c - file view: function symbols with sizes, first PT_LOAD, .eh_frame_hdr table */
/* SPDX-License-Identifier: MIT */
/*
 * What attach/'s stack check needs besides exported-symbol lookup (file.c):
 * every FUNC symbol with its extent, local ones included (_int_malloc),
 * from .symtab and .dynsym; the first PT_LOAD's address (a mapping's start
 * minus it is the load bias); and where the .eh_frame_hdr binary search
 * table lies, for libunwind's remote-table lookup. Runs in heaptap only.
 */
#include "elf/internal.h"

#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

/*
 * phdr_at - program header i of f into *ph, for a walk in order: 1, or 0
 * when f has no header i (the walk is over); -1 when the header table or
 * that header cannot be read (ELFR_E_PHDR for both callers). The count is
 * asked each time: libelf keeps it, so that is cheap.
 */
static int phdr_at(const struct elfr_file *f, size_t i, GElf_Phdr *ph)
{
	size_t n;

	if (elf_getphdrnum(f->elf, &n) != 0)
		return -1;
	if (i >= n)
		return 0;
	return gelf_getphdr(f->elf, (int)i, ph) ? 1 : -1;
}

enum elfr_reason elfr_file_first_load(const struct elfr_file *f, uint64_t *vaddr)
{
	GElf_Phdr ph;
	size_t i;

	if (!f || !vaddr)
		return ELFR_E_ARG;
	for (i = 0; phdr_at(f, i, &ph) > 0; i++) {
		if (ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & ~(uint64_t)(ph.p_align > 1 ? ph.p_align - 1 : 0);
			return ELFR_OK;
		}
	}
	return ELFR_E_PHDR; /* unreadable, or no PT_LOAD */
}

enum elfr_reason elfr_file_foreach_func(const struct elfr_file *f, elfr_func_fn fn, void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	GElf_Sym sym;
	size_t i, n;
	const char *s;

	if (!f || !fn)
		return ELFR_E_ARG;
	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_entsize == 0 ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(d, (int)i, &sym))
				break;
			if (sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_size == 0)
				continue;
			s = elf_strptr(f->elf, sh.sh_link, sym.st_name);
			if (s && *s)
				fn(arg, s, sym.st_value, sym.st_size);
		}
	}
	return ELFR_OK;
}

/*
 * Only the usual encodings are accepted: version 1, eh_frame_ptr
 * pcrel|sdata4, fde_count udata4, table datarel|sdata4 (what GNU ld and
 * lld write); anything else is ELFR_E_NO_EH_TABLE.
 */
enum elfr_reason elfr_file_eh_table(const struct elfr_file *f, struct elfr_eh_table *t)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	unsigned char h[12];
	bool have_eh = false;
	GElf_Phdr ph;
	uint32_t count;
	size_t i;
	int r;

	if (!f || !t)
		return ELFR_E_ARG;
	memset(t, 0, sizeof(*t));
	for (i = 0; (r = phdr_at(f, i, &ph)) > 0; i++) {
		if (ph.p_type == PT_LOAD) {
			if (ph.p_vaddr < lo)
				lo = ph.p_vaddr;
			if (ph.p_vaddr + ph.p_memsz > hi)
				hi = ph.p_vaddr + ph.p_memsz;
		} else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_filesz >= sizeof(h)) {
			if (pread(f->fd, h, sizeof(h), (off_t)ph.p_offset) != (ssize_t)sizeof(h))
				return ELFR_E_NO_EH_TABLE;
			t->hdr_vaddr = ph.p_vaddr;
			have_eh = true;
		}
	}
	if (r < 0)
		return ELFR_E_PHDR;
	if (!have_eh || hi <= lo || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
		return ELFR_E_NO_EH_TABLE;
	memcpy(&count, h + 8, sizeof(count));
	t->lo_vaddr = lo;
	t->hi_vaddr = hi;
	t->fde_count = count;
	return ELFR_OK;
}
