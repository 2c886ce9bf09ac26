/* interpret/ctx.c - set up and tear down one interpretation session */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "interpret/internal.h"

int itp_ctx_init(struct itp_ctx *c, const struct itp_options *opt, struct itp_result *res)
{
	memset(c, 0, sizeof(*c));
	c->opt = opt;
	c->res = res;
	c->reorder_limit = opt->reorder_limit ? opt->reorder_limit : ITP_REORDER_LIMIT;
	c->tick_wait = UINT64_MAX;
	return 0;
}

void itp_ctx_free(struct itp_ctx *c)
{
	size_t i;

	for (i = 0; i < c->heap.n; i++)
		itp_chunk_free(c->heap.v[i]);
	free(c->heap.v);
	itp_chunks_free_spare(c);
	free(c->scratch);
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
	itp_agg_free_all(&c->agg);
	itp_snapsym_free(&c->snapsym);
	memset(c, 0, sizeof(*c));
}
