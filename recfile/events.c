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

/* a column being read */
struct cur {
	const uint8_t *p, *end;
};

/* AGE: one lane's (all events are lane 0 without REC_EVF_LANES) */
struct dec_lane {
	uint64_t prev_free;
	uint64_t age;
	uint32_t *hist; /* infos of the lane's allocs in the chunk */
	size_t nh;
};

struct dec_state {
	const uint32_t *ids; /* RANKED table */
	uint64_t nd;
	int64_t hw;	     /* RECENT */
	uint64_t prev[2];    /* DELTA */
	uint64_t ninfos;
	struct dec_lane l[REC_EV_LANES];
};

/* one info coded in mode (without the AGE flag), read from c; 0 or -REC_E_CORRUPT */
static int get_plain(struct dec_state *d, struct cur *c, int mode, int cl, uint64_t *info)
{
	uint64_t v;

	if (mode == REC_EVM_RANKED) {
		if (c->p == c->end)
			return -REC_E_CORRUPT;
		v = *c->p++;
		if (v == REC_EV_ESC) {
			if (wire_get_varint(&c->p, c->end, &v) || v >= UINT64_MAX - REC_EV_ESC)
				return -REC_E_CORRUPT;
			v += REC_EV_ESC;
		}
		if (v >= d->nd)
			return -REC_E_CORRUPT;
		*info = d->ids[v];
		return 0;
	}
	if (wire_get_varint(&c->p, c->end, &v))
		return -REC_E_CORRUPT;
	/* unsigned: a crafted value wraps, and fails the range check */
	if (mode == REC_EVM_DELTA) {
		*info = d->prev[cl] + (uint64_t)rec_unzigzag(v);
		d->prev[cl] = *info;
	} else {
		*info = (uint64_t)(d->hw + 1) + (uint64_t)rec_unzigzag(v);
	}
	return 0;
}

/* one free in AGE coding in lane l, read from c */
static int get_age(struct dec_lane *l, struct cur *c, uint64_t *info)
{
	uint64_t v;

	if (wire_get_varint(&c->p, c->end, &v))
		return -REC_E_CORRUPT;
	if (v & 1) {
		*info = l->prev_free + (uint64_t)rec_unzigzag(v >> 1);
	} else {
		if (v)
			l->age += (uint64_t)rec_unzigzag((v - 2) >> 1);
		if (l->age < 1 || l->age > l->nh)
			return -REC_E_CORRUPT;
		*info = l->hist[l->nh - l->age];
	}
	l->prev_free = *info;
	return 0;
}

/* the op (with its lane) of event i */
static inline uint32_t op_at(const uint8_t *ops, int lanes, uint32_t i)
{
	return lanes ? ops[i] : (ops[i / 4] >> (2 * (i % 4))) & 3;
}

/* AGE: each lane's allocs in hist after those of the lanes before it */
static void lanes_init(struct dec_state *d, const uint8_t *ops, int lanes, uint32_t count,
		       uint32_t *hist)
{
	size_t base = 0, nl[REC_EV_LANES] = { 0 };

	for (uint32_t i = 0; i < count; i++) {
		uint32_t op = op_at(ops, lanes, i);

		if (!rec_ev_class(op))
			nl[op >> 2]++;
	}
	for (int l = 0; l < REC_EV_LANES; l++) {
		d->l[l] = (struct dec_lane){ .age = 1, .hist = hist + base };
		base += nl[l];
	}
}

/* the decoder of encode_events.c; every count and length checked first */
int rec_decode_events(const struct rec_reader *r, const uint8_t *p, size_t len, uint32_t count,
		      struct rec_event *ev, size_t *n)
{
	struct dec_state d = { .hw = -1, .ninfos = r->ninfos };
	const uint8_t *ops, *end = p + len;
	struct cur col[2]; /* allocs' and frees' codes: one column unless REC_EVF_SPLIT */
	uint32_t *ids = NULL, *hist = NULL;
	uint64_t v, info, dropped = 0, opbytes;
	size_t k = 0;
	int mode, age, split, lanes, ret = -REC_E_CORRUPT;

	*n = 0;
	if (p == end)
		goto out;
	mode = *p++;
	age = mode & REC_EVF_AGE;
	split = !!(mode & REC_EVF_SPLIT);
	lanes = !!(mode & REC_EVF_LANES);
	mode &= ~(REC_EVF_AGE | REC_EVF_SPLIT | REC_EVF_LANES);
	if (mode == REC_EVM_RANKED) {
		/* each table entry takes at least one byte */
		if (wire_get_varint(&p, end, &d.nd) || d.nd > (uint64_t)(end - p))
			goto out;
		ids = malloc(d.nd ? d.nd * sizeof(*ids) : 1);
		if (!ids) {
			ret = -REC_E_NOMEM;
			goto out;
		}
		for (uint64_t i = 0; i < d.nd; i++) {
			if (wire_get_varint(&p, end, &v))
				goto out_free;
			/* a dangling info stays dangling: dropped below */
			ids[i] = v < r->ninfos ? (uint32_t)v : REC_NONE;
		}
		d.ids = ids;
	} else if (mode != REC_EVM_RECENT && mode != REC_EVM_DELTA) {
		goto out_free;
	}
	opbytes = lanes ? count : (count + 3ull) / 4;
	if (opbytes > (uint64_t)(end - p))
		goto out_free;
	ops = p;
	p += opbytes;
	col[0] = (struct cur){ .p = p, .end = end };
	col[1] = col[0];
	if (split) {
		/* u32 length of the allocs' column, then it, then the frees' */
		if (4 > end - p || rec_get32(p) > (uint64_t)(end - p - 4))
			goto out_free;
		col[0] = (struct cur){ .p = p + 4, .end = p + 4 + rec_get32(p) };
		col[1] = (struct cur){ .p = col[0].end, .end = end };
	}
	if (age) {
		hist = malloc(count ? (size_t)count * sizeof(*hist) : 1);
		if (!hist) {
			ret = -REC_E_NOMEM;
			goto out_free;
		}
		lanes_init(&d, ops, lanes, count, hist);
	}

	/* infos: one per event; REC_NONE marks one naming no allocinfo */
	for (uint32_t i = 0; i < count; i++) {
		uint32_t op = op_at(ops, lanes, i);
		int cl = rec_ev_class(op);
		struct cur *c = &col[split ? cl : 0];

		if (cl && age)
			ret = get_age(&d.l[op >> 2], c, &info);
		else
			ret = get_plain(&d, c, mode, cl, &info);
		if (ret)
			goto out_free;
		ret = -REC_E_CORRUPT;
		if (info < r->ninfos && (int64_t)info > d.hw)
			d.hw = (int64_t)info;
		ev[i].info = info < r->ninfos ? (uint32_t)info : REC_NONE;
		if (!cl && age) {
			struct dec_lane *l = &d.l[op >> 2];

			l->hist[l->nh++] = ev[i].info;
		}
	}
	/* the allocs' column is used exactly; the frees' one ends where the weights start */
	if (split && col[0].p != col[0].end)
		goto out_free;
	p = col[split].p;
	/* ops and weights; drop the dangling ones (compacting in place, k <= i) */
	for (uint32_t i = 0; i < count; i++) {
		uint32_t op = op_at(ops, lanes, i) & 3;
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
	free(hist);
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
