/* attach/elfsym.c - look up an exported symbol in an ELF file (libelf) */
/* SPDX-License-Identifier: MIT */
/*
 * FIXME(#4): switch to elf/'s file view (elfr_file_open, elfr_file_symbol,
 * elfr_file_dlopen) once it is built; this is the small stand-in the attach
 * brief allows until then. Reads .dynsym only (every symbol attach calls is
 * exported); the first defined global or weak FUNC/IFUNC-free match wins,
 * which for glibc's versioned duplicates (dlopen@GLIBC_2.2.5 and
 * dlopen@@GLIBC_2.34) is the same address.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "attach/internal.h"

static int find_in_dynsym(Elf *e, const char *name, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	GElf_Sym sym;
	size_t i, n;
	const char *s;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(d, (int)i, &sym))
				break;
			if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
				continue;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC)
				continue;
			if (GELF_ST_BIND(sym.st_info) != STB_GLOBAL &&
			    GELF_ST_BIND(sym.st_info) != STB_WEAK)
				continue;
			s = elf_strptr(e, sh.sh_link, sym.st_name);
			if (s && strcmp(s, name) == 0) {
				*value = sym.st_value;
				return 0;
			}
		}
	}
	return -ENOENT;
}

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

int att_elf_symbol(const char *path, const char *name, uint64_t *value, uint64_t *first_vaddr)
{
	Elf *e = NULL;
	int fd, ret = -EINVAL;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto out_close;
	if (first_vaddr) {
		ret = first_load_vaddr(e, first_vaddr);
		if (ret)
			goto out_end;
	}
	ret = name ? find_in_dynsym(e, name, value) : 0;
out_end:
	elf_end(e);
out_close:
	close(fd);
	return ret;
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
