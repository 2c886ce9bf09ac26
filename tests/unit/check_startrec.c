/* tests/unit/check_startrec.c - Check suite for WIRE_REC_START (inject/startrec.c -> interpret/parse.c) */
/* SPDX-License-Identifier: MIT */
/*
 * The library's start-up record, built by inject/'s own encoder from known
 * stats, goes through itp_run inside a crafted stream; the result and the
 * recording's metadata must hold the same numbers. Streams with more
 * fields (a newer library), fewer (an older one), none (an old stream),
 * and broken ones (count or path length past the record, a cut varint)
 * are parsed with bounds: kept, zero-filled, or refused as corrupt, never
 * read past the record. The library's error reason (WIRE_REC_LOG) reaches
 * itp_result.lib_error.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_wire.h"
#include "inject/internal.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

static char outpath[160];
static int nrun;

/* s through itp_run (written into a socketpair first: streams here are small) */
static int run(const struct sbuf *s, struct itp_result *res)
{
	struct itp_options opt = {0};
	int sv[2], rc;
	size_t off = 0;

	snprintf(outpath, sizeof(outpath), "%s/rec%d.htap", ck_tmpdir, nrun++);
	opt.output = outpath;
	opt.no_symbols = 1;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	while (off < s->len) {
		ssize_t n = write(sv[1], s->p + off, s->len - off);

		ck_assert_int_gt(n, 0);
		off += (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);
	memset(res, 0, sizeof(*res));
	rc = itp_run(sv[0], &opt, res);
	close(sv[0]);
	close(sv[1]);
	return rc;
}

static void header(struct sbuf *s)
{
	static const char cmd[] = "svc\0--x";

	sb_header(s, 4242, WIRE_F_ATTACHED, "/usr/bin/svc", cmd, sizeof(cmd));
}

/* a stream: header, one START record with payload p, END */
static void stream_with(struct sbuf *s, const struct sbuf *p)
{
	header(s);
	sb_record(s, WIRE_REC_START, p);
	sb_end(s, 0, WIRE_END_STOP);
}

/* known stats in inj_g, encoded by the library's own code */
static void library_payload(struct sbuf *p)
{
	uint8_t buf[INJ_START_REC_MAX];
	size_t n;

	memset(&inj_g.st, 0, sizeof(inj_g.st));
	memset(&inj_g.defer0, 0, sizeof(inj_g.defer0));
	inj_g.st.connect_ns = 120000;
	inj_g.st.rate_ns = 15000000;
	inj_g.st.rate_got = 1;
	inj_g.st.session_ns = 17500000;
	inj_g.st.drain_ns = 2000000;
	inj_g.st.start_ns = 2380000000ull; /* 2.38 s: a slow start */
	inj_g.st.first_pass_ns = 350000;
	inj_g.st.first_passes = 2;
	inj_g.st.patched = 31;
	inj_g.defer0.walked = 17;
	inj_g.defer0.modules = 3;
	inj_g.defer0.relro = 1;
	inj_g.defer0.unmapped = 0;
	inj_g.defer0.unreloc = 2;
	strcpy(inj_g.defer0.first, "/usr/lib/libslow.so");
	n = inj_start_record_build(buf);
	ck_assert_uint_gt(n, WIRE_START_NFIELDS);
	ck_assert_uint_le(n, INJ_START_REC_MAX);
	sb_bytes(p, buf, n);
}

START_TEST(test_round_trip)
{
	struct sbuf s = {0}, p = {0};
	struct itp_result res;
	struct rec_reader *r;
	const char *m;
	int err = 0;

	library_payload(&p);
	stream_with(&s, &p);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_int_eq(res.start.have, 1);
	ck_assert_uint_eq(res.start.f[WIRE_START_CONNECT_NS], 120000);
	ck_assert_uint_eq(res.start.f[WIRE_START_RATE_NS], 15000000);
	ck_assert_uint_eq(res.start.f[WIRE_START_RATE_GOT], 1);
	ck_assert_uint_eq(res.start.f[WIRE_START_SESSION_NS], 17500000);
	ck_assert_uint_eq(res.start.f[WIRE_START_DRAIN_NS], 2000000);
	ck_assert_uint_eq(res.start.f[WIRE_START_PASS_DONE_NS], 2380000000ull);
	ck_assert_uint_eq(res.start.f[WIRE_START_PASS_NS], 350000);
	ck_assert_uint_eq(res.start.f[WIRE_START_PASSES], 2);
	ck_assert_uint_eq(res.start.f[WIRE_START_MODULES], 17);
	ck_assert_uint_eq(res.start.f[WIRE_START_PATCHED], 31);
	ck_assert_uint_eq(res.start.f[WIRE_START_DEFERRED], 3);
	ck_assert_uint_eq(res.start.f[WIRE_START_DEF_RELRO], 1);
	ck_assert_uint_eq(res.start.f[WIRE_START_DEF_UNMAPPED], 0);
	ck_assert_uint_eq(res.start.f[WIRE_START_DEF_UNRELOC], 2);
	ck_assert_str_eq(res.start.deferred, "/usr/lib/libslow.so");
	ck_assert_uint_eq(res.warn.unknown_records, 0);
	r = rec_open(outpath, &err);
	ck_assert_msg(r, "rec_open: %s", rec_strerror(err));
	m = rec_meta(r, "attach_startup");
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(strstr(m, "first_pass_done_ns=2380000000 "));
	ck_assert_ptr_nonnull(strstr(m, "deferred=3 "));
	ck_assert_ptr_nonnull(strstr(m, "deferred_first=/usr/lib/libslow.so"));
	rec_close(r);
	sb_free(&p);
	sb_free(&s);
}
END_TEST

/* a newer library: more fields than this heaptap knows, skipped */
START_TEST(test_more_fields)
{
	struct sbuf s = {0}, p = {0};
	struct itp_result res;

	sb_var(&p, WIRE_START_NFIELDS + 3);
	for (uint64_t i = 0; i < WIRE_START_NFIELDS + 3; i++)
		sb_var(&p, 1000 + i);
	sb_var(&p, 3);
	sb_bytes(&p, "a\nb", 3);
	stream_with(&s, &p);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_int_eq(res.start.have, 1);
	ck_assert_uint_eq(res.start.f[0], 1000);
	ck_assert_uint_eq(res.start.f[WIRE_START_NFIELDS - 1], 1000 + WIRE_START_NFIELDS - 1);
	ck_assert_uint_eq(res.start.f[WIRE_START_NFIELDS], 0); /* not taken from the extra ones */
	ck_assert_str_eq(res.start.deferred, "a?b");	      /* made printable */
	sb_free(&p);
	sb_free(&s);
}
END_TEST

/* an older library: fewer fields, the rest 0 */
START_TEST(test_fewer_fields)
{
	struct sbuf s = {0}, p = {0};
	struct itp_result res;

	sb_var(&p, 2);
	sb_var(&p, 7);
	sb_var(&p, 9);
	sb_var(&p, 0);
	stream_with(&s, &p);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_int_eq(res.start.have, 1);
	ck_assert_uint_eq(res.start.f[WIRE_START_CONNECT_NS], 7);
	ck_assert_uint_eq(res.start.f[WIRE_START_RATE_NS], 9);
	ck_assert_uint_eq(res.start.f[WIRE_START_PASS_DONE_NS], 0);
	ck_assert_str_eq(res.start.deferred, "");
	sb_free(&p);
	sb_free(&s);
}
END_TEST

/* an old-format stream (no START record) still parses */
START_TEST(test_old_stream)
{
	struct sbuf s = {0};
	struct itp_result res;

	header(&s);
	sb_tick(&s, 1000, 4096, 0);
	sb_end(&s, 0, WIRE_END_STOP);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_int_eq(res.start.have, 0);
	ck_assert_int_eq(res.end_reason, WIRE_END_STOP);
	ck_assert_str_eq(res.lib_error, "");
	sb_free(&s);
}
END_TEST

/* each broken payload: refused as corrupt, not read past */
START_TEST(test_corrupt)
{
	static const struct {
		const char *what;
		uint8_t b[16];
		size_t n;
	} cases[] = {
	    {"empty", {0}, 0},
	    {"count too big", {65}, 1},
	    {"count past the record", {5, 1, 2}, 3},
	    {"field varint cut", {2, 1, 0x80}, 3},
	    {"no path length", {1, 1}, 2},
	    {"path past the record", {1, 1, 9, 'a', 'b'}, 5},
	    {"path length huge", {1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, 7},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sbuf s = {0}, p = {0};
		struct itp_result res;
		int rc;

		sb_bytes(&p, cases[i].b, cases[i].n);
		stream_with(&s, &p);
		rc = run(&s, &res);
		ck_assert_msg(rc == -ITP_E_CORRUPT, "%s: rc %d", cases[i].what, rc);
		ck_assert_msg(res.start.have == 0, "%s: taken", cases[i].what);
		ck_assert_msg(strstr(res.detail, "start record"), "%s: detail '%s'", cases[i].what,
			      res.detail);
		sb_free(&p);
		sb_free(&s);
	}
}
END_TEST

/* the library's reason for WIRE_END_ERROR, as inject/startrec.c words it */
START_TEST(test_error_reason)
{
	static const char msg[] = "cannot read /proc/self/maps: ENOENT (errno 2)";
	struct sbuf s = {0}, p = {0};
	struct itp_result res;

	header(&s);
	sb_u8(&p, WIRE_LOG_ERROR);
	sb_bytes(&p, msg, sizeof(msg) - 1);
	sb_record(&s, WIRE_REC_LOG, &p);
	sb_end(&s, 0, WIRE_END_ERROR);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_int_eq(res.end_reason, WIRE_END_ERROR);
	ck_assert_str_eq(res.lib_error, msg);
	sb_free(&p);
	sb_free(&s);
}
END_TEST

static Suite *startrec_suite(void)
{
	Suite *s = suite_create("startrec");
	TCase *tc = tcase_create("start");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_more_fields);
	tcase_add_test(tc, test_fewer_fields);
	tcase_add_test(tc, test_old_stream);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_error_reason);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(startrec_suite());
}
