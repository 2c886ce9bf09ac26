/* track/sample_sites.c - sampling mode: sending the exact per-site counts (WIRE_REC_SITES) */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target: the timer thread (or the timerless hooks) at a tick,
 * trk_smp_start and trk_end. Each thread counts its call sites in its own
 * slots (sample.c, hot path, no lock); this file reads them under one lock
 * and sends what changed since the last record, so heaptap sums deltas.
 * Never prints, never allocates.
 */
#include <pthread.h>
#include <string.h>

#include "track/internal.h"
#include "track/sample_internal.h"

#define SITES_BUF (32 * 1024) /* payload bytes of one SITES record at most */

static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t sites_buf[SITES_BUF + 4 * WIRE_VARINT_MAX];

void trk_smp_sites_reset(void)
{
	struct trk_smp_thr *s;

	pthread_mutex_lock(&sites_lock);
	for (s = atomic_load(&trk_smp_threads); s; s = s->next) {
		size_t i;

		for (i = 0; i <= TRK_SMP_SITES; i++)
			trk_smp_site_read(s, i, &s->sent[i].calls, &s->sent[i].bytes);
	}
	pthread_mutex_unlock(&sites_lock);
}

/* sites_flush - send the n entries (len bytes) at sites_buf + WIRE_VARINT_MAX as one record. */
static void sites_flush(size_t *len, uint64_t *n)
{
	uint8_t hdr[WIRE_VARINT_MAX];
	size_t hl;

	if (!*n)
		return;
	/* the count goes in front: move the entries up by its length */
	hl = wire_put_varint(hdr, *n);
	memmove(sites_buf + hl, sites_buf + WIRE_VARINT_MAX, *len);
	memcpy(sites_buf, hdr, hl);
	trk_sock_send(WIRE_REC_SITES, sites_buf, hl + *len);
	*len = 0;
	*n = 0;
}

void trk_smp_send_sites(void)
{
	struct trk_smp_thr *s;
	size_t len = 0;
	uint64_t n = 0;

	pthread_mutex_lock(&sites_lock);
	for (s = atomic_load(&trk_smp_threads); s; s = s->next) {
		size_t i;

		/* every slot is looked at: the hot path writes no "changed" mark (40 KiB a thread) */
		for (i = 0; i <= TRK_SMP_SITES; i++) {
			struct trk_smp_sent *d = &s->sent[i];
			uintptr_t ra = atomic_load_explicit(&s->site[i].ra, memory_order_acquire);
			uint64_t c, b;
			uint8_t *q;

			if (!ra && i < TRK_SMP_SITES)
				continue;
			trk_smp_site_read(s, i, &c, &b);
			if (c == d->calls && b == d->bytes)
				continue;
			q = sites_buf + WIRE_VARINT_MAX + len;
			q += wire_put_varint(q, i < TRK_SMP_SITES ? ra - 1 : 0); /* the call site */
			q += wire_put_varint(q, c - d->calls);
			q += wire_put_varint(q, b - d->bytes);
			len = (size_t)(q - sites_buf) - WIRE_VARINT_MAX;
			n++;
			d->calls = c;
			d->bytes = b;
			if (len + 3 * WIRE_VARINT_MAX > SITES_BUF - WIRE_VARINT_MAX)
				sites_flush(&len, &n);
		}
	}
	sites_flush(&len, &n);
	pthread_mutex_unlock(&sites_lock);
}

void trk_smp_sites_due(uint64_t now, uint64_t *last)
{
	if (now - *last < TRK_SMP_SITES_NS)
		return;
	*last = now;
	trk_smp_send_sites();
}
