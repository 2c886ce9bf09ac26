/* tests/unit/check_interpret_xframe.c - interpret/ with foreign frames: definitions, marks, hostile records */
/* SPDX-License-Identifier: MIT */
/*
 * Crafted streams (check_interpret_wire.c) whose stacks hold foreign-frame
 * ips (bit 63, track/wire.h "Foreign frames") and WIRE_REC_XFRAME records,
 * through itp_run; the recording is read back and its ips, names and
 * marks checked.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_harness.h"
#include "interpret/internal.h"

/* xdef - append a WIRE_REC_XFRAME record (name and file as C strings). */
static void xdef(struct sbuf *s, uint64_t id, uint8_t lang, uint8_t kind, uint64_t line,
		 const char *name, const char *file)
{
	struct sbuf p = {0};

	sb_var(&p, id);
	sb_u8(&p, lang);
	sb_u8(&p, kind);
	sb_var(&p, line);
	sb_var(&p, strlen(name));
	sb_bytes(&p, name, strlen(name));
	sb_var(&p, strlen(file));
	sb_bytes(&p, file, strlen(file));
	sb_record(s, WIRE_REC_XFRAME, &p);
	sb_free(&p);
}

/* ip_of - the recording's ip entry holding value ip; fails the test if none. */
static const struct rec_ip *ip_of(struct rec_reader *r, uint64_t ip)
{
	size_t n;
	const struct rec_ip *v = rec_ips(r, &n);

	for (size_t i = 0; i < n; i++)
		if (v[i].ip == ip)
			return &v[i];
	ck_abort_msg("ip %#llx not in the recording", (unsigned long long)ip);
	return NULL;
}

/* frame_of - the first link of an ip's chain. */
static const struct rec_frame *frame_of(struct rec_reader *r, const struct rec_ip *ip)
{
	size_t n;
	const struct rec_frame *f = rec_frames(r, &n);

	ck_assert_uint_lt(ip->frame, n);
	return &f[ip->frame];
}

START_TEST(test_defined_before_and_after_use)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_ip *ip;
	const struct rec_frame *f;

	header(&s);
	/* id 1 defined before its first use, id 2 after, id 7 never; id 1 again (ignored) */
	xdef(&s, 1, WIRE_LANG_PYTHON, 0, 142, "render_page", "app/views.py");
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 1, 0, 0x401000);
	ck_node(&c, 1, 2, 1, wire_xframe_ip(2));
	ck_node(&c, 2, 3, 2, wire_xframe_ip(1));
	ck_node(&c, 3, 4, 3, wire_xframe_ip(7));
	ck_node(&c, 4, 5, 4, 0x402000);
	ck_alloc(&c, 5, WIRE_KIND_MALLOC, 100, 5, P1);
	ck_end(&s, &c);
	xdef(&s, 1, WIRE_LANG_JAVA, 0, 1, "not.This", "Other.java");
	xdef(&s, 2, WIRE_LANG_JAVA, WIRE_XKIND_COMPILED, 216, "java.util.zip.Deflater.<init>",
	     "Deflater.java");
	sb_end(&s, 6, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();

	ip = ip_of(r, wire_xframe_ip(1));
	ck_assert_uint_eq(ip->xframe, 1);
	ck_assert_uint_eq(ip->lang, WIRE_LANG_PYTHON);
	ck_assert_uint_eq(ip->module, REC_NONE);
	f = frame_of(r, ip);
	ck_assert_str_eq(rec_string(r, f->function), "render_page");
	ck_assert_str_eq(rec_string(r, f->file), "app/views.py");
	ck_assert_uint_eq(f->line, 142);
	ck_assert_uint_eq(f->outer, REC_NONE);

	ip = ip_of(r, wire_xframe_ip(2));
	ck_assert_uint_eq(ip->xframe, 1);
	ck_assert_uint_eq(ip->lang, WIRE_LANG_JAVA);
	ck_assert_uint_eq(ip->xkind, WIRE_XKIND_COMPILED);
	f = frame_of(r, ip);
	ck_assert_str_eq(rec_string(r, f->function), "java.util.zip.Deflater.<init>");
	ck_assert_str_eq(rec_string(r, f->file), "Deflater.java");
	ck_assert_uint_eq(f->line, 216);

	ip = ip_of(r, wire_xframe_ip(7));
	ck_assert_uint_eq(ip->xframe, 1);
	ck_assert_uint_eq(ip->lang, WIRE_LANG_UNKNOWN);
	ck_assert_str_eq(rec_string(r, frame_of(r, ip)->function), "[frame #7]");

	/* native ips are not marked */
	ck_assert_uint_eq(ip_of(r, 0x401000)->xframe, 0);
	ck_assert_uint_eq(ip_of(r, 0x402000)->xframe, 0);
	ck_assert_str_eq(rec_meta(r, "xframes_defined"), "2");
	ck_assert_str_eq(rec_meta(r, "xframes_undefined"), "1");
	ck_assert_str_eq(rec_meta(r, "xframes_redefined"), "1");
	ck_assert_uint_eq(rec_fixed_refs(r), 0);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_empty_name_and_hostile_bytes)
{
	struct sbuf s = {0}, p = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_frame *f;

	header(&s);
	xdef(&s, 3, WIRE_LANG_PYTHON, 0, 0, "", "");
	/* a NUL inside a name, and bytes after the file (a later revision's fields) */
	sb_var(&p, 4);
	sb_u8(&p, WIRE_LANG_JAVA);
	sb_u8(&p, WIRE_XKIND_INLINED);
	sb_var(&p, 9);
	sb_var(&p, 5);
	sb_bytes(&p, "a\0b\033c", 5);
	sb_var(&p, 0);
	sb_bytes(&p, "\x01\x02\x03", 3);
	sb_record(&s, WIRE_REC_XFRAME, &p);
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 1, 0, wire_xframe_ip(3));
	ck_node(&c, 1, 2, 1, wire_xframe_ip(4));
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 2, P1);
	ck_end(&s, &c);
	sb_end(&s, 3, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	f = frame_of(r, ip_of(r, wire_xframe_ip(3)));
	ck_assert_str_eq(rec_string(r, f->function), "[python frame #3]");
	ck_assert_str_eq(rec_string(r, f->file), "");
	f = frame_of(r, ip_of(r, wire_xframe_ip(4)));
	/* kept as bytes (escaped where printed), the NUL replaced */
	ck_assert_str_eq(rec_string(r, f->function), "a?b\033c");
	ck_assert_uint_eq(ip_of(r, wire_xframe_ip(4))->xkind, WIRE_XKIND_INLINED);
	rec_close(r);
	sb_free(&p);
	sb_free(&s);
}
END_TEST

/* bad_record - a stream with one XFRAME payload p; the run must fail as corrupt naming what. */
static void bad_record(const struct sbuf *p, const char *what)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 1, 0, wire_xframe_ip(1));
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 1, P1);
	ck_end(&s, &c);
	sb_record(&s, WIRE_REC_XFRAME, p);
	sb_end(&s, 2, WIRE_END_EXIT);
	run_refused(&s, &res, ITP_E_CORRUPT, what);
	ck_assert_ptr_nonnull(strstr(res.detail, "foreign frame"));
	/* what came before is kept, and the undefined frame is still named */
	r = open_kept(1, NULL);
	ck_assert_str_eq(rec_string(r, frame_of(r, ip_of(r, wire_xframe_ip(1)))->function),
			 "[frame #1]");
	rec_close(r);
	sb_free(&s);
}

START_TEST(test_garbage_records_rejected)
{
	struct sbuf p = {0};
	char big[WIRE_XFRAME_MAX_NAME + 1];

	memset(big, 'x', sizeof(big));
	/* a name one byte too long */
	sb_var(&p, 1);
	sb_u8(&p, WIRE_LANG_JAVA);
	sb_u8(&p, 0);
	sb_var(&p, 1);
	sb_var(&p, sizeof(big));
	sb_bytes(&p, big, sizeof(big));
	sb_var(&p, 0);
	bad_record(&p, "name");
	sb_free(&p);
	/* a file longer than the record */
	sb_var(&p, 1);
	sb_u8(&p, WIRE_LANG_JAVA);
	sb_u8(&p, 0);
	sb_var(&p, 1);
	sb_var(&p, 1);
	sb_bytes(&p, "f", 1);
	sb_var(&p, 50);
	sb_bytes(&p, "short", 5);
	bad_record(&p, "file");
	sb_free(&p);
	/* an id that would make WIRE_IP_CUT */
	sb_var(&p, WIRE_XFRAME_ID_MAX + 1);
	sb_u8(&p, WIRE_LANG_JAVA);
	sb_u8(&p, 0);
	sb_var(&p, 0);
	sb_var(&p, 0);
	sb_var(&p, 0);
	bad_record(&p, "out of range");
	sb_free(&p);
	/* cut inside the fixed part */
	sb_var(&p, 1);
	sb_u8(&p, WIRE_LANG_JAVA);
	bad_record(&p, "cut short");
	sb_free(&p);
	/* a line past 32 bits */
	sb_var(&p, 1);
	sb_u8(&p, WIRE_LANG_JAVA);
	sb_u8(&p, 0);
	sb_var(&p, (uint64_t)1 << 40);
	sb_var(&p, 0);
	sb_var(&p, 0);
	bad_record(&p, "line");
	sb_free(&p);
}
END_TEST

START_TEST(test_definitions_count_in_the_budget)
{
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	struct sbuf s = {0};
	char name[WIRE_XFRAME_MAX_NAME + 1], file[WIRE_XFRAME_MAX_FILE + 1];
	uint64_t tables;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memset(file, 'f', sizeof(file) - 1);
	file[sizeof(file) - 1] = '\0';
	header(&s);
	/* 16 MiB of names against a 16 MiB budget (a few MiB of it for the tables) */
	for (uint64_t id = 0; id < 8192; id++)
		xdef(&s, id, WIRE_LANG_PYTHON, 0, id, name, file);
	sb_end(&s, 0, WIRE_END_EXIT);
	opt.max_memory = (uint64_t)16 << 20;
	f.wait_stop = 1;
	run_feed(&s, &opt, &res, &f);
	ck_assert_msg(res.err == ITP_E_BUDGET, "err %d (%s)", res.err, res.detail);
	ck_assert_msg(strstr(res.detail, "foreign frame") != NULL, "detail: %s", res.detail);
	itp_budget(&opt, &tables, NULL, NULL);
	ck_assert_uint_le(res.peak_table_bytes, tables);
	ck_assert_uint_gt(res.peak_table_bytes, tables / 2);
	ck_assert(f.got_stop);
	sb_free(&s);
}
END_TEST

static Suite *interpret_xframe_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("interpret_xframe", "xframe", &tc);

	tcase_add_test(tc, test_defined_before_and_after_use);
	tcase_add_test(tc, test_empty_name_and_hostile_bytes);
	tcase_add_test(tc, test_garbage_records_rejected);
	tcase_add_test(tc, test_definitions_count_in_the_budget);
	return s;
}

int main(void)
{
	return ck_run_suite(interpret_xframe_suite());
}
