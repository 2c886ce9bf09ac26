/* elf/layout.c - lay out an ELF file's bytes as the loader would map them */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in heaptap, the tests and the fuzzer (allocates with calloc). Used
 * where a module's memory is wanted but only its file is at hand: the
 * stripped-file fallback of elfr_file_symbol() and the seed images of the
 * fuzzer.
 */
#include "elf/internal.h"

#include <stdlib.h>
#include <string.h>

enum elfr_reason elfr_layout(const void *file, size_t flen, size_t max, unsigned char **image,
			     size_t *ilen)
{
	const unsigned char *f = file;
	ElfW(Ehdr) eh;
	ElfW(Phdr) ph;
	uintptr_t end = 0;
	unsigned char *img;

	if (!image || !ilen || (!file && flen))
		return ELFR_E_ARG;
	*image = NULL;
	*ilen = 0;
	if (flen < sizeof(eh))
		return ELFR_E_NOT_ELF;
	memcpy(&eh, f, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return ELFR_E_NOT_ELF;
	if (eh.e_ident[EI_CLASS] != ELFR_NATIVE_CLASS)
		return ELFR_E_CLASS;
	if (eh.e_phentsize != sizeof(ph) || eh.e_phnum == 0 || eh.e_phnum > ELFR_MAX_PHDR)
		return ELFR_E_PHDR;
	if (eh.e_phoff > flen || (size_t)eh.e_phnum * sizeof(ph) > flen - eh.e_phoff)
		return ELFR_E_PHDR;

	for (size_t i = 0; i < eh.e_phnum; i++) {
		memcpy(&ph, f + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_memsz > UINTPTR_MAX - ph.p_vaddr || ph.p_filesz > ph.p_memsz)
			return ELFR_E_PHDR;
		if (ph.p_vaddr + ph.p_memsz > end)
			end = ph.p_vaddr + ph.p_memsz;
	}
	if (end == 0)
		return ELFR_E_PHDR;
	if (end > max)
		return ELFR_E_TOO_BIG;
	img = calloc(1, end);
	if (!img)
		return ELFR_E_NOMEM;

	for (size_t i = 0; i < eh.e_phnum; i++) {
		size_t n;

		memcpy(&ph, f + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || ph.p_offset >= flen)
			continue;
		/* A file cut short maps as far as it goes; the rest stays zero. */
		n = ph.p_filesz;
		if (n > flen - ph.p_offset)
			n = flen - ph.p_offset;
		memcpy(img + ph.p_vaddr, f + ph.p_offset, n);
	}
	*image = img;
	*ilen = end;
	return ELFR_OK;
}
