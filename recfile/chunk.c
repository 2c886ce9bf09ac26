/* recfile/chunk.c - chunk header encoding, decoding and checksum */
/* SPDX-License-Identifier: MIT */
#include "recfile/internal.h"

/* FNV-1a, 32 bits: cheap, and enough to catch a damaged or misread header. */
uint32_t rec_fnv32(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

void rec_chunk_encode(uint8_t out[REC_CHUNK_HDR], const struct rec_chunk_hdr *h)
{
	rec_le32(out + 0, REC_CHUNK_TAG);
	rec_le16(out + 4, h->section);
	rec_le16(out + 6, h->flags);
	rec_le32(out + 8, h->csize);
	rec_le32(out + 12, h->usize);
	rec_le64(out + 16, h->first);
	rec_le32(out + 24, h->count);
	rec_le32(out + 28, rec_fnv32(out, 28));
}

int rec_chunk_decode(const uint8_t in[REC_CHUNK_HDR], struct rec_chunk_hdr *h)
{
	h->tag = rec_get32(in + 0);
	h->section = rec_get16(in + 4);
	h->flags = rec_get16(in + 6);
	h->csize = rec_get32(in + 8);
	h->usize = rec_get32(in + 12);
	h->first = rec_get64(in + 16);
	h->count = rec_get32(in + 24);
	h->check = rec_get32(in + 28);
	if (h->tag != REC_CHUNK_TAG || h->check != rec_fnv32(in, 28))
		return -REC_E_CORRUPT;
	return 0;
}
