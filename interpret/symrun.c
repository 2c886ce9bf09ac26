/* interpret/symrun.c - symbolize a session's ips: their modules, then the batch */
/* SPDX-License-Identifier: MIT */
/*
 * Runs at the end of a session (docs/decisions.md 3), and for snapshots on
 * the addresses they name. Foreign frames (bit 63, track/wire.h) are no
 * addresses: they are named from their definitions (xframe.c) first. Every
 * other ip gets its module (modules.c), then the ips are sorted by module
 * and address and handed to itp_sym_batch (symbolize.c), which opens each
 * module once: here, or with opt->sym_child in a child process
 * (symchild.c); the chains are written with itp_sym_put either way.
 */
#include <stdlib.h>

#include "interpret/sym_internal.h"

static int sorted_cmp(const void *a, const void *b)
{
	const struct itp_symq *x = a, *y = b;

	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct put_arg {
	struct itp_ctx *c;
	const struct itp_symq *v;
};

static int put_sink(void *arg, size_t i, const struct rec_sym *chain, size_t n)
{
	struct put_arg *a = arg;

	return itp_sym_put(a->c, &a->v[i], chain, n);
}

/*
 * each code ip with its module, sorted by (module, address), *nv of them
 * (foreign frames are not code: itp_symbolize names them); NULL when out
 * of memory
 */
static struct itp_symq *resolve(struct itp_ctx *c, size_t *nv)
{
	struct itp_modindex x;
	struct itp_symq *v = NULL;
	struct itp_modq *q;
	size_t i, n = 0;

	q = malloc((c->nips ? c->nips : 1) * sizeof(*q));
	if (!q)
		return NULL;
	for (i = 0; i < c->nips; i++)
		if (!wire_is_xframe(c->ips[i].ip))
			q[n++] = (struct itp_modq){.ip = c->ips[i].ip, .seq = c->ips[i].seq,
						   .idx = (uint32_t)i};
	if (itp_modindex_build(&x, &c->mods) ||
	    itp_modindex_resolve(&x, &c->mods, q, n, c->opt->stop))
		goto out;
	v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		goto out;
	for (i = 0; i < n; i++)
		v[i] = (struct itp_symq){.mod = q[i].mod, .ip = q[i].ip, .idx = q[i].idx};
	qsort(v, n, sizeof(*v), sorted_cmp);
	*nv = n;
out:
	itp_modindex_free(&x);
	free(q);
	return v;
}

int itp_symbolize(struct itp_ctx *c)
{
	struct itp_symq *v;
	struct put_arg pa;
	size_t nv = 0;
	int ret;

	if (!c->nips)
		return 0;
	/* foreign frames: named from their definitions, never looked up in modules */
	for (size_t i = 0; i < c->nips; i++) {
		if (wire_is_xframe(c->ips[i].ip)) {
			ret = itp_xframe_put(c, (uint32_t)i, c->ips[i].ip);
			if (ret)
				return ret;
		}
	}
	v = resolve(c, &nv);
	if (!v)
		return itp_fail(c, ITP_E_NOMEM, "out of memory symbolizing");
	pa = (struct put_arg){.c = c, .v = v};
	if (!nv)
		ret = 0;
	else if (c->opt->sym_child && !c->opt->no_symbols)
		ret = itp_symchild_run(c, v, nv);
	else
		ret = itp_sym_batch(c, v, nv, put_sink, &pa, c->opt->stop, -1);
	free(v);
	return ret;
}
