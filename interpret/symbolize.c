/* interpret/symbolize.c - read the symbols of a batch of ips, each module opened once */
/* SPDX-License-Identifier: MIT */
/*
 * itp_sym_batch gets the ips sorted by module and address (symrun.c) and
 * opens each module once: one Dwfl per module, reported with
 * dwfl_report_elf at its load bias. A separate Dwfl per module (rather than
 * one for all) lets two modules that occupied the same addresses at
 * different times both be symbolized.
 *
 * The file is not the path the stream names (the target can rewrite it):
 * it is the fd pinned while the module was mapped (pin.c), else, for a
 * module gone before it could be pinned, the build-id's file in the
 * standard debug directory. The stream's path is opened only where that
 * cannot read what the target could not: by the symbolizer child running
 * as the target's own non-root user, or for a root target (symchild.c
 * sets sym_paths), and without a process (opt->pid 0: replays and tests
 * of streams one wrote). Every file
 * must be a regular file of at most ITP_MAX_MODULE_FILE bytes starting with
 * the ELF magic, so libdwfl never unpacks an image. Separate debug info is
 * looked up by build-id only: under /usr/lib/debug, under the target's
 * root (resolved inside it), and through debuginfod only when asked.
 *
 * A symbol chain is innermost first: the function containing the ip (maybe
 * inlined) with the ip's file:line, then for each inlined level the caller
 * with the call site's DW_AT_call_file:DW_AT_call_line, ending at the
 * out-of-line DW_TAG_subprogram. Without DWARF the ELF symbol table gives a
 * function name alone. C++ names are demangled (demangle.cc).
 *
 * With opt->sym_child itp_sym_batch runs in a child process (symchild.c),
 * dropped to the target's user when asked, and the parent only writes the
 * chains (itp_sym_put).
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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpret/sym_internal.h"

struct symctx {
	struct itp_ctx *c;
	char *debuginfo_path;
	int root_fd;		 /* the target's root (opt->sysroot), -1 */
	Dwfl_Callbacks cb;
	Dwfl *dwfl;		 /* for the current module, or NULL */
	Dwfl_Module *mod;	 /* NULL when the current module cannot be symbolized */
	struct itp_cu_cache cus; /* function ranges per CU of the current module */
	struct itp_symtab syms;	 /* its ELF function symbols */
	char *to_free[ITP_MAX_INLINE + 1];
	size_t nfree;
};

static void close_module(struct symctx *s)
{
	itp_cu_cache_free(&s->cus);
	itp_symtab_free(&s->syms);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	s->dwfl = NULL;
	s->mod = NULL;
}

/* the callbacks have no argument of their own; symbolization is single-threaded */
static struct symctx *cur_sym;

static int no_elf(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr base, char **file,
		  Elf **elfp)
{
	(void)mod, (void)ud, (void)name, (void)base, (void)file;
	*elfp = NULL;
	return -1;
}

/*
 * Separate debug info by build-id only: under /usr/lib/debug (libdwfl, for
 * the main file and a dwz file alike), then under the target's root, then
 * debuginfod if the user asked. A .gnu_debuglink name is the file's word
 * and is not followed.
 */
static int find_debuginfo(Dwfl_Module *mod, void **ud, const char *modname, GElf_Addr base,
			  const char *file, const char *link, GElf_Word crc, char **debug_file)
{
	struct symctx *s = cur_sym;
	const unsigned char *id;
	GElf_Addr vaddr;
	int fd, n;

	fd = dwfl_build_id_find_debuginfo(mod, ud, modname, base, file, link, crc, debug_file);
	if (fd >= 0 || !s)
		return fd;
	if (s->root_fd >= 0 && crc && (n = dwfl_module_build_id(mod, &id, &vaddr)) > 0) {
		fd = itp_open_debug(s->root_fd, id, (size_t)n, ".debug");
		if (fd >= 0)
			return fd;
	}
	if (s->c->opt->debuginfod)
		return dwfl_standard_find_debuginfo(mod, ud, modname, base, file, link, crc,
						    debug_file);
	return -1;
}

/* an fd on the regular file at path (no-process mode) */
static int open_named(const char *path)
{
	int pfd = open(path, O_PATH | O_CLOEXEC), fd;

	if (pfd < 0)
		return -errno;
	fd = itp_reopen_regular(pfd);
	close(pfd);
	return fd;
}

/* the file to read for m: its pin, else its build-id's, else (no process) its path */
static int module_fd(struct symctx *s, const struct itp_module *m)
{
	const struct itp_options *opt = s->c->opt;
	char *file = NULL;
	int fd;

	if (m->pin)
		return fcntl(s->c->pins.v[m->pin - 1].fd, F_DUPFD_CLOEXEC, 0);
	if (opt->pid > 0 && m->build_id_len) {
		fd = itp_open_debug(s->root_fd, m->build_id, m->build_id_len, ".debug");
		if (fd < 0)
			fd = itp_open_debug(s->root_fd, m->build_id, m->build_id_len, "");
		if (fd >= 0)
			return fd;
	}
	/*
	 * Gone before it was pinned (loaded and unloaded between two reads):
	 * the stream's path only where that reads nothing the target could
	 * not read itself (symchild.c decides: sym_paths).
	 */
	if (opt->pid > 0 && !s->c->sym_paths)
		return -ENOENT;
	/* "[vdso]" and the like have no file; an empty path is unknown */
	if (m->path[0] != '/')
		return -ENOENT;
	if (asprintf(&file, "%s%s", opt->sysroot ? opt->sysroot : "", m->path) < 0)
		return -ENOMEM;
	fd = open_named(file);
	free(file);
	return fd;
}

/* open m with libdwfl; leaves s->mod NULL when that is not possible */
static void open_module(struct symctx *s, const struct itp_module *m)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n, fd;

	close_module(s);
	fd = module_fd(s, m);
	if (fd < 0)
		return;
	if (itp_elf_fd_ok(fd)) {
		close(fd);
		return;
	}
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(s->dwfl);
	/* base is the load bias: add_p_vaddr places the first PT_LOAD at bias + p_vaddr */
	s->mod = dwfl_report_elf(s->dwfl, m->path, m->path, fd, m->base, true);
	dwfl_report_end(s->dwfl, NULL, NULL);
	if (!s->mod) {
		close(fd); /* not the module's: libdwfl only keeps it on success */
		return;
	}
	if (m->build_id_len) {
		n = dwfl_module_build_id(s->mod, &bits, &vaddr);
		if (n > 0 &&
		    ((size_t)n != m->build_id_len || memcmp(bits, m->build_id, (size_t)n))) {
			/* the file changed since the target loaded it */
			s->c->res->warn.build_id_mismatch++;
			close_module(s);
		}
	}
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

int itp_sym_batch(struct itp_ctx *c, const struct itp_symq *v, size_t nv, itp_sym_sink sink,
		  void *arg, volatile sig_atomic_t *stop, int root_fd)
{
	struct rec_sym chain[ITP_MAX_INLINE];
	struct symctx s = {.c = c, .root_fd = -1};
	int own_root = root_fd < 0;
	long cur = -2;
	size_t i, j;
	int ret = 0;

	s.cb.find_elf = no_elf;
	s.cb.find_debuginfo = find_debuginfo;
	s.cb.section_address = dwfl_offline_section_address;
	s.debuginfo_path = strdup("/usr/lib/debug");
	if (!s.debuginfo_path)
		return -ENOMEM;
	s.cb.debuginfo_path = &s.debuginfo_path;
	s.root_fd = root_fd;
	if (root_fd < 0 && c->opt->sysroot && c->opt->sysroot[0])
		s.root_fd = open(c->opt->sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cur_sym = &s;
	for (i = 0; i < nv; i++) {
		const struct itp_module *m = v[i].mod >= 0 ? c->mods.v[v[i].mod] : NULL;
		size_t n = 0;

		if (v[i].ip == WIRE_IP_CUT) {
			/* the marker of a cut stack (track/wire.h), no code address */
			chain[0] = (struct rec_sym){.function = "[frames cut: no unwind info]"};
			n = 1;
		} else if (m && !c->opt->no_symbols && !(stop && *stop >= 2)) {
			if (v[i].mod != cur)
				open_module(&s, m);
			cur = v[i].mod;
			if (s.mod)
				n = symbolize_ip(&s, v[i].ip, chain);
		}
		ret = sink(arg, i, chain, n);
		for (j = 0; j < s.nfree; j++)
			free(s.to_free[j]);
		s.nfree = 0;
		if (ret)
			break;
	}
	close_module(&s);
	cur_sym = NULL;
	if (own_root && s.root_fd >= 0)
		close(s.root_fd);
	free(s.debuginfo_path);
	return ret;
}

int itp_sym_put(struct itp_ctx *c, const struct itp_symq *q, const struct rec_sym *chain, size_t n)
{
	const struct itp_module *m = q->mod >= 0 && q->ip != WIRE_IP_CUT ? c->mods.v[q->mod] : NULL;
	int rc;

	if (!n || !chain[0].function)
		c->res->warn.unsymbolized_ips++;
	rc = rec_put_symbol(c->w, q->idx, m ? m->rec_idx : REC_NONE, chain, n);
	return rc ? itp_out_fail(c, rc, "symbols") : 0;
}
