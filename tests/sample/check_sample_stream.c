/* tests/sample/check_sample_stream.c - unit.sample_track's sessions and call sites */
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

void finish(struct ck_reader *r, struct ck_dec *s)
{
	trk_stop(WIRE_END_STOP);
	ck_reader_join(r);
	/* the next session may start once the timer let go */
	for (int i = 0; i < 5000 && atomic_load(&trk_g.started); i++)
		usleep(1000);
	ck_assert_msg(ck_decode(r->buf, r->len, s) == 0, "malformed stream at byte %zu of %zu: %s",
		      s->error_at, r->len, s->error);
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
