/* report/pprof_internal.h - the protobuf writer and builder layout of the pprof files of report/ */
/* SPDX-License-Identifier: MIT */
/*
 * Only report/pprof*.c include this. The encoder knows three protobuf wire
 * types, which are all profile.proto needs:
 *
 *   varint     tag = field << 3 | 0, then the value, 7 bits a byte, low first
 *   len        tag = field << 3 | 2, varint length, then the bytes
 *              (strings, nested messages, packed repeated integers)
 *
 * proto3 leaves fields equal to 0 out; so does this writer.
 */
#ifndef HEAPTAP_REPORT_PPROF_INTERNAL_H
#define HEAPTAP_REPORT_PPROF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* No encoded profile (or part of one) grows past this: -EFBIG. */
#define PB_MAX_BYTES (1u << 30)

/* A growable byte buffer. err sticks: after the first failure every put is a no-op. */
struct pb_buf {
	uint8_t *data;
	size_t len, cap;
	int err; /* 0, -ENOMEM or -EFBIG */
};

void pb_init(struct pb_buf *b);
void pb_release(struct pb_buf *b);
/* pb_reset - empty b for reuse, keeping its memory and clearing err. */
void pb_reset(struct pb_buf *b);
/* pb_varint_size - bytes the varint v takes (1..10). */
size_t pb_varint_size(uint64_t v);
void pb_raw(struct pb_buf *b, const void *p, size_t n);
void pb_varint(struct pb_buf *b, uint64_t v);
/* pb_uint - field as a varint, left out when v == 0 (proto3 default). */
void pb_uint(struct pb_buf *b, uint32_t field, uint64_t v);
/* pb_bytes - field as len-delimited bytes (a string or a nested message), even when n == 0. */
void pb_bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);
/* pb_packed - field as packed repeated varints; nothing when n == 0. */
void pb_packed_u64(struct pb_buf *b, uint32_t field, const uint64_t *v, size_t n);
void pb_packed_i64(struct pb_buf *b, uint32_t field, const int64_t *v, size_t n);

/* profile.proto field numbers (google/pprof proto/profile.proto) */
enum {
	PB_PROFILE_SAMPLE_TYPE = 1,
	PB_PROFILE_SAMPLE = 2,
	PB_PROFILE_MAPPING = 3,
	PB_PROFILE_LOCATION = 4,
	PB_PROFILE_FUNCTION = 5,
	PB_PROFILE_STRING_TABLE = 6,
	PB_PROFILE_TIME_NANOS = 9,
	PB_PROFILE_DURATION_NANOS = 10,
	PB_PROFILE_PERIOD_TYPE = 11,
	PB_PROFILE_PERIOD = 12,
	PB_PROFILE_COMMENT = 13,
	PB_PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	PB_VALUETYPE_TYPE = 1,
	PB_VALUETYPE_UNIT = 2,

	PB_SAMPLE_LOCATION_ID = 1,
	PB_SAMPLE_VALUE = 2,

	PB_MAPPING_ID = 1,
	PB_MAPPING_MEMORY_START = 2,
	PB_MAPPING_MEMORY_LIMIT = 3,
	PB_MAPPING_FILE_OFFSET = 4,
	PB_MAPPING_FILENAME = 5,
	PB_MAPPING_BUILD_ID = 6,
	PB_MAPPING_HAS_FUNCTIONS = 7,
	PB_MAPPING_HAS_FILENAMES = 8,
	PB_MAPPING_HAS_LINE_NUMBERS = 9,
	PB_MAPPING_HAS_INLINE_FRAMES = 10,

	PB_LOCATION_ID = 1,
	PB_LOCATION_MAPPING_ID = 2,
	PB_LOCATION_ADDRESS = 3,
	PB_LOCATION_LINE = 4,

	PB_LINE_FUNCTION_ID = 1,
	PB_LINE_LINE = 2,

	PB_FUNCTION_ID = 1,
	PB_FUNCTION_NAME = 2,
	PB_FUNCTION_SYSTEM_NAME = 3,
	PB_FUNCTION_FILENAME = 4,
};

/*
 * An open-addressing table from a 64-bit hash to an id (1-based; 0 marks a
 * free slot). The owner compares candidates itself: pb_map_next walks the
 * ids stored under one hash.
 */
struct pb_map {
	uint64_t *hash;
	uint32_t *id;
	size_t cap, n; /* cap is a power of two, n < cap * 3 / 4 */
};

void pb_map_release(struct pb_map *m);
/* pb_map_next - ids stored with hash h: start with *pos = 0; 0 = no more. */
uint32_t pb_map_next(const struct pb_map *m, uint64_t h, size_t *pos);
/* pb_map_put - store id under h. Returns 0 or -ENOMEM. */
int pb_map_put(struct pb_map *m, uint64_t h, uint32_t id);
/* pb_hash - FNV-1a of n bytes, continued from h (start with PB_HASH_SEED). */
#define PB_HASH_SEED 0xcbf29ce484222325ull
uint64_t pb_hash(uint64_t h, const void *p, size_t n);

#endif /* HEAPTAP_REPORT_PPROF_INTERNAL_H */
