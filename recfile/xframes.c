/* recfile/xframes.c - the foreign-frame section: which ips are Java or Python frames */
/* SPDX-License-Identifier: MIT */
/*
 * A foreign frame (track/wire.h "Foreign frames") is an ip of the ip table
 * whose symbol chain is the frame's name, file and line, as for native
 * code, and which has a record here saying what it is:
 *
 *   record := varint ip_index | u8 lang (enum wire_lang) | u8 kind (enum wire_xkind)
 *
 * Readers of an older revision skip the section (unknown section number)
 * and show such frames as functions without a module. The first record of
 * an ip counts; one naming an ip past the table is dropped (counted as a
 * fixed reference).
 */
#include "recfile/internal.h"
#include "track/wire.h"

int rec_put_xframe(struct rec_writer *w, uint32_t ip, unsigned lang, unsigned kind)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_XFRAMES];
	int ret;

	if (w->err)
		return -w->err;
	if (w->on_symbol)
		return 0; /* a symbol sink keeps no tables */
	if (ip >= w->nips || lang > 255 || kind > 255)
		return -REC_E_RANGE;
	ret = rec_wbuf_reserve(b, WIRE_VARINT_MAX + 2);
	if (ret)
		return ret;
	b->len += wire_put_varint(b->p + b->len, ip);
	b->p[b->len++] = (uint8_t)lang;
	b->p[b->len++] = (uint8_t)kind;
	return rec_writer_record_done(w, REC_SEC_XFRAMES);
}

int rec_dec_xframes(struct rec_reader *r, const uint8_t **pp, const uint8_t *end, uint32_t count)
{
	const uint8_t *p = *pp;
	int ret = rec_grow((void **)&r->xfs, &r->cap_xfs, r->nxfs, count, sizeof(*r->xfs));

	if (ret)
		return ret;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t ip;

		if (wire_get_varint(&p, end, &ip) || end - p < 2)
			return -REC_E_CORRUPT;
		r->xfs[r->nxfs + i] = (struct rec_xfrec){
			.ip = ip > REC_MAX_INDEX ? REC_NONE : (uint32_t)ip,
			.lang = p[0],
			.kind = p[1],
		};
		p += 2;
	}
	r->nxfs += count;
	*pp = p;
	return 0;
}

void rec_fixup_xframes(struct rec_reader *r)
{
	for (size_t i = 0; i < r->nxfs; i++) {
		const struct rec_xfrec *x = &r->xfs[i];

		if (x->ip == REC_NONE || x->ip >= r->nips || r->ips[x->ip].xframe) {
			r->fixed++; /* unknown ip, or a second record for it: keep the first */
			continue;
		}
		r->ips[x->ip].xframe = 1;
		r->ips[x->ip].lang = x->lang;
		r->ips[x->ip].xkind = x->kind;
	}
}
