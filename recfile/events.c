/* recfile/events.c - rec_event_chunk: decode one event chunk on demand */
/* SPDX-License-Identifier: MIT */
/*
 * Called from several threads at once: it reads the reader only (the
 * dropped counter is atomic) and uses its own ZSTD_DCtx and buffers.
 */
#include <stdlib.h>
#include <zstd.h>

#include "track/wire.h"
#include "recfile/internal.h"

static int decode(const struct rec_reader *r, const struct rec_evchunk *e, const uint8_t *p,
		  struct rec_event *ev, size_t *n)
{
	const uint8_t *end = p + e->usize;
	uint64_t v, w, dropped = 0;
	size_t k = 0;

	for (uint32_t i = 0; i < e->count; i++) {
		uint32_t op;

		if (wire_get_varint(&p, end, &v))
			return -REC_E_CORRUPT;
		op = (uint32_t)(v & 3);
		w = 0;
		if (op == REC_EV_WEIGHTED) {
			if (wire_get_varint(&p, end, &w))
				return -REC_E_CORRUPT;
			op = REC_EV_ALLOC;
		}
		if ((v >> 2) >= r->ninfos) {
			dropped++;
			continue;
		}
		ev[k++] = (struct rec_event){ .info = (uint32_t)(v >> 2), .op = op, .weight = w };
	}
	if (p != end)
		return -REC_E_CORRUPT;
	if (dropped)
		__atomic_fetch_add((uint64_t *)&r->dropped, dropped, __ATOMIC_RELAXED);
	*n = k;
	return 0;
}

int rec_event_chunk(const struct rec_reader *r, size_t i, struct rec_event **ev, size_t *n,
		    uint64_t *first)
{
	const struct rec_evchunk *e;
	struct rec_event *out = NULL;
	uint8_t *c = NULL, *u = NULL;
	const uint8_t *src;
	ZSTD_DCtx *dctx = NULL;
	size_t got;
	int ret = -REC_E_RANGE;

	*ev = NULL;
	*n = 0;
	if (i >= r->nevc)
		goto out;
	e = &r->evc[i];
	ret = -REC_E_NOMEM;
	if (r->mem) {
		src = r->mem + e->off;
	} else {
		c = malloc(e->csize ? e->csize : 1);
		if (!c)
			goto out;
		ret = rec_read_at(r, e->off, c, e->csize);
		if (ret)
			goto out_free;
		src = c;
	}
	ret = -REC_E_NOMEM;
	u = malloc(e->usize ? e->usize : 1);
	out = malloc((size_t)e->count * sizeof(*out)); /* count <= usize <= REC_MAX_CHUNK */
	dctx = ZSTD_createDCtx();
	if (!u || !out || !dctx)
		goto out_free;
	got = ZSTD_decompressDCtx(dctx, u, e->usize, src, e->csize);
	if (ZSTD_isError(got) || got != e->usize) {
		ret = -REC_E_ZSTD;
		goto out_free;
	}
	ret = decode(r, e, u, out, n);
	if (ret)
		goto out_free;
	*ev = out;
	out = NULL;
	*first = e->first;
out_free:
	ZSTD_freeDCtx(dctx);
	free(out);
	free(u);
	free(c);
out:
	return ret;
}

uint64_t rec_dropped_events(const struct rec_reader *r)
{
	return __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
}
