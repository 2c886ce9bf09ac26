/* tests/sample/check_sample_rec.c - site counts through interpret/ and recfile/, and CTL_SAMPLE from itp_run */
/* SPDX-License-Identifier: MIT */
/*
 * Crafted streams (tests/unit/check_interpret_wire.c builds them) go
 * through itp_run over a socketpair; the recording is opened with rec_open:
 *   - SITES records are summed per ip, every site ip joins the ip table,
 *     the "no ip" entry is kept, weighted allocations keep their weight;
 *   - a SITES record that claims more entries than it holds ends the stream
 *     as corrupt, with what came before kept;
 *   - itp_run sends WIRE_CTL_SAMPLE (rate, seed) first when asked to;
 *   - recfile alone: site counts round trip, an ip index past the table is
 *     read as REC_NONE and counted as a fixed reference.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_stream.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

static char outpath[160];
static int nrun;

/* s through itp_run into a fresh recording (outpath), read back by f's settings */
static int run(const struct sbuf *s, struct itp_options *opt, struct itp_result *res,
	       struct ck_feed *f)
{
	snprintf(outpath, sizeof(outpath), "%s/rec%d.htap", ck_tmpdir, nrun++);
	opt->output = outpath;
	opt->no_symbols = 1;
	ck_feed_add(f, s, 0);
	return ck_feed_run(f, opt, res);
}

START_TEST(sites_summed_and_stored)
{
	static const char cmd[] = "prog";
	struct sbuf s = { 0 };
	struct chunkb c;
	struct itp_options opt = { 0 };
	struct itp_result res;
	struct ck_feed f = { 0 };
	struct rec_reader *r;
	const struct rec_site_count *sc;
	const struct rec_ip *ips;
	size_t n, nips;
	uint64_t a[] = { 0x401234, 10, 1000, 0x405678, 1, 4096 };
	uint64_t b[] = { 0x401234, 5, 500, 0, 7, 70 };
	uint64_t calls_401234 = 0, bytes_401234 = 0, other = 0, total = 0;
	int err = 0;

	sb_header(&s, 4242, WIRE_F_ATTACHED, "/usr/bin/prog", cmd, sizeof(cmd));
	ck_begin(&c, 4242, 0);
	ck_node(&c, 0, 1, 0, 0x401234);
	ck_alloc_w(&c, 1, 16, 1, 0x7f0000001000ull, 65536);
	ck_end(&s, &c);
	sb_sites(&s, 2, a);
	sb_sites(&s, 2, b);
	sb_end(&s, 2, WIRE_END_STOP);
	opt.sample_ctl = 1;
	opt.sample_bytes = 65536;
	opt.sample_seed = 9;
	f.back_ms = 10000; /* what itp_run sends first */
	ck_assert_int_eq(run(&s, &opt, &res, &f), 0);
	ck_assert_uint_eq(res.site_calls, 23);
	ck_assert_uint_eq(res.site_bytes, 5666);
	ck_assert_uint_eq(res.site_records, 2);
	/* the rate went out first: type, length 4, varint 65536 (3 bytes), seed 9 */
	ck_assert_int_ge(f.nback, 6);
	ck_assert_uint_eq(f.back[0], WIRE_CTL_SAMPLE);
	ck_assert_uint_eq(f.back[1], 4);
	ck_assert_uint_eq(f.back[2], 0x80);
	ck_assert_uint_eq(f.back[3], 0x80);
	ck_assert_uint_eq(f.back[4], 0x04);
	ck_assert_uint_eq(f.back[5], 9);

	r = rec_open(outpath, &err);
	ck_assert_msg(r, "rec_open: %s", rec_strerror(err));
	ck_assert_str_eq(rec_meta(r, "sample_bytes"), "65536");
	ck_assert_str_eq(rec_meta(r, "sampled"), "1");
	sc = rec_site_counts(r, &n);
	ips = rec_ips(r, &nips);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		total += sc[i].calls;
		if (sc[i].ip == REC_NONE) {
			other += sc[i].calls;
			continue;
		}
		ck_assert_uint_lt(sc[i].ip, nips);
		if (ips[sc[i].ip].ip == 0x401234) {
			calls_401234 += sc[i].calls;
			bytes_401234 += sc[i].bytes;
		} else {
			ck_assert_uint_eq(ips[sc[i].ip].ip, 0x405678);
		}
	}
	ck_assert_uint_eq(calls_401234, 15);
	ck_assert_uint_eq(bytes_401234, 1500);
	ck_assert_uint_eq(other, 7);
	ck_assert_uint_eq(total, 23);
	/* the node's ip and the site's are one ip */
	ck_assert_uint_eq(nips, 2);
	ck_assert_uint_eq(rec_fixed_refs(r), 0);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(sites_bad_count)
{
	static const char cmd[] = "prog";
	struct sbuf s = { 0 }, p = { 0 };
	struct itp_options opt = { 0 };
	struct itp_result res;
	struct ck_feed f = { 0 };
	uint64_t a[] = { 0x401234, 10, 1000 };

	sb_header(&s, 1, 0, "/bin/x", cmd, sizeof(cmd));
	sb_sites(&s, 1, a);
	sb_var(&p, 1000000); /* claims a million entries in 4 bytes */
	sb_var(&p, 1);
	sb_record(&s, WIRE_REC_SITES, &p);
	sb_end(&s, 0, WIRE_END_STOP);
	f.back_ms = 200;
	ck_assert_int_eq(run(&s, &opt, &res, &f), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "site counts"));
	ck_assert_uint_eq(res.site_calls, 10);
	/* no sample_ctl: nothing was sent */
	ck_assert_int_le(f.nback, 0);
	sb_free(&p);
	sb_free(&s);
}
END_TEST

START_TEST(recfile_round_trip)
{
	struct rec_writer *w;
	struct rec_reader *r;
	const struct rec_site_count *sc;
	uint32_t ip;
	size_t n;
	int err = 0;

	snprintf(outpath, sizeof(outpath), "%s/direct.htap", ck_tmpdir);
	w = rec_writer_create(outpath, &err);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rec_put_ip(w, 0x1000, &ip), 0);
	ck_assert_int_eq(rec_put_site_count(w, ip, 3, 300), 0);
	ck_assert_int_eq(rec_put_site_count(w, REC_NONE, 1, 1ull << 40), 0);
	ck_assert_int_eq(rec_put_site_count(w, 57, 2, 2), 0); /* no such ip */
	ck_assert_int_eq(rec_writer_close(w), 0);
	r = rec_open(outpath, &err);
	ck_assert_ptr_nonnull(r);
	sc = rec_site_counts(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(sc[0].ip, ip);
	ck_assert_uint_eq(sc[0].calls, 3);
	ck_assert_uint_eq(sc[0].bytes, 300);
	ck_assert_uint_eq(sc[1].ip, REC_NONE);
	ck_assert_uint_eq(sc[1].bytes, 1ull << 40);
	ck_assert_uint_eq(sc[2].ip, REC_NONE);
	ck_assert_uint_eq(rec_fixed_refs(r), 1);
	rec_close(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sample_rec");
	TCase *tc = tcase_create("sites");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, sites_summed_and_stored);
	tcase_add_test(tc, sites_bad_count);
	tcase_add_test(tc, recfile_round_trip);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
