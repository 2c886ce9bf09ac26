/* interpret/site_rate.c - the rates of the exact per-site counts (rounds of SITES records) */
/* SPDX-License-Identifier: MIT */
/*
 * The library's timer looks at every thread's site counts about once a
 * second, sends what changed (one or more WIRE_REC_SITES records) and then
 * a TICK, at once: the TICK's time is the time of that look. The counts
 * when a TICK comes are a round's; the growth of a site's counts between
 * the last two rounds over the library's time between them is its rate,
 * whenever heaptap reads the records (a loaded heaptap reads them late and
 * in bursts, out of step with the snapshots). agg.c calibrates the
 * snapshots' "allocated since" with it.
 */
#include <errno.h>
#include <stdlib.h>

#include "interpret/snap_internal.h"

int itp_sites_tick(struct itp_sites *s, uint64_t time_ns)
{
	struct itp_site_at *t;

	if (!s->pending || (s->rounds && time_ns <= s->cur_ns))
		return 0;
	if (s->n > s->cap_at) {
		struct itp_site_at *a = realloc(s->cur, s->n * sizeof(*a));

		if (!a)
			return -ENOMEM;
		s->cur = a;
		a = realloc(s->prev, s->n * sizeof(*a));
		if (!a)
			return -ENOMEM;
		s->prev = a;
		s->cap_at = s->n;
	}
	/* the last round's counts become the one before */
	t = s->prev;
	s->prev = s->cur;
	s->cur = t;
	s->nprev = s->ncur;
	s->prev_ns = s->cur_ns;
	for (size_t i = 0; i < s->n; i++)
		s->cur[i] = (struct itp_site_at){ s->v[i].calls, s->v[i].bytes };
	s->ncur = s->n;
	s->cur_ns = time_ns;
	s->pending = 0;
	s->rounds++;
	return 0;
}

int itp_sites_rate(const struct itp_sites *s, size_t i, long double *calls_ps,
		   long double *bytes_ps)
{
	struct itp_site_at p = { 0, 0 };
	long double dt;

	if (s->rounds < 2 || i >= s->ncur || s->cur_ns <= s->prev_ns)
		return -EAGAIN;
	if (i < s->nprev)
		p = s->prev[i];
	dt = (long double)(s->cur_ns - s->prev_ns) / 1e9L;
	/* sums of a hostile stream may wrap: no rate then */
	*calls_ps = s->cur[i].calls >= p.calls ? (long double)(s->cur[i].calls - p.calls) / dt : 0;
	*bytes_ps = s->cur[i].bytes >= p.bytes ? (long double)(s->cur[i].bytes - p.bytes) / dt : 0;
	return 0;
}
