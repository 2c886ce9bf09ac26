/* recfile/sites.c - the site-count section: exact allocation counts per call site of a sampled recording */
/* SPDX-License-Identifier: MIT */
/*
 * A sampled recording holds events for the sampled allocations only; the
 * interpreter also gets exact counts per immediate call site (return address,
 * no unwind) and writes them here once, at the end:
 *
 *   record := varint ip_index + 1 (0 = no ip) | varint calls | varint bytes
 *
 * Readers of an older revision skip the section (unknown section number).
 * A site may come in more than one record (the reader keeps them as they are).
 */
#include "recfile/internal.h"
#include "track/wire.h"

int rec_put_site_count(struct rec_writer *w, uint32_t ip, uint64_t calls, uint64_t bytes)
{
	struct rec_wbuf *b = &w->sec[REC_SEC_SITES];
	int ret;

	if (w->err)
		return -w->err;
	ret = rec_wbuf_reserve(b, 3 * WIRE_VARINT_MAX);
	if (ret)
		return ret;
	b->len += wire_put_varint(b->p + b->len, ip == REC_NONE ? 0 : (uint64_t)ip + 1);
	b->len += wire_put_varint(b->p + b->len, calls);
	b->len += wire_put_varint(b->p + b->len, bytes);
	return rec_writer_record_done(w, REC_SEC_SITES);
}

int rec_dec_sites(struct rec_reader *r, const uint8_t **pp, const uint8_t *end, uint32_t count)
{
	const uint8_t *p = *pp;
	int ret = rec_grow((void **)&r->sites, &r->cap_sites, r->nsites, count, sizeof(*r->sites));

	if (ret)
		return ret;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t ip, calls, bytes;

		if (wire_get_varint(&p, end, &ip) || wire_get_varint(&p, end, &calls) ||
		    wire_get_varint(&p, end, &bytes))
			return -REC_E_CORRUPT;
		r->sites[r->nsites + i] = (struct rec_site_count){
			.ip = ip == 0 || ip - 1 > REC_MAX_INDEX ? REC_NONE : (uint32_t)(ip - 1),
			.calls = calls,
			.bytes = bytes,
		};
	}
	r->nsites += count;
	*pp = p;
	return 0;
}

void rec_fixup_sites(struct rec_reader *r)
{
	for (size_t i = 0; i < r->nsites; i++) {
		if (r->sites[i].ip != REC_NONE && r->sites[i].ip >= r->nips) {
			r->sites[i].ip = REC_NONE;
			r->fixed++;
		}
	}
}

const struct rec_site_count *rec_site_counts(const struct rec_reader *r, size_t *n)
{
	*n = r->nsites;
	return r->sites;
}
