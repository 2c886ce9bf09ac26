/* tests/unit/check_report_render.c - unit.report's suite "report-render": JSON and text, bad recordings */
/* SPDX-License-Identifier: MIT */
/*
 * The basic recording (check_report.h) and a few of their own rendered as
 * JSON (checked by a small syntax checker) and text; empty, cut and
 * corrupt recordings analyzed and rendered without a crash; the size and
 * function names.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "tests/unit/check_report.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

Suite *report_render_suite(void);

/* A tiny JSON syntax checker: returns the end of one value, or NULL. */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				int i;

				for (i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 4;
			} else if (!*p || !strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		int obj = *p == '{';

		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = json_string(json_ws(p));
				if (!p)
					return NULL;
				p = json_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = json_value(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == ',') {
				p++;
				continue;
			}
			return *p == close ? p + 1 : NULL;
		}
	}
	if (*p == '"')
		return json_string(p);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;

		strtod(p, &end);
		return end;
	}
	return NULL;
}

static void check_json_valid(const char *s)
{
	const char *end = json_value(s);

	ck_assert_msg(end != NULL, "invalid JSON:\n%s", s);
	ck_assert_msg(*json_ws(end) == '\0', "trailing bytes after JSON");
}

static char *render(struct rpt_data *d, int json, size_t top)
{
	struct rpt_print_options po = { .path = "x.htap", .top = top, .backtraces = 5, .max_frames = 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	if (json)
		OK(rpt_write_json(f, d, &po));
	else
		OK(rpt_write_text(f, d, &po));
	fclose(f);
	return buf;
}

START_TEST(test_json)
{
	struct rec_reader *r;
	struct rpt_data *d = basic_data("json.htap", 3, 2, &r);
	char *js = render(d, 1, 10);

	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"format\": \"heaptap-report\""));
	ck_assert_ptr_nonnull(strstr(js, "\"command\": \"/usr/bin/prog --flag\""));
	ck_assert_ptr_nonnull(strstr(js, "\"calls\": 8, \"bytes\": 1758, \"peak\": 1650, "
					 "\"peak_calls\": 6, \"leaked\": 358, \"leaked_calls\": 4, "
					 "\"temporary\": 1, \"temporary_bytes\": 100"));
	ck_assert_ptr_nonnull(strstr(js, "\"peak_heap\": 1650, \"peak_event\": 8, \"peak_time_ns\": 2000"));
	ck_assert_ptr_nonnull(strstr(js, "\"malloc\": {\"calls\": 4, \"bytes\": 350,"));
	ck_assert_ptr_nonnull(strstr(js, "\"calloc\": {\"calls\": 2, \"bytes\": 400,"));
	ck_assert_ptr_nonnull(strstr(js, "\"pvalloc\": {\"calls\": 0,"));
	ck_assert_ptr_null(strstr(js, "\"unknown\""));
	/* the first site of "allocations" is 0x1100 with 6 calls, 2 traces */
	ck_assert_ptr_nonnull(strstr(js, "\"allocations\": [\n    {\"ip\": \"0x1100\", \"calls\": 6, "
					 "\"bytes\": 708, \"peak\": 600"));
	ck_assert_ptr_nonnull(strstr(js, "\"traces\": 2, \"frames\": [{\"ip\": \"0x1100\", "
					 "\"function\": \"inl_fn\", \"file\": \"a.c\", \"line\": 10, "
					 "\"module\": \"/usr/bin/prog\", \"offset\": 256, \"inlined\": true}"));
	ck_assert_ptr_nonnull(strstr(js, "{\"ip\": \"0x5555\", \"function\": null, \"file\": null, "
					 "\"line\": 0, \"module\": null, \"offset\": 0, \"inlined\": false}"));
	ck_assert_ptr_nonnull(strstr(js, "\"attached\": false, \"truncated\": false"));
	ck_assert_ptr_nonnull(strstr(js, "\"end_reason\": \"exit\""));
	ck_assert_ptr_nonnull(strstr(js, "{\"ip\": \"0x1200\", \"calls\": 1, \"bytes\": 50"));
	free(js);

	/* -n 1: one site per list */
	js = render(d, 1, 1);
	check_json_valid(js);
	ck_assert_ptr_null(strstr(js, "{\"ip\": \"0x1200\", \"calls\""));
	free(js);
	/* -n 0: empty lists, still valid */
	js = render(d, 1, 0);
	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"allocations\": []"));
	free(js);
	rpt_free(d);
	rec_close(r);
}
END_TEST

START_TEST(test_text)
{
	struct rec_reader *r;
	struct rpt_data *d = basic_data("text.htap", 0, 1, &r);
	char *tx = render(d, 0, 10);

	ck_assert_ptr_nonnull(strstr(tx, "allocation calls       8 "));
	ck_assert_ptr_nonnull(strstr(tx, "recording state        complete, session end: exit\n"));
	ck_assert_ptr_nonnull(strstr(tx, "peak heap              1.6 KiB at 0.000 s"));
	ck_assert_ptr_nonnull(strstr(tx, "temporary allocations  1 (12.5% of calls)"));
	ck_assert_ptr_nonnull(strstr(tx, "leaked at exit         358 B in 4 allocations"));
	ck_assert_ptr_nonnull(strstr(tx, "peak RSS               8.0 KiB"));
	ck_assert_ptr_nonnull(strstr(tx, " 1. 6 calls, 708 B allocated\n    at inl_fn\n"));
	ck_assert_ptr_nonnull(strstr(tx, "inl_fn  a.c:10  (inlined)\n"));
	ck_assert_ptr_nonnull(strstr(tx, "0x5555\n"));
	ck_assert_ptr_nonnull(strstr(tx, "MOST TEMPORARY ALLOCATIONS\n 1. 1 temporary of 6 calls"));
	free(tx);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* Names with quotes, control bytes and bad UTF-8 still give valid JSON. */
START_TEST(test_json_escaping)
{
	char path[512];
	struct rec_writer *w;
	struct rec_reader *r;
	struct rpt_data *d;
	struct rec_sym sym = { "f\"q\\b\nn\tt\x01x\x7f \xc3\xa9 \xff\xc3 end", "dir/\"x\".c", 3 };
	uint32_t ip, t, info, mod;
	int err = 0;
	char *js;

	ck_tmpdir_path(path, sizeof(path), "esc.htap");
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_meta(w, "command", "prog \"arg\""));
	OK(rec_put_module(w, "/lib/\xe2\x82\xac.so", 0x1000, 0x1000, NULL, 0, &mod));
	OK(rec_put_ip(w, 0x1010, &ip));
	OK(rec_put_symbol(w, ip, mod, &sym, 1));
	OK(rec_put_trace(w, 0, ip, &t));
	OK(rec_put_allocinfo(w, 10, t, WIRE_KIND_MALLOC, &info));
	OK(rec_put_alloc(w, info, 0));
	OK(rec_writer_close(w));
	r = open_rec(path);
	d = analyze(r, 1);
	js = render(d, 1, 10);
	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"command\": \"prog \\\"arg\\\"\""));
	ck_assert_ptr_nonnull(strstr(js, "\"function\": \"f\\\"q\\\\b\\nn\\tt\\u0001x\\u007f \xc3\xa9 "
					 "\\ufffd\\ufffd end\""));
	ck_assert_ptr_nonnull(strstr(js, "\"file\": \"dir/\\\"x\\\".c\""));
	ck_assert_ptr_nonnull(strstr(js, "\"module\": \"/lib/\xe2\x82\xac.so\""));
	free(js);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* Empty recording: no events, no ticks. */
START_TEST(test_empty)
{
	char path[512];
	struct rec_writer *w;
	struct rec_reader *r;
	struct rpt_data *d;
	const struct rpt_summary *s;
	size_t n;
	int err = 0;
	char *js, *tx;

	ck_tmpdir_path(path, sizeof(path), "empty.htap");
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_writer_close(w));
	r = open_rec(path);
	d = analyze(r, 0);
	s = rpt_get_summary(d);
	ck_assert_uint_eq(s->total.calls, 0);
	ck_assert_uint_eq(s->total.peak, 0);
	ck_assert_int_eq(s->peak_time_known, 0);
	ck_assert_str_eq(s->command, "");
	rpt_top_sites(d, RPT_COST_CALLS, &n);
	ck_assert_uint_eq(n, 0);
	js = render(d, 1, 10);
	check_json_valid(js);
	ck_assert_ptr_nonnull(strstr(js, "\"peak_time_ns\": null"));
	tx = render(d, 0, 10);
	ck_assert_ptr_nonnull(strstr(tx, "(none)"));
	free(js);
	free(tx);
	rpt_free(d);
	rec_close(r);
}
END_TEST

/* Analyze and render whatever opens; must never crash (ASan watches). */
static int try_buffer(const void *buf, size_t len)
{
	struct rec_reader *r;
	struct rpt_data *d = NULL;
	struct rpt_options o = { .threads = 2 };
	int err = 0, truncated;
	char *js, *tx;

	r = rec_open_mem(buf, len, &err);
	if (!r)
		return -1;
	OK(rpt_analyze(r, &o, &d));
	truncated = rpt_get_summary(d)->truncated;
	js = render(d, 1, 10);
	check_json_valid(js);
	tx = render(d, 0, 10);
	free(js);
	free(tx);
	rpt_free(d);
	rec_close(r);
	return truncated;
}

/* A recording cut at every length: truncated or refused, never a crash. */
START_TEST(test_truncated)
{
	char path[512];
	char *buf;
	size_t len, cut;
	int truncated_seen = 0, refused = 0;

	ck_tmpdir_path(path, sizeof(path), "cut.htap");
	write_basic(path, 2, 1);
	buf = (char *)ck_slurp(path, &len);
	ck_assert_int_eq(try_buffer(buf, len), 0);
	for (cut = 0; cut < len; cut++) {
		int t = try_buffer(buf, cut);

		if (t > 0)
			truncated_seen++;
		else if (t < 0)
			refused++;
	}
	ck_assert_int_gt(truncated_seen, 0);
	ck_assert_int_gt(refused, 0); /* at least the empty file */
	free(buf);
}
END_TEST

/* Bytes flipped all over a valid recording. */
START_TEST(test_corrupt)
{
	char path[512];
	unsigned char *buf, *copy;
	size_t len, i;
	unsigned seed = 12345;

	ck_tmpdir_path(path, sizeof(path), "flip.htap");
	write_basic(path, 2, 1);
	buf = (unsigned char *)ck_slurp(path, &len);
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	for (i = 0; i < 3000; i++) {
		size_t k, flips = 1 + (i % 4);

		memcpy(copy, buf, len);
		for (k = 0; k < flips; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % len] ^= (unsigned char)(1u << ((seed >> 4) & 7));
		}
		try_buffer(copy, len);
	}
	/* garbage is not a recording */
	memset(copy, 'x', len);
	ck_assert_int_lt(try_buffer(copy, len), 0);
	free(copy);
	free(buf);
}
END_TEST

START_TEST(test_format_size)
{
	char b[32];

	ck_assert_str_eq(rpt_format_size(0, b, sizeof(b)), "0 B");
	ck_assert_str_eq(rpt_format_size(1023, b, sizeof(b)), "1023 B");
	ck_assert_str_eq(rpt_format_size(1024, b, sizeof(b)), "1.0 KiB");
	ck_assert_str_eq(rpt_format_size(1536, b, sizeof(b)), "1.5 KiB");
	ck_assert_str_eq(rpt_format_size(1048575, b, sizeof(b)), "1.0 MiB");
	ck_assert_str_eq(rpt_format_size(10ull << 20, b, sizeof(b)), "10.0 MiB");
	ck_assert_str_eq(rpt_format_size(5ull << 30, b, sizeof(b)), "5.0 GiB");
	ck_assert_str_eq(rpt_format_size(3ull << 40, b, sizeof(b)), "3.0 TiB");
	ck_assert_str_eq(rpt_function_name(WIRE_KIND_REALLOCARRAY), "reallocarray");
	ck_assert_str_eq(rpt_function_name(WIRE_KIND_PVALLOC), "pvalloc");
	ck_assert_str_eq(rpt_function_name(99), "unknown");
}
END_TEST

Suite *report_render_suite(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("report-render", "render", &tc);

	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_json_escaping);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_format_size);
	tcase_set_timeout(tc, 120);
	return s;
}
