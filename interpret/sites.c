/* interpret/sites.c - exact allocation counts per call site (WIRE_REC_SITES) of a sampled session */
/* SPDX-License-Identifier: MIT */
/*
 * In sampling mode the library sends, beside the sampled events, the calls
 * and bytes of every allocation per immediate call site (return address - 1)
 * as sums added since its previous SITES record. They are not ordered by
 * sequence numbers: here they are only added up (one entry per distinct ip,
 * at most ITP_MAX_SITES; more ips than that go to the "no ip" entry, so the
 * totals stay exact); site_rate.c keeps their rates. At the end each
 * site's ip joins the recording's ip table (and so gets symbolized) and the
 * sums are written to the site-count section (recfile/sites.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/order_internal.h"
#include "interpret/snap_internal.h"

static int add(struct itp_ctx *c, uint64_t ip, uint64_t calls, uint64_t bytes)
{
	struct itp_sites *s = &c->sites;
	uint32_t i;

	if (!itp_map_get(&s->idx, ip, &i)) {
		if (s->n >= ITP_MAX_SITES)
			return add(c, 0, calls, bytes);
		if (s->n == s->cap) {
			size_t ncap = s->cap ? s->cap * 2 : 256;
			struct itp_site *v = realloc(s->v, ncap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->v = v;
			s->cap = ncap;
		}
		i = (uint32_t)s->n;
		if (itp_map_put(&s->idx, ip, i))
			return -ENOMEM;
		s->v[s->n++] = (struct itp_site){ .ip = ip };
	}
	/* sums of a hostile stream may wrap; they only feed the report */
	s->v[i].calls += calls;
	s->v[i].bytes += bytes;
	s->calls += calls;
	s->bytes += bytes;
	return 0;
}

int itp_sites_parse(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	uint64_t n, ip, calls, bytes;

	if (wire_get_varint(&p, end, &n))
		return itp_fail(c, ITP_E_CORRUPT, "site counts record cut short");
	/* each entry takes at least three bytes: a count past that is a lie */
	if (n > (uint64_t)(end - p) / 3)
		return itp_fail(c, ITP_E_CORRUPT, "site counts record claims %llu entries",
				(unsigned long long)n);
	for (uint64_t i = 0; i < n; i++) {
		if (wire_get_varint(&p, end, &ip) || wire_get_varint(&p, end, &calls) ||
		    wire_get_varint(&p, end, &bytes))
			return itp_fail(c, ITP_E_CORRUPT, "site counts record cut short");
		if (add(c, ip, calls, bytes))
			return itp_fail(c, ITP_E_NOMEM, "out of memory adding site counts");
	}
	c->sites.records++;
	c->sites.pending = 1;
	return itp_agg_sites(c);
}

int itp_sites_write(struct itp_ctx *c)
{
	struct itp_sites *s = &c->sites;
	int rc;

	for (size_t i = 0; i < s->n; i++) {
		uint32_t ip = REC_NONE;

		if (s->v[i].ip) {
			rc = itp_ip_index(c, s->v[i].ip, c->next_seq, &ip);
			if (rc)
				return rc;
		}
		rc = rec_put_site_count(c->w, ip, s->v[i].calls, s->v[i].bytes);
		if (rc)
			return itp_out_fail(c, rc, "site counts");
	}
	return 0;
}

void itp_sites_free(struct itp_sites *s)
{
	itp_map_free(&s->idx);
	free(s->v);
	free(s->cur);
	free(s->prev);
	s->v = NULL;
	s->cur = s->prev = NULL;
	s->n = s->cap = s->ncur = s->nprev = s->cap_at = 0;
}
