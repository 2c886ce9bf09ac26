/* tests/unit/check_report_html.c - unit.report_html: the HTML report's heap curve and flame tree */
/* SPDX-License-Identifier: MIT */
/*
 * The heap curve is made during the analysis' own replay (report/curve.c),
 * in parallel ranges; here it is compared with a plain one-thread replay
 * written in this file (the same definition: event i is in stretch
 * i * n / E, each point the highest heap after an allocation or free of its
 * stretch and the first event reaching it), for several thread counts,
 * plain and sampled recordings, fewer and more events than points.
 *
 * The flame tree (report/html_flame.c) is checked on a recording whose
 * main() calls 40 functions from two call sites each, so its node gets
 * more children than a chain holds and moves them to the hash map while
 * the second call sites still have to merge into the existing nodes.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "recfile/recfile.h"
#include "report/html_internal.h"
#include "report/internal.h"
#include "track/wire.h"

#define OK(x) ck_assert_int_eq((x), 0)
#define NINFO 7

static struct rec_reader *open_rec(const char *path)
{
	int err = 0;
	struct rec_reader *r = rec_open(path, &err);

	ck_assert_msg(r != NULL, "open %s: %s", path, rec_strerror(err));
	return r;
}

static struct rpt_data *analyze(struct rec_reader *r, unsigned threads)
{
	struct rpt_options o = { .threads = threads };
	struct rpt_data *d = NULL;

	OK(rpt_analyze(r, &o, &d));
	ck_assert_ptr_nonnull(d);
	return d;
}

/*
 * nevents events of NINFO infos (sizes 8 .. 8 + 64 * 6), a chunk every
 * flush_every events: allocations, frees of a live info (some temporary),
 * a fixed pseudo-random order with phases of growth and shrinking so the
 * curve goes up and down. sampled: each allocation has a weight.
 */
static void write_random(const char *path, unsigned nevents, unsigned flush_every, int sampled)
{
	uint32_t mod, ip, t, info[NINFO];
	unsigned live[NINFO] = { 0 }, i, k;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	struct rec_writer *w;
	int err = 0;

	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	if (sampled)
		OK(rec_put_meta(w, "sample_bytes", "256"));
	OK(rec_put_module(w, "/lib/x.so", 0x10000, 0x1000, NULL, 0, &mod));
	OK(rec_put_ip(w, 0x10010, &ip));
	OK(rec_put_symbol(w, ip, mod, NULL, 0));
	OK(rec_put_trace(w, 0, ip, &t));
	for (k = 0; k < NINFO; k++)
		OK(rec_put_allocinfo(w, 8 + 64 * k, t, WIRE_KIND_MALLOC, &info[k]));
	for (i = 0; i < nevents; i++) {
		int grow = (i / 1500) % 2 == 0;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		k = (unsigned)(x % NINFO);
		if (!live[k] || (x >> 20) % 100 < (grow ? 65u : 35u)) {
			OK(rec_put_alloc(w, info[k], sampled ? 100 + (x >> 40) % 5000 : 0));
			live[k]++;
		} else {
			OK(rec_put_free(w, info[k], (x >> 30) % 4 == 0));
			live[k]--;
		}
		if (flush_every && (i + 1) % flush_every == 0)
			OK(rec_writer_flush(w));
	}
	OK(rec_put_tick(w, 1000000, 4096));
	OK(rec_writer_close(w));
}

/* The curve by one plain replay, with d's free_bytes; returns the number of points. */
static size_t plain_curve(struct rec_reader *r, const struct rpt_data *d, uint64_t *ev_out,
			  uint64_t *heap_out)
{
	uint64_t nevents = rec_nevents(r), at[RPT_CURVE_POINTS];
	int64_t heap = 0, max[RPT_CURVE_POINTS];
	uint8_t has[RPT_CURVE_POINTS] = { 0 };
	size_t n = nevents < RPT_CURVE_POINTS ? (size_t)nevents : RPT_CURVE_POINTS, c, i, out = 0;
	size_t ninfos;
	const struct rec_allocinfo *infos = rec_allocinfos(r, &ninfos);

	for (c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev = NULL;
		uint64_t first = 0;
		size_t m = 0;

		OK(rec_event_chunk(r, c, &ev, &m, &first));
		for (i = 0; i < m; i++) {
			const struct rec_event *e = &ev[i];
			uint64_t idx = first + i;
			size_t k;

			ck_assert_uint_lt(e->info, ninfos);
			if (e->op == REC_EV_ALLOC)
				heap += (int64_t)(e->weight ? e->weight : infos[e->info].size);
			else if (e->op == REC_EV_FREE || e->op == REC_EV_FREE_TEMP)
				heap -= (int64_t)d->free_bytes[e->info];
			else
				continue;
			k = (size_t)(idx * n / nevents);
			if (!has[k] || heap > max[k]) {
				has[k] = 1;
				max[k] = heap;
				at[k] = idx;
			}
		}
		free(ev);
	}
	for (i = 0; i < n; i++) {
		if (!has[i])
			continue;
		ev_out[out] = at[i];
		heap_out[out] = max[i] > 0 ? (uint64_t)max[i] : 0;
		out++;
	}
	return out;
}

static void check_curve(const char *name, unsigned nevents, unsigned flush_every, int sampled)
{
	static uint64_t ev[RPT_CURVE_POINTS], heap[RPT_CURVE_POINTS];
	char path[512];
	struct rec_reader *r;
	unsigned th;

	ck_tmpdir_path(path, sizeof(path), name);
	write_random(path, nevents, flush_every, sampled);
	r = open_rec(path);
	ck_assert_uint_eq(rec_nevents(r), nevents);
	if (flush_every)
		ck_assert_uint_ge(rec_nevent_chunks(r), nevents / flush_every);
	for (th = 1; th <= 8; th++) {
		struct rpt_data *d = analyze(r, th);
		const struct rpt_summary *s = rpt_get_summary(d);
		size_t n = plain_curve(r, d, ev, heap), i, peak_at = n;

		ck_assert_int_eq(s->sampled, sampled);
		ck_assert_uint_eq(d->ncurve, n);
		ck_assert_uint_eq(n, nevents < RPT_CURVE_POINTS ? nevents : RPT_CURVE_POINTS);
		for (i = 0; i < n; i++) {
			ck_assert_msg(d->curve_event[i] == ev[i] && d->curve_heap[i] == heap[i],
				      "%s, %u threads, point %zu: event %llu heap %llu, expected %llu %llu",
				      name, th, i, (unsigned long long)d->curve_event[i],
				      (unsigned long long)d->curve_heap[i], (unsigned long long)ev[i],
				      (unsigned long long)heap[i]);
			if (peak_at == n && heap[i] == s->total.peak)
				peak_at = i;
		}
		/* the peak is a point of the curve: the first reaching the peak heap, at the peak event */
		ck_assert_uint_lt(peak_at, n);
		ck_assert_uint_eq(d->curve_event[peak_at] + 1, s->peak_event);
		rpt_free(d);
	}
	rec_close(r);
}

START_TEST(test_curve_many_events)
{
	check_curve("many.htap", 12345, 1000, 0);
}
END_TEST

START_TEST(test_curve_few_events)
{
	/* fewer events than points: one point per event */
	check_curve("few.htap", 700, 90, 0);
}
END_TEST

START_TEST(test_curve_sampled)
{
	/* frees take the mean weight (pass B makes the curve again) */
	check_curve("sampled.htap", 9000, 700, 1);
}
END_TEST

START_TEST(test_curve_one_chunk)
{
	check_curve("onechunk.htap", 5000, 0, 0);
}
END_TEST

START_TEST(test_curve_empty)
{
	char path[512];
	struct rec_reader *r;
	struct rpt_data *d;

	ck_tmpdir_path(path, sizeof(path), "empty.htap");
	write_random(path, 0, 0, 0);
	r = open_rec(path);
	d = analyze(r, 2);
	ck_assert_uint_eq(d->ncurve, 0);
	rpt_free(d);
	rec_close(r);
}
END_TEST

#define NFUNC 40

/*
 * main (ip M) calls f0 .. f39, each from two ips of its own (A_k and B_k,
 * different lines of the same function). Trace order: main, then A_0 ..
 * A_39, then B_0 .. B_39, so the B traces find their node after main's
 * children moved to the hash map. Each of A_k and B_k allocates k + 1
 * times 10 bytes, and B_k's allocations are freed.
 */
START_TEST(test_flame_merge)
{
	char path[512], fn[NFUNC][16];
	struct rec_writer *w;
	struct rec_reader *r;
	struct rpt_data *d;
	struct html_flame fl;
	uint32_t mod, ipm, tm, ip[2][NFUNC], tr[2][NFUNC], info[2][NFUNC];
	uint64_t calls = 0;
	int seen[NFUNC] = { 0 }, err = 0;
	size_t i, j, k;

	ck_tmpdir_path(path, sizeof(path), "flame.htap");
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_module(w, "/usr/bin/prog", 0x1000, 0x100000, NULL, 0, &mod));
	OK(rec_put_ip(w, 0x1010, &ipm));
	OK(rec_put_symbol(w, ipm, mod, (struct rec_sym[]){ { "main", "m.c", 1 } }, 1));
	OK(rec_put_trace(w, 0, ipm, &tm));
	for (j = 0; j < 2; j++) {
		for (k = 0; k < NFUNC; k++) {
			struct rec_sym s = { fn[k], "f.c", (uint32_t)(10 * k + j) };

			snprintf(fn[k], sizeof(fn[k]), "f%zu", k);
			OK(rec_put_ip(w, 0x2000 + 0x100 * k + 0x10 * j, &ip[j][k]));
			OK(rec_put_symbol(w, ip[j][k], mod, &s, 1));
		}
	}
	for (j = 0; j < 2; j++)
		for (k = 0; k < NFUNC; k++)
			OK(rec_put_trace(w, tm, ip[j][k], &tr[j][k]));
	for (j = 0; j < 2; j++)
		for (k = 0; k < NFUNC; k++)
			OK(rec_put_allocinfo(w, 10, tr[j][k], WIRE_KIND_MALLOC, &info[j][k]));
	for (k = 0; k < NFUNC; k++) {
		for (i = 0; i <= k; i++) {
			OK(rec_put_alloc(w, info[0][k], 0));
			OK(rec_put_alloc(w, info[1][k], 0));
			calls += 2;
		}
	}
	for (k = 0; k < NFUNC; k++)
		for (i = 0; i <= k; i++)
			OK(rec_put_free(w, info[1][k], 0));
	OK(rec_writer_close(w));

	r = open_rec(path);
	d = analyze(r, 2);
	OK(html_flame_build(d, 20000, &fl));
	/* the root, main, and one node per function: A_k and B_k merged */
	ck_assert_uint_eq(fl.n, 2 + NFUNC);
	ck_assert_str_eq(fl.names[fl.nodes[0].name], "all");
	ck_assert_uint_eq(fl.nodes[0].calls, calls);
	ck_assert_uint_eq(fl.nodes[0].bytes, 10 * calls);
	ck_assert_uint_eq(fl.nodes[0].leaked, 10 * calls / 2);
	ck_assert_uint_eq(fl.nodes[1].parent, 0);
	ck_assert_str_eq(fl.names[fl.nodes[1].name], "main");
	ck_assert_uint_eq(fl.nodes[1].calls, calls);
	for (i = 2; i < fl.n; i++) {
		const struct html_flame_node *v = &fl.nodes[i];

		ck_assert_uint_eq(v->parent, 1);
		ck_assert_int_eq(sscanf(fl.names[v->name], "f%zu", &k), 1);
		ck_assert_uint_lt(k, NFUNC);
		ck_assert_int_eq(seen[k]++, 0);
		ck_assert_uint_eq(v->calls, 2 * (k + 1));
		ck_assert_uint_eq(v->bytes, 20 * (k + 1));
		ck_assert_uint_eq(v->leaked, 10 * (k + 1));
	}
	html_flame_free(&fl);
	rpt_free(d);
	rec_close(r);
}
END_TEST

static Suite *html_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("report_html", "core", &tc);

	tcase_add_test(tc, test_curve_many_events);
	tcase_add_test(tc, test_curve_few_events);
	tcase_add_test(tc, test_curve_sampled);
	tcase_add_test(tc, test_curve_one_chunk);
	tcase_add_test(tc, test_curve_empty);
	tcase_add_test(tc, test_flame_merge);
	tcase_set_timeout(tc, 120);
	return s;
}

int main(void)
{
	return ck_run_suite(html_suite());
}
