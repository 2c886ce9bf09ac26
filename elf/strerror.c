/* elf/strerror.c - text for enum elfr_reason and e_machine values */
/* SPDX-License-Identifier: MIT */
#include "elf/internal.h"

static const char *const reasons[ELFR_E_COUNT] = {
    [ELFR_OK] = "success",
    [ELFR_E_ARG] = "invalid argument",
    [ELFR_E_READ] = "memory read failed",
    [ELFR_E_NOT_ELF] = "not an ELF object",
    [ELFR_E_CLASS] = "not a native-class ELF object (e.g. 32-bit), not supported",
    [ELFR_E_MACHINE] = "ELF object for a foreign machine, not supported",
    [ELFR_E_PHDR] = "program headers missing or out of range",
    [ELFR_E_TOO_MANY_LOAD] = "too many PT_LOAD segments",
    [ELFR_E_LOAD_RANGE] = "PT_LOAD segment wraps the address space",
    [ELFR_E_NO_DYNAMIC] = "no PT_DYNAMIC (statically linked)",
    [ELFR_E_DYN_RANGE] = "PT_DYNAMIC lies outside the module's readable segments",
    [ELFR_E_DYN_UNTERMINATED] = "dynamic section has no DT_NULL",
    [ELFR_E_NO_STRTAB] = "relocations without DT_STRTAB",
    [ELFR_E_NO_STRSZ] = "DT_STRTAB without DT_STRSZ",
    [ELFR_E_NO_SYMTAB] = "relocations without DT_SYMTAB",
    [ELFR_E_DPTR_RANGE] = "dynamic table address lies outside the module",
    [ELFR_E_DPTR_AMBIGUOUS] = "cannot tell whether dynamic table addresses are relocated",
    [ELFR_E_STRTAB_RANGE] = "string table runs past its segment",
    [ELFR_E_STRTAB_EMPTY] = "DT_STRSZ is zero",
    [ELFR_E_STRTAB_UNTERMINATED] = "string table does not end in NUL",
    [ELFR_E_SYMENT] = "DT_SYMENT is not the size of one symbol",
    [ELFR_E_NO_HASH] = "neither DT_GNU_HASH nor DT_HASH: symbol count unknown",
    [ELFR_E_HASH_RANGE] = "DT_HASH table runs past its segment",
    [ELFR_E_HASH_EMPTY] = "DT_HASH has no buckets",
    [ELFR_E_HASH_CHAIN] = "DT_HASH chain runs past the symbol table or loops",
    [ELFR_E_GNU_HASH_RANGE] = "DT_GNU_HASH header, bloom filter or buckets run past their segment",
    [ELFR_E_GNU_HASH_EMPTY] = "DT_GNU_HASH has no buckets",
    [ELFR_E_GNU_HASH_BUCKET] = "DT_GNU_HASH bucket points below symoffset",
    [ELFR_E_GNU_CHAIN_END] = "DT_GNU_HASH chain runs past the symbol table",
    [ELFR_E_SYMTAB_RANGE] = "symbol table runs past its segment",
    [ELFR_E_VERSYM_RANGE] = "DT_VERSYM runs past its segment",
    [ELFR_E_SYM_INDEX] = "relocation's symbol index is past the symbol count",
    [ELFR_E_NAME_RANGE] = "symbol name offset is past DT_STRSZ",
    [ELFR_E_NO_PLTREL] = "DT_JMPREL without DT_PLTREL",
    [ELFR_E_BAD_PLTREL] = "DT_PLTREL is neither DT_REL nor DT_RELA",
    [ELFR_E_NO_RELSZ] = "relocation table without its size",
    [ELFR_E_RELENT] = "relocation entry size is wrong",
    [ELFR_E_RELSZ_ODD] = "relocation table size is not a multiple of its entry size",
    [ELFR_E_REL_RANGE] = "relocation table runs past its segment",
    [ELFR_E_SLOT_RANGE] = "relocated slot lies outside the module's writable segments",
    [ELFR_E_SLOT_ALIGN] = "relocated slot is not word-aligned",
    [ELFR_E_NO_ROOM] = "more slots than room for them",
    [ELFR_E_NO_SYMBOL] = "symbol not found",
    [ELFR_E_NO_BUILD_ID] = "no build-id note",
    [ELFR_E_OPEN] = "cannot open file",
    [ELFR_E_LIBELF] = "libelf failed to read the file",
    [ELFR_E_NOMEM] = "out of memory",
    [ELFR_E_TOO_BIG] = "image too large",
    [ELFR_E_NO_EH_TABLE] = "no .eh_frame_hdr search table in the usual encoding",
};

const char *elfr_strerror(enum elfr_reason why)
{
	if ((unsigned)why >= ELFR_E_COUNT || !reasons[why])
		return "unknown reason";
	return reasons[why];
}

const char *elfr_machine_name(unsigned machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86-64";
	case EM_386:
		return "i386";
	case EM_AARCH64:
		return "aarch64";
	case EM_ARM:
		return "arm";
	case EM_RISCV:
		return "riscv";
	case EM_PPC64:
		return "ppc64";
	case EM_PPC:
		return "ppc";
	case EM_S390:
		return "s390";
	case EM_MIPS:
		return "mips";
	case EM_SPARCV9:
		return "sparcv9";
	default:
		return NULL;
	}
}
