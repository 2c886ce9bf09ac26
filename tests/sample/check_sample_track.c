/* tests/sample/check_sample_track.c - track/'s sampling mode over a socketpair */
/* SPDX-License-Identifier: MIT */
/*
 * Real sessions inside the test process (the hooks are called directly, as
 * inject/'s GOT slots would), the stream decoded here with wire.h only:
 *   - sampled from the start (CTL_SAMPLE waiting before trk_start): only
 *     ALLOC_W, weights per call site estimate its bytes, frees only of
 *     sampled pointers, SITES totals exact;
 *   - switched to full tracing and back on the live session;
 *   - the sampled-pointer set against a reference under churn;
 *   - a session without sampling is unchanged (plain ALLOC, every free);
 *   - the start rate from trk_config (preload/'s HEAPTAP_SAMPLE) gives the
 *     same samples as the same rate and seed sent as CTL_SAMPLE; an attach
 *     start (sample_wait_ms) waits for a CTL_SAMPLE that comes late;
 *   - the hot path's counts stay exact with more call sites than slots
 *     (probing, the "other" slot) and through realloc;
 *   - the hot path stays off with the guard held, after the end and in a
 *     fork child; the sampled set grows from its small start and the next
 *     session begins small again.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_session.h"
#include "track/internal.h"
#include "track/track.h"
#include "tests/lib/check_libc_real.h"
#include "track/sample_internal.h"
#include "track/wire.h"

/* ---- a small independent decoder -------------------------------------------- */

struct sev {
	uint8_t op;
	uint64_t seq, size, ptr, weight, trace;
};

struct site_sum {
	uint64_t ip, calls, bytes;
};

struct sstream {
	struct sev *ev;
	size_t nev, cap;
	struct site_sum sites[4096];
	size_t nsites;
	size_t nsites_records;
	int have_end;
};

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

static int by_seq(const void *a, const void *b)
{
	const struct sev *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* ---- sessions ----------------------------------------------------------------- */

static void send_sample(int fd, uint64_t rate, uint64_t seed)
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
static const struct trk_real *start_real;

/* start - a session; rate != 0: CTL_SAMPLE is waiting in the socket before trk_start. */
static void start(struct ck_reader *r, uint64_t rate, uint64_t seed)
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

static void start_cfg(struct ck_reader *r, uint64_t rate, uint64_t seed, unsigned wait_ms,
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

static void finish(struct ck_reader *r, struct sstream *s)
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
static void wait_rate(uint64_t rate)
{
	for (int i = 0; i < 5000 && atomic_load(&trk_smp.rate) != rate; i++)
		usleep(1000);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), rate);
}

/* Three call sites, told apart by their sizes in the stream, by their ip in SITES. */
__attribute__((noinline)) static void *site_small(void)
{
	void *p = trk_malloc(48);

	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *site_mid(size_t n)
{
	void *p = trk_malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

__attribute__((noinline)) static void *site_big(void)
{
	void *p = trk_calloc(1, 3 << 20);

	__asm__ volatile("" ::: "memory");
	return p;
}

#define N_SMALL 400000
#define N_MID 40000
#define N_BIG 40

START_TEST(sampled_from_start)
{
	static void *keep[N_SMALL + N_MID + N_BIG];
	uint64_t true_small = 0, true_mid = 0, true_big = 0, est[3] = { 0 };
	uint64_t site_calls = 0, site_bytes = 0, nw = 0, nfree = 0;
	struct ck_reader r;
	struct sstream s;
	size_t k = 0, live_max = 0;
	struct sev *v;
	uint64_t *live;
	size_t nlive = 0;

	start(&r, 64 * 1024, 12345);
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 64 * 1024);
	ck_assert_int_eq(trk_smp_filtering(), 1);
	for (int i = 0; i < N_SMALL; i++) {
		keep[k++] = site_small();
		true_small += 48;
		if (i % 10 == 0) {
			size_t n = 1000 + (size_t)(i % 7) * 1000;

			keep[k++] = site_mid(n);
			true_mid += n;
		}
		if (i % 10000 == 0) {
			keep[k++] = site_big();
			true_big += 3 << 20;
		}
	}
	for (size_t i = 0; i < k; i++)
		trk_free(keep[i]);
	finish(&r, &s);

	/* only weighted allocations; frees only of sampled, live pointers */
	v = malloc(s.nev * sizeof(*v));
	memcpy(v, s.ev, s.nev * sizeof(*v));
	qsort(v, s.nev, sizeof(*v), by_seq);
	live = calloc(s.nev + 1, sizeof(*live));
	for (size_t i = 0; i < s.nev; i++) {
		ck_assert_int_ne(v[i].op, WIRE_EV_ALLOC);
		if (v[i].op == WIRE_EV_ALLOC_W) {
			ck_assert_uint_ge(v[i].weight, v[i].size);
			nw++;
			live[nlive++] = v[i].ptr;
			if (nlive > live_max)
				live_max = nlive;
			if (v[i].size == 48)
				est[0] += v[i].weight;
			else if (v[i].size == (3u << 20))
				est[2] += v[i].weight;
			else
				est[1] += v[i].weight;
		} else if (v[i].op == WIRE_EV_FREE) {
			size_t j;

			nfree++;
			for (j = 0; j < nlive && live[j] != v[i].ptr; j++)
				;
			ck_assert_msg(j < nlive, "free of a pointer that was not sampled");
			live[j] = live[--nlive];
		}
	}
	ck_assert_uint_eq(nfree, nw);
	ck_assert_uint_eq(nlive, 0);
	/* about (19.2 + 18.4 + 125.8) MB / 64 KiB = 2500 samples, not 440,000 events */
	ck_assert_uint_gt(nw, 1500);
	ck_assert_uint_lt(nw, 4000);
	/* estimates of each site's bytes (small: ~290 samples -> 6 % sd; 20 % is 3 sd) */
	ck_assert_msg(fabs((double)est[0] / (double)true_small - 1) < 0.2, "small %lu vs %lu",
		      (unsigned long)est[0], (unsigned long)true_small);
	ck_assert_msg(fabs((double)est[1] / (double)true_mid - 1) < 0.2, "mid %lu vs %lu",
		      (unsigned long)est[1], (unsigned long)true_mid);
	/* 3 MiB blocks at a 64 KiB mean are always sampled, weight = size */
	ck_assert_uint_eq(est[2], true_big);
	/* the exact counts per call site */
	ck_assert_uint_ge(s.nsites_records, 1);
	ck_assert_uint_eq(s.nsites, 3);
	for (size_t i = 0; i < s.nsites; i++) {
		site_calls += s.sites[i].calls;
		site_bytes += s.sites[i].bytes;
		ck_assert_uint_ne(s.sites[i].ip, 0);
	}
	ck_assert_uint_eq(site_calls, k);
	ck_assert_uint_eq(site_bytes, true_small + true_mid + true_big);
	free(live);
	free(v);
	free(s.ev);
}
END_TEST

/* the same seed gives the same samples (main thread: tid == pid) */
START_TEST(fixed_seed_repeats)
{
	uint64_t sum[2] = { 0 }, n[2] = { 0 };

	for (int run = 0; run < 2; run++) {
		struct ck_reader r;
		struct sstream s;

		start(&r, 4096, 777);
		for (int i = 0; i < 20000; i++)
			trk_free(site_mid(100 + (size_t)(i % 50)));
		finish(&r, &s);
		for (size_t i = 0; i < s.nev; i++)
			if (s.ev[i].op == WIRE_EV_ALLOC_W) {
				n[run]++;
				sum[run] += s.ev[i].size * 1000003u + s.ev[i].weight;
			}
		free(s.ev);
	}
	ck_assert_uint_gt(n[0], 100);
	ck_assert_uint_eq(n[0], n[1]);
	ck_assert_uint_eq(sum[0], sum[1]);
}
END_TEST

/* the start rate from trk_config: sampling from the first allocation, the same samples as CTL_SAMPLE */
START_TEST(rate_from_config)
{
	uint64_t sum[2] = { 0 }, n[2] = { 0 }, frees[2] = { 0 };

	for (int run = 0; run < 2; run++) {
		struct ck_reader r;
		struct sstream s;

		if (run == 0) {
			start_cfg(&r, 4096, 777, 0, 0);
			/* no control record was sent: the rate is there at once */
			ck_assert_uint_eq(atomic_load(&trk_smp.rate), 4096);
			ck_assert_int_eq(trk_smp_filtering(), 1);
		} else {
			start(&r, 4096, 777);
		}
		for (int i = 0; i < 20000; i++)
			trk_free(site_mid(100 + (size_t)(i % 50)));
		finish(&r, &s);
		for (size_t i = 0; i < s.nev; i++) {
			ck_assert_int_ne(s.ev[i].op, WIRE_EV_ALLOC);
			if (s.ev[i].op == WIRE_EV_ALLOC_W) {
				n[run]++;
				sum[run] += s.ev[i].size * 1000003u + s.ev[i].weight;
			}
			frees[run] += s.ev[i].op == WIRE_EV_FREE;
		}
		ck_assert_uint_eq(frees[run], n[run]);
		free(s.ev);
	}
	ck_assert_uint_gt(n[0], 100);
	ck_assert_uint_eq(n[0], n[1]);
	ck_assert_uint_eq(sum[0], sum[1]);
}
END_TEST

/* an attach start waits for heaptap's first CTL_SAMPLE, which comes late: sampling from the start */
START_TEST(attach_waits_for_rate)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t w = 0, f = 0;

	start_cfg(&r, 8192, 3, 10000, 200);
	/* set before trk_start returned (so before any hook is installed) */
	ck_assert_uint_eq(atomic_load(&trk_smp.rate), 8192);
	ck_assert_int_eq(trk_smp_filtering(), 1);
	for (int i = 0; i < 5000; i++)
		trk_free(site_mid(300));
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		ck_assert_int_ne(s.ev[i].op, WIRE_EV_ALLOC);
		w += s.ev[i].op == WIRE_EV_ALLOC_W;
		f += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_gt(w, 50);
	ck_assert_uint_eq(f, w);
	free(s.ev);
}
END_TEST

/* 1500 call sites (more than the 1024 slots): totals exact, the rest in "other" (ip 0) */
#define SITE1 trk_free(trk_malloc(24 + k));
#define SITE10 SITE1 SITE1 SITE1 SITE1 SITE1 SITE1 SITE1 SITE1 SITE1 SITE1
#define SITE100 SITE10 SITE10 SITE10 SITE10 SITE10 SITE10 SITE10 SITE10 SITE10 SITE10
__attribute__((noinline)) static void many_sites(size_t k)
{
	SITE100 SITE100 SITE100 SITE100 SITE100 SITE100 SITE100 SITE100 SITE100 SITE100
	SITE100 SITE100 SITE100 SITE100 SITE100
	__asm__ volatile("" ::: "memory");
}

START_TEST(many_sites_exact)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t calls = 0, bytes = 0, want_bytes = 0, other = 0;

	start(&r, 1 << 20, 11);
	for (size_t k = 0; k < 40; k++) {
		many_sites(k);
		want_bytes += 1500 * (24 + k);
	}
	finish(&r, &s);
	for (size_t i = 0; i < s.nsites; i++) {
		calls += s.sites[i].calls;
		bytes += s.sites[i].bytes;
		if (!s.sites[i].ip)
			other = s.sites[i].calls;
		else
			ck_assert_uint_eq(s.sites[i].calls, 40); /* a site of its own: all its calls */
	}
	ck_assert_uint_eq(calls, 1500 * 40);
	ck_assert_uint_eq(bytes, want_bytes);
	/* nearly every slot taken (a site gives up after 8 probes), plus "other" */
	ck_assert_uint_ge(s.nsites, 900);
	ck_assert_uint_le(s.nsites, 1025);
	ck_assert_uint_ge(other, (1500 - 1024) * 40);
	free(s.ev);
}
END_TEST

/* realloc through the fast path: exact site totals, every sampled block freed once */
__attribute__((noinline)) static void *site_realloc(void *p, size_t n)
{
	void *q = trk_realloc(p, n);

	__asm__ volatile("" ::: "memory");
	return q;
}

START_TEST(realloc_counts_exact)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t calls = 0, bytes = 0, want = 0, w = 0, f = 0;

	start(&r, 64 * 1024, 21);
	for (int i = 0; i < 50000; i++) {
		void *p = site_realloc(NULL, 100);

		p = site_realloc(p, 700 + (size_t)(i % 3));
		trk_free(p);
		want += 800 + (size_t)(i % 3);
	}
	finish(&r, &s);
	for (size_t i = 0; i < s.nsites; i++) {
		calls += s.sites[i].calls;
		bytes += s.sites[i].bytes;
	}
	ck_assert_uint_eq(calls, 100000);
	ck_assert_uint_eq(bytes, want);
	for (size_t i = 0; i < s.nev; i++) {
		w += s.ev[i].op == WIRE_EV_ALLOC_W;
		f += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_gt(w, 100);
	/* a sampled block is freed by the next realloc or the free: exactly once each */
	ck_assert_uint_eq(f, w);
	free(s.ev);
}
END_TEST

START_TEST(switch_full_and_back)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t plain = 0, weighted = 0, frees = 0;
	void *a[1000];

	start(&r, 1 << 20, 1);
	/* sampled: 1000 x 64 bytes at 1 MiB is almost never sampled */
	for (int i = 0; i < 1000; i++)
		a[i] = site_mid(64);
	send_sample(r.fd, 0, 0);
	wait_rate(0);
	ck_assert_int_eq(trk_smp_filtering(), 0);
	/* full tracing: every allocation, every free (also of the sampled-era blocks) */
	for (int i = 0; i < 1000; i++)
		trk_free(site_mid(80));
	send_sample(r.fd, 1 << 20, 0);
	wait_rate(1 << 20);
	/* sampling again after full tracing: every free is sent, allocations sampled */
	ck_assert_int_eq(trk_smp_filtering(), 0);
	for (int i = 0; i < 1000; i++)
		trk_free(a[i]);
	for (int i = 0; i < 1000; i++)
		trk_free(site_mid(96));
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		if (s.ev[i].op == WIRE_EV_ALLOC) {
			ck_assert_uint_eq(s.ev[i].size, 80);
			plain++;
		} else if (s.ev[i].op == WIRE_EV_ALLOC_W) {
			weighted++;
		} else if (s.ev[i].op == WIRE_EV_FREE) {
			frees++;
		}
	}
	ck_assert_uint_eq(plain, 1000);
	ck_assert_uint_lt(weighted, 20);
	/* 1000 full-tracing frees + 1000 of the first blocks + 1000 of the last */
	ck_assert_uint_eq(frees, 3000);
	free(s.ev);
}
END_TEST

/* the set: random inserts and removals against a plain array, with realloc moving blocks */
START_TEST(set_under_churn)
{
	struct ck_reader r;
	struct sstream s;
	static void *p[20000];
	uint64_t freed_sampled = 0, sampled = 0;

	start(&r, 512, 99); /* small mean: most blocks sampled, the set holds thousands */
	for (int i = 0; i < 20000; i++)
		p[i] = site_mid(256 + (size_t)(i % 13) * 64);
	for (int round = 0; round < 5; round++)
		for (int i = round; i < 20000; i += 5) {
			p[i] = trk_realloc(p[i], 512 + (size_t)round * 128);
			ck_assert_ptr_nonnull(p[i]);
		}
	for (int i = 0; i < 20000; i++)
		trk_free(p[i]);
	finish(&r, &s);
	/* every sampled block (allocations and realloc results) is freed exactly once */
	for (size_t i = 0; i < s.nev; i++) {
		if (s.ev[i].op == WIRE_EV_ALLOC_W)
			sampled++;
		else if (s.ev[i].op == WIRE_EV_FREE)
			freed_sampled++;
	}
	ck_assert_uint_gt(sampled, 10000);
	ck_assert_uint_eq(freed_sampled, sampled);
	free(s.ev);
}
END_TEST

START_TEST(full_session_unchanged)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t plain = 0, frees = 0;

	start(&r, 0, 0);
	ck_assert_int_eq(trk_smp_sampling(), 0);
	for (int i = 0; i < 500; i++)
		trk_free(site_mid(32));
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		ck_assert_int_ne(s.ev[i].op, WIRE_EV_ALLOC_W);
		plain += s.ev[i].op == WIRE_EV_ALLOC;
		frees += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_eq(plain, 500);
	ck_assert_uint_eq(frees, 500);
	ck_assert_uint_eq(s.nsites_records, 0);
	free(s.ev);
}
END_TEST

/* threads sampling at once: site totals exact, every sampled block freed once */
struct thr_arg {
	int n;
};

static void *thr_main(void *arg)
{
	struct thr_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		trk_free(site_mid(200 + (size_t)(i & 255)));
	return NULL;
}

START_TEST(threads)
{
	struct ck_reader r;
	struct sstream s;
	pthread_t th[4];
	struct thr_arg a = { .n = 100000 };
	uint64_t calls = 0, w = 0, f = 0;

	start(&r, 8192, 5);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, thr_main, &a), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	finish(&r, &s);
	for (size_t i = 0; i < s.nsites; i++)
		calls += s.sites[i].calls;
	for (size_t i = 0; i < s.nev; i++) {
		w += s.ev[i].op == WIRE_EV_ALLOC_W;
		f += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_eq(calls, 4 * 100000);
	ck_assert_uint_eq(w, f);
	ck_assert_uint_gt(w, 100);
	free(s.ev);
}
END_TEST

/* calls counted in this thread's site table (every slot, "other" included) */
static uint64_t thread_calls(void)
{
	struct trk_smp_thr *t = trk_smp_tls.s;
	uint64_t n = 0;

	if (!t)
		return 0;
	for (size_t i = 0; i <= TRK_SMP_SITES; i++) {
		uint64_t c, b;

		trk_smp_site_read(t, i, &c, &b);
		n += c;
	}
	return n;
}

/*
 * The hot path checks neither the state nor the guard: its key (generation
 * and guard in one word) must keep it off while the guard is held, after
 * the session ended, and in a fork child (trk_smp_stop).
 */
START_TEST(hot_path_key)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t before;
	pid_t pid;
	int st;

	start(&r, (uint64_t)1 << 40, 5); /* no sample: every call takes the hot path */
	for (int i = 0; i < 100; i++)
		trk_free(site_small());
	ck_assert_uint_eq(trk_smp_tls.key, atomic_load(&trk_smp.gen)); /* on */
	before = thread_calls();
	ck_assert_uint_ge(before, 100);
	trk_tls_guard = 1; /* our own allocations are not the program's */
	for (int i = 0; i < 100; i++)
		trk_free(site_small());
	trk_tls_guard = 0;
	ck_assert_uint_eq(thread_calls(), before);
	for (int i = 0; i < 100; i++)
		trk_free(site_small());
	ck_assert_uint_eq(thread_calls(), before + 100);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint64_t c;

		trk_after_fork_child();
		c = thread_calls();
		for (int i = 0; i < 100; i++)
			trk_free(site_small());
		_exit(thread_calls() == c && !trk_smp_filtering() ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	finish(&r, &s);
	ck_assert_uint_ne(trk_smp_tls.key, atomic_load(&trk_smp.gen)); /* off after the end */
	ck_assert(!trk_smp_filtering());
	before = thread_calls();
	for (int i = 0; i < 100; i++)
		trk_free(site_small());
	ck_assert_uint_eq(thread_calls(), before);
	free(s.ev);
}
END_TEST

/*
 * The sampled set begins small and doubles as it fills (no 1 MiB memset at
 * start): with 15,000 live samples it has grown, frees are still filtered,
 * every sampled block's free is sent once; the next session begins small.
 */
START_TEST(set_grows)
{
	struct ck_reader r;
	struct sstream s;
	static void *p[15000];
	uint64_t sampled = 0, freed = 0;
	size_t n, cap, cap0;

	start(&r, 64, 7); /* small mean: nearly every block of 256+ bytes is sampled */
	trk_smp_set_stats(&n, &cap0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_le(cap0, 8192);
	for (int i = 0; i < 15000; i++)
		p[i] = site_mid(256 + (size_t)(i % 7) * 16);
	trk_smp_set_stats(&n, &cap);
	ck_assert_uint_gt(n, 14000);
	ck_assert_uint_gt(cap, cap0);
	ck_assert_uint_ge(cap, n * 4 / 3);
	ck_assert(trk_smp_filtering());
	for (int i = 0; i < 15000; i++)
		trk_free(p[i]);
	trk_smp_set_stats(&n, &cap);
	ck_assert_uint_eq(n, 0);
	finish(&r, &s);
	for (size_t i = 0; i < s.nev; i++) {
		sampled += s.ev[i].op == WIRE_EV_ALLOC_W;
		freed += s.ev[i].op == WIRE_EV_FREE;
	}
	ck_assert_uint_gt(sampled, 14000);
	ck_assert_uint_eq(freed, sampled);
	free(s.ev);
	start(&r, 64, 7);
	trk_smp_set_stats(&n, &cap);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(cap, cap0);
	finish(&r, &s);
	free(s.ev);
}
END_TEST

/*
 * The packed site counts (internal.h: calls in the top 24 bits, bytes in
 * the low 40 of one word, flushed into wide counters before either can
 * overflow). Sizes of 2^37 bytes reach the bytes' guard every 4 calls; they
 * come from a fake allocator that hands out one static block for any size
 * from 1 GiB up (the hooks count what was asked for, nothing is touched).
 */
static char huge_block[64] __attribute__((aligned(16)));

static void *huge_malloc(size_t n)
{
	return n >= (1u << 30) ? (void *)huge_block : malloc(n);
}

static void huge_free(void *p)
{
	if (p != huge_block)
		free(p);
}

static struct trk_real huge_real;

static void use_huge_real(void)
{
	huge_real = libc_real;
	huge_real.malloc = huge_malloc;
	huge_real.free = huge_free;
	start_real = &huge_real;
}

/* the sites' totals of a stream */
static void site_totals(const struct sstream *s, uint64_t *calls, uint64_t *bytes)
{
	*calls = *bytes = 0;
	for (size_t i = 0; i < s->nsites; i++) {
		*calls += s->sites[i].calls;
		*bytes += s->sites[i].bytes;
	}
}

/*
 * 2^24 + 1000 calls at one site: the calls' guard bit (2^23) is reached
 * twice, and without it the 24 bits of calls would wrap; the count stays exact.
 */
START_TEST(packed_calls_exact)
{
	const uint64_t n = (1u << 24) + 1000;
	struct ck_reader r;
	struct sstream s;
	uint64_t calls, bytes, before, live;

	start(&r, (uint64_t)1 << 42, 3); /* 1 GiB at a mean of 4 TiB: (almost) no sample */
	before = thread_calls(); /* earlier tests' sessions in this thread */
	for (uint64_t i = 0; i < n; i++)
		trk_free(site_mid(64));
	live = thread_calls() - before; /* read as the timer does, before the end */
	finish(&r, &s);
	ck_assert_uint_eq(live, n);
	site_totals(&s, &calls, &bytes);
	ck_assert_uint_eq(calls, n);
	ck_assert_uint_eq(bytes, n * 64);
	ck_assert_uint_eq(s.nsites, 1);
	free(s.ev);
}
END_TEST

/*
 * Sizes of 2^37 + i: the bytes' guard bit every few calls, exact totals;
 * and the distance above TRK_SMP_LEFT_MAX (2^39) is kept, not taken for
 * a sample: at a mean of 2^50 bytes, 2^47 bytes make 0.125 samples on
 * average (a lost rest would sample every 4 calls: about 250).
 */
START_TEST(packed_bytes_exact)
{
	struct ck_reader r;
	struct sstream s;
	uint64_t calls, bytes, want = 0, w = 0;

	use_huge_real();
	start(&r, (uint64_t)1 << 50, 4);
	for (size_t i = 0; i < 1000; i++) {
		void *p = site_mid(((size_t)1 << 37) + i);

		ck_assert_ptr_eq(p, huge_block);
		trk_free(p);
		want += ((uint64_t)1 << 37) + i;
	}
	finish(&r, &s);
	start_real = NULL;
	site_totals(&s, &calls, &bytes);
	ck_assert_uint_eq(calls, 1000);
	ck_assert_uint_eq(bytes, want);
	for (size_t i = 0; i < s.nev; i++)
		w += s.ev[i].op == WIRE_EV_ALLOC_W;
	ck_assert_uint_le(w, 5);
	free(s.ev);
}
END_TEST

/*
 * A reader (the timer's trk_smp_site_read) never sees a slot's counts
 * moved halfway by a flush: with every call S bytes, a consistent read has
 * bytes == calls * S and never goes down. A flush every 4 calls here.
 */
#define HUGE_S (((size_t)1 << 37) + 12345)

#define OWNER_CALLS 2000000

static _Atomic(struct trk_smp_thr *) owner_state;
static _Atomic int owner_done;

/* a call site of its own: its slot holds only these calls (other tests' threads may have left counts) */
__attribute__((noinline)) static void *site_huge(void)
{
	void *p = trk_malloc(HUGE_S);

	__asm__ volatile("" ::: "memory");
	return p;
}

static void *owner_main(void *arg)
{
	(void)arg;
	trk_free(site_huge());
	atomic_store(&owner_state, trk_smp_tls.s);
	for (int i = 1; i < OWNER_CALLS; i++)
		trk_free(site_huge());
	atomic_store(&owner_done, 1);
	return NULL;
}

START_TEST(site_read_consistent)
{
	struct ck_reader r;
	struct sstream s;
	struct trk_smp_thr *t;
	pthread_t th;
	size_t slot = TRK_SMP_SITES + 1;
	uint64_t c, b, last = 0, bad = 0, reads = 0, calls, bytes;

	use_huge_real();
	start(&r, (uint64_t)1 << 50, 6);
	ck_assert_int_eq(pthread_create(&th, NULL, owner_main, NULL), 0);
	while (!(t = atomic_load(&owner_state)))
		usleep(100);
	for (size_t i = 0; i < TRK_SMP_SITES && slot > TRK_SMP_SITES; i++) {
		trk_smp_site_read(t, i, &c, &b);
		if (c && b == c * HUGE_S)
			slot = i;
	}
	ck_assert_uint_le(slot, TRK_SMP_SITES);
	while (!atomic_load(&owner_done)) {
		trk_smp_site_read(t, slot, &c, &b);
		reads++;
		if (b != c * HUGE_S || c < last)
			bad++;
		last = c;
	}
	pthread_join(th, NULL);
	finish(&r, &s);
	start_real = NULL;
	ck_assert_msg(bad == 0, "%lu of %lu reads torn", (unsigned long)bad, (unsigned long)reads);
	ck_assert_uint_gt(reads, 100);
	site_totals(&s, &calls, &bytes);
	ck_assert_uint_eq(calls, OWNER_CALLS);
	ck_assert_uint_eq(bytes, OWNER_CALLS * HUGE_S);
	free(s.ev);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sample_track");
	TCase *tc = tcase_create("sessions");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, sampled_from_start);
	tcase_add_test(tc, fixed_seed_repeats);
	tcase_add_test(tc, rate_from_config);
	tcase_add_test(tc, attach_waits_for_rate);
	tcase_add_test(tc, many_sites_exact);
	tcase_add_test(tc, realloc_counts_exact);
	tcase_add_test(tc, switch_full_and_back);
	tcase_add_test(tc, set_under_churn);
	tcase_add_test(tc, full_session_unchanged);
	tcase_add_test(tc, threads);
	tcase_add_test(tc, hot_path_key);
	tcase_add_test(tc, set_grows);
	tcase_add_test(tc, packed_calls_exact);
	tcase_add_test(tc, packed_bytes_exact);
	tcase_add_test(tc, site_read_consistent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());

	/* one process: the library's state is per process, sessions follow each other */
	srunner_set_fork_status(sr, CK_NOFORK);
	return ck_run(sr);
}
