/* report/pprof_pb.c - a bounded protobuf encoder and a hash-to-id table for the pprof builder */
/* SPDX-License-Identifier: MIT */
/*
 * Every put checks the room left against PB_MAX_BYTES before growing, and
 * the first failure sticks in pb_buf.err, so callers encode a whole message
 * and test err once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/pprof_internal.h"

void pb_init(struct pb_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void pb_release(struct pb_buf *b)
{
	free(b->data);
	pb_init(b);
}

void pb_reset(struct pb_buf *b)
{
	b->len = 0;
	b->err = 0;
}

/* make room for n more bytes; 0, or sets b->err */
static int reserve(struct pb_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return b->err;
	if (n > PB_MAX_BYTES - b->len) {
		b->err = -EFBIG;
		return b->err;
	}
	if (n <= b->cap - b->len)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2; /* cap <= 2 * PB_MAX_BYTES: no overflow */
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void pb_raw(struct pb_buf *b, const void *p, size_t n)
{
	if (n == 0 || reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void pb_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	pb_raw(b, tmp, n);
}

static void tag(struct pb_buf *b, uint32_t field, unsigned wire_type)
{
	pb_varint(b, (uint64_t)field << 3 | wire_type);
}

void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	if (v == 0)
		return;
	tag(b, field, 0);
	pb_varint(b, v);
}

void pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n)
{
	tag(b, field, 2);
	pb_varint(b, n);
	pb_raw(b, p, n);
}

void pb_packed_u64(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t len = 0, i;

	if (n == 0)
		return;
	for (i = 0; i < n; i++)
		len += pb_varint_size(v[i]);
	tag(b, field, 2);
	pb_varint(b, len);
	for (i = 0; i < n; i++)
		pb_varint(b, v[i]);
}

/* int64 varints are the two's complement as uint64 (10 bytes when negative) */
void pb_packed_i64(struct pb_buf *b, uint32_t field, const int64_t *v, size_t n)
{
	size_t len = 0, i;

	if (n == 0)
		return;
	for (i = 0; i < n; i++)
		len += pb_varint_size((uint64_t)v[i]);
	tag(b, field, 2);
	pb_varint(b, len);
	for (i = 0; i < n; i++)
		pb_varint(b, (uint64_t)v[i]);
}

uint64_t pb_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *s = p;

	while (n--) {
		h ^= *s++;
		h *= 0x100000001b3ull;
	}
	return h;
}

void pb_map_release(struct pb_map *m)
{
	free(m->hash);
	free(m->id);
	memset(m, 0, sizeof(*m));
}

uint32_t pb_map_next(const struct pb_map *m, uint64_t h, size_t *pos)
{
	size_t mask = m->cap - 1, i;

	if (!m->cap)
		return 0;
	/* *pos counts the slots probed so far: the probe starts at h & mask */
	for (; *pos < m->cap; (*pos)++) {
		i = (h + *pos) & mask;
		if (!m->id[i])
			return 0;
		if (m->hash[i] == h) {
			(*pos)++;
			return m->id[i];
		}
	}
	return 0;
}

static void insert(uint64_t *hash, uint32_t *id, size_t cap, uint64_t h, uint32_t v)
{
	size_t i = h & (cap - 1);

	while (id[i])
		i = (i + 1) & (cap - 1);
	hash[i] = h;
	id[i] = v;
}

int pb_map_put(struct pb_map *m, uint64_t h, uint32_t v)
{
	if ((m->n + 1) * 4 > m->cap * 3) {
		size_t cap = m->cap ? m->cap * 2 : 64, i;
		uint64_t *hash = calloc(cap, sizeof(*hash));
		uint32_t *id = calloc(cap, sizeof(*id));

		if (!hash || !id) {
			free(hash);
			free(id);
			return -ENOMEM;
		}
		for (i = 0; i < m->cap; i++)
			if (m->id[i])
				insert(hash, id, cap, m->hash[i], m->id[i]);
		free(m->hash);
		free(m->id);
		m->hash = hash;
		m->id = id;
		m->cap = cap;
	}
	insert(m->hash, m->id, m->cap, h, v);
	m->n++;
	return 0;
}
