/* elf/elfr.h - bounded ELF reader: GOT slots of loaded modules, symbols of ELF files */
/* SPDX-License-Identifier: MIT */
/*
 * Two views of an ELF object.
 *
 * In-memory view (struct elfr_mod, elfr_find_slots): a module as it is
 * loaded, described by its load bias and program headers. It yields, for a
 * set of wanted symbol names, every word to patch: JUMP_SLOT relocations
 * from DT_JMPREL and GLOB_DAT / word-sized absolute relocations from
 * DT_RELA / DT_REL. Every read goes through elfr_read_fn after a check that
 * the whole range lies inside one readable PT_LOAD segment, so a malformed
 * module yields a reason, never an out-of-bounds read. The walker never
 * allocates, never prints, takes no lock and keeps errno unchanged unless a
 * reader changes it; the caller passes the output array. It runs
 *   - inside a target process (inject/), over the own process
 *     (elfr_mod_init with elfr_read_self, or elfr_walk_self),
 *   - in heaptap over a copy of a remote process's memory (own reader),
 *   - over a byte buffer that stands for the module's memory (elfr_buf):
 *     crafted tests and the fuzzer.
 * Only the native ELF class and machine are understood by this view.
 *
 * File view (struct elfr_file, libelf): runs in heaptap only and may
 * allocate. Class and machine of an ELF file, its build-id, the address of
 * an exported symbol given the load bias (dlopen and its fallbacks).
 *
 * Every function that can fail returns enum elfr_reason; elfr_strerror()
 * turns it into text the command layer prints as
 * "heaptap: module /usr/lib/libfoo.so: DT_GNU_HASH chain runs past the symbol table".
 */
#ifndef HEAPTAP_ELFR_H
#define HEAPTAP_ELFR_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELFR_MUST_CHECK __attribute__((warn_unused_result))

/* Why a walk or lookup failed; ELFR_OK (0) when it did not. */
enum elfr_reason {
	ELFR_OK = 0,
	ELFR_E_ARG,		    /* bad argument (NULL, too many names, name too long) */
	ELFR_E_READ,		    /* the memory reader failed */
	ELFR_E_NOT_ELF,		    /* no ELF magic at the start of the image/file */
	ELFR_E_CLASS,		    /* not the native ELF class (e.g. a 32-bit object) */
	ELFR_E_MACHINE,		    /* not the native machine */
	ELFR_E_PHDR,		    /* program headers missing, bad size or out of range */
	ELFR_E_TOO_MANY_LOAD,	    /* more PT_LOAD segments than ELFR_MAX_LOAD */
	ELFR_E_LOAD_RANGE,	    /* a PT_LOAD segment wraps the address space */
	ELFR_E_NO_DYNAMIC,	    /* no PT_DYNAMIC (static executable): nothing to patch */
	ELFR_E_DYN_RANGE,	    /* PT_DYNAMIC not inside a readable PT_LOAD segment */
	ELFR_E_DYN_UNTERMINATED,    /* no DT_NULL inside PT_DYNAMIC */
	ELFR_E_NO_STRTAB,	    /* relocations but no DT_STRTAB */
	ELFR_E_NO_STRSZ,	    /* DT_STRTAB without DT_STRSZ */
	ELFR_E_NO_SYMTAB,	    /* relocations but no DT_SYMTAB */
	ELFR_E_DPTR_RANGE,	    /* DT_STRTAB/DT_SYMTAB outside the module, relocated or not */
	ELFR_E_DPTR_AMBIGUOUS,	    /* cannot tell whether d_ptr values are relocated */
	ELFR_E_STRTAB_RANGE,	    /* DT_STRTAB + DT_STRSZ past its segment */
	ELFR_E_STRTAB_EMPTY,	    /* DT_STRSZ is zero */
	ELFR_E_STRTAB_UNTERMINATED, /* last byte of the string table is not NUL */
	ELFR_E_SYMENT,		    /* DT_SYMENT is not the size of one symbol */
	ELFR_E_NO_HASH,		    /* neither DT_GNU_HASH nor DT_HASH: no symbol count */
	ELFR_E_HASH_RANGE,	    /* DT_HASH tables past their segment */
	ELFR_E_HASH_EMPTY,	    /* DT_HASH with zero buckets */
	ELFR_E_HASH_CHAIN,	    /* DT_HASH chain leaves the symbol table or loops */
	ELFR_E_GNU_HASH_RANGE,	    /* DT_GNU_HASH header, bloom or buckets past their segment */
	ELFR_E_GNU_HASH_EMPTY,	    /* DT_GNU_HASH with zero buckets */
	ELFR_E_GNU_HASH_BUCKET,	    /* a DT_GNU_HASH bucket below symoffset */
	ELFR_E_GNU_CHAIN_END,	    /* DT_GNU_HASH chain runs past the symbol table */
	ELFR_E_SYMTAB_RANGE,	    /* symbol count x entry size past the table's segment */
	ELFR_E_VERSYM_RANGE,	    /* DT_VERSYM shorter than the symbol table */
	ELFR_E_SYM_INDEX,	    /* relocation's symbol index past the symbol count */
	ELFR_E_NAME_RANGE,	    /* symbol name offset not below DT_STRSZ */
	ELFR_E_NO_PLTREL,	    /* DT_JMPREL without DT_PLTREL */
	ELFR_E_BAD_PLTREL,	    /* DT_PLTREL neither DT_REL nor DT_RELA */
	ELFR_E_NO_RELSZ,	    /* relocation table without its size */
	ELFR_E_RELENT,		    /* DT_RELAENT/DT_RELENT not the size of one entry */
	ELFR_E_RELSZ_ODD,	    /* relocation table size not a multiple of the entry */
	ELFR_E_REL_RANGE,	    /* relocation table past its segment */
	ELFR_E_SLOT_RANGE,	    /* slot not inside a writable PT_LOAD segment */
	ELFR_E_SLOT_ALIGN,	    /* slot not aligned to a word */
	ELFR_E_NO_ROOM,		    /* more slots than the caller's array holds */
	ELFR_E_NO_SYMBOL,	    /* symbol not found (or not defined) */
	ELFR_E_NO_BUILD_ID,	    /* no NT_GNU_BUILD_ID note */
	ELFR_E_OPEN,		    /* open() failed; errno tells why */
	ELFR_E_LIBELF,		    /* libelf failed (elf_errmsg(-1) tells why) */
	ELFR_E_NOMEM,		    /* out of memory (file view only) */
	ELFR_E_TOO_BIG,		    /* image larger than the caller allows */
	ELFR_E_NO_EH_TABLE,	    /* no .eh_frame_hdr search table in the usual encoding */
	ELFR_E_COUNT
};

/* Text for a reason, lowercase, no period; never NULL ("unknown reason"). */
const char *elfr_strerror(enum elfr_reason why);

/* Name of an e_machine value ("x86-64", "i386", ...) or NULL if unknown. */
const char *elfr_machine_name(unsigned machine);

/* ---- in-memory view ---------------------------------------------------- */

#define ELFR_MAX_LOAD 16      /* PT_LOAD segments per module */
#define ELFR_MAX_PHDR 64      /* program headers read from an image */
#define ELFR_MAX_NAMES 64     /* wanted names per walk */
#define ELFR_MAX_NAME_LEN 127 /* longest wanted name */

/*
 * Copy len bytes at runtime address addr into dst. Returns 0 or -EFAULT.
 * The walker only asks for ranges inside a readable PT_LOAD segment of the
 * module; a reader for a copy of remote memory still checks its own bounds.
 */
typedef int (*elfr_read_fn)(void *ctx, uintptr_t addr, void *dst, size_t len);

/* A PT_LOAD segment at runtime: [start, end), PF_* flags. */
struct elfr_seg {
	uintptr_t start;
	uintptr_t end;
	uint32_t flags;
};

/*
 * A loaded module as the walker sees it. Plain data: fill it with
 * elfr_mod_init() or elfr_mod_from_image(); it owns nothing. Addresses are
 * runtime addresses (bias + p_vaddr).
 */
struct elfr_mod {
	const char *name; /* for the caller's messages; never read */
	uintptr_t bias;	  /* load bias (dlpi_addr) */
	size_t nload;
	struct elfr_seg load[ELFR_MAX_LOAD];
	bool has_dyn;
	uintptr_t dyn;	       /* PT_DYNAMIC at runtime */
	uintptr_t dyn_size;    /* its p_memsz */
	uintptr_t relro_start; /* PT_GNU_RELRO, [start, end), not page-rounded; */
	uintptr_t relro_end;   /* both 0 when the module has none */
	elfr_read_fn read;
	void *read_ctx;
};

/*
 * Describe a module from its program headers (phdr/phnum are read directly:
 * they must be in the caller's memory, e.g. dl_phdr_info.dlpi_phdr or a
 * copy). read/read_ctx access the module's memory. Returns ELFR_OK,
 * ELFR_E_ARG, ELFR_E_PHDR, ELFR_E_TOO_MANY_LOAD or ELFR_E_LOAD_RANGE; m is
 * filled as far as it got.
 */
enum elfr_reason elfr_mod_init(struct elfr_mod *m, const char *name, uintptr_t bias,
			       const ElfW(Phdr) * phdr, size_t phnum, elfr_read_fn read,
			       void *read_ctx) ELFR_MUST_CHECK;

/* Reader over the own process: a memcpy. Safe only for ranges the walker checked. */
int elfr_read_self(void *ctx, uintptr_t addr, void *dst, size_t len);

/* A byte buffer standing for memory at [base, base + len). */
struct elfr_buf {
	const void *data;
	size_t len;
	uintptr_t base;
};

/* Reader over a struct elfr_buf (ctx); -EFAULT outside [base, base + len). */
int elfr_read_buf(void *ctx, uintptr_t addr, void *dst, size_t len);

/*
 * Describe a module laid out in a buffer as it would be in memory: the
 * buffer's first byte is the module's vaddr 0, placed at runtime address
 * buf->base (the load bias). The ELF header is read at vaddr 0 and the
 * program headers at vaddr e_phoff (true for every shared object whose
 * first PT_LOAD maps file offset 0 at vaddr 0). buf must outlive m.
 * Returns ELFR_OK or ELFR_E_NOT_ELF, _CLASS, _MACHINE, _PHDR, or a reason of
 * elfr_mod_init().
 */
enum elfr_reason elfr_mod_from_image(struct elfr_mod *m, const char *name,
				     struct elfr_buf *buf) ELFR_MUST_CHECK;

enum elfr_slot_kind {
	ELFR_SLOT_JUMP = 1, /* JUMP_SLOT from DT_JMPREL (PLT GOT entry) */
	ELFR_SLOT_GLOB_DAT, /* GLOB_DAT (-fno-plt calls, address taken) */
	ELFR_SLOT_ABS, /* word-sized absolute (R_X86_64_64): data pointer, may carry an addend */
};

/* One word to patch. */
struct elfr_slot {
	uintptr_t addr; /* runtime address of the word */
	int64_t addend; /* RELA addend (0 for REL); patch only when 0 */
	uint32_t sym;	/* symbol index in the module's DT_SYMTAB */
	uint16_t want;	/* index into the caller's names[] */
	uint8_t kind;	/* enum elfr_slot_kind */
	uint8_t relro;	/* 1 when inside PT_GNU_RELRO (read-only once relocated) */
};

enum elfr_hash_kind {
	ELFR_HASH_NONE = 0,
	ELFR_HASH_GNU,	/* count taken from DT_GNU_HASH */
	ELFR_HASH_SYSV, /* count taken from DT_HASH nchain */
};

/* What a walk learned about the module besides its slots. */
struct elfr_info {
	size_t nsyms;	     /* dynamic symbol count (from the hash table) */
	size_t nslots;	     /* slots found; more than cap with ELFR_E_NO_ROOM */
	bool dptr_relocated; /* d_ptr values held runtime addresses (glibc) */
	uint8_t hash_kind;   /* enum elfr_hash_kind */
	bool has_relocs;     /* module has DT_JMPREL, DT_RELA or DT_REL */
};

/*
 * Find every slot of module m whose relocation names one of names[0..nnames)
 * (at most ELFR_MAX_NAMES, each at most ELFR_MAX_NAME_LEN bytes). Symbol
 * versions are ignored: a reference to malloc@GLIBC_2.2.5 is a malloc slot.
 * Slots go to slots[0..cap) in table order (DT_JMPREL first, then DT_RELA,
 * then DT_REL). info (may be NULL) gets counts and what was detected.
 * Returns ELFR_OK; ELFR_E_NO_ROOM when more than cap slots exist (the first
 * cap are stored and info->nslots has the full count); any other reason
 * means the module is malformed and no slot may be trusted. A module
 * without relocation tables gives ELFR_OK and no slots; so does one that
 * has no symbol of a wanted name (its relocation entries are then not read).
 * Allocates nothing; about 4 KiB of stack.
 */
enum elfr_reason elfr_find_slots(const struct elfr_mod *m, const char *const *names, size_t nnames,
				 struct elfr_slot *slots, size_t cap,
				 struct elfr_info *info) ELFR_MUST_CHECK;

/*
 * Find a defined dynamic symbol by name (versions ignored; the default
 * version, i.e. one not marked hidden in DT_VERSYM, wins over a hidden one).
 * A linear walk over the symbol table, bounded by the hash table's count.
 * *value gets bias + st_value. Returns ELFR_OK, ELFR_E_NO_SYMBOL or a reason
 * the module is malformed.
 */
enum elfr_reason elfr_mod_symbol(const struct elfr_mod *m, const char *name,
				 uintptr_t *value) ELFR_MUST_CHECK;

/*
 * Called once per module of the own process by elfr_walk_self(), with the
 * reason its walk ended and the slots found (valid only during the call).
 * Return 0 to go on, anything else to stop the enumeration with that value.
 * Runs under the loader's lock (dl_iterate_phdr): must not dlopen/dlclose.
 */
typedef int (*elfr_module_fn)(void *arg, const struct elfr_mod *m, enum elfr_reason why,
			      const struct elfr_info *info, const struct elfr_slot *slots,
			      size_t nslots);

/*
 * Walk every module of the own process (dl_iterate_phdr, including the main
 * program and the vDSO) with elfr_find_slots(), reusing slots[0..cap) for
 * each module. Returns 0, -EINVAL when fn is NULL, or the first nonzero
 * value fn returned.
 * Allocates nothing; not async-signal-safe (takes the loader's lock).
 */
int elfr_walk_self(const char *const *names, size_t nnames, struct elfr_slot *slots, size_t cap,
		   elfr_module_fn fn, void *arg);

/* ---- file view (libelf; runs in heaptap, may allocate) ------------------ */

struct elfr_file;

/* Class, machine and type of an ELF file. */
struct elfr_ident {
	unsigned elfclass; /* ELFCLASS32 or ELFCLASS64 */
	unsigned machine;  /* EM_* */
	unsigned type;	   /* ET_EXEC, ET_DYN, ... */
};

/*
 * Open an ELF file (e.g. /proc/PID/root/usr/lib/libc.so.6 or
 * /proc/PID/map_files/START-END) and keep it open until elfr_file_close().
 * Returns ELFR_OK, ELFR_E_ARG, ELFR_E_OPEN (errno tells why), ELFR_E_NOMEM,
 * ELFR_E_LIBELF or ELFR_E_NOT_ELF. *out is NULL on failure.
 */
enum elfr_reason elfr_file_open(const char *path, struct elfr_file **out) ELFR_MUST_CHECK;

/* Close a file view; NULL is fine. */
void elfr_file_close(struct elfr_file *f);

/* Fill *id from the ELF header. Returns ELFR_OK or ELFR_E_LIBELF. */
enum elfr_reason elfr_file_ident(const struct elfr_file *f, struct elfr_ident *id) ELFR_MUST_CHECK;

/*
 * Check that the file is of this build's class and machine: attach refuses
 * anything else. Returns ELFR_OK, ELFR_E_CLASS, ELFR_E_MACHINE or
 * ELFR_E_LIBELF; *id (may be NULL) gets what the file says, for a message
 * such as "target is a 32-bit i386 process".
 */
enum elfr_reason elfr_file_check_native(const struct elfr_file *f,
					struct elfr_ident *id) ELFR_MUST_CHECK;

/*
 * Copy the NT_GNU_BUILD_ID note's bytes (found through PT_NOTE, so stripped
 * files work) into buf[0..cap); *len gets the full length, which may exceed
 * cap (then only cap bytes were copied). Returns ELFR_OK, ELFR_E_NO_BUILD_ID
 * or ELFR_E_LIBELF.
 */
enum elfr_reason elfr_file_build_id(const struct elfr_file *f, void *buf, size_t cap,
				    size_t *len) ELFR_MUST_CHECK;

/*
 * Address in the process of the defined, exported (global or weak, default
 * visibility) dynamic symbol name, given the file's load bias there.
 * Uses .dynsym from the section headers; when the file has none (stripped
 * of section headers) it lays the file out in memory and walks its
 * PT_DYNAMIC with elfr_mod_symbol(). The default version wins over hidden
 * ones (dlopen@@GLIBC_2.34 over dlopen@GLIBC_2.2.5).
 * Returns ELFR_OK, ELFR_E_NO_SYMBOL or another reason.
 */
enum elfr_reason elfr_file_symbol(struct elfr_file *f, const char *name, uintptr_t bias,
				  uintptr_t *addr) ELFR_MUST_CHECK;

/*
 * The function attach calls to load its library: dlopen (glibc >= 2.34,
 * musl), else __libc_dlopen_mode (older glibc: same arguments). *which
 * (may be NULL) gets the name found. Returns like elfr_file_symbol().
 */
enum elfr_reason elfr_file_dlopen(struct elfr_file *f, uintptr_t bias, uintptr_t *addr,
				  const char **which) ELFR_MUST_CHECK;

/*
 * Page-aligned p_vaddr of the first PT_LOAD: a mapping's start minus it is
 * the load bias. Returns ELFR_OK, ELFR_E_ARG or ELFR_E_PHDR.
 */
enum elfr_reason elfr_file_first_load(const struct elfr_file *f, uint64_t *vaddr) ELFR_MUST_CHECK;

/*
 * Call fn for every defined FUNC symbol with a nonzero size in .symtab and
 * .dynsym, local ones included (file addresses: add the load bias). A file
 * without section headers has none. Returns ELFR_OK or ELFR_E_ARG.
 */
typedef void (*elfr_func_fn)(void *arg, const char *name, uint64_t value, uint64_t size);
enum elfr_reason elfr_file_foreach_func(const struct elfr_file *f, elfr_func_fn fn,
					void *arg) ELFR_MUST_CHECK;

/*
 * The newest symbol version that `need` requires from the library soname
 * (its SHT_GNU_verneed, e.g. "GLIBC_2.34" from "libc.so.6") and that `def`
 * does not define (its SHT_GNU_verdef), into missing[0..mcap); newest gets
 * def's newest numbered definition of the same family ("GLIBC_2.31", never
 * "GLIBC_PRIVATE"), or "". Both
 * are "" when def defines all, when need needs nothing from soname, or when
 * either file has no such section (musl: nothing to compare). Returns
 * ELFR_OK or ELFR_E_ARG.
 */
enum elfr_reason elfr_file_version_missing(const struct elfr_file *need, const char *soname,
					   const struct elfr_file *def, char *missing, size_t mcap,
					   char *newest, size_t ncap) ELFR_MUST_CHECK;

/* The .eh_frame_hdr binary search table of a file, in file addresses (add the load bias). */
struct elfr_eh_table {
	uint64_t lo_vaddr, hi_vaddr;	/* extent of the PT_LOAD segments */
	uint64_t hdr_vaddr;		/* PT_GNU_EH_FRAME */
	uint64_t fde_count;		/* table entries, 8 bytes each, at hdr + 12 */
};
/*
 * Where that table lies, as libunwind's remote-table format wants it. Only
 * the encodings GNU ld and lld write are accepted. Returns ELFR_OK,
 * ELFR_E_ARG, ELFR_E_PHDR or ELFR_E_NO_EH_TABLE.
 */
enum elfr_reason elfr_file_eh_table(const struct elfr_file *f,
				    struct elfr_eh_table *t) ELFR_MUST_CHECK;

/*
 * Lay out the ELF file bytes file[0..flen) as the loader would map them:
 * each PT_LOAD's file bytes at its p_vaddr, the rest zero. The image is
 * malloc'd (*image, caller frees) and *ilen is the highest segment end, at
 * most max bytes. For tests, the fuzzer and the stripped-file fallback.
 * Returns ELFR_OK, ELFR_E_NOT_ELF, ELFR_E_CLASS, ELFR_E_PHDR, ELFR_E_TOO_BIG
 * or ELFR_E_NOMEM.
 */
enum elfr_reason elfr_layout(const void *file, size_t flen, size_t max, unsigned char **image,
			     size_t *ilen) ELFR_MUST_CHECK;

#endif /* HEAPTAP_ELFR_H */
