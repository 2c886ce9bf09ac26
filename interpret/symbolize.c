/* interpret/symbolize.c - resolve each distinct ip to its module and symbols, once */
/* SPDX-License-Identifier: MIT */
/*
 * Runs once at the end of a session (docs/decisions.md 3). Every ip gets its
 * module (modules.c), then the ips are sorted by module and address and
 * each module is opened once: one Dwfl per module, reported with
 * dwfl_report_elf at its load bias. A separate Dwfl per module (rather than
 * one for all) lets two modules that occupied the same addresses at
 * different times both be symbolized. libdwfl finds separate debug info the
 * standard ways (build-id under <debug>/.build-id, .gnu_debuglink, <debug>)
 * and caches CU and line lookups per module, which the sort exploits.
 *
 * A symbol chain is innermost first: the function containing the ip (maybe
 * inlined) with the ip's file:line, then for each inlined level the caller
 * with the call site's DW_AT_call_file:DW_AT_call_line, ending at the
 * out-of-line DW_TAG_subprogram. Without DWARF the ELF symbol table gives a
 * function name alone. C++ names are demangled (demangle.cc).
 *
 * The ip WIRE_IP_CUT marks a stack the target could not unwind further (code
 * without unwind info, e.g. JIT code): it gets no module and the name
 * "[frames cut: no unwind info]", which report/ recognises by the ip.
 */
#define _GNU_SOURCE /* asprintf */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/internal.h"

struct sorted_ip {
	long mod; /* index in c->mods.v, -1 = none */
	uint64_t ip;
	uint32_t idx;
};

struct symctx {
	struct itp_ctx *c;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	Dwfl *dwfl;		 /* for the current module, or NULL */
	Dwfl_Module *mod;	 /* NULL when the current module cannot be symbolized */
	struct itp_cu_cache cus; /* function ranges per CU of the current module */
	struct itp_symtab syms;	 /* its ELF function symbols */
	char *to_free[ITP_MAX_INLINE + 1];
	size_t nfree;
};

static int sorted_cmp(const void *a, const void *b)
{
	const struct sorted_ip *x = a, *y = b;

	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void close_module(struct symctx *s)
{
	itp_cu_cache_free(&s->cus);
	itp_symtab_free(&s->syms);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	s->dwfl = NULL;
	s->mod = NULL;
}

/* open m with libdwfl; leaves s->mod NULL when that is not possible */
static void open_module(struct symctx *s, const struct itp_module *m)
{
	const char *sysroot = s->c->opt->sysroot;
	const unsigned char *bits;
	GElf_Addr vaddr;
	char *file = NULL;
	int n;

	close_module(s);
	/* "[vdso]" and the like have no file; an empty path is unknown */
	if (m->path[0] != '/')
		return;
	if (asprintf(&file, "%s%s", sysroot ? sysroot : "", m->path) < 0)
		return;
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl)
		goto out_free;
	dwfl_report_begin(s->dwfl);
	/* base is the load bias: add_p_vaddr places the first PT_LOAD at bias + p_vaddr */
	s->mod = dwfl_report_elf(s->dwfl, m->path, file, -1, m->base, true);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!s->mod)
		goto out_free;
	if (m->build_id_len) {
		n = dwfl_module_build_id(s->mod, &bits, &vaddr);
		if (n > 0 &&
		    ((size_t)n != m->build_id_len || memcmp(bits, m->build_id, (size_t)n))) {
			/* the file changed since the target loaded it */
			s->c->res->warn.build_id_mismatch++;
			close_module(s);
		}
	}
out_free:
	free(file);
}

static const char *keep(struct symctx *s, char *p)
{
	if (p && s->nfree < sizeof(s->to_free) / sizeof(s->to_free[0]))
		s->to_free[s->nfree++] = p;
	else if (p) {
		free(p);
		return NULL;
	}
	return p;
}

/* a function name for die: the demangled linkage name, else DW_AT_name */
static const char *die_function(struct symctx *s, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name;
	char *d;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (name) {
		d = itp_demangle(name);
		if (d)
			return keep(s, d);
	}
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/* fill chain for ip from the current module; returns its length */
static size_t symbolize_ip(struct symctx *s, uint64_t ip, struct rec_sym *chain)
{
	Dwarf_Die path[ITP_MAX_DEPTH], cu_mem, *cu;
	const char *file = NULL;
	Dwarf_Addr bias = 0;
	Dwfl_Line *line;
	int lineno = 0, depth, i;
	size_t n = 0;

	line = dwfl_module_getsrc(s->mod, ip);
	if (line) {
		file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		if (lineno < 0)
			lineno = 0;
	}
	cu = dwfl_module_addrdie(s->mod, ip, &bias);
	depth = cu ? itp_dwarf_scopes(&s->cus, cu, ip - bias, path, ITP_MAX_DEPTH) : 0;
	if (cu)
		cu_mem = *cu;
	/* path[0] is outermost: walk it innermost first */
	for (i = depth; i-- > 0 && n < ITP_MAX_INLINE;) {
		Dwarf_Die *d = &path[i];
		Dwarf_Attribute a;
		Dwarf_Word v;
		int tag = dwarf_tag(d);

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		chain[n].function = die_function(s, d);
		chain[n].file = file;
		chain[n].line = (uint32_t)lineno;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* the next outer link is where this inlined body was called */
		file = call_file(&cu_mem, d);
		lineno = 0;
		if (!dwarf_formudata(dwarf_attr(d, DW_AT_call_line, &a), &v) && v <= INT32_MAX)
			lineno = (int)v;
	}
	if (!n) {
		/* no DWARF for it: the ELF symbol table still names the function */
		const char *name = itp_symtab_lookup(&s->syms, s->mod, ip);

		if (name || file) {
			char *d = name ? itp_demangle(name) : NULL;

			chain[0].function = d ? keep(s, d) : name;
			chain[0].file = file;
			chain[0].line = (uint32_t)lineno;
			n = 1;
		}
	}
	return n;
}

int itp_symbolize(struct itp_ctx *c)
{
	struct rec_sym chain[ITP_MAX_INLINE];
	struct symctx s = {.c = c};
	struct sorted_ip *v;
	long cur = -2;
	size_t i, j;
	int ret = 0, rc;

	if (!c->nips)
		return 0;
	if (itp_modules_index(&c->mods))
		return itp_fail(c, ITP_E_NOMEM, "out of memory indexing modules");
	v = malloc(c->nips * sizeof(*v));
	if (!v)
		return itp_fail(c, ITP_E_NOMEM, "out of memory symbolizing");
	for (i = 0; i < c->nips; i++) {
		v[i].mod = itp_modules_find(&c->mods, c->ips[i].ip, c->ips[i].seq);
		v[i].ip = c->ips[i].ip;
		v[i].idx = (uint32_t)i;
	}
	qsort(v, c->nips, sizeof(*v), sorted_cmp);

	s.cb.find_elf = dwfl_build_id_find_elf;
	s.cb.find_debuginfo = dwfl_standard_find_debuginfo;
	s.cb.section_address = dwfl_offline_section_address;
	if (c->opt->sysroot && c->opt->sysroot[0]) {
		if (asprintf(&s.debuginfo_path, ":.debug:%s/usr/lib/debug", c->opt->sysroot) < 0) {
			free(v);
			return itp_fail(c, ITP_E_NOMEM, "out of memory symbolizing");
		}
		s.cb.debuginfo_path = &s.debuginfo_path;
	}

	for (i = 0; i < c->nips; i++) {
		const struct itp_module *m = v[i].mod >= 0 ? c->mods.v[v[i].mod] : NULL;
		size_t n = 0;

		if (v[i].ip == WIRE_IP_CUT) {
			/* the marker of a cut stack (track/wire.h), no code address */
			m = NULL;
			chain[0] = (struct rec_sym){.function = "[frames cut: no unwind info]"};
			n = 1;
		} else if (m && !c->opt->no_symbols) {
			if (v[i].mod != cur)
				open_module(&s, m);
			cur = v[i].mod;
			if (s.mod)
				n = symbolize_ip(&s, v[i].ip, chain);
		}
		if (!n || !chain[0].function)
			c->res->warn.unsymbolized_ips++;
		rc = rec_put_symbol(c->w, v[i].idx, m ? m->rec_idx : REC_NONE, chain, n);
		for (j = 0; j < s.nfree; j++)
			free(s.to_free[j]);
		s.nfree = 0;
		if (rc) {
			ret = itp_out_fail(c, rc, "symbols");
			break;
		}
	}
	close_module(&s);
	free(s.debuginfo_path);
	free(v);
	return ret;
}
