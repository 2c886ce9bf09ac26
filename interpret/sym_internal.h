/* interpret/sym_internal.h - symbolization: DWARF scopes, ELF symbols, the batch and its child */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_INTERPRET_SYM_INTERNAL_H
#define HEAPTAP_INTERPRET_SYM_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "interpret/internal.h"

#define ITP_MAX_INLINE 64 /* links of one symbol chain */

/* dwarf_scopes.c: function address ranges of each CU seen, to find scopes fast */
struct itp_fn_range {
	uint64_t lo, hi;  /* [lo, hi) in DWARF addresses */
	uint64_t die_off; /* the DW_TAG_subprogram */
};

struct itp_cu_fns {
	struct itp_fn_range *r; /* sorted by lo */
	size_t n;
};

struct itp_cu_cache {
	struct itp_map by_off; /* CU DIE offset -> index in v */
	struct itp_cu_fns *v;
	size_t n, cap;
};

#define ITP_MAX_DEPTH 256 /* nesting of scopes followed below a function */

#ifdef _LIBDW_H
/*
 * itp_dwarf_scopes - the scopes containing pc (a DWARF address) in cu, from
 * the out-of-line subprogram (path[0]) inwards through lexical blocks and
 * inlined subroutines. Returns how many were stored (0 if no function
 * covers pc). The first call for a CU indexes its functions into cc.
 */
int itp_dwarf_scopes(struct itp_cu_cache *cc, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *path, int max);
#endif
void itp_cu_cache_free(struct itp_cu_cache *cc);

/* symtab.c: ELF function symbols of one module, sorted */
struct itp_sym {
	uint64_t lo, hi;  /* runtime addresses */
	const char *name; /* owned by libdwfl */
	int rank;	  /* 0 global, 1 weak, 2 local */
};

struct itp_symtab {
	struct itp_sym *v;
	size_t n;
	int built;
};

#ifdef _LIBDWFL_H
/* itp_symtab_lookup - the function symbol covering ip, or NULL; indexes mod on first use. */
const char *itp_symtab_lookup(struct itp_symtab *t, Dwfl_Module *mod, uint64_t ip);
#endif
void itp_symtab_free(struct itp_symtab *t);

/*
 * symrun.c: itp_symbolize - resolve the module and the symbols of every
 * ip in c->ips and write them with rec_put_symbol; 0 or a negative enum
 * itp_err. Works on a copy of the session holding other ips and writer
 * (snapshots); leaves nothing allocated in c.
 */
int itp_symbolize(struct itp_ctx *c);

/* one ip to symbolize: its module (index in c->mods.v, -1 = none) and its index */
struct itp_symq {
	long mod;
	uint64_t ip;
	uint32_t idx;
};

/* receives the chain of v[i] (n links, valid during the call); 0 or a negative enum itp_err */
typedef int (*itp_sym_sink)(void *arg, size_t i, const struct rec_sym *chain, size_t n);
/*
 * symbolize.c: itp_sym_batch - read ELF and DWARF for v[0, nv) (sorted by module and
 * address) and hand each ip's chain to sink, in order; the ips after a
 * second stop (*stop >= 2) get empty chains. root_fd: the target's root
 * (opt->sysroot) opened by the caller, or -1 to open it here. Returns
 * sink's first error.
 */
int itp_sym_batch(struct itp_ctx *c, const struct itp_symq *v, size_t nv, itp_sym_sink sink,
		  void *arg, volatile sig_atomic_t *stop, int root_fd);
/* itp_sym_put - write q's chain into the recording (counts an unnamed one). */
int itp_sym_put(struct itp_ctx *c, const struct itp_symq *q, const struct rec_sym *chain, size_t n);
/*
 * symchild.c: itp_symchild_run - itp_sym_batch in a child process (dropped
 * to opt->sym_uid/sym_gid with opt->sym_drop, no_new_privs, address-space
 * and CPU limits), the chains written here as they come. A child that
 * dies, hangs or hits a limit leaves the rest of the ips as addresses
 * (res->sym_error says why). 0 or a negative enum itp_err of the writer.
 */
int itp_symchild_run(struct itp_ctx *c, const struct itp_symq *v, size_t nv);

/* demangle.cc: malloc'd demangled C++ name, or NULL if not a mangled name. */
char *itp_demangle(const char *name);

#endif /* HEAPTAP_INTERPRET_SYM_INTERNAL_H */
