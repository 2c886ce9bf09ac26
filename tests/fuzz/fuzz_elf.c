/* tests/fuzz/fuzz_elf.c - libFuzzer harness over the in-memory ELF walker */
/* SPDX-License-Identifier: MIT */
/*
 * Each input is walked twice: as a memory image (the bytes stand for the
 * module's memory from its vaddr 0), and as an ELF file laid out the way
 * the loader maps it (elfr_layout), which lets the real .so seeds reach
 * deep into the tables. Both at a typical load bias. Any read outside the
 * buffer is an ASan report; a slot outside the buffer or misaligned is a
 * trap.
 */
#include "elf/elfr.h"

#include <stdint.h>
#include <stdlib.h>

#define BIAS ((uintptr_t)0x7f0000000000ull)
#define MAX_IMAGE ((size_t)1 << 24)

static const char *const names[] = {
    "malloc",	     "free",	 "calloc", "realloc", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "reallocarray",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static void walk(const void *data, size_t len)
{
	struct elfr_buf buf = {.data = data, .len = len, .base = BIAS};
	struct elfr_slot slots[32];
	struct elfr_info info;
	struct elfr_mod m;
	enum elfr_reason r;
	uintptr_t v;
	size_t n;

	if (elfr_mod_from_image(&m, "fuzz", &buf) != ELFR_OK)
		return;
	r = elfr_find_slots(&m, names, NNAMES, slots, 32, &info);
	if (r == ELFR_OK || r == ELFR_E_NO_ROOM) {
		n = info.nslots < 32 ? info.nslots : 32;
		for (size_t i = 0; i < n; i++) {
			/* Every slot must be a word inside a writable segment of the image. */
			if (slots[i].want >= NNAMES || slots[i].addr % sizeof(uintptr_t))
				__builtin_trap();
			if (slots[i].addr < BIAS)
				__builtin_trap();
		}
	}
	if (elfr_strerror(r) == NULL)
		__builtin_trap();
	(void)elfr_mod_symbol(&m, "malloc", &v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *image;
	size_t ilen;

	walk(data, size);
	if (elfr_layout(data, size, MAX_IMAGE, &image, &ilen) == ELFR_OK) {
		walk(image, ilen);
		free(image);
	}
	return 0;
}
