/* attach/elfsym.c - walk an ELF file's function symbols with sizes; its first PT_LOAD address */
/* SPDX-License-Identifier: MIT */
/*
 * Symbol lookups by name go through elf/ (libc.c). What elf/'s file view
 * does not offer yet is kept here, small: every FUNC symbol with its size
 * from .symtab and .dynsym (the stack check's forbidden ranges need local
 * functions such as _int_malloc and their extents), and the load address
 * of the first PT_LOAD (to turn a mapping's start into a load bias).
 * FIXME(#4): move both into elf/ (elfr_file_foreach_func, elfr_file_first_load).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "attach/internal.h"

static int first_load_vaddr(Elf *e, uint64_t *vaddr)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n) != 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & ~(uint64_t)(ph.p_align > 1 ? ph.p_align - 1 : 0);
			return 0;
		}
	}
	return -EINVAL;
}

int att_elf_load_vaddr(const char *path, uint64_t *vaddr)
{
	return att_elf_foreach_func(path, NULL, NULL, vaddr);
}

int att_elf_foreach_func(const char *path, att_elf_func_fn fn, void *arg, uint64_t *first_vaddr)
{
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	GElf_Sym sym;
	size_t i, n;
	const char *s;
	int fd, ret = -EINVAL;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out_close;
	ret = first_load_vaddr(e, first_vaddr);
	if (ret || !fn)
		goto out_end;
	while ((scn = elf_nextscn(e, scn)) != NULL) {
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
			s = elf_strptr(e, sh.sh_link, sym.st_name);
			if (s && *s)
				fn(arg, s, sym.st_value, sym.st_size);
		}
	}
out_end:
	elf_end(e);
out_close:
	close(fd);
	return ret;
}

/*
 * Where the .eh_frame_hdr binary search table of an ELF file lies, as
 * libunwind's remote-table format wants it (see unwind.c). Only the usual
 * encodings are accepted: eh_frame_ptr pcrel|sdata4, fde_count udata4,
 * table datarel|sdata4 (what GNU ld and lld write); anything else gives
 * -ENOTSUP and the module is left to libunwind's own lookup.
 */
int att_elf_eh_table(const char *path, struct att_eh_table *t)
{
	Elf *e = NULL;
	GElf_Phdr ph;
	size_t i, n;
	unsigned char h[12];
	uint64_t lo = UINT64_MAX, hi = 0;
	bool have_eh = false;
	uint32_t count;
	int fd, ret = -EINVAL;

	memset(t, 0, sizeof(*t));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &n) != 0)
		goto out_end;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			goto out_end;
		if (ph.p_type == PT_LOAD) {
			if (ph.p_vaddr < lo)
				lo = ph.p_vaddr;
			if (ph.p_vaddr + ph.p_memsz > hi)
				hi = ph.p_vaddr + ph.p_memsz;
		} else if (ph.p_type == PT_GNU_EH_FRAME && ph.p_filesz >= sizeof(h)) {
			if (pread(fd, h, sizeof(h), (off_t)ph.p_offset) != (ssize_t)sizeof(h))
				goto out_end;
			t->hdr_vaddr = ph.p_vaddr;
			have_eh = true;
		}
	}
	ret = -ENOTSUP;
	if (!have_eh || hi <= lo || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
		goto out_end;
	memcpy(&count, h + 8, sizeof(count));
	t->lo_vaddr = lo;
	t->hi_vaddr = hi;
	t->fde_count = count;
	ret = 0;
out_end:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}
