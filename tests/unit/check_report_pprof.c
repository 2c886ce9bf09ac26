/* tests/unit/check_report_pprof.c - unit.report_pprof: the pprof builder and the recording export */
/* SPDX-License-Identifier: MIT */
/*
 * The profiles written here are read back by a small protobuf decoder of
 * this file (independent of report/pprof_pb.c: it parses wire types, it
 * does not share the encoder's code), so each test checks what a reader of
 * profile.proto would see: field numbers, ids, string indices, values.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_recs.h"
#include "recfile/recfile.h"
#include "report/report.h"
#include "track/wire.h"

#define OK(x) ck_assert_int_eq((x), 0)
#define MAXN 64

/* ---- a minimal profile.proto reader (only what the tests look at) ---- */

struct t_line {
	uint64_t function_id;
	int64_t line;
};

struct t_loc {
	uint64_t id, mapping_id, address;
	struct t_line lines[8];
	size_t nlines;
};

struct t_fn {
	uint64_t id;
	int64_t name, system_name, filename;
};

struct t_map {
	uint64_t id, start, limit, offset;
	int64_t filename, build_id;
	int has_functions;
};

struct t_sample {
	uint64_t locs[MAXN];
	size_t nlocs;
	int64_t values[8];
	size_t nvalues;
};

struct t_prof {
	char *strings[256];
	size_t nstrings;
	int64_t types[8][2];
	size_t ntypes;
	struct t_sample samples[MAXN];
	size_t nsamples;
	struct t_loc locs[MAXN];
	size_t nlocs;
	struct t_fn fns[MAXN];
	size_t nfns;
	struct t_map maps[8];
	size_t nmaps;
	int64_t comments[8];
	size_t ncomments;
	int64_t time_ns, duration_ns, period, default_type;
	int64_t period_type[2];
};

struct rd {
	const uint8_t *p, *end;
};

static uint64_t varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		ck_assert_msg(r->p < r->end, "varint runs past the end");
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return v;
	}
	ck_abort_msg("varint longer than 10 bytes");
	return 0;
}

/* next field of r: its number, wire type, and for wire type 2 a sub-reader */
static int field(struct rd *r, uint32_t *num, uint64_t *val, struct rd *sub)
{
	uint64_t key;

	if (r->p >= r->end)
		return 0;
	key = varint(r);
	*num = (uint32_t)(key >> 3);
	switch (key & 7) {
	case 0:
		*val = varint(r);
		break;
	case 2:
		*val = varint(r);
		ck_assert_uint_le(*val, (uint64_t)(r->end - r->p));
		sub->p = r->p;
		sub->end = r->p + *val;
		r->p += *val;
		break;
	default:
		ck_abort_msg("unexpected wire type %u", (unsigned)(key & 7));
	}
	return 1;
}

/* a packed (wire type 2) or single (wire type 0) repeated integer into out[*n] */
static void packed(struct rd *r, int wire2, uint64_t v, uint64_t *out, size_t *n, size_t max)
{
	if (!wire2) {
		ck_assert_uint_lt(*n, max);
		out[(*n)++] = v;
		return;
	}
	while (r->p < r->end) {
		ck_assert_uint_lt(*n, max);
		out[(*n)++] = varint(r);
	}
}

static void valuetype(struct rd *r, int64_t out[2])
{
	struct rd s;
	uint32_t n;
	uint64_t v;

	out[0] = out[1] = 0;
	while (field(r, &n, &v, &s))
		if (n == 1 || n == 2)
			out[n - 1] = (int64_t)v;
}

/* decode a whole Profile message of len bytes */
static void decode(const uint8_t *buf, size_t len, struct t_prof *t)
{
	struct rd r = { buf, buf + len }, s, s2;
	uint32_t n, n2;
	uint64_t v, v2;

	memset(t, 0, sizeof(*t));
	while (field(&r, &n, &v, &s)) {
		switch (n) {
		case 1:
			ck_assert_uint_lt(t->ntypes, 8);
			valuetype(&s, t->types[t->ntypes++]);
			break;
		case 2: {
			struct t_sample *x = &t->samples[t->nsamples++];

			ck_assert_uint_le(t->nsamples, MAXN);
			while (field(&s, &n2, &v2, &s2)) {
				if (n2 == 1)
					packed(&s2, 1, v2, x->locs, &x->nlocs, MAXN);
				else if (n2 == 2)
					packed(&s2, 1, v2, (uint64_t *)x->values, &x->nvalues, 8);
			}
			break;
		}
		case 3: {
			struct t_map *m = &t->maps[t->nmaps++];

			ck_assert_uint_le(t->nmaps, 8);
			while (field(&s, &n2, &v2, &s2)) {
				switch (n2) {
				case 1: m->id = v2; break;
				case 2: m->start = v2; break;
				case 3: m->limit = v2; break;
				case 4: m->offset = v2; break;
				case 5: m->filename = (int64_t)v2; break;
				case 6: m->build_id = (int64_t)v2; break;
				case 7: m->has_functions = (int)v2; break;
				}
			}
			break;
		}
		case 4: {
			struct t_loc *l = &t->locs[t->nlocs++];

			ck_assert_uint_le(t->nlocs, MAXN);
			while (field(&s, &n2, &v2, &s2)) {
				if (n2 == 1) {
					l->id = v2;
				} else if (n2 == 2) {
					l->mapping_id = v2;
				} else if (n2 == 3) {
					l->address = v2;
				} else if (n2 == 4) {
					struct t_line *ln = &l->lines[l->nlines++];
					struct rd s3;
					uint32_t n3;
					uint64_t v3;

					ck_assert_uint_le(l->nlines, 8);
					while (field(&s2, &n3, &v3, &s3)) {
						if (n3 == 1)
							ln->function_id = v3;
						else if (n3 == 2)
							ln->line = (int64_t)v3;
					}
				}
			}
			break;
		}
		case 5: {
			struct t_fn *f = &t->fns[t->nfns++];

			ck_assert_uint_le(t->nfns, MAXN);
			while (field(&s, &n2, &v2, &s2)) {
				if (n2 == 1)
					f->id = v2;
				else if (n2 == 2)
					f->name = (int64_t)v2;
				else if (n2 == 3)
					f->system_name = (int64_t)v2;
				else if (n2 == 4)
					f->filename = (int64_t)v2;
			}
			break;
		}
		case 6:
			ck_assert_uint_lt(t->nstrings, 256);
			t->strings[t->nstrings++] = strndup((const char *)s.p, (size_t)(s.end - s.p));
			break;
		case 9: t->time_ns = (int64_t)v; break;
		case 10: t->duration_ns = (int64_t)v; break;
		case 11: valuetype(&s, t->period_type); break;
		case 12: t->period = (int64_t)v; break;
		case 13:
			packed(&s, 1, v, (uint64_t *)t->comments, &t->ncomments, 8);
			break;
		case 14: t->default_type = (int64_t)v; break;
		default:
			ck_abort_msg("unexpected Profile field %u", n);
		}
	}
}

static void t_free(struct t_prof *t)
{
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
}

static const char *str(const struct t_prof *t, int64_t i)
{
	ck_assert_int_ge(i, 0);
	ck_assert_uint_lt((uint64_t)i, t->nstrings);
	return t->strings[i];
}

static const struct t_loc *loc(const struct t_prof *t, uint64_t id)
{
	for (size_t i = 0; i < t->nlocs; i++)
		if (t->locs[i].id == id)
			return &t->locs[i];
	ck_abort_msg("no location %lu", (unsigned long)id);
	return NULL;
}

static const struct t_fn *fn(const struct t_prof *t, uint64_t id)
{
	for (size_t i = 0; i < t->nfns; i++)
		if (t->fns[i].id == id)
			return &t->fns[i];
	ck_abort_msg("no function %lu", (unsigned long)id);
	return NULL;
}

/* p written (raw or gzip'd) into a malloc'd buffer */
static uint8_t *write_mem(const struct rpt_pprof *p, int gzip, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_ptr_nonnull(f);
	OK(rpt_pprof_write(p, f, gzip));
	ck_assert_int_eq(fclose(f), 0);
	return (uint8_t *)buf;
}

/* gunzip (one gzip member) into a malloc'd buffer */
static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *outlen)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z;

	ck_assert_ptr_nonnull(out);
	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	*outlen = z.total_out;
	inflateEnd(&z);
	return out;
}

/* ---- the builder ---- */

static struct rpt_pprof *small_profile(uint64_t *l1, uint64_t *l2, uint64_t *l3)
{
	static const uint8_t bid[] = { 0x01, 0xab, 0xff };
	struct rpt_pprof_map m = { .start = 0x400000, .limit = 0x500000, .file_offset = 0x1000,
				   .path = "/bin/prog", .build_id = bid, .build_id_len = sizeof(bid),
				   .has_functions = 1 };
	struct rpt_pprof_line inl[] = { { "inner", NULL, "a.h", 7 }, { "outer", "_Z5outerv", "a.c", 20 } };
	struct rpt_pprof_line main_l[] = { { "main", NULL, "m.c", 3 } };
	struct rpt_pprof *p = rpt_pprof_new();
	uint64_t map;
	int64_t v1[4] = { 3, 300, 1, 100 }, v2[4] = { 1, 5000000000LL, 0, 0 };
	uint64_t s1[2], s2[1];

	ck_assert_ptr_nonnull(p);
	OK(rpt_pprof_heap_types(p));
	rpt_pprof_time(p, 1700000000000000000ull, 2500);
	OK(rpt_pprof_period(p, "space", "bytes", 524288));
	OK(rpt_pprof_comment(p, "hello"));
	map = rpt_pprof_mapping(p, &m);
	ck_assert_uint_eq(map, 1);
	*l1 = rpt_pprof_location(p, map, 0x401000, inl, 2);
	*l2 = rpt_pprof_location(p, map, 0x402000, main_l, 1);
	*l3 = rpt_pprof_location(p, 0, 0x7777, NULL, 0);
	ck_assert_uint_eq(*l1, 1);
	ck_assert_uint_eq(*l2, 2);
	ck_assert_uint_eq(*l3, 3);
	/* the same (mapping, address) again: the same id, no new location */
	ck_assert_uint_eq(rpt_pprof_location(p, map, 0x401000, main_l, 1), 1);
	s1[0] = *l1;
	s1[1] = *l2;
	s2[0] = *l3;
	OK(rpt_pprof_sample(p, v1, 4, s1, 2));
	OK(rpt_pprof_sample(p, v2, 4, s2, 1));
	return p;
}

START_TEST(test_builder)
{
	uint64_t l1, l2, l3;
	struct rpt_pprof *p = small_profile(&l1, &l2, &l3);
	struct t_prof t;
	const struct t_loc *l;
	size_t len;
	uint8_t *raw = write_mem(p, 0, &len);

	decode(raw, len, &t);
	ck_assert_str_eq(str(&t, 0), "");
	ck_assert_uint_eq(t.ntypes, 4);
	ck_assert_str_eq(str(&t, t.types[0][0]), "alloc_objects");
	ck_assert_str_eq(str(&t, t.types[0][1]), "count");
	ck_assert_str_eq(str(&t, t.types[1][0]), "alloc_space");
	ck_assert_str_eq(str(&t, t.types[1][1]), "bytes");
	ck_assert_str_eq(str(&t, t.types[2][0]), "inuse_objects");
	ck_assert_str_eq(str(&t, t.types[3][0]), "inuse_space");
	ck_assert_str_eq(str(&t, t.types[3][1]), "bytes");
	ck_assert_str_eq(str(&t, t.default_type), "inuse_space");
	ck_assert_int_eq(t.time_ns, 1700000000000000000LL);
	ck_assert_int_eq(t.duration_ns, 2500);
	ck_assert_int_eq(t.period, 524288);
	ck_assert_str_eq(str(&t, t.period_type[0]), "space");
	ck_assert_str_eq(str(&t, t.period_type[1]), "bytes");
	ck_assert_uint_eq(t.ncomments, 1);
	ck_assert_str_eq(str(&t, t.comments[0]), "hello");

	ck_assert_uint_eq(t.nmaps, 1);
	ck_assert_uint_eq(t.maps[0].id, 1);
	ck_assert_uint_eq(t.maps[0].start, 0x400000);
	ck_assert_uint_eq(t.maps[0].limit, 0x500000);
	ck_assert_uint_eq(t.maps[0].offset, 0x1000);
	ck_assert_str_eq(str(&t, t.maps[0].filename), "/bin/prog");
	ck_assert_str_eq(str(&t, t.maps[0].build_id), "01abff");
	ck_assert_int_eq(t.maps[0].has_functions, 1);

	/* three locations (the repeated one was not added), three functions */
	ck_assert_uint_eq(t.nlocs, 3);
	ck_assert_uint_eq(t.nfns, 3);
	l = loc(&t, l1);
	ck_assert_uint_eq(l->mapping_id, 1);
	ck_assert_uint_eq(l->address, 0x401000);
	ck_assert_uint_eq(l->nlines, 2);
	/* innermost first: the inlined function, then the one it is inlined into */
	ck_assert_str_eq(str(&t, fn(&t, l->lines[0].function_id)->name), "inner");
	ck_assert_str_eq(str(&t, fn(&t, l->lines[0].function_id)->system_name), "inner");
	ck_assert_str_eq(str(&t, fn(&t, l->lines[0].function_id)->filename), "a.h");
	ck_assert_int_eq(l->lines[0].line, 7);
	ck_assert_str_eq(str(&t, fn(&t, l->lines[1].function_id)->name), "outer");
	ck_assert_str_eq(str(&t, fn(&t, l->lines[1].function_id)->system_name), "_Z5outerv");
	ck_assert_int_eq(l->lines[1].line, 20);
	l = loc(&t, l3);
	ck_assert_uint_eq(l->mapping_id, 0);
	ck_assert_uint_eq(l->address, 0x7777);
	ck_assert_uint_eq(l->nlines, 0);

	ck_assert_uint_eq(t.nsamples, 2);
	ck_assert_uint_eq(t.samples[0].nlocs, 2);
	ck_assert_uint_eq(t.samples[0].locs[0], l1);
	ck_assert_uint_eq(t.samples[0].locs[1], l2);
	ck_assert_uint_eq(t.samples[0].nvalues, 4);
	ck_assert_int_eq(t.samples[0].values[0], 3);
	ck_assert_int_eq(t.samples[0].values[1], 300);
	ck_assert_int_eq(t.samples[0].values[2], 1);
	ck_assert_int_eq(t.samples[0].values[3], 100);
	ck_assert_int_eq(t.samples[1].values[1], 5000000000LL);
	ck_assert_int_eq(t.samples[1].values[3], 0);
	t_free(&t);
	free(raw);
	rpt_pprof_free(p);
}
END_TEST

/* the gzip'd write is the raw write compressed, and can be written twice */
START_TEST(test_gzip)
{
	uint64_t l1, l2, l3;
	struct rpt_pprof *p = small_profile(&l1, &l2, &l3);
	size_t rawlen, gzlen, outlen, gz2len;
	uint8_t *raw = write_mem(p, 0, &rawlen);
	uint8_t *gz = write_mem(p, 1, &gzlen);
	uint8_t *gz2 = write_mem(p, 1, &gz2len);
	uint8_t *out;

	ck_assert_uint_ge(gzlen, 18);
	ck_assert_uint_eq(gz[0], 0x1f); /* gzip magic */
	ck_assert_uint_eq(gz[1], 0x8b);
	out = gunzip(gz, gzlen, &outlen);
	ck_assert_uint_eq(outlen, rawlen);
	ck_assert_int_eq(memcmp(out, raw, rawlen), 0);
	ck_assert_uint_eq(gz2len, gzlen);
	ck_assert_int_eq(memcmp(gz2, gz, gzlen), 0);
	free(out);
	free(raw);
	free(gz);
	free(gz2);
	rpt_pprof_free(p);
}
END_TEST

START_TEST(test_builder_errors)
{
	struct rpt_pprof *p = rpt_pprof_new();
	struct rpt_pprof_line l = { "f", NULL, NULL, 0 };
	int64_t v[4] = { 0 };
	uint64_t bad = 7, id;

	ck_assert_ptr_nonnull(p);
	OK(rpt_pprof_sample_type(p, "space", "bytes"));
	ck_assert_int_eq(rpt_pprof_default_type(p, "nope"), -EINVAL);
	/* unknown mapping */
	errno = 0;
	ck_assert_uint_eq(rpt_pprof_location(p, 3, 0x10, &l, 1), 0);
	ck_assert_int_eq(errno, EINVAL);
	id = rpt_pprof_location(p, 0, 0x10, &l, 1);
	ck_assert_uint_eq(id, 1);
	/* a value count that is not the number of sample types; an unknown location */
	ck_assert_int_eq(rpt_pprof_sample(p, v, 4, &id, 1), -EINVAL);
	ck_assert_int_eq(rpt_pprof_sample(p, v, 1, &bad, 1), -EINVAL);
	OK(rpt_pprof_sample(p, v, 1, &id, 1));
	/* no new sample type after the first sample */
	ck_assert_int_eq(rpt_pprof_sample_type(p, "x", "y"), -EINVAL);
	rpt_pprof_free(p);
	rpt_pprof_free(NULL);
}
END_TEST

/* ---- the export of a recording ---- */

/* analyze path and export it; the decoded profile in *t */
static void export(const char *path, struct t_prof *t)
{
	struct rpt_options o = { .threads = 1 };
	struct rpt_data *d = NULL;
	struct rec_reader *r;
	char *buf = NULL;
	size_t len = 0, rawlen;
	uint8_t *raw;
	FILE *f;
	int err = 0;

	r = rec_open(path, &err);
	ck_assert_msg(r != NULL, "open: %s", rec_strerror(err));
	OK(rpt_analyze(r, &o, &d));
	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	OK(rpt_write_pprof(f, d));
	ck_assert_int_eq(fclose(f), 0);
	raw = gunzip((uint8_t *)buf, len, &rawlen);
	decode(raw, rawlen, t);
	free(raw);
	free(buf);
	rpt_free(d);
	rec_close(r);
}

/* the function name of line i of location id */
static const char *line_fn(const struct t_prof *t, uint64_t id, size_t i)
{
	const struct t_loc *l = loc(t, id);

	ck_assert_uint_lt(i, l->nlines);
	return str(t, fn(t, l->lines[i].function_id)->name);
}

/*
 * module /usr/bin/prog (base 0x1000, size 0x4000, build-id deadbeef)
 * ips: I0 0x1100 inl_fn a.c:10 inlined into fnA a.c:20; I1 0x1200 main m.c:1;
 *      I2 0x5555 no module, no symbol
 * traces: T1 = I1, T2 = I0 <- T1, T3 = I2
 * infos: A0 (100, T2), A1 (1000, T3)
 * events: alloc A0 x3, free A0, alloc A1, free A1; tick at 7000 ns
 *   T2: 3 calls, 300 bytes, 2 not freed (200 bytes); T3: 1 call, 1000 bytes, none left
 */
START_TEST(test_export)
{
	static const uint8_t bid[] = { 0xde, 0xad, 0xbe, 0xef };
	struct rec_sym a_chain[] = { { "inl_fn", "a.c", 10 }, { "fnA", "a.c", 20 } };
	struct rec_sym m_chain[] = { { "main", "m.c", 1 } };
	uint32_t mod, i0, i1, i2, t1, t2, t3, a0, a1;
	struct rec_writer *w;
	char path[512];
	struct t_prof t;
	int err = 0, seen = 0;

	snprintf(path, sizeof(path), "%s/e.htap", ck_tmpdir);
	w = rec_writer_create(path, &err);
	ck_assert_ptr_nonnull(w);
	OK(rec_put_meta(w, "command", "/usr/bin/prog --x"));
	OK(rec_put_meta(w, "start_realtime_ns", "1600000000000000000"));
	OK(rec_put_module(w, "/usr/bin/prog", 0x1000, 0x4000, bid, sizeof(bid), &mod));
	OK(rec_put_ip(w, 0x1100, &i0));
	OK(rec_put_ip(w, 0x1200, &i1));
	OK(rec_put_ip(w, 0x5555, &i2));
	OK(rec_put_symbol(w, i0, mod, a_chain, 2));
	OK(rec_put_symbol(w, i1, mod, m_chain, 1));
	OK(rec_put_symbol(w, i2, REC_NONE, NULL, 0));
	OK(rec_put_trace(w, 0, i1, &t1));
	OK(rec_put_trace(w, t1, i0, &t2));
	OK(rec_put_trace(w, 0, i2, &t3));
	OK(rec_put_allocinfo(w, 100, t2, WIRE_KIND_MALLOC, &a0));
	OK(rec_put_allocinfo(w, 1000, t3, WIRE_KIND_MALLOC, &a1));
	OK(rec_put_alloc(w, a0, 0));
	OK(rec_put_alloc(w, a0, 0));
	OK(rec_put_alloc(w, a0, 0));
	OK(rec_put_free(w, a0, 0));
	OK(rec_put_alloc(w, a1, 0));
	OK(rec_put_free(w, a1, 0));
	OK(rec_put_tick(w, 7000, 0));
	OK(rec_writer_close(w));

	export(path, &t);
	ck_assert_uint_eq(t.ntypes, 4);
	ck_assert_int_eq(t.time_ns, 1600000000000000000LL);
	ck_assert_int_eq(t.duration_ns, 7000);
	ck_assert_int_eq(t.period, 0);
	ck_assert_uint_eq(t.nmaps, 1);
	ck_assert_str_eq(str(&t, t.maps[0].filename), "/usr/bin/prog");
	ck_assert_str_eq(str(&t, t.maps[0].build_id), "deadbeef");
	ck_assert_uint_eq(t.maps[0].start, 0x1000);
	ck_assert_uint_eq(t.maps[0].limit, 0x5000);
	ck_assert_int_eq(t.maps[0].has_functions, 1);
	ck_assert_uint_eq(t.nsamples, 2);
	for (size_t i = 0; i < t.nsamples; i++) {
		const struct t_sample *s = &t.samples[i];

		ck_assert_uint_eq(s->nvalues, 4);
		if (s->nlocs == 2) {
			/* leaf first: I0 (two lines, inlined first), then main */
			ck_assert_uint_eq(loc(&t, s->locs[0])->address, 0x1100);
			ck_assert_uint_eq(loc(&t, s->locs[0])->mapping_id, 1);
			ck_assert_str_eq(line_fn(&t, s->locs[0], 0), "inl_fn");
			ck_assert_str_eq(line_fn(&t, s->locs[0], 1), "fnA");
			ck_assert_int_eq(loc(&t, s->locs[0])->lines[1].line, 20);
			ck_assert_str_eq(line_fn(&t, s->locs[1], 0), "main");
			ck_assert_int_eq(s->values[0], 3);
			ck_assert_int_eq(s->values[1], 300);
			ck_assert_int_eq(s->values[2], 2);
			ck_assert_int_eq(s->values[3], 200);
			seen |= 1;
		} else {
			ck_assert_uint_eq(s->nlocs, 1);
			ck_assert_uint_eq(loc(&t, s->locs[0])->address, 0x5555);
			ck_assert_uint_eq(loc(&t, s->locs[0])->mapping_id, 0);
			ck_assert_uint_eq(loc(&t, s->locs[0])->nlines, 0);
			ck_assert_int_eq(s->values[0], 1);
			ck_assert_int_eq(s->values[1], 1000);
			ck_assert_int_eq(s->values[2], 0);
			ck_assert_int_eq(s->values[3], 0);
			seen |= 2;
		}
	}
	ck_assert_int_eq(seen, 3);
	t_free(&t);
}
END_TEST

/*
 * Sampled (sample_bytes 512): one info of size 10, samples of weight 1000
 * and 500, one free (the mean weight, 750): the estimates are 150 calls and
 * 1500 bytes allocated, 75 calls and 750 bytes in use; the period is 512
 * and a comment says the values are estimates.
 */
START_TEST(test_export_sampled)
{
	char path[512];
	struct t_prof t;
	int said = 0;

	ck_tmpdir_path(path, sizeof(path), "s.htap");
	ck_rec_sampled(path, 0);
	export(path, &t);
	ck_assert_int_eq(t.period, 512);
	ck_assert_str_eq(str(&t, t.period_type[0]), "space");
	ck_assert_str_eq(str(&t, t.period_type[1]), "bytes");
	for (size_t i = 0; i < t.ncomments; i++)
		said |= strstr(str(&t, t.comments[i]), "estimates") != NULL;
	ck_assert_int_eq(said, 1);
	ck_assert_uint_eq(t.nmaps, 1);
	ck_assert_int_eq(t.maps[0].build_id, 0);
	ck_assert_int_eq(t.maps[0].has_functions, 0);
	ck_assert_uint_eq(t.nsamples, 1);
	ck_assert_int_eq(t.samples[0].values[0], 150);
	ck_assert_int_eq(t.samples[0].values[1], 1500);
	ck_assert_int_eq(t.samples[0].values[2], 75);
	ck_assert_int_eq(t.samples[0].values[3], 750);
	t_free(&t);
}
END_TEST

static Suite *pprof_suite(void)
{
	Suite *s = suite_create("report_pprof");
	TCase *tc = tcase_create("builder");
	TCase *te = tcase_create("export");

	tcase_add_test(tc, test_builder);
	tcase_add_test(tc, test_gzip);
	tcase_add_test(tc, test_builder_errors);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(te, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(te, test_export);
	tcase_add_test(te, test_export_sampled);
	suite_add_tcase(s, te);
	return s;
}

int main(void)
{
	return ck_run_suite(pprof_suite());
}
