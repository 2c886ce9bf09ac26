/* tests/unit/check_interpret_bad.c - interpret/ against hostile streams: bad headers, lengths, varints, records */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a stream with check_interpret_wire.c, writes it into one
 * end of a socketpair from a thread, runs itp_run on the other end, then
 * opens the recording with rec_open and asserts on its tables and events
 * (check_interpret_harness.h).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_harness.h"
#include "interpret/internal.h"

/* ---- tests --------------------------------------------------------- */

START_TEST(test_bad_magic)
{
	struct sbuf s = {0};
	struct itp_result res;

	header(&s);
	s.p[0] = 'X';
	sb_end(&s, 0, WIRE_END_EXIT);
	run_refused(&s, &res, ITP_E_HEADER, "magic");
	ck_assert_int_eq(res.err, ITP_E_HEADER);
	rec_close(open_kept(0, NULL));
	sb_free(&s);
}
END_TEST

START_TEST(test_bad_version)
{
	struct sbuf s = {0};
	struct itp_result res;

	header(&s);
	s.p[8] = 2;
	run_refused(&s, &res, ITP_E_HEADER, "version 2");
	sb_free(&s);
}
END_TEST

START_TEST(test_header_len_too_big)
{
	struct sbuf s = {0};
	struct itp_result res;
	uint32_t big = WIRE_MAX_HEADER + 1;

	header(&s);
	memcpy(s.p + 12, &big, 4);
	run_refused(&s, &res, ITP_E_HEADER, "header length");
	rec_close(open_rec());
	sb_free(&s);
}
END_TEST

START_TEST(test_header_exe_past_end)
{
	struct sbuf s = {0};
	struct itp_result res;

	header(&s);
	s.p[WIRE_HDR_FIXED] = 120; /* exe_len beyond header_len */
	run_refused(&s, &res, ITP_E_HEADER, "exe length");
	sb_free(&s);
}
END_TEST

START_TEST(test_empty_stream)
{
	struct sbuf s = {0};
	struct itp_result res;

	sb_u8(&s, 'H');
	run_refused(&s, &res, ITP_E_HEADER, "before its header");
	rec_close(open_rec());
	sb_free(&s);
}
END_TEST

START_TEST(test_record_too_long)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	sb_u8(&s, WIRE_REC_CHUNK);
	sb_var(&s, WIRE_MAX_RECORD + 1);
	run_refused(&s, &res, ITP_E_CORRUPT, "record of 1048577 bytes");
	rec_close(open_kept(1, "corrupt"));
	sb_free(&s);
}
END_TEST

START_TEST(test_truncated_varint)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 9, 0, P2);
	sb_u8(&c.b, WIRE_EV_FREE);
	sb_u8(&c.b, 1);
	sb_u8(&c.b, 0x80); /* ptr varint cut by the end of the record */
	ck_end(&s, &c);
	sb_end(&s, 3, WIRE_END_EXIT);
	run_refused(&s, &res, ITP_E_CORRUPT, "thread 1");
	rec_close(open_kept(2, NULL)); /* the events before the fault */
	sb_free(&s);
}
END_TEST

START_TEST(test_overlong_length_varint)
{
	struct sbuf s = {0};
	struct itp_result res;
	int i;

	header(&s);
	sb_u8(&s, WIRE_REC_CHUNK);
	for (i = 0; i < 11; i++)
		sb_u8(&s, 0xff);
	run_refused(&s, &res, ITP_E_CORRUPT, "varint");
	sb_free(&s);
}
END_TEST

/* a ptr varint of 10 bytes whose last byte overflows 64 bits, then more bytes */
START_TEST(test_overflowing_varint)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	int i;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_free(&c, 0, UINT64_MAX); /* the largest valid one: no warning but unknown */
	sb_u8(&c.b, WIRE_EV_FREE);
	sb_u8(&c.b, 1);
	for (i = 0; i < 9; i++)
		sb_u8(&c.b, 0xff);
	sb_u8(&c.b, 0x02);
	for (i = 0; i < 12; i++)
		sb_u8(&c.b, WIRE_EV_NOP);
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_uint_eq(res.warn.unknown_frees, 1);
	sb_free(&s);
}
END_TEST

/*
 * Numbers at every varint length (1 to 10 bytes, each side of each 7-bit
 * boundary), padded (non-canonical) encodings of 3, 8 and 10 bytes, and
 * pointers whose varints end right at the end of the record: the parser's
 * word-at-a-time path (numbers of up to 8 bytes with 8 bytes left) and its
 * byte loop must give the same numbers.
 */
START_TEST(test_varint_boundaries)
{
	static const uint8_t pad[3][10] = {
	    {0x85, 0x80, 0x00},
	    {0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	    {0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	};
	static const size_t padlen[3] = {3, 8, 10};
	uint64_t sizes[24], seq = 0;
	size_t ns = 0, n, i;
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;

	sizes[ns++] = 0;
	for (i = 1; i <= 9; i++) {
		sizes[ns++] = (1ull << (7 * i)) - 1;
		sizes[ns++] = 1ull << (7 * i);
	}
	sizes[ns++] = UINT64_MAX - 1;
	sizes[ns++] = UINT64_MAX;
	header(&s);
	ck_begin(&c, 1, 0);
	for (i = 0; i < ns; i++)
		ck_alloc(&c, seq++, WIRE_KIND_MALLOC, sizes[i], 0, sizes[i] ^ 0x5a);
	for (i = 0; i < 3; i++) {
		/* size 5 padded, then a pointer of that length's class */
		sb_u8(&c.b, WIRE_EV_ALLOC);
		sb_var(&c.b, 1);
		c.seq = seq++;
		sb_u8(&c.b, WIRE_KIND_MALLOC);
		sb_bytes(&c.b, pad[i], padlen[i]);
		sb_var(&c.b, 0);
		sb_var(&c.b, 0x10 + 0x10 * i);
	}
	for (i = 0; i < 3; i++)
		ck_free(&c, seq++, 0x10 + 0x10 * i);
	for (i = 0; i < ns; i++) /* the last pointers end at the record's end */
		ck_free(&c, seq++, sizes[i] ^ 0x5a);
	ck_end(&s, &c);
	sb_end(&s, seq, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_str_eq(res.detail, "");
	ck_assert_uint_eq(res.final.alloc_calls, ns + 3);
	ck_assert_uint_eq(res.final.free_calls, ns + 3);
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.reused_ptrs, 0);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, ns + 1);
	for (i = 0; i < ns; i++)
		ck_assert_uint_eq(ai[i].size, sizes[i]);
	ck_assert_uint_eq(ai[ns].size, 5);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_op)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_nop(&c, 0);
	sb_u8(&c.b, 99);
	sb_u8(&c.b, 1);
	ck_end(&s, &c);
	run_refused(&s, &res, ITP_E_CORRUPT, "unknown event op 99");
	sb_free(&s);
}
END_TEST

START_TEST(test_truncated_stream)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_end(&s, &c);
	s.len -= 3; /* cut inside the second chunk */
	run_refused(&s, &res, ITP_E_TRUNCATED, "inside a record");
	rec_close(open_kept(1, "truncated"));
	sb_free(&s);
}
END_TEST

START_TEST(test_no_end_record)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	run_refused(&s, &res, ITP_E_TRUNCATED, "without an end record");
	ck_assert_uint_eq(res.final.alloc_calls, 1);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_record_and_log)
{
	struct sbuf s = {0}, p = {0};
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	sb_bytes(&p, "\x07xyz", 4);
	sb_record(&s, 200, &p);
	sb_free(&p);
	sb_u8(&p, WIRE_LOG_ERROR);
	sb_bytes(&p, "gave up\n", 8);
	sb_record(&s, WIRE_REC_LOG, &p);
	sb_end(&s, 0, WIRE_END_ERROR);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_records, 1);
	r = open_rec();
	ck_assert_str_eq(rec_meta(r, "library_error"), "gave up?");
	ck_assert_str_eq(rec_meta(r, "end_reason"), "error");
	rec_close(r);
	sb_free(&p);
	sb_free(&s);
}
END_TEST

/* ---- suite ----------------------------------------------------------------- */

static Suite *interpret_bad_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("interpret_bad", "stream", &tc);

	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_header_len_too_big);
	tcase_add_test(tc, test_header_exe_past_end);
	tcase_add_test(tc, test_empty_stream);
	tcase_add_test(tc, test_record_too_long);
	tcase_add_test(tc, test_truncated_varint);
	tcase_add_test(tc, test_overlong_length_varint);
	tcase_add_test(tc, test_overflowing_varint);
	tcase_add_test(tc, test_varint_boundaries);
	tcase_add_test(tc, test_unknown_op);
	tcase_add_test(tc, test_truncated_stream);
	tcase_add_test(tc, test_no_end_record);
	tcase_add_test(tc, test_unknown_record_and_log);
	return s;
}

int main(void)
{
	return ck_run_suite(interpret_bad_suite());
}
