/* elf/mod.c - describe a loaded module from its program headers; bounded reads */
/* SPDX-License-Identifier: MIT */
/*
 * May run inside a target process: no allocation, no printing, no locks.
 */
#include "elf/internal.h"

#include <errno.h>
#include <string.h>

bool elfr__inside(const struct elfr_mod *m, uintptr_t addr, size_t len, uint32_t flags)
{
	for (size_t i = 0; i < m->nload; i++) {
		const struct elfr_seg *s = &m->load[i];

		if ((s->flags & flags) != flags)
			continue;
		if (addr < s->start || addr >= s->end)
			continue;
		if (len > s->end - addr)
			continue;
		return true;
	}
	return false;
}

uintptr_t elfr__seg_end(const struct elfr_mod *m, uintptr_t addr, uint32_t flags)
{
	for (size_t i = 0; i < m->nload; i++) {
		const struct elfr_seg *s = &m->load[i];

		if ((s->flags & flags) == flags && addr >= s->start && addr < s->end)
			return s->end;
	}
	return 0;
}

bool elfr__read(const struct elfr_mod *m, uintptr_t addr, void *dst, size_t len)
{
	if (!elfr__inside(m, addr, len, PF_R))
		return false;
	return m->read(m->read_ctx, addr, dst, len) == 0;
}

int elfr_read_self(void *ctx, uintptr_t addr, void *dst, size_t len)
{
	(void)ctx;
	memcpy(dst, (const void *)addr, len);
	return 0;
}

int elfr_read_buf(void *ctx, uintptr_t addr, void *dst, size_t len)
{
	const struct elfr_buf *b = ctx;
	uintptr_t off;

	if (addr < b->base)
		return -EFAULT;
	off = addr - b->base;
	if (off > b->len || len > b->len - off)
		return -EFAULT;
	memcpy(dst, (const unsigned char *)b->data + off, len);
	return 0;
}

/* Runtime range of a segment; false when it wraps the address space. */
static bool seg_range(uintptr_t bias, const ElfW(Phdr) * ph, uintptr_t *start, uintptr_t *end)
{
	if (ph->p_vaddr > UINTPTR_MAX - bias)
		return false;
	*start = bias + ph->p_vaddr;
	if (ph->p_memsz > UINTPTR_MAX - *start)
		return false;
	*end = *start + ph->p_memsz;
	return true;
}

enum elfr_reason elfr_mod_init(struct elfr_mod *m, const char *name, uintptr_t bias,
			       const ElfW(Phdr) * phdr, size_t phnum, elfr_read_fn read,
			       void *read_ctx)
{
	if (!m || !read || (!phdr && phnum))
		return ELFR_E_ARG;
	memset(m, 0, sizeof(*m));
	m->name = name ? name : "";
	m->bias = bias;
	m->read = read;
	m->read_ctx = read_ctx;
	if (!phdr || !phnum)
		return ELFR_E_PHDR;

	for (size_t i = 0; i < phnum; i++) {
		const ElfW(Phdr) *ph = &phdr[i];
		uintptr_t start, end;

		switch (ph->p_type) {
		case PT_LOAD:
			if (m->nload == ELFR_MAX_LOAD)
				return ELFR_E_TOO_MANY_LOAD;
			if (!seg_range(bias, ph, &start, &end))
				return ELFR_E_LOAD_RANGE;
			m->load[m->nload].start = start;
			m->load[m->nload].end = end;
			m->load[m->nload].flags = ph->p_flags;
			m->nload++;
			break;
		case PT_DYNAMIC:
			/* A range PT_DYNAMIC cannot have is reported by the walk. */
			if (!seg_range(bias, ph, &start, &end))
				return ELFR_E_DYN_RANGE;
			m->has_dyn = true;
			m->dyn = start;
			m->dyn_size = ph->p_memsz;
			break;
		case PT_GNU_RELRO:
			if (!seg_range(bias, ph, &start, &end))
				return ELFR_E_LOAD_RANGE;
			m->relro_start = start;
			m->relro_end = end;
			break;
		default:
			break;
		}
	}
	return ELFR_OK;
}

enum elfr_reason elfr_mod_from_image(struct elfr_mod *m, const char *name, struct elfr_buf *buf)
{
	ElfW(Phdr) ph[ELFR_MAX_PHDR];
	ElfW(Ehdr) eh;
	size_t phnum;

	if (!m || !buf)
		return ELFR_E_ARG;
	memset(m, 0, sizeof(*m));
	if (elfr_read_buf(buf, buf->base, &eh, sizeof(eh)) != 0)
		return ELFR_E_NOT_ELF;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return ELFR_E_NOT_ELF;
	if (eh.e_ident[EI_CLASS] != ELFR_NATIVE_CLASS)
		return ELFR_E_CLASS;
	if (eh.e_machine != ELFR_NATIVE_MACHINE)
		return ELFR_E_MACHINE;
	phnum = eh.e_phnum;
	if (eh.e_phentsize != sizeof(ElfW(Phdr)) || phnum == 0 || phnum > ELFR_MAX_PHDR)
		return ELFR_E_PHDR;
	if (eh.e_phoff > UINTPTR_MAX - buf->base)
		return ELFR_E_PHDR;
	if (elfr_read_buf(buf, buf->base + eh.e_phoff, ph, phnum * sizeof(ph[0])) != 0)
		return ELFR_E_PHDR;
	return elfr_mod_init(m, name, buf->base, ph, phnum, elfr_read_buf, buf);
}
