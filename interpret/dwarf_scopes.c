/* interpret/dwarf_scopes.c - find the scopes containing an address, with a per-CU index */
/* SPDX-License-Identifier: MIT */
/*
 * dwarf_getscopes walks a CU's DIE tree from its start for every address
 * (and follows abstract origins, so the callers of an inlined body need a
 * second walk with dwarf_getscopes_die). For many ips in big CUs that is
 * quadratic. Here the first lookup in a CU records the address ranges of its
 * out-of-line functions (DW_TAG_subprogram at top level or inside
 * namespaces), sorted; later lookups binary-search them and descend only
 * into the one function's children that contain the address: lexical
 * blocks and inlined subroutines, which gives the inline chain directly.
 *
 * DWARF comes from files on disk the target named: every walk is bounded
 * (nesting depth ITP_MAX_DEPTH, namespace depth NS_DEPTH).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>

#include "interpret/sym_internal.h"

#define NS_DEPTH 32

struct collect {
	struct itp_fn_range *r;
	size_t n, cap;
	int nomem;
};

static void add_range(struct collect *c, uint64_t lo, uint64_t hi, uint64_t off)
{
	if (hi <= lo || c->nomem)
		return;
	if (c->n == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 64;
		struct itp_fn_range *r = realloc(c->r, ncap * sizeof(*r));

		if (!r) {
			c->nomem = 1;
			return;
		}
		c->r = r;
		c->cap = ncap;
	}
	c->r[c->n++] = (struct itp_fn_range){.lo = lo, .hi = hi, .die_off = off};
}

static void collect_fns(struct collect *c, Dwarf_Die *parent, int depth)
{
	Dwarf_Die child;

	if (depth > NS_DEPTH || dwarf_child(parent, &child))
		return;
	do {
		int tag = dwarf_tag(&child);

		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, start, end;
			ptrdiff_t o = 0;

			while ((o = dwarf_ranges(&child, o, &base, &start, &end)) > 0)
				add_range(c, start, end, dwarf_dieoffset(&child));
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_module) {
			collect_fns(c, &child, depth + 1);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int range_cmp(const void *a, const void *b)
{
	const struct itp_fn_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int index_cu(struct itp_cu_cache *cc, Dwarf_Die *cu, uint32_t *k)
{
	struct collect c = {0};

	if (cc->n >= ITP_MAX_TABLE)
		return -E2BIG;
	if (cc->n == cc->cap) {
		size_t ncap = cc->cap ? cc->cap * 2 : 64;
		struct itp_cu_fns *v = realloc(cc->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		cc->v = v;
		cc->cap = ncap;
	}
	collect_fns(&c, cu, 0);
	if (c.nomem) {
		free(c.r);
		return -ENOMEM;
	}
	qsort(c.r, c.n, sizeof(*c.r), range_cmp);
	if (itp_map_put(&cc->by_off, dwarf_dieoffset(cu), (uint32_t)cc->n)) {
		free(c.r);
		return -ENOMEM;
	}
	cc->v[cc->n] = (struct itp_cu_fns){.r = c.r, .n = c.n};
	*k = (uint32_t)cc->n++;
	return 0;
}

/* the function range containing pc, or NULL */
static const struct itp_fn_range *find_fn(const struct itp_cu_fns *f, uint64_t pc)
{
	size_t lo = 0, hi = f->n, i, back;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of distinct functions do not overlap, but tolerate a few */
	for (i = lo, back = 0; i-- > 0 && back < 8; back++)
		if (pc < f->r[i].hi)
			return &f->r[i];
	return NULL;
}

int itp_dwarf_scopes(struct itp_cu_cache *cc, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *path, int max)
{
	const struct itp_fn_range *fr;
	Dwarf *dw = dwarf_cu_getdwarf(cu->cu);
	uint32_t k;
	int depth = 0;

	if (!dw || max < 1)
		return 0;
	if (!itp_map_get(&cc->by_off, dwarf_dieoffset(cu), &k) && index_cu(cc, cu, &k))
		return 0;
	fr = find_fn(&cc->v[k], pc);
	if (!fr || !dwarf_offdie(dw, fr->die_off, &path[0]))
		return 0;
	depth = 1;
	while (depth < max) {
		Dwarf_Die child;
		int found = 0;

		if (dwarf_child(&path[depth - 1], &child))
			break;
		do {
			int tag = dwarf_tag(&child);

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
			    tag != DW_TAG_subprogram && tag != DW_TAG_try_block &&
			    tag != DW_TAG_catch_block)
				continue;
			if (dwarf_haspc(&child, pc) == 1) {
				path[depth++] = child;
				found = 1;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return depth;
}

void itp_cu_cache_free(struct itp_cu_cache *cc)
{
	size_t i;

	for (i = 0; i < cc->n; i++)
		free(cc->v[i].r);
	free(cc->v);
	itp_map_free(&cc->by_off);
	*cc = (struct itp_cu_cache){0};
}
