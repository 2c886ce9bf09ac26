/* elf/file.c - file view: class, machine, build-id and exported symbols via libelf */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in heaptap only (allocates). Paths are usually /proc/PID/root/... or
 * /proc/PID/map_files/START-END, which also reach deleted files.
 */
#include "elf/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERSYM_HIDDEN 0x8000
#define LAYOUT_MAX ((size_t)1 << 30)

enum elfr_reason elfr_file_open(const char *path, struct elfr_file **out)
{
	enum elfr_reason ret = ELFR_E_ARG;
	struct elfr_file *f;
	int saved;

	if (!out)
		return ELFR_E_ARG;
	*out = NULL;
	if (!path)
		return ELFR_E_ARG;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return ELFR_E_LIBELF;
	f = calloc(1, sizeof(*f));
	if (!f)
		return ELFR_E_NOMEM;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		ret = ELFR_E_OPEN;
		goto out_free;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf) {
		ret = ELFR_E_LIBELF;
		goto out_close;
	}
	if (elf_kind(f->elf) != ELF_K_ELF) {
		ret = ELFR_E_NOT_ELF;
		goto out_end;
	}
	*out = f;
	return ELFR_OK;

out_end:
	elf_end(f->elf);
out_close:
	close(f->fd);
out_free:
	saved = errno;
	free(f);
	errno = saved;
	return ret;
}

void elfr_file_close(struct elfr_file *f)
{
	if (!f)
		return;
	elf_end(f->elf);
	close(f->fd);
	free(f);
}

enum elfr_reason elfr_file_ident(const struct elfr_file *f, struct elfr_ident *id)
{
	GElf_Ehdr eh;
	int cls;

	if (!f || !id)
		return ELFR_E_ARG;
	cls = gelf_getclass(f->elf);
	if (cls == ELFCLASSNONE || !gelf_getehdr(f->elf, &eh))
		return ELFR_E_LIBELF;
	id->elfclass = (unsigned)cls;
	id->machine = eh.e_machine;
	id->type = eh.e_type;
	return ELFR_OK;
}

enum elfr_reason elfr_file_check_native(const struct elfr_file *f, struct elfr_ident *id)
{
	struct elfr_ident mine;
	enum elfr_reason r;

	if (!id)
		id = &mine;
	r = elfr_file_ident(f, id);
	if (r)
		return r;
	if (id->elfclass != ELFR_NATIVE_CLASS)
		return ELFR_E_CLASS;
	if (id->machine != ELFR_NATIVE_MACHINE)
		return ELFR_E_MACHINE;
	return ELFR_OK;
}

/* Look for NT_GNU_BUILD_ID in one PT_NOTE's data. */
static bool note_build_id(Elf_Data *d, void *buf, size_t cap, size_t *len)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;

	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)d->d_buf + name_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(name, "GNU", 4) == 0) {
			*len = nh.n_descsz;
			memcpy(buf, (const char *)d->d_buf + desc_off,
			       nh.n_descsz < cap ? nh.n_descsz : cap);
			return true;
		}
		off = next;
	}
	return false;
}

enum elfr_reason elfr_file_build_id(const struct elfr_file *f, void *buf, size_t cap, size_t *len)
{
	size_t phnum;

	if (!f || (!buf && cap) || !len)
		return ELFR_E_ARG;
	*len = 0;
	if (elf_getphdrnum(f->elf, &phnum) != 0)
		return ELFR_E_LIBELF;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(f->elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && note_build_id(d, buf, cap, len))
			return ELFR_OK;
	}
	return ELFR_E_NO_BUILD_ID;
}

static bool exported(const GElf_Sym *s)
{
	int bind = GELF_ST_BIND(s->st_info);
	int vis = GELF_ST_VISIBILITY(s->st_other);

	if (s->st_shndx == SHN_UNDEF)
		return false;
	if (vis != STV_DEFAULT && vis != STV_PROTECTED)
		return false;
	return bind == STB_GLOBAL || bind == STB_WEAK || bind == STB_GNU_UNIQUE;
}

/* .dynsym lookup; ELFR_E_NO_SYMBOL also when there is no .dynsym section (*found_table false). */
static enum elfr_reason dynsym_lookup(Elf *elf, const char *name, GElf_Addr *value,
				      bool *found_table)
{
	Elf_Scn *scn = NULL, *dynsym = NULL, *versym = NULL;
	Elf_Data *syms, *vers = NULL;
	GElf_Shdr sh, dsh = {0};
	bool have_hidden = false;
	GElf_Addr hidden = 0;
	size_t n;

	*found_table = false;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			return ELFR_E_LIBELF;
		if (sh.sh_type == SHT_DYNSYM && !dynsym) {
			dynsym = scn;
			dsh = sh;
		} else if (sh.sh_type == SHT_GNU_versym && !versym) {
			versym = scn;
		}
	}
	if (!dynsym || dsh.sh_type == SHT_NOBITS || dsh.sh_entsize == 0)
		return ELFR_E_NO_SYMBOL;
	syms = elf_getdata(dynsym, NULL);
	if (!syms)
		return ELFR_E_LIBELF;
	*found_table = true;
	if (versym)
		vers = elf_getdata(versym, NULL);
	n = dsh.sh_size / dsh.sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Versym ver = 0;
		GElf_Sym s;
		const char *sname;

		if (!gelf_getsym(syms, (int)i, &s))
			break;
		if (!exported(&s))
			continue;
		sname = elf_strptr(elf, dsh.sh_link, s.st_name);
		if (!sname || strcmp(sname, name) != 0)
			continue;
		if (vers && !gelf_getversym(vers, (int)i, &ver))
			ver = 0;
		if (!(ver & VERSYM_HIDDEN)) {
			*value = s.st_value;
			return ELFR_OK;
		}
		if (!have_hidden) {
			have_hidden = true;
			hidden = s.st_value;
		}
	}
	if (!have_hidden)
		return ELFR_E_NO_SYMBOL;
	*value = hidden;
	return ELFR_OK;
}

/* No section headers: walk the file's own PT_DYNAMIC over an in-memory layout. */
static enum elfr_reason image_lookup(Elf *elf, const char *name, GElf_Addr *value)
{
	enum elfr_reason r;
	unsigned char *img;
	struct elfr_buf buf;
	struct elfr_mod m;
	uintptr_t v;
	size_t flen, ilen;
	char *raw;

	raw = elf_rawfile(elf, &flen);
	if (!raw)
		return ELFR_E_LIBELF;
	r = elfr_layout(raw, flen, LAYOUT_MAX, &img, &ilen);
	if (r)
		return r;
	buf.data = img;
	buf.len = ilen;
	buf.base = 0;
	r = elfr_mod_from_image(&m, "", &buf);
	if (!r)
		r = elfr_mod_symbol(&m, name, &v);
	if (!r)
		*value = v;
	free(img);
	return r;
}

enum elfr_reason elfr_file_symbol(struct elfr_file *f, const char *name, uintptr_t bias,
				  uintptr_t *addr)
{
	enum elfr_reason r;
	GElf_Addr v = 0;
	bool found_table;

	if (!f || !name || !addr)
		return ELFR_E_ARG;
	*addr = 0;
	r = dynsym_lookup(f->elf, name, &v, &found_table);
	if (r == ELFR_E_NO_SYMBOL && !found_table)
		r = image_lookup(f->elf, name, &v);
	if (r)
		return r;
	*addr = bias + (uintptr_t)v;
	return ELFR_OK;
}

enum elfr_reason elfr_file_dlopen(struct elfr_file *f, uintptr_t bias, uintptr_t *addr,
				  const char **which)
{
	static const char *const names[] = {"dlopen", "__libc_dlopen_mode"};
	enum elfr_reason r = ELFR_E_NO_SYMBOL;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		r = elfr_file_symbol(f, names[i], bias, addr);
		if (r == ELFR_E_NO_SYMBOL)
			continue;
		if (!r && which)
			*which = names[i];
		return r;
	}
	return r;
}
