/* tests/lib/check_craft.h - hand-made recordings, chunk by chunk, for the recfile suites (header only) */
/* SPDX-License-Identifier: MIT */
/*
 * A recording the writer would never produce (a version 1 chunk, a
 * damaged column, a section in the wrong place) is built here in memory:
 * ck_craft_init writes the file header, each ck_craft_chunk one chunk
 * (zstd with its checksum, the header's own check from rec_chunk_encode),
 * and rec_open_mem(c.buf, c.len, ...) reads the result. The buffer is
 * fixed; a chunk that does not fit fails the test.
 */
#ifndef HEAPTAP_TESTS_LIB_CHECK_CRAFT_H
#define HEAPTAP_TESTS_LIB_CHECK_CRAFT_H

#include <check.h>
#include <stdint.h>
#include <string.h>
#include <zstd.h>

#include "recfile/internal.h"

struct ck_craft {
	uint8_t buf[8192];
	size_t len;
};

/* ck_craft_init - the file header of format version, nothing after it. */
static inline void ck_craft_init(struct ck_craft *c, uint32_t version)
{
	memcpy(c->buf, REC_MAGIC, REC_MAGIC_LEN);
	rec_le32(c->buf + 8, version);
	rec_le32(c->buf + 12, 0);
	c->len = REC_FILE_HDR;
}

/*
 * ck_craft_chunk - append a chunk of section sec holding p[0 .. n)
 * compressed, its first index and count as given. An END chunk with no
 * payload has no compressed frame at all (csize 0), as the writer's.
 */
static inline void ck_craft_chunk(struct ck_craft *c, int sec, uint64_t first, uint32_t count,
				  const uint8_t *p, size_t n)
{
	struct rec_chunk_hdr h = { .section = sec, .first = first, .count = count };
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cs = 0;

	ck_assert_ptr_nonnull(cc);
	ck_assert_uint_ge(sizeof(c->buf) - c->len, REC_CHUNK_HDR);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	if (n || sec != REC_SEC_END) {
		cs = ZSTD_compress2(cc, c->buf + c->len + REC_CHUNK_HDR,
				    sizeof(c->buf) - c->len - REC_CHUNK_HDR, p, n);
		ck_assert(!ZSTD_isError(cs));
	}
	ZSTD_freeCCtx(cc);
	h.csize = cs;
	h.usize = n;
	rec_chunk_encode(c->buf + c->len, &h);
	c->len += REC_CHUNK_HDR + cs;
}

#endif /* HEAPTAP_TESTS_LIB_CHECK_CRAFT_H */
