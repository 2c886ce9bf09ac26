/* report/pprof.c - the pprof builder: a profile.proto built piece by piece, written gzip'd */
/* SPDX-License-Identifier: MIT */
/*
 * Knows nothing of recordings (report/pprof_export.c feeds it from an
 * analysis; a live aggregation can feed it too). Mappings, locations,
 * functions and samples are encoded into `body` as they are added, so the
 * builder holds the encoded profile plus the tables that intern strings,
 * functions and locations, never a tree of messages. At write time the
 * header (sample types, string table, times, period, comments) goes first
 * and the body after it: protobuf allows a message's fields in any order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "report/pprof_internal.h"
#include "report/report.h"

struct fn_key {
	uint32_t name, system_name, file;
};

struct loc_key {
	uint64_t mapping, address;
};

struct rpt_pprof {
	char **strings; /* string table; strings[0] is "" */
	size_t nstrings, capstrings;
	struct pb_map string_ids; /* hash -> index + 1 */

	int64_t *types; /* sample types: (type, unit) string index pairs */
	size_t ntypes;
	int64_t default_type;
	int64_t *comments;
	size_t ncomments;
	uint64_t time_ns, duration_ns;
	int64_t period_type, period_unit;
	uint64_t period;

	struct pb_buf body; /* mappings, locations, functions, samples */
	struct pb_buf msg, sub; /* scratch: a message, and a message nested in it */

	uint64_t nmappings;
	struct fn_key *fns; /* per function id - 1 */
	size_t nfns, capfns;
	struct pb_map fn_ids;
	struct loc_key *locs; /* per location id - 1 */
	size_t nlocs, caplocs;
	struct pb_map loc_ids;
	size_t nsamples;
};

/* grow the array *v of *cap elements of size sz to hold n + 1; 0 or -ENOMEM */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
	size_t c;
	void *p;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	if (c > SIZE_MAX / sz)
		return -ENOMEM;
	p = realloc(*v, c * sz);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* the string-table index of s (interned; NULL is ""), or -errno */
static int64_t intern(struct rpt_pprof *p, const char *s)
{
	uint64_t h;
	size_t pos = 0, len;
	uint32_t id;
	char *copy;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	h = pb_hash(PB_HASH_SEED, s, len);
	while ((id = pb_map_next(&p->string_ids, h, &pos)) != 0)
		if (!strcmp(p->strings[id - 1], s))
			return id - 1;
	if (p->nstrings >= UINT32_MAX - 1)
		return -EFBIG;
	if (grow((void **)&p->strings, &p->capstrings, p->nstrings, sizeof(*p->strings)))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	if (pb_map_put(&p->string_ids, h, (uint32_t)p->nstrings + 1)) {
		free(copy);
		return -ENOMEM;
	}
	p->strings[p->nstrings] = copy;
	return (int64_t)p->nstrings++;
}

struct rpt_pprof *rpt_pprof_new(void)
{
	struct rpt_pprof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pb_init(&p->body);
	pb_init(&p->msg);
	pb_init(&p->sub);
	p->strings = calloc(64, sizeof(*p->strings));
	if (!p->strings)
		goto out_free;
	p->capstrings = 64;
	p->strings[0] = strdup("");
	if (!p->strings[0])
		goto out_free;
	p->nstrings = 1;
	return p;
out_free:
	rpt_pprof_free(p);
	errno = ENOMEM;
	return NULL;
}

void rpt_pprof_free(struct rpt_pprof *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	pb_map_release(&p->string_ids);
	free(p->types);
	free(p->comments);
	pb_release(&p->body);
	pb_release(&p->msg);
	pb_release(&p->sub);
	free(p->fns);
	pb_map_release(&p->fn_ids);
	free(p->locs);
	pb_map_release(&p->loc_ids);
	free(p);
}

int rpt_pprof_sample_type(struct rpt_pprof *p, const char *type, const char *unit)
{
	int64_t t, u, *v;

	if (p->nsamples || !type || !unit)
		return -EINVAL;
	t = intern(p, type);
	u = t < 0 ? t : intern(p, unit);
	if (u < 0)
		return (int)u;
	v = realloc(p->types, (p->ntypes + 1) * 2 * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->types = v;
	v[p->ntypes * 2] = t;
	v[p->ntypes * 2 + 1] = u;
	p->ntypes++;
	return 0;
}

int rpt_pprof_heap_types(struct rpt_pprof *p)
{
	static const char *const t[RPT_PPROF_HEAP_NVALUES][2] = {
	    [RPT_PPROF_ALLOC_OBJECTS] = { "alloc_objects", "count" },
	    [RPT_PPROF_ALLOC_SPACE] = { "alloc_space", "bytes" },
	    [RPT_PPROF_INUSE_OBJECTS] = { "inuse_objects", "count" },
	    [RPT_PPROF_INUSE_SPACE] = { "inuse_space", "bytes" },
	};
	int rc = 0;

	for (size_t i = 0; i < RPT_PPROF_HEAP_NVALUES && !rc; i++)
		rc = rpt_pprof_sample_type(p, t[i][0], t[i][1]);
	return rc ? rc : rpt_pprof_default_type(p, "inuse_space");
}

int rpt_pprof_default_type(struct rpt_pprof *p, const char *type)
{
	for (size_t i = 0; i < p->ntypes; i++) {
		if (type && !strcmp(p->strings[p->types[2 * i]], type)) {
			p->default_type = p->types[2 * i];
			return 0;
		}
	}
	return -EINVAL;
}

void rpt_pprof_time(struct rpt_pprof *p, uint64_t time_ns, uint64_t duration_ns)
{
	p->time_ns = time_ns;
	p->duration_ns = duration_ns;
}

int rpt_pprof_period(struct rpt_pprof *p, const char *type, const char *unit, uint64_t period)
{
	int64_t t = intern(p, type), u = t < 0 ? t : intern(p, unit);

	if (u < 0)
		return (int)u;
	p->period_type = t;
	p->period_unit = u;
	p->period = period;
	return 0;
}

int rpt_pprof_comment(struct rpt_pprof *p, const char *text)
{
	int64_t s = intern(p, text), *v;

	if (s < 0)
		return (int)s;
	v = realloc(p->comments, (p->ncomments + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->comments = v;
	v[p->ncomments++] = s;
	return 0;
}

/* append the message in p->msg to the body as field; 0 or the sticky error */
static int emit(struct rpt_pprof *p, uint32_t field)
{
	if (p->msg.err || p->sub.err)
		return p->msg.err ? p->msg.err : p->sub.err;
	pb_bytes(&p->body, field, p->msg.data, p->msg.len);
	return p->body.err;
}

uint64_t rpt_pprof_mapping(struct rpt_pprof *p, const struct rpt_pprof_map *m)
{
	static const char hex[] = "0123456789abcdef";
	int64_t file, build_id = 0;
	char *bid = NULL;
	int rc;

	if (m->build_id_len) {
		if (m->build_id_len > 1024 || !m->build_id) {
			errno = EINVAL;
			return 0;
		}
		bid = malloc(m->build_id_len * 2 + 1);
		if (!bid) {
			errno = ENOMEM;
			return 0;
		}
		for (size_t i = 0; i < m->build_id_len; i++) {
			bid[2 * i] = hex[m->build_id[i] >> 4];
			bid[2 * i + 1] = hex[m->build_id[i] & 15];
		}
		bid[m->build_id_len * 2] = '\0';
		build_id = intern(p, bid);
		free(bid);
	}
	file = build_id < 0 ? build_id : intern(p, m->path);
	if (file < 0) {
		errno = (int)-file;
		return 0;
	}
	pb_reset(&p->msg);
	pb_uint(&p->msg, PB_MAPPING_ID, p->nmappings + 1);
	pb_uint(&p->msg, PB_MAPPING_MEMORY_START, m->start);
	pb_uint(&p->msg, PB_MAPPING_MEMORY_LIMIT, m->limit);
	pb_uint(&p->msg, PB_MAPPING_FILE_OFFSET, m->file_offset);
	pb_uint(&p->msg, PB_MAPPING_FILENAME, (uint64_t)file);
	pb_uint(&p->msg, PB_MAPPING_BUILD_ID, (uint64_t)build_id);
	pb_uint(&p->msg, PB_MAPPING_HAS_FUNCTIONS, !!m->has_functions);
	pb_uint(&p->msg, PB_MAPPING_HAS_FILENAMES, !!m->has_filenames);
	pb_uint(&p->msg, PB_MAPPING_HAS_LINE_NUMBERS, !!m->has_line_numbers);
	pb_uint(&p->msg, PB_MAPPING_HAS_INLINE_FRAMES, !!m->has_inline_frames);
	rc = emit(p, PB_PROFILE_MAPPING);
	if (rc) {
		errno = -rc;
		return 0;
	}
	return ++p->nmappings;
}

/* the id of function (name, system name, file), added on first use; 0 and errno on failure */
static uint64_t function_id(struct rpt_pprof *p, const struct rpt_pprof_line *l)
{
	struct fn_key k;
	int64_t name, sys, file;
	size_t pos = 0;
	uint64_t h;
	uint32_t id;
	int rc;

	name = intern(p, l->function);
	sys = name < 0 ? name : l->system_name ? intern(p, l->system_name) : name;
	file = sys < 0 ? sys : intern(p, l->file);
	if (file < 0) {
		errno = (int)-file;
		return 0;
	}
	k = (struct fn_key){ (uint32_t)name, (uint32_t)sys, (uint32_t)file };
	h = pb_hash(PB_HASH_SEED, &k, sizeof(k));
	while ((id = pb_map_next(&p->fn_ids, h, &pos)) != 0)
		if (!memcmp(&p->fns[id - 1], &k, sizeof(k)))
			return id;
	if (p->nfns >= UINT32_MAX - 1 ||
	    grow((void **)&p->fns, &p->capfns, p->nfns, sizeof(*p->fns)) ||
	    pb_map_put(&p->fn_ids, h, (uint32_t)p->nfns + 1)) {
		errno = ENOMEM;
		return 0;
	}
	p->fns[p->nfns++] = k;
	/* the location being built uses msg: encode the function in sub, then into the body */
	pb_reset(&p->sub);
	pb_uint(&p->sub, PB_FUNCTION_ID, p->nfns);
	pb_uint(&p->sub, PB_FUNCTION_NAME, (uint64_t)name);
	pb_uint(&p->sub, PB_FUNCTION_SYSTEM_NAME, (uint64_t)sys);
	pb_uint(&p->sub, PB_FUNCTION_FILENAME, (uint64_t)file);
	rc = p->sub.err;
	if (!rc) {
		pb_bytes(&p->body, PB_PROFILE_FUNCTION, p->sub.data, p->sub.len);
		rc = p->body.err;
	}
	if (rc) {
		errno = -rc;
		return 0;
	}
	return p->nfns;
}

uint64_t rpt_pprof_location(struct rpt_pprof *p, uint64_t mapping, uint64_t address,
			    const struct rpt_pprof_line *lines, size_t nlines)
{
	struct loc_key k = { mapping, address };
	uint64_t h = 0, *fids = NULL;
	size_t pos = 0, i;
	uint32_t id;
	int rc;

	if (mapping > p->nmappings || (nlines && !lines)) {
		errno = EINVAL;
		return 0;
	}
	if (address) {
		h = pb_hash(PB_HASH_SEED, &k, sizeof(k));
		while ((id = pb_map_next(&p->loc_ids, h, &pos)) != 0)
			if (p->locs[id - 1].mapping == mapping && p->locs[id - 1].address == address)
				return id;
	}
	if (p->nlocs >= UINT32_MAX - 1 || grow((void **)&p->locs, &p->caplocs, p->nlocs, sizeof(*p->locs)))
		goto out_nomem;
	if (nlines) {
		fids = calloc(nlines, sizeof(*fids));
		if (!fids)
			goto out_nomem;
	}
	/* functions first: function_id() uses sub and appends to the body */
	for (i = 0; i < nlines; i++) {
		fids[i] = function_id(p, &lines[i]);
		if (!fids[i])
			goto out_errno;
	}
	pb_reset(&p->msg);
	pb_uint(&p->msg, PB_LOCATION_ID, p->nlocs + 1);
	pb_uint(&p->msg, PB_LOCATION_MAPPING_ID, mapping);
	pb_uint(&p->msg, PB_LOCATION_ADDRESS, address);
	for (i = 0; i < nlines; i++) {
		pb_reset(&p->sub);
		pb_uint(&p->sub, PB_LINE_FUNCTION_ID, fids[i]);
		pb_uint(&p->sub, PB_LINE_LINE, lines[i].line > 0 ? (uint64_t)lines[i].line : 0);
		if (p->sub.err)
			break;
		pb_bytes(&p->msg, PB_LOCATION_LINE, p->sub.data, p->sub.len);
	}
	rc = emit(p, PB_PROFILE_LOCATION);
	if (rc) {
		errno = -rc;
		goto out_errno;
	}
	if (address && pb_map_put(&p->loc_ids, h, (uint32_t)p->nlocs + 1))
		goto out_nomem; /* written, but not found again: the caller sees the error */
	p->locs[p->nlocs++] = k;
	free(fids);
	return p->nlocs;
out_nomem:
	errno = ENOMEM;
out_errno:
	free(fids);
	return 0;
}

int rpt_pprof_sample(struct rpt_pprof *p, const int64_t *values, size_t nvalues, const uint64_t *locs,
		     size_t nlocs)
{
	size_t i;

	if (nvalues != p->ntypes || (nvalues && !values) || (nlocs && !locs))
		return -EINVAL;
	for (i = 0; i < nlocs; i++)
		if (locs[i] == 0 || locs[i] > p->nlocs)
			return -EINVAL;
	pb_reset(&p->msg);
	pb_packed_u64(&p->msg, PB_SAMPLE_LOCATION_ID, locs, nlocs);
	pb_packed_i64(&p->msg, PB_SAMPLE_VALUE, values, nvalues);
	if (emit(p, PB_PROFILE_SAMPLE))
		return p->msg.err ? p->msg.err : p->body.err; /* sticky: rpt_pprof_write fails too */
	p->nsamples++;
	return 0;
}

/* the header fields into h: everything that is not in the body */
static void header(const struct rpt_pprof *p, struct pb_buf *h)
{
	struct pb_buf vt;
	size_t i;

	pb_init(&vt);
	for (i = 0; i < p->ntypes; i++) {
		pb_reset(&vt);
		pb_uint(&vt, PB_VALUETYPE_TYPE, (uint64_t)p->types[2 * i]);
		pb_uint(&vt, PB_VALUETYPE_UNIT, (uint64_t)p->types[2 * i + 1]);
		pb_bytes(h, PB_PROFILE_SAMPLE_TYPE, vt.data, vt.len);
	}
	for (i = 0; i < p->nstrings; i++)
		pb_bytes(h, PB_PROFILE_STRING_TABLE, p->strings[i], strlen(p->strings[i]));
	pb_uint(h, PB_PROFILE_TIME_NANOS, p->time_ns > INT64_MAX ? 0 : p->time_ns);
	pb_uint(h, PB_PROFILE_DURATION_NANOS, p->duration_ns > INT64_MAX ? 0 : p->duration_ns);
	if (p->period_type || p->period_unit) {
		pb_reset(&vt);
		pb_uint(&vt, PB_VALUETYPE_TYPE, (uint64_t)p->period_type);
		pb_uint(&vt, PB_VALUETYPE_UNIT, (uint64_t)p->period_unit);
		pb_bytes(h, PB_PROFILE_PERIOD_TYPE, vt.data, vt.len);
	}
	pb_uint(h, PB_PROFILE_PERIOD, p->period > INT64_MAX ? INT64_MAX : p->period);
	pb_packed_i64(h, PB_PROFILE_COMMENT, p->comments, p->ncomments);
	pb_uint(h, PB_PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)p->default_type);
	if (vt.err && !h->err)
		h->err = vt.err;
	pb_release(&vt);
}

/* deflate parts[] into f as one gzip member; 0, -ENOMEM or -EIO */
static int write_gzip(FILE *f, const struct pb_buf *parts, size_t nparts)
{
	unsigned char out[64 * 1024];
	z_stream z;
	int rc = -EIO, zr = Z_OK;

	memset(&z, 0, sizeof(z));
	/*
	 * windowBits 15 + 16: a gzip header and trailer instead of zlib's.
	 * Level 1, as Go's runtime/pprof writes its profiles: on the deep bench
	 * recording level 6 made the file a third smaller (262 KB vs 388 KB)
	 * but cost 6x the compression time, a third of the whole export.
	 */
	if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	for (size_t i = 0; i < nparts; i++) {
		int last = i + 1 == nparts;

		z.next_in = parts[i].data;
		z.avail_in = (uInt)parts[i].len; /* <= PB_MAX_BYTES: fits */
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			zr = deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
			if (zr == Z_STREAM_ERROR)
				goto out_end;
			if (fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out)
				goto out_end;
		} while (z.avail_out == 0 || (last && zr != Z_STREAM_END));
	}
	rc = 0;
out_end:
	deflateEnd(&z);
	return rc;
}

int rpt_pprof_write(const struct rpt_pprof *p, FILE *f, int gzip)
{
	struct pb_buf parts[2];
	int rc;

	if (p->body.err)
		return p->body.err; /* an earlier add failed half-way */
	pb_init(&parts[0]);
	header(p, &parts[0]);
	rc = parts[0].err;
	if (rc)
		goto out_release;
	if (p->body.len > PB_MAX_BYTES - parts[0].len) {
		rc = -EFBIG;
		goto out_release;
	}
	parts[1] = p->body; /* borrowed, not released here */
	if (gzip) {
		rc = write_gzip(f, parts, 2);
	} else {
		rc = 0;
		for (size_t i = 0; i < 2 && !rc; i++)
			if (parts[i].len && fwrite(parts[i].data, 1, parts[i].len, f) != parts[i].len)
				rc = -EIO;
	}
	if (!rc && fflush(f))
		rc = -EIO;
out_release:
	pb_release(&parts[0]);
	return rc;
}
