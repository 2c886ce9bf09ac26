/* recfile/encode_events.c - the writer's event chunk encoder */
/* SPDX-License-Identifier: MIT */
/*
 * Turns the pending events (info and op arrays, weight varints) into an
 * event chunk payload (internal.h "Event chunk payload"). The mode is
 * chosen per chunk: when few distinct infos recur (the usual case: the same
 * call sites and sizes again and again) their ranks by use count are coded,
 * so the most used info is byte 0; when most events name infos that are new
 * (distinct stacks everywhere), the distance to the highest info seen so
 * far is coded, where a new info is a 0.
 */
#include <stdlib.h>

#include "track/wire.h"
#include "recfile/internal.h"

static uint32_t *rank_freq;

static int by_use(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (rank_freq[x] != rank_freq[y])
		return rank_freq[x] < rank_freq[y] ? 1 : -1;
	return x < y ? -1 : x > y;
}

int rec_encode_events(struct rec_writer *w)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_EVENTS];
	size_t n = b->count, nd = 0, cap;
	int64_t hw = -1;
	uint8_t *p;
	int ranked, ret;

	/* count uses per info (the arrays grow with the info table) */
	if (w->ev_freq_cap < w->ninfos) {
		cap = w->ev_freq_cap;
		ret = rec_grow((void **)&w->ev_freq, &cap, 0, w->ninfos, sizeof(*w->ev_freq));
		if (ret)
			return ret;
		memset(w->ev_freq + w->ev_freq_cap, 0, (cap - w->ev_freq_cap) * sizeof(*w->ev_freq));
		cap = w->ev_freq_cap;
		ret = rec_grow((void **)&w->ev_rank, &cap, 0, w->ninfos, sizeof(*w->ev_rank));
		if (ret)
			return ret;
		w->ev_freq_cap = cap;
	}
	ret = rec_grow((void **)&w->ev_ids, &w->ev_ids_cap, 0, n, sizeof(*w->ev_ids));
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		if (!w->ev_freq[w->ev_info[i]]++)
			w->ev_ids[nd++] = w->ev_info[i];
	/* a rank table pays for itself when infos recur a lot */
	ranked = nd * 4 <= n;
	if (ranked) {
		/* qsort has no context argument in C11; the writer is single-threaded */
		rank_freq = w->ev_freq;
		qsort(w->ev_ids, nd, sizeof(*w->ev_ids), by_use);
		rank_freq = NULL;
		for (size_t i = 0; i < nd; i++)
			w->ev_rank[w->ev_ids[i]] = (uint32_t)i;
	}

	/* mode + table + ops + infos + weights */
	b->len = 0;
	ret = rec_wbuf_reserve(b, 1 + (nd + 1) * WIRE_VARINT_MAX + (n + 3) / 4 +
				      n * WIRE_VARINT_MAX + w->ev_weights.len);
	if (ret)
		goto out_reset;
	p = b->p;
	*p++ = ranked ? REC_EVM_RANKED : REC_EVM_RECENT;
	if (ranked) {
		p += wire_put_varint(p, nd);
		for (size_t i = 0; i < nd; i++)
			p += wire_put_varint(p, w->ev_ids[i]);
	}
	memset(p, 0, (n + 3) / 4);
	for (size_t i = 0; i < n; i++)
		p[i / 4] |= (uint8_t)(w->ev_op[i] << (2 * (i % 4)));
	p += (n + 3) / 4;
	for (size_t i = 0; i < n; i++) {
		uint32_t info = w->ev_info[i];

		if (ranked) {
			uint32_t r = w->ev_rank[info];

			if (r < REC_EV_ESC) {
				*p++ = (uint8_t)r;
			} else {
				*p++ = REC_EV_ESC;
				p += wire_put_varint(p, r - REC_EV_ESC);
			}
		} else {
			p += wire_put_varint(p, rec_zigzag((int64_t)info - hw - 1));
			if ((int64_t)info > hw)
				hw = info;
		}
	}
	if (w->ev_weights.len)
		memcpy(p, w->ev_weights.p, w->ev_weights.len);
	p += w->ev_weights.len;
	b->len = (size_t)(p - b->p);
	ret = 0;
out_reset:
	for (size_t i = 0; i < nd; i++)
		w->ev_freq[w->ev_ids[i]] = 0;
	return ret;
}
