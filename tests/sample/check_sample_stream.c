/* tests/sample/check_sample_stream.c - unit.sample_track's decoder, sessions and call sites */
/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_libc_real.h"
#include "tests/sample/check_sample_stream.h"
#include "track/internal.h"
#include "track/sample_internal.h"
#include "track/wire.h"

/* ---- a small independent decoder -------------------------------------------- */

static int get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return wire_get_varint(p, end, v);
}

static void add_ev(struct sstream *s, const struct sev *e)
{
	if (s->nev == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->ev = realloc(s->ev, s->cap * sizeof(*s->ev));
		ck_assert_ptr_nonnull(s->ev);
	}
	s->ev[s->nev++] = *e;
}

static int decode_chunk(const uint8_t *p, const uint8_t *end, struct sstream *s)
{
	uint64_t tid, seq, x, pbase = 0;

	if (get(&p, end, &tid) || get(&p, end, &seq))
		return -1;
	while (p < end) {
		struct sev e = { 0 };
		uint64_t delta;

		e.op = *p++;
		if (get(&p, end, &delta))
			return -1;
		seq += delta;
		e.seq = seq;
		switch (e.op) {
		case WIRE_EV_ALLOC:
		case WIRE_EV_ALLOC_W:
		case WIRE_EV_ALLOC_D:
			if (p >= end)
				return -1;
			p++;
			if (get(&p, end, &e.size) || get(&p, end, &e.trace) || get(&p, end, &e.ptr))
				return -1;
			if (e.op == WIRE_EV_ALLOC_W && get(&p, end, &e.weight))
				return -1;
			if (e.op == WIRE_EV_ALLOC_D) {
				/* zigzag distance from the chunk's previous ALLOC_D/FREE_D (wire.h) */
				e.ptr = pbase += (e.ptr >> 1) ^ -(e.ptr & 1);
				e.op = WIRE_EV_ALLOC;
			}
			break;
		case WIRE_EV_FREE:
		case WIRE_EV_FREE_D:
			if (get(&p, end, &e.ptr))
				return -1;
			if (e.op == WIRE_EV_FREE_D) {
				e.ptr = pbase += (e.ptr >> 1) ^ -(e.ptr & 1);
				e.op = WIRE_EV_FREE;
			}
			break;
		case WIRE_EV_NODE:
			for (int i = 0; i < 3; i++)
				if (get(&p, end, &x))
					return -1;
			break;
		case WIRE_EV_NOP:
			break;
		case WIRE_EV_MODULE: {
			uint64_t nseg, l;

			if (get(&p, end, &x) || get(&p, end, &nseg))
				return -1;
			for (uint64_t i = 0; i < nseg * 3; i++)
				if (get(&p, end, &x))
					return -1;
			for (int k = 0; k < 2; k++) {
				if (get(&p, end, &l) || l > (uint64_t)(end - p))
					return -1;
				p += l;
			}
			break;
		}
		case WIRE_EV_MODULE_DEL:
			if (get(&p, end, &x))
				return -1;
			break;
		default:
			return -1;
		}
		add_ev(s, &e);
	}
	return 0;
}

static int decode_sites(const uint8_t *p, const uint8_t *end, struct sstream *s)
{
	uint64_t n, ip, calls, bytes;

	if (get(&p, end, &n))
		return -1;
	s->nsites_records++;
	for (uint64_t i = 0; i < n; i++) {
		size_t k;

		if (get(&p, end, &ip) || get(&p, end, &calls) || get(&p, end, &bytes))
			return -1;
		for (k = 0; k < s->nsites && s->sites[k].ip != ip; k++)
			;
		if (k == s->nsites) {
			ck_assert_uint_lt(s->nsites, 4096);
			s->sites[s->nsites++] = (struct site_sum){ .ip = ip };
		}
		s->sites[k].calls += calls;
		s->sites[k].bytes += bytes;
	}
	return p == end ? 0 : -1;
}

static int decode(const uint8_t *buf, size_t len, struct sstream *s)
{
	const uint8_t *p = buf, *end = buf + len;
	struct wire_header h;

	memset(s, 0, sizeof(*s));
	if (len < WIRE_HDR_FIXED)
		return -1;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, WIRE_MAGIC, 8) || h.header_len > len)
		return -1;
	p += h.header_len;
	while (p < end) {
		uint8_t type = *p++;
		uint64_t rl;

		if (get(&p, end, &rl) || rl > (uint64_t)(end - p))
			return -1;
		if (type == WIRE_REC_CHUNK && decode_chunk(p, p + rl, s))
			return -1;
		if (type == WIRE_REC_SITES && decode_sites(p, p + rl, s))
			return -1;
		if (type == WIRE_REC_END)
			s->have_end = 1;
		p += rl;
	}
	return 0;
}

int by_seq(const void *a, const void *b)
{
	const struct sev *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- sessions ----------------------------------------------------------------- */

void send_sample(int fd, uint64_t rate, uint64_t seed)
{
	uint8_t m[2 + 2 * WIRE_VARINT_MAX], pl[2 * WIRE_VARINT_MAX];
	size_t n = 0, k = 0;

	n += wire_put_varint(pl + n, rate);
	n += wire_put_varint(pl + n, seed);
	m[k++] = WIRE_CTL_SAMPLE;
	k += wire_put_varint(m + k, n);
	memcpy(m + k, pl, n);
	ck_assert_int_eq(write(fd, m, k + n), (ssize_t)(k + n));
}

/* the allocator the next start() gives the hooks (NULL: libc's) */
const struct trk_real *start_real;

/* start - a session; rate != 0: CTL_SAMPLE is waiting in the socket before trk_start. */
void start(struct ck_reader *r, uint64_t rate, uint64_t seed)
{
	struct trk_config cfg = { 0 };

	cfg.fd = ck_reader_start(r);
	if (rate)
		send_sample(r->fd, rate, seed);
	trk_set_real(start_real ? start_real : &libc_real);
	ck_assert_int_eq(trk_start(&cfg), 0);
}

/*
 * start_cfg - a session whose start rate is in trk_config (nothing waits in
 * the socket), or, with wait_ms, comes as CTL_SAMPLE from a thread after
 * late_ms while trk_start waits for it.
 */
struct late_ctl {
	int fd;
	unsigned late_ms;
	uint64_t rate, seed;
};

static void *late_main(void *arg)
{
	struct late_ctl *l = arg;

	usleep(l->late_ms * 1000);
	send_sample(l->fd, l->rate, l->seed);
	return NULL;
}

void start_cfg(struct ck_reader *r, uint64_t rate, uint64_t seed, unsigned wait_ms,
		      unsigned late_ms)
{
	struct trk_config cfg = { 0 };
	struct late_ctl l = { 0 };
	pthread_t th;

	cfg.fd = ck_reader_start(r);
	trk_set_real(&libc_real);
	if (wait_ms) {
		cfg.sample_wait_ms = wait_ms;
		l = (struct late_ctl){ .fd = r->fd, .late_ms = late_ms, .rate = rate, .seed = seed };
		ck_assert_int_eq(pthread_create(&th, NULL, late_main, &l), 0);
	} else {
		cfg.sample_given = 1;
		cfg.sample_rate = rate;
		cfg.sample_seed = seed;
	}
	ck_assert_int_eq(trk_start(&cfg), 0);
	if (wait_ms)
		pthread_join(th, NULL);
}

void finish(struct ck_reader *r, struct sstream *s)
{
	trk_stop(WIRE_END_STOP);
	ck_reader_join(r);
	/* the next session may start once the timer let go */
	for (int i = 0; i < 5000 && atomic_load(&trk_g.started); i++)
		usleep(1000);
	ck_assert_int_eq(decode(r->buf, r->len, s), 0);
	ck_assert_int_eq(s->have_end, 1);
	free(r->buf);
}

/* wait_rate - until the timer applied a CTL_SAMPLE */
void wait_rate(uint64_t rate)
{
	for (int i = 0; i < 5000 && atomic_load(&trk_smp.rate) != rate; i++)
		usleep(1000);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), rate);
}

/* Three call sites, told apart by their sizes in the stream, by their ip in SITES. */
__attribute__((noinline)) void *site_small(void)
{
	void *p = trk_malloc(48);

	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *site_mid(size_t n)
{
	void *p = trk_malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) void *site_big(void)
{
	void *p = trk_calloc(1, 3 << 20);

	__asm__ volatile("" ::: "memory");
	return p;
}
