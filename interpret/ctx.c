/* interpret/ctx.c - set up and tear down one interpretation session */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpret/inq_internal.h"
#include "interpret/order_internal.h"

int itp_ctx_init(struct itp_ctx *c, const struct itp_options *opt, struct itp_result *res)
{
	memset(c, 0, sizeof(*c));
	c->opt = opt;
	c->res = res;
	c->tick_wait = UINT64_MAX;
	itp_budget(opt, &c->mem.limit, &c->reorder_limit, NULL);
	c->nodes.mem = &c->mem;
	c->nodes.sparse.mem = &c->mem;
	c->ipmap.mem = &c->mem;
	c->infos.mem = &c->mem;
	c->ptrs.mem = &c->mem;
	c->tids.mem = &c->mem;
	c->mods.by_base.mem = &c->mem;
	c->sites.idx.mem = &c->mem;
	c->xf.by_id.mem = &c->mem;
	return 0;
}

uint64_t itp_default_budget(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;

	return ram / 4 > ITP_MEM_MIN ? ram / 4 : ITP_MEM_MIN;
}

void itp_budget(const struct itp_options *opt, uint64_t *tables, size_t *reorder, size_t *input)
{
	uint64_t total = opt->max_memory ? opt->max_memory : itp_default_budget();
	uint64_t r = opt->reorder_limit ? opt->reorder_limit : ITP_REORDER_LIMIT;
	uint64_t in = opt->input_limit ? opt->input_limit : ITP_INQ_LIMIT;

	/* a small budget shrinks the defaults of the reorder window and the input queue */
	if (!opt->reorder_limit && r > total / 4)
		r = total / 4;
	if (!opt->input_limit && in > total / 8)
		in = total / 8;
	if (in < 2 * ITP_INQ_BLOCK)
		in = 2 * ITP_INQ_BLOCK;
	*tables = total > r + in ? total - r - in : total / 2;
	if (reorder)
		*reorder = (size_t)r;
	if (input)
		*input = (size_t)in;
}

void itp_ctx_free(struct itp_ctx *c)
{
	size_t i;

	for (i = 0; i < c->heap.n; i++)
		itp_chunk_free(c->heap.v[i]);
	free(c->heap.v);
	itp_chunks_free_spare(c);
	free(c->scratch);
	free(c->pk_scratch);
	free(c->ticks);
	free(c->exe);
	free(c->cmdline);
	free(c->ips);
	free(c->threads);
	itp_nodes_free(&c->nodes);
	itp_map_free(&c->ipmap);
	itp_map_free(&c->tids);
	itp_infos_free(&c->infos);
	itp_ptrmap_free(&c->ptrs);
	itp_modules_free(&c->mods);
	itp_pins_free(&c->pins);
	itp_sites_free(&c->sites);
	itp_xframes_free(&c->xf);
	itp_agg_free_all(&c->agg);
	itp_snapsym_free(&c->snapsym);
	memset(c, 0, sizeof(*c));
}
