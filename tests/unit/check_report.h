/* tests/unit/check_report.h - unit.report's recordings: the basic one, opening and analyzing (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * check_report.c (the numbers) and check_report_render.c (JSON and text,
 * bad recordings) write their recordings with the recfile writer from
 * known events, so every expected number is worked out by hand in the
 * comments. Static inline: the suites' build line names no other file.
 */
#ifndef HEAPTAP_TESTS_UNIT_CHECK_REPORT_H
#define HEAPTAP_TESTS_UNIT_CHECK_REPORT_H

#include <check.h>
#include <stdint.h>

#include "tests/lib/check_fixture.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

#define OK(x) ck_assert_int_eq((x), 0)

/*
 * The basic recording.
 *
 *   module /usr/bin/prog at base 0x1000
 *   ips:  I0 0x1100 -> inl_fn a.c:10 (inlined into) fnA a.c:20
 *         I1 0x1200 -> fnB b.c:5
 *         I2 0x1300 -> main m.c:1
 *         I3 0x5555 -> no module, no symbol
 *   traces: T1 = main          T2 = I0 <- T1      T3 = I1 <- T1
 *           T4 = I0 <- T3      T5 = I3 (root)
 *   infos: A0 (100, T2, malloc)  A1 (200, T4, calloc)  A2 (50, T3, malloc)
 *          A3 (1000, T5, realloc) A4 (8, T2, posix_memalign)
 *
 *   events                      heap after
 *    1 alloc A0                  100
 *    2 alloc A0                  200
 *    3 alloc A0                  300
 *    4 free-temp A0              200
 *    5 alloc A1                  400
 *    6 alloc A1                  600
 *    7 alloc A2                  650
 *      tick 1000 ns, rss 4096, index 7
 *    8 alloc A3                 1650   <- peak (8 events applied)
 *    9 free A3                   650
 *   10 free A1                   450
 *   11 free A0                   350
 *   12 alloc A4                  358
 *      tick 2000 ns, rss 8192, index 12
 *
 * flush_every > 0 flushes the writer after that many events, so the
 * events span several chunks (and so several replay ranges).
 */
static inline void write_basic(const char *path, int flush_every, int close_it)
{
	static const uint8_t bid[] = { 0xde, 0xad, 0xbe, 0xef };
	struct rec_sym a_chain[] = { { "inl_fn", "a.c", 10 }, { "fnA", "a.c", 20 } };
	struct rec_sym b_chain[] = { { "fnB", "b.c", 5 } };
	struct rec_sym m_chain[] = { { "main", "m.c", 1 } };
	uint32_t mod, i0, i1, i2, i3, t1, t2, t3, t4, t5, a[5];
	struct rec_writer *w;
	int err = 0, nev = 0;
	const char *p;

	w = rec_writer_create(path, &err);
	ck_assert_msg(w != NULL, "create: %s", rec_strerror(err));
	OK(rec_put_meta(w, "exe", "/usr/bin/prog"));
	OK(rec_put_meta(w, "command", "/usr/bin/prog --flag"));
	OK(rec_put_meta(w, "pid", "4242"));
	OK(rec_put_meta(w, "attached", "0"));
	OK(rec_put_meta(w, "sample_bytes", "0"));
	OK(rec_put_meta(w, "end_reason", "exit"));
	OK(rec_put_module(w, "/usr/bin/prog", 0x1000, 0x4000, bid, sizeof(bid), &mod));
	OK(rec_put_ip(w, 0x1100, &i0));
	OK(rec_put_ip(w, 0x1200, &i1));
	OK(rec_put_ip(w, 0x1300, &i2));
	OK(rec_put_ip(w, 0x5555, &i3));
	OK(rec_put_symbol(w, i0, mod, a_chain, 2));
	OK(rec_put_symbol(w, i1, mod, b_chain, 1));
	OK(rec_put_symbol(w, i2, mod, m_chain, 1));
	OK(rec_put_symbol(w, i3, REC_NONE, NULL, 0));
	OK(rec_put_trace(w, 0, i2, &t1));
	OK(rec_put_trace(w, t1, i0, &t2));
	OK(rec_put_trace(w, t1, i1, &t3));
	OK(rec_put_trace(w, t3, i0, &t4));
	OK(rec_put_trace(w, 0, i3, &t5));
	ck_assert_uint_eq(t1, 1);
	ck_assert_uint_eq(t5, 5);
	OK(rec_put_allocinfo(w, 100, t2, WIRE_KIND_MALLOC, &a[0]));
	OK(rec_put_allocinfo(w, 200, t4, WIRE_KIND_CALLOC, &a[1]));
	OK(rec_put_allocinfo(w, 50, t3, WIRE_KIND_MALLOC, &a[2]));
	OK(rec_put_allocinfo(w, 1000, t5, WIRE_KIND_REALLOC, &a[3]));
	OK(rec_put_allocinfo(w, 8, t2, WIRE_KIND_POSIX_MEMALIGN, &a[4]));
	/*
	 * The table above, one letter per step: a..e = alloc A0..A4,
	 * F = free-temp A0, f/g/h = free A3/A1/A0, P/T = the two ticks.
	 */
	for (p = "aaaFbbcPdfgheT"; *p; p++) {
		int ev = 1;

		switch (*p) {
		case 'a': case 'b': case 'c': case 'd': case 'e':
			OK(rec_put_alloc(w, a[*p - 'a'], 0));
			break;
		case 'F':
			OK(rec_put_free(w, a[0], 1));
			break;
		case 'f':
			OK(rec_put_free(w, a[3], 0));
			break;
		case 'g':
			OK(rec_put_free(w, a[1], 0));
			break;
		case 'h':
			OK(rec_put_free(w, a[0], 0));
			break;
		case 'P':
			OK(rec_put_tick(w, 1000, 4096));
			ev = 0;
			break;
		case 'T':
			OK(rec_put_tick(w, 2000, 8192));
			ev = 0;
			break;
		}
		nev += ev;
		if (ev && flush_every > 0 && nev % flush_every == 0)
			OK(rec_writer_flush(w));
	}
	if (close_it) {
		OK(rec_writer_close(w));
	} else {
		OK(rec_writer_flush(w));
		rec_writer_abort(w);
	}
}

static inline struct rpt_data *analyze(struct rec_reader *r, unsigned threads)
{
	struct rpt_options o = { .threads = threads };
	struct rpt_data *d = NULL;

	OK(rpt_analyze(r, &o, &d));
	ck_assert_ptr_nonnull(d);
	return d;
}

static inline struct rec_reader *open_rec(const char *path)
{
	int err = 0;
	struct rec_reader *r = rec_open(path, &err);

	ck_assert_msg(r != NULL, "open %s: %s", path, rec_strerror(err));
	return r;
}

/*
 * write_basic(flush_every) into ck_tmpdir/name, opened into *r; returns its
 * analysis by threads. The caller frees both (rpt_free, rec_close).
 */
static inline struct rpt_data *basic_data(const char *name, int flush_every, unsigned threads,
				   struct rec_reader **r)
{
	char path[512];

	ck_tmpdir_path(path, sizeof(path), name);
	write_basic(path, flush_every, 1);
	*r = open_rec(path);
	return analyze(*r, threads);
}

#endif /* HEAPTAP_TESTS_UNIT_CHECK_REPORT_H */
