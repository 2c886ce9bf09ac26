/* tests/sample/check_sample_hot.c - unit.sample_track's "hot_path" case: exact counts, the key, the set */
/* SPDX-License-Identifier: MIT */
/*
 * The sampling hot path (track/sample.c) counts every call in a per-thread
 * site table and samples by bytes: its counts stay exact with more call
 * sites than slots, through realloc and past the packed counters' guards,
 * and a reader (the timer) never sees them torn; its key keeps it off
 * with the guard held, after the end and in a fork child; the sampled set
 * grows from a small start. Sessions follow the "sessions" case's in the
 * same process (check_sample_track.c's main).
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_libc_real.h"
#include "tests/sample/check_sample_stream.h"
#include "track/internal.h"
#include "track/sample_internal.h"
#include "track/track.h"
#include "track/wire.h"

TCase *sample_hot_tcase(void);

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
	struct ck_dec s;
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
	ck_dec_free(&s);
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
	struct ck_dec s;
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
	ck_dec_free(&s);
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
	struct ck_dec s;
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
	ck_dec_free(&s);
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
	struct ck_dec s;
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
	ck_dec_free(&s);
	start(&r, 64, 7);
	trk_smp_set_stats(&n, &cap);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(cap, cap0);
	finish(&r, &s);
	ck_dec_free(&s);
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
static void site_totals(const struct ck_dec *s, uint64_t *calls, uint64_t *bytes)
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
	struct ck_dec s;
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
	ck_dec_free(&s);
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
	struct ck_dec s;
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
	ck_dec_free(&s);
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
	struct ck_dec s;
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
	ck_dec_free(&s);
}
END_TEST

TCase *sample_hot_tcase(void)
{
	TCase *tc = tcase_create("hot_path");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, many_sites_exact);
	tcase_add_test(tc, realloc_counts_exact);
	tcase_add_test(tc, hot_path_key);
	tcase_add_test(tc, set_grows);
	tcase_add_test(tc, packed_calls_exact);
	tcase_add_test(tc, packed_bytes_exact);
	tcase_add_test(tc, site_read_consistent);
	return tc;
}
