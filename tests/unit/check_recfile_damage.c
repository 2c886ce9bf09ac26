/* tests/unit/check_recfile_damage.c - unit.recfile's damaged and hand-made files */
/* SPDX-License-Identifier: MIT */
/*
 * Part of unit.recfile (check_recfile.c): a recording cut at every offset,
 * flipped bytes, bad headers, dangling references and hand-made chunks the
 * writer would never produce: one clear error, never a crash.
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

#include "tests/lib/check_craft.h"
#include "tests/lib/check_fixture.h"
#include "check_recfile.h"
#include "recfile/internal.h"
#include "recfile/recfile.h"
#include "util/hash.h"

/* the tables of a cut reader must be prefixes of the whole recording's */
static void check_prefix(const struct rec_reader *cut, const struct rec_reader *full)
{
	size_t n, m;

	rec_modules(cut, &n);
	rec_modules(full, &m);
	CK_REQUIRE((n) <= (m));
	for (size_t i = 0; i < n; i++) {
		CK_REQUIRE(!strcmp(rec_modules(cut, &n)[i].path, rec_modules(full, &m)[i].path));
		CK_REQUIRE((rec_modules(cut, &n)[i].base) == (rec_modules(full, &m)[i].base));
	}
	const struct rec_trace *tc = rec_traces(cut, &n), *tf = rec_traces(full, &m);
	CK_REQUIRE((n) >= (1));
	CK_REQUIRE((n) <= (m));
	for (size_t i = 0; i < n; i++) {
		CK_REQUIRE((tc[i].parent) == (tf[i].parent));
		CK_REQUIRE((tc[i].ip) == (tf[i].ip));
	}
	const struct rec_allocinfo *ac = rec_allocinfos(cut, &n), *af = rec_allocinfos(full, &m);
	CK_REQUIRE((n) <= (m));
	for (size_t i = 0; i < n; i++) {
		CK_REQUIRE((ac[i].size) == (af[i].size));
		CK_REQUIRE((ac[i].trace) == (af[i].trace));
	}
	CK_REQUIRE((rec_nevents(cut)) <= (rec_nevents(full)));
	/* the writer's order means nothing written refers forward */
	CK_REQUIRE((rec_fixed_refs(cut)) == (0));
	if (rec_nevents(cut))
		CK_REQUIRE((check_events(cut)) == (rec_nevents(cut)));
	CK_REQUIRE((rec_dropped_events(cut)) == (0));
}

START_TEST(test_truncated_every_offset)
{
	struct rec_reader *full, *r;
	uint8_t *buf;
	size_t len;
	int err, opened = 0;

	make_small(ck_tmppath("t.htap"), 1);
	buf = ck_slurp(ck_tmppath("t.htap"), &len);
	full = rec_open_mem(buf, len, &err);
	ck_assert_ptr_nonnull(full);
	ck_assert_uint_gt(rec_nevent_chunks(full), 1);
	for (size_t cut = 0; cut < len; cut++) {
		r = rec_open_mem(buf, cut, &err);
		if (!r) {
			CK_REQUIRE((cut) < (REC_FILE_HDR));
			CK_REQUIRE((err) == (REC_E_TRUNCATED));
			continue;
		}
		opened++;
		CK_REQUIRE((cut) >= (REC_FILE_HDR));
		CK_REQUIRE((rec_truncated(r)) == (REC_E_TRUNCATED));
		check_prefix(r, full);
		rec_close(r);
	}
	CK_REQUIRE((size_t)(opened) == (len - REC_FILE_HDR));
	/* and on disk: a file cut with truncate(2) */
	CK_REQUIRE((truncate(ck_tmppath("t.htap"), len - 1)) == (0));
	r = rec_open(ck_tmppath("t.htap"), &err);
	ck_assert_ptr_nonnull(r);
	CK_REQUIRE((rec_truncated(r)) == (REC_E_TRUNCATED));
	/* only the END chunk was lost */
	CK_REQUIRE((rec_nevents(r)) == (SMALL_EVENTS));
	rec_close(r);
	rec_close(full);
	free(buf);
}
END_TEST

START_TEST(test_flipped_bytes)
{
	struct rec_reader *full, *r;
	uint8_t *buf;
	size_t len;
	int err;

	make_small(ck_tmppath("f.htap"), 1);
	buf = ck_slurp(ck_tmppath("f.htap"), &len);
	full = rec_open_mem(buf, len, &err);
	ck_assert_ptr_nonnull(full);
	for (size_t off = 0; off < len; off++) {
		for (int bit = 0; bit < 8; bit += 3) {
			buf[off] ^= (uint8_t)(1u << bit);
			r = rec_open_mem(buf, len, &err);
			if (!r) {
				/* only a damaged file header makes the open fail */
				CK_REQUIRE((off) < (REC_FILE_HDR));
				ck_assert(err == REC_E_MAGIC || err == REC_E_VERSION);
			} else {
				/*
				 * anything else is seen by a header or frame
				 * checksum: at open, or for an event chunk's
				 * payload when it is decoded. A few bits of a
				 * zstd frame (padding, unused table bits) do
				 * not change its content: then all must be
				 * read exactly as written.
				 */
				int bad = rec_truncated(r) != 0;

				for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
					struct rec_event *ev;
					size_t n;
					uint64_t first;

					if (rec_event_chunk(r, c, &ev, &n, &first) == 0)
						free(ev);
					else
						bad = 1;
				}
				if (off >= REC_FILE_HDR && !bad)
					check_small(r);
				rec_close(r);
			}
			buf[off] ^= (uint8_t)(1u << bit);
		}
	}
	rec_close(full);
	free(buf);
}
END_TEST

START_TEST(test_bad_header)
{
	uint8_t *buf;
	size_t len;
	int err;

	make_small(ck_tmppath("h.htap"), 0);
	buf = ck_slurp(ck_tmppath("h.htap"), &len);
	buf[0] = 'X';
	ck_assert_ptr_null(rec_open_mem(buf, len, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	buf[0] = 'H';
	rec_le32(buf + 8, REC_VERSION + 1);
	ck_assert_ptr_null(rec_open_mem(buf, len, &err));
	ck_assert_int_eq(err, REC_E_VERSION);
	rec_le32(buf + 8, 0);
	ck_assert_ptr_null(rec_open_mem(buf, len, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	rec_le32(buf + 8, REC_VERSION);
	/* unknown file flags are ignored */
	rec_le32(buf + 12, 0x80000000u);
	{
		struct rec_reader *r = rec_open_mem(buf, len, &err);

		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(rec_truncated(r), 0);
		rec_close(r);
	}
	ck_assert_ptr_null(rec_open_mem("HEAPTA", 6, &err));
	ck_assert_int_eq(err, REC_E_TRUNCATED);
	ck_assert_ptr_null(rec_open_mem("HEAPTAX", 7, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	ck_assert_ptr_null(rec_open_mem("", 0, &err));
	ck_assert_int_eq(err, REC_E_TRUNCATED);
	ck_assert_ptr_null(rec_open_mem("<html>not a recording at all</html>", 35, &err));
	ck_assert_int_eq(err, REC_E_MAGIC);
	free(buf);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hand-made chunks: what the writer would never produce.              */

static int one_chunk_corrupt(int sec, uint64_t first, uint32_t count, const uint8_t *p, size_t n)
{
	struct ck_craft c;
	struct rec_reader *r;
	int err, corrupt;

	ck_craft_init(&c, REC_VERSION);
	ck_craft_chunk(&c, sec, first, count, p, n);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	corrupt = rec_truncated(r) == REC_E_CORRUPT;
	rec_close(r);
	return corrupt;
}

START_TEST(test_dangling)
{
	/* module path string 7, ip with module 5, trace ip 9, allocinfo trace 8, event info 3 */
	static const uint8_t mods[] = { 7, 0, 0, 0 };
	static const uint8_t ips[] = { 2 };
	static const uint8_t syms[] = { 0, 6, 1, 50, 51, 0 };
	static const uint8_t traces[] = { 1, 18 };
	/* sizes 8, 8; then zigzag(8) << 4 | 1 = 257 (trace 8), 1 (trace 8 again) */
	static const uint8_t infos[] = { 8, 8, 0x81, 0x02, 1 };
	/* RECENT mode; ops alloc, free, free-temp; infos 0, 3 (dangling), 1 */
	static const uint8_t evs[] = { REC_EVM_RECENT, 0 | 1 << 2 | 2 << 4, 0, 4, 0 };
	static const uint8_t ticks[] = { 2, 9, 2 };
	struct ck_craft c;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t n;
	uint64_t first;
	int err;

	ck_craft_init(&c, REC_VERSION);
	ck_craft_chunk(&c, REC_SEC_MODULES, 0, 1, mods, sizeof(mods));
	ck_craft_chunk(&c, REC_SEC_IPS, 0, 1, ips, sizeof(ips));
	ck_craft_chunk(&c, REC_SEC_SYMBOLS, 0, 1, syms, sizeof(syms));
	ck_craft_chunk(&c, REC_SEC_TRACES, 1, 1, traces, sizeof(traces));
	ck_craft_chunk(&c, REC_SEC_ALLOCINFOS, 0, 2, infos, sizeof(infos));
	ck_craft_chunk(&c, REC_SEC_EVENTS, 0, 3, evs, sizeof(evs));
	ck_craft_chunk(&c, REC_SEC_TICKS, 0, 1, ticks, sizeof(ticks));
	ck_craft_chunk(&c, 77, 0, 0, (const uint8_t *)"future", 6); /* unknown: skipped */
	ck_craft_chunk(&c, REC_SEC_END, 3, 0, NULL, 0);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_str_eq(rec_modules(r, &n)[0].path, "");
	ck_assert_uint_eq(rec_ips(r, &n)[0].ip, 1);
	ck_assert_uint_eq(rec_ips(r, &n)[0].module, REC_NONE);
	ck_assert_uint_eq(rec_frames(r, &n)[0].function, 0);
	ck_assert_uint_eq(rec_frames(r, &n)[0].file, 0);
	ck_assert_uint_eq(rec_traces(r, &n)[1].ip, REC_NONE);
	ck_assert_uint_eq(rec_allocinfos(r, &n)[0].trace, 0);
	ck_assert_uint_eq(rec_allocinfos(r, &n)[1].trace, 0);
	ck_assert_uint_eq(rec_ticks(r, &n)[0].event_index, 3);
	/* path, module, function, file, trace ip, 2 x allocinfo trace, tick */
	ck_assert_uint_eq(rec_fixed_refs(r), 8);
	ck_assert_int_eq(rec_event_chunk(r, 0, &ev, &n, &first), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ev[1].info, 1);
	ck_assert_uint_eq(ev[1].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(rec_dropped_events(r), 1);
	free(ev);
	ck_assert_int_eq(rec_event_chunk(r, 1, &ev, &n, &first), -REC_E_RANGE);
	rec_close(r);
}
END_TEST

START_TEST(test_crafted_corrupt)
{
	static const uint8_t bad_parent[] = { 2, 0 }; /* trace 1 with parent -1 */
	static const uint8_t trailing[] = { 1, 0, 5 };
	static const uint8_t evs[] = { 0, 0 };
	struct ck_craft c;
	struct rec_reader *r;
	size_t n;
	int err;

	/* a trace whose parent is not below it ends the walk there */
	ck_craft_init(&c, REC_VERSION);
	ck_craft_chunk(&c, REC_SEC_META, 0, 1, (const uint8_t *)"\1k\1v", 4);
	ck_craft_chunk(&c, REC_SEC_TRACES, 1, 1, bad_parent, sizeof(bad_parent));
	ck_craft_chunk(&c, REC_SEC_END, 0, 0, NULL, 0);
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_CORRUPT);
	ck_assert_str_eq(rec_meta(r, "k"), "v");
	rec_traces(r, &n);
	ck_assert_uint_eq(n, 1);
	rec_close(r);

	/* bytes left over after the announced records */
	ck_assert(one_chunk_corrupt(REC_SEC_TRACES, 1, 1, trailing, sizeof(trailing)));

	/* a table chunk that does not start where the table ends (one was lost) */
	ck_assert(one_chunk_corrupt(REC_SEC_TRACES, 2, 1, trailing, 2));

	/* an event chunk with a wrong first index or count */
	ck_craft_init(&c, REC_VERSION);
	ck_craft_chunk(&c, REC_SEC_EVENTS, 5, 2, evs, sizeof(evs));
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_CORRUPT);
	ck_assert_uint_eq(rec_nevent_chunks(r), 0);
	rec_close(r);
	ck_assert(one_chunk_corrupt(REC_SEC_EVENTS, 0, 3, evs, sizeof(evs)));

	/* END must carry the event total */
	ck_assert(one_chunk_corrupt(REC_SEC_END, 1, 0, NULL, 0));

	/* an uncompressed size over the limit */
	ck_craft_init(&c, REC_VERSION);
	ck_craft_chunk(&c, REC_SEC_META, 0, 1, (const uint8_t *)"\1k\1v", 4);
	rec_le32(c.buf + REC_FILE_HDR + 12, REC_MAX_CHUNK + 1);
	rec_le32(c.buf + REC_FILE_HDR + 28, rec_fnv32(c.buf + REC_FILE_HDR, 28));
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_CORRUPT);
	rec_close(r);

	/* a usize that disagrees with the zstd frame */
	ck_craft_init(&c, REC_VERSION);
	ck_craft_chunk(&c, REC_SEC_META, 0, 1, (const uint8_t *)"\1k\1v", 4);
	rec_le32(c.buf + REC_FILE_HDR + 12, 5);
	rec_le32(c.buf + REC_FILE_HDR + 28, rec_fnv32(c.buf + REC_FILE_HDR, 28));
	r = rec_open_mem(c.buf, c.len, &err);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(rec_truncated(r), REC_E_ZSTD);
	ck_assert_ptr_null(rec_meta(r, "k"));
	rec_close(r);
}
END_TEST

/* recfile_damage_add - this file's tests, in case "core" after the ones before them */
void recfile_damage_add(TCase *tc)
{
	/* this file's own ck_tmpdir: check_fixture.h's state is per file (check_recfile.h) */
	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_truncated_every_offset);
	tcase_add_test(tc, test_flipped_bytes);
	tcase_add_test(tc, test_bad_header);
	tcase_add_test(tc, test_dangling);
	tcase_add_test(tc, test_crafted_corrupt);
}
