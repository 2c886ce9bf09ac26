/* recfile/access.c - the reader's table accessors */
/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "recfile/internal.h"

int rec_truncated(const struct rec_reader *r)
{
	return r->truncated;
}

uint64_t rec_fixed_refs(const struct rec_reader *r)
{
	return r->fixed;
}

const char *rec_meta(const struct rec_reader *r, const char *key)
{
	/* a later value replaces an earlier one */
	for (size_t i = r->nmeta; i-- > 0;)
		if (!strcmp(r->meta[i].key, key))
			return r->meta[i].value;
	return NULL;
}

const char *rec_string(const struct rec_reader *r, uint32_t idx)
{
	return idx < r->nstrs ? r->strs[idx] : "";
}

const struct rec_module *rec_modules(const struct rec_reader *r, size_t *n)
{
	*n = r->nmods;
	return r->mods;
}

const struct rec_ip *rec_ips(const struct rec_reader *r, size_t *n)
{
	*n = r->nips;
	return r->ips;
}

const struct rec_frame *rec_frames(const struct rec_reader *r, size_t *n)
{
	*n = r->nframes;
	return r->frames;
}

const struct rec_trace *rec_traces(const struct rec_reader *r, size_t *n)
{
	*n = r->ntraces;
	return r->traces;
}

const struct rec_allocinfo *rec_allocinfos(const struct rec_reader *r, size_t *n)
{
	*n = r->ninfos;
	return r->infos;
}

const struct rec_tick *rec_ticks(const struct rec_reader *r, size_t *n)
{
	*n = r->nticks;
	return r->ticks;
}

uint64_t rec_nevents(const struct rec_reader *r)
{
	return r->nevents;
}

size_t rec_nevent_chunks(const struct rec_reader *r)
{
	return r->nevc;
}
