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

/* the decoder of encode_events.c; every count and length checked first */
int rec_decode_events(const struct rec_reader *r, const uint8_t *p, size_t len, uint32_t count,
		      struct rec_event *ev, size_t *n)
{
	const uint8_t *end = p + len, *ops;
	uint32_t *ids = NULL;
	uint64_t nd = 0, v, info, dropped = 0;
	int64_t hw = -1;
	uint64_t prev[2] = { 0, 0 };
	size_t k = 0;
	int mode, ret = -REC_E_CORRUPT;

	*n = 0;
	if (p == end)
		goto out;
	mode = *p++;
	if (mode == REC_EVM_RANKED) {
		/* each table entry takes at least one byte */
		if (wire_get_varint(&p, end, &nd) || nd > (uint64_t)(end - p))
			goto out;
		ids = malloc(nd ? nd * sizeof(*ids) : 1);
		if (!ids) {
			ret = -REC_E_NOMEM;
			goto out;
		}
		for (uint64_t i = 0; i < nd; i++) {
			if (wire_get_varint(&p, end, &v))
				goto out_free;
			/* a dangling info stays dangling: dropped below */
			ids[i] = v < r->ninfos ? (uint32_t)v : REC_NONE;
		}
	} else if (mode != REC_EVM_RECENT && mode != REC_EVM_DELTA) {
		goto out_free;
	}
	if ((count + 3ull) / 4 > (uint64_t)(end - p))
		goto out_free;
	ops = p;
	p += (count + 3ull) / 4;

	/* infos: one per event; REC_NONE marks one naming no allocinfo */
	for (uint32_t i = 0; i < count; i++) {
		if (mode == REC_EVM_RANKED) {
			if (p == end)
				goto out_free;
			v = *p++;
			if (v == REC_EV_ESC) {
				if (wire_get_varint(&p, end, &v) || v >= UINT64_MAX - REC_EV_ESC)
					goto out_free;
				v += REC_EV_ESC;
			}
			if (v >= nd)
				goto out_free;
			info = ids[v];
		} else if (mode == REC_EVM_DELTA) {
			int cl = rec_ev_class((ops[i / 4] >> (2 * (i % 4))) & 3);

			if (wire_get_varint(&p, end, &v))
				goto out_free;
			/* unsigned: a crafted value wraps, and fails the range check */
			info = prev[cl] + (uint64_t)rec_unzigzag(v);
			prev[cl] = info;
		} else {
			if (wire_get_varint(&p, end, &v))
				goto out_free;
			/* unsigned: a crafted value wraps, and fails the range check */
			info = (uint64_t)(hw + 1) + (uint64_t)rec_unzigzag(v);
			if (info < r->ninfos && (int64_t)info > hw)
				hw = (int64_t)info;
		}
		ev[i].info = info < r->ninfos ? (uint32_t)info : REC_NONE;
	}

	/* ops and weights; drop the dangling ones (compacting in place, k <= i) */
	for (uint32_t i = 0; i < count; i++) {
		uint32_t op = (ops[i / 4] >> (2 * (i % 4))) & 3;
		uint32_t in = ev[i].info;

		v = 0;
		if (op == REC_EV_WEIGHTED) {
			if (wire_get_varint(&p, end, &v))
				goto out_free;
			op = REC_EV_ALLOC;
		}
		if (in == REC_NONE) {
			dropped++;
			continue;
		}
		ev[k++] = (struct rec_event){ .info = in, .op = op, .weight = v };
	}
	if (p != end)
		goto out_free;
	if (dropped)
		__atomic_fetch_add((uint64_t *)&r->dropped, dropped, __ATOMIC_RELAXED);
	*n = k;
	ret = 0;
out_free:
	free(ids);
out:
	return ret;
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
	ret = rec_decode_events(r, u, e->usize, e->count, out, n);
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
