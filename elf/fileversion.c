/* elf/fileversion.c - symbol versions one file needs from a library that another file lacks */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in heaptap only. Before attach loads its library into a process, it
 * compares the versions the library needs from libc.so.6 (SHT_GNU_verneed,
 * e.g. GLIBC_2.34) with the ones the process's own libc defines
 * (SHT_GNU_verdef): an older glibc would refuse the library anyway, and
 * on glibc < 2.34 without libdl the refusal's text is lost.
 */
#define _GNU_SOURCE /* strverscmp */
#include "elf/internal.h"

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The section of type `type` and the index of its string table, or NULL. */
static Elf_Scn *find_section(Elf *elf, Elf64_Word type, size_t *strndx)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type) {
			*strndx = sh.sh_link;
			return scn;
		}
	}
	return NULL;
}

/* Last path component. */
static const char *base_name(const char *s)
{
	const char *p = strrchr(s, '/');

	return p ? p + 1 : s;
}

/*
 * Walk def's version definitions: returns whether `name` is one of them;
 * *newest gets the highest (strverscmp) definition starting like `name`
 * up to its '_' and then a digit ("GLIBC_2.31", not "GLIBC_PRIVATE"), for
 * the message. At most max entries are read.
 */
static bool defines(Elf *elf, Elf_Scn *scn, size_t strndx, const char *name, const char **newest)
{
	size_t plen = strcspn(name, "_") + 1;
	Elf_Data *d = elf_getdata(scn, NULL);
	unsigned off = 0, guard = 0;
	bool found = false;
	GElf_Verdef vd;
	GElf_Verdaux va;

	while (d && guard++ < 65536 && gelf_getverdef(d, (int)off, &vd)) {
		const char *s;

		if (vd.vd_cnt && gelf_getverdaux(d, (int)(off + vd.vd_aux), &va) &&
		    (s = elf_strptr(elf, strndx, va.vda_name)) != NULL) {
			if (!strcmp(s, name))
				found = true;
			if (!strncmp(s, name, plen) && s[plen] >= '0' && s[plen] <= '9' &&
			    (!*newest || strverscmp(s, *newest) > 0))
				*newest = s;
		}
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
	return found;
}

enum elfr_reason elfr_file_version_missing(const struct elfr_file *need, const char *soname,
					   const struct elfr_file *def, char *missing, size_t mcap,
					   char *newest, size_t ncap)
{
	size_t nstr = 0, dstr = 0;
	Elf_Scn *nscn, *dscn;
	Elf_Data *d;
	unsigned off = 0, guard = 0;
	const char *worst = NULL, *best = NULL;
	GElf_Verneed vn;
	GElf_Vernaux va;

	if (!need || !soname || !def || !missing || !mcap || !newest || !ncap)
		return ELFR_E_ARG;
	missing[0] = newest[0] = '\0';
	nscn = find_section(need->elf, SHT_GNU_verneed, &nstr);
	dscn = find_section(def->elf, SHT_GNU_verdef, &dstr);
	if (!nscn || !dscn)	/* nothing needed, or nothing to compare with (musl) */
		return ELFR_OK;
	d = elf_getdata(nscn, NULL);
	while (d && guard++ < 65536 && gelf_getverneed(d, (int)off, &vn)) {
		const char *file = elf_strptr(need->elf, nstr, vn.vn_file);
		unsigned aoff = off + vn.vn_aux, i;

		for (i = 0; file && !strcmp(file, base_name(soname)) && i < vn.vn_cnt; i++) {
			const char *s;

			if (!gelf_getvernaux(d, (int)aoff, &va))
				break;
			s = elf_strptr(need->elf, nstr, va.vna_name);
			if (s && !defines(def->elf, dscn, dstr, s, &best) &&
			    (!worst || strverscmp(s, worst) > 0))
				worst = s;
			if (!va.vna_next)
				break;
			aoff += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
	if (worst) {
		snprintf(missing, mcap, "%s", worst);
		if (best)
			snprintf(newest, ncap, "%s", best);
	}
	return ELFR_OK;
}
