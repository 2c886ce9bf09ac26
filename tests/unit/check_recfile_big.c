/* tests/unit/check_recfile_big.c - unit.recfile's big recordings and event modes */
/* SPDX-License-Identifier: MIT */
/*
 * Part of unit.recfile (check_recfile.c): several event chunks decoded in
 * parallel, an abort and a crash mid-chunk keep what was flushed, a write
 * error stays; each event pattern round-trips whatever mode it gets.
 */
#define _GNU_SOURCE /* program_invocation_short_name, nftw (tests/lib/check_fixture.h) */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "tests/lib/check_fixture.h"
#include "check_recfile.h"
#include "recfile/internal.h"
#include "recfile/recfile.h"
#include "util/hash.h"

/* ------------------------------------------------------------------ */
/* Big recordings: several event chunks, crash, abort.                 */

#define BIG_INFOS 1000

static void write_big(struct rec_writer *w, uint64_t nev)
{
	uint32_t ip, t = 0, a;

	for (uint32_t i = 0; i < BIG_INFOS; i++) {
		CK_REQUIRE((rec_put_ip(w, 0x400000 + i * 16, &ip)) == (0));
		CK_REQUIRE((rec_put_trace(w, i % 3 ? t : 0, ip, &t)) == (0));
		CK_REQUIRE((rec_put_allocinfo(w, i * 8, t, 1, &a)) == (0));
	}
	for (uint64_t k = 0; k < nev; k++) {
		if (k % 3 == 2)
			CK_REQUIRE((rec_put_free(w, (k * 7919) % BIG_INFOS, k & 8)) == (0));
		else
			CK_REQUIRE((rec_put_alloc(w, (k * 7919) % BIG_INFOS, 0)) == (0));
		if (k % 100000 == 0)
			CK_REQUIRE((rec_put_tick(w, k * 1000, k * 4096)) == (0));
	}
}

static void check_big_chunk(const struct rec_reader *r, size_t c, uint64_t *total)
{
	struct rec_event *ev;
	size_t n;
	uint64_t first;

	CK_REQUIRE((rec_event_chunk(r, c, &ev, &n, &first)) == (0));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = first + i;

		CK_REQUIRE((ev[i].info) == ((k * 7919) % BIG_INFOS));
		CK_REQUIRE((ev[i].op) == (k % 3 == 2 ? (k & 8 ? REC_EV_FREE_TEMP : REC_EV_FREE) : REC_EV_ALLOC));
	}
	free(ev);
	__atomic_fetch_add(total, n, __ATOMIC_RELAXED);
}

struct par {
	const struct rec_reader *r;
	size_t from, step;
	uint64_t *total;
};

static void *par_decode(void *arg)
{
	struct par *p = arg;

	for (size_t c = p->from; c < rec_nevent_chunks(p->r); c += p->step)
		check_big_chunk(p->r, c, p->total);
	return NULL;
}

START_TEST(test_big_parallel)
{
	const uint64_t nev = 3000000;
	struct rec_writer *w;
	struct rec_reader *r;
	pthread_t th[3];
	struct par p[3];
	uint64_t total = 0;
	int err;

	w = rec_writer_create(ck_tmppath("big.htap"), &err);
	ck_assert_ptr_nonnull(w);
	write_big(w, nev);
	ck_assert_uint_gt(rec_writer_bytes(w), 0); /* chunks went out before close */
	ck_assert_int_eq(rec_writer_close(w), 0);
	r = rec_open(ck_tmppath("big.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), nev);
	ck_assert_uint_gt(rec_nevent_chunks(r), 2);
	for (int i = 0; i < 3; i++) {
		p[i] = (struct par){ .r = r, .from = i, .step = 3, .total = &total };
		ck_assert_int_eq(pthread_create(&th[i], NULL, par_decode, &p[i]), 0);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(total, nev);
	{
		size_t n;
		const struct rec_tick *tk = rec_ticks(r, &n);

		ck_assert_uint_eq(n, nev / 100000);
		ck_assert_uint_eq(tk[n - 1].event_index, (n - 1) * 100000 + 1); /* after event k */
		ck_assert_uint_eq(tk[n - 1].rss, (n - 1) * 100000 * 4096);
	}
	rec_close(r);
}
END_TEST

/* _i = 1: the same with the chunk thread, which writes what was handed over before the file is closed */
START_TEST(test_abort_keeps_flushed)
{
	struct rec_writer *w;
	struct rec_reader *r;
	uint32_t a, ip, t;
	int err;

	w = rec_writer_create(ck_tmppath("ab.htap"), &err);
	ck_assert_ptr_nonnull(w);
	if (_i)
		ck_assert_int_eq(rec_writer_thread(w), 0);
	ck_assert_int_eq(rec_put_ip(w, 1, &ip), 0);
	ck_assert_int_eq(rec_put_trace(w, 0, ip, &t), 0);
	ck_assert_int_eq(rec_put_allocinfo(w, 8, t, 1, &a), 0);
	ck_assert_int_eq(rec_put_alloc(w, a, 0), 0);
	ck_assert_int_eq(rec_put_meta(w, "state", "flushed"), 0);
	ck_assert_int_eq(rec_writer_flush(w), 0);
	ck_assert_int_eq(rec_put_free(w, a, 0), 0);
	ck_assert_int_eq(rec_put_meta(w, "state", "lost"), 0);
	rec_writer_abort(w);
	r = rec_open(ck_tmppath("ab.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED);
	ck_assert_uint_eq(rec_nevents(r), 1);
	ck_assert_str_eq(rec_meta(r, "state"), "flushed");
	rec_close(r);
}
END_TEST

START_TEST(test_crash_mid_chunk)
{
	/* a child writes a big recording and dies without closing */
	struct rec_reader *r;
	pid_t pid;
	int err, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rec_writer *w = rec_writer_create(ck_tmppath("crash.htap"), &err);

		if (!w)
			_exit(1);
		write_big(w, 1500000);
		_exit(0); /* no close: pending buffers are lost */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	r = rec_open(ck_tmppath("crash.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED);
	ck_assert_uint_gt(rec_nevents(r), 0);
	ck_assert_uint_lt(rec_nevents(r), 1500000);
	{
		uint64_t total = 0;

		for (size_t c = 0; c < rec_nevent_chunks(r); c++)
			check_big_chunk(r, c, &total);
		ck_assert_uint_eq(total, rec_nevents(r));
	}
	ck_assert_uint_eq(rec_fixed_refs(r), 0);
	rec_close(r);
}
END_TEST

/*
 * _i = 0: the writer writes inline; 1: on its chunk thread, whose failure
 * comes back at a later hand-over.
 */
START_TEST(test_write_error_sticky)
{
	/* a child whose files may not grow past 1 MiB: writes fail with EFBIG */
	struct rec_reader *r;
	pid_t pid;
	int err, status;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { .rlim_cur = 1 << 20, .rlim_max = 1 << 20 };
		struct rec_writer *w;
		uint32_t idx;
		int ret = 0;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(10);
		w = rec_writer_create(ck_tmppath("efbig.htap"), &err);
		if (!w || (_i && rec_writer_thread(w)))
			_exit(11);
		/* incompressible strings: the STRINGS buffer fills and is written */
		for (int i = 0; i < (_i ? 4000000 : 1000000) && !ret; i++) {
			char s[64];

			snprintf(s, sizeof(s), "%08x-%d", (unsigned)(i * 2654435761u), i);
			ret = rec_put_string(w, s, &idx);
		}
		if (ret != -REC_E_IO)
			_exit(12);
		/* sticky: every later call says the same, close too */
		if (rec_put_ip(w, 1, &idx) != -REC_E_IO || rec_writer_flush(w) != -REC_E_IO)
			_exit(13);
		if (rec_writer_bytes(w) > 1 << 20)
			_exit(14);
		_exit(rec_writer_close(w) == -REC_E_IO ? 0 : 15);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* what got out whole is readable */
	r = rec_open(ck_tmppath("efbig.htap"), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_TRUNCATED);
	if (!_i)
		ck_assert_str_eq(rec_string(r, 50000), "14d0609f-49999");
	ck_assert_str_eq(rec_string(r, 1), "00000000-0");
	rec_close(r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Event modes: each pattern must round-trip, whatever mode it gets.   */

/* the mode byte of every event chunk of path, or'ed into a bit set */
static unsigned modes_used(const char *path)
{
	struct rec_chunk_hdr h;
	unsigned seen = 0;
	uint8_t *buf;
	size_t len, off = REC_FILE_HDR;

	buf = ck_slurp(path, &len);
	while (len - off >= REC_CHUNK_HDR && !rec_chunk_decode(buf + off, &h)) {
		if (h.section == REC_SEC_EVENTS) {
			uint8_t *u = malloc(h.usize);

			ck_assert_ptr_nonnull(u);
			ck_assert_uint_eq(ZSTD_decompress(u, h.usize, buf + off + REC_CHUNK_HDR, h.csize),
					  h.usize);
			/* the writer keeps allocs' and frees' codes apart in every chunk */
			ck_assert_uint_ne(u[0] & REC_EVF_SPLIT, 0);
			seen |= 1u << (u[0] & ~REC_EVF_SPLIT);
			free(u);
		}
		off += REC_CHUNK_HDR + h.csize;
	}
	free(buf);
	return seen;
}

enum pattern { PAT_FEW_RANDOM, PAT_NEW_INFOS, PAT_SEQUENTIAL, PAT_FIFO_HINTED, PAT_NUM };

#define PAT_EVENTS 1200000

/* the info and op of event k of pattern pat; the writer and the check share it */
static void pattern_event(int pat, uint64_t k, uint32_t *info, uint32_t *op, uint64_t *weight)
{
	uint64_t x = util_fmix64(k + 1); /* k alone must not predict x */
	uint64_t a = k / 2;		 /* allocs before this event, or its alloc's number */

	*weight = 0;
	*op = k % 2 ? REC_EV_FREE : REC_EV_ALLOC;
	switch (pat) {
	case PAT_FEW_RANDOM: /* 50 infos, random: ranks */
		*info = (uint32_t)((x >> 40) % 50);
		if (k % 10 == 4)
			*weight = 4096 + k; /* and a few sampled allocs */
		break;
	case PAT_NEW_INFOS: /* every alloc a new info, frees random old ones */
		*info = k % 2 ? (uint32_t)((x >> 40) % (a + 1)) : (uint32_t)a;
		break;
	case PAT_SEQUENTIAL: /* infos counting up, FIFO frees of 1000 back */
		*info = (uint32_t)((k % 2 ? (a >= 1000 ? a - 1000 : 0) : a) % 60000);
		break;
	default: /* FIFO over 2000 live allocs of 300 random infos */
		if (k % 2)
			a = a >= 2000 ? a - 2000 : 0;
		*info = (uint32_t)(((a * 0x9e3779b97f4a7c15ull) >> 40) % 300);
		if (k % 16 == 7)
			*op = REC_EV_FREE_TEMP;
		break;
	}
}

START_TEST(test_event_modes)
{
	struct rec_writer *w;
	struct rec_reader *r;
	uint32_t ip, t, idx, ninfo = 0;
	uint64_t next = 0;
	unsigned modes;
	char name[32];
	int err;

	snprintf(name, sizeof(name), "modes%d.htap", _i);
	w = rec_writer_create(ck_tmppath(name), &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rec_put_ip(w, 0x1000, &ip), 0);
	ck_assert_int_eq(rec_put_trace(w, 0, ip, &t), 0);
	for (uint64_t k = 0; k < PAT_EVENTS; k++) {
		uint32_t info, op;
		uint64_t wt, a = k / 2;

		pattern_event(_i, k, &info, &op, &wt);
		while (ninfo <= info) {
			CK_REQUIRE(rec_put_allocinfo(w, 8 + ninfo % 100, t, 1, &idx) == 0);
			CK_REQUIRE(idx == ninfo);
			ninfo++;
		}
		if (op == REC_EV_ALLOC) {
			CK_REQUIRE(rec_writer_nallocs(w) == a);
			CK_REQUIRE(rec_put_alloc(w, info, wt) == 0);
		} else if (_i == PAT_FIFO_HINTED) {
			CK_REQUIRE(rec_put_free_of(w, info, op == REC_EV_FREE_TEMP,
						a >= 2000 ? a - 2000 : UINT64_MAX) == 0);
		} else {
			CK_REQUIRE(rec_put_free(w, info, op == REC_EV_FREE_TEMP) == 0);
		}
	}
	/* a hint naming an alloc not made yet is ignored, not an error */
	ck_assert_int_eq(rec_put_free_of(w, 0, 0, UINT64_MAX - 1), 0);
	ck_assert_int_eq(rec_put_free_of(w, ninfo, 0, 0), -REC_E_RANGE);
	ck_assert_int_eq(rec_writer_close(w), 0);

	r = rec_open(ck_tmppath(name), &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_uint_eq(rec_nevents(r), PAT_EVENTS + 1);
	ck_assert_uint_gt(rec_nevent_chunks(r), 1);
	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev;
		size_t n;
		uint64_t first;

		ck_assert_int_eq(rec_event_chunk(r, c, &ev, &n, &first), 0);
		CK_REQUIRE(first == next);
		for (size_t i = 0; i < n && first + i < PAT_EVENTS; i++) {
			uint32_t info, op;
			uint64_t wt;

			pattern_event(_i, first + i, &info, &op, &wt);
			CK_REQUIRE(ev[i].info == info);
			CK_REQUIRE(ev[i].op == op);
			CK_REQUIRE(ev[i].weight == wt);
		}
		next += n;
		free(ev);
	}
	ck_assert_uint_eq(next, PAT_EVENTS + 1);
	ck_assert_uint_eq(rec_dropped_events(r), 0);
	rec_close(r);

	/* the writer chose what suits each pattern */
	modes = modes_used(ck_tmppath(name));
	switch (_i) {
	case PAT_FEW_RANDOM:
		ck_assert_uint_ne(modes & (1u << REC_EVM_RANKED | 1u << (REC_EVM_RANKED | REC_EVF_AGE)), 0);
		break;
	case PAT_NEW_INFOS:
		ck_assert_uint_eq(modes & (1u << REC_EVM_RANKED | 1u << (REC_EVM_RANKED | REC_EVF_AGE)), 0);
		break;
	case PAT_FIFO_HINTED:
		ck_assert_uint_eq(modes & 0xffffu, 0); /* every chunk codes frees by age */
		break;
	default:
		break;
	}
}
END_TEST

/* recfile_big_add - this file's tests, in case "core" after the ones before them */
void recfile_big_add(TCase *tc)
{
	/* this file's own ck_tmpdir: check_fixture.h's state is per file (check_recfile.h) */
	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_big_parallel);
	tcase_add_loop_test(tc, test_abort_keeps_flushed, 0, 2);
	tcase_add_test(tc, test_crash_mid_chunk);
	tcase_add_loop_test(tc, test_write_error_sticky, 0, 2);
	tcase_add_loop_test(tc, test_event_modes, 0, PAT_NUM);
}
