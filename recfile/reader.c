/* recfile/reader.c - rec_open: walk the chunks, load the tables, index the events */
/* SPDX-License-Identifier: MIT */
/*
 * Nothing in the file is trusted. Chunks are read in order; the first one
 * that is cut short, damaged or does not decompress ends the walk, and what
 * came before stays usable (rec_truncated tells why). Table chunks are
 * decompressed and decoded here; event chunks are only located and checked
 * (their frame header must announce usize), and decoded on demand by
 * rec_event_chunk().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "recfile/internal.h"

int rec_read_at(const struct rec_reader *r, uint64_t off, void *buf, size_t len)
{
	uint8_t *p = buf;

	if (off > r->size || len > r->size - off)
		return -REC_E_TRUNCATED;
	if (r->mem) {
		memcpy(buf, r->mem + off, len);
		return 0;
	}
	while (len) {
		ssize_t n = pread(r->fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -REC_E_IO;
		}
		if (n == 0)
			return -REC_E_TRUNCATED;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int rec_keep_block(struct rec_reader *r, void *block)
{
	int ret = rec_grow((void **)&r->blocks, &r->cap_blocks, r->nblocks, 1, sizeof(void *));

	if (ret) {
		free(block);
		return ret;
	}
	r->blocks[r->nblocks++] = block;
	return 0;
}

/* the frame must be one zstd frame of exactly csize bytes announcing usize */
static int check_frame(const uint8_t *p, size_t avail, const struct rec_chunk_hdr *h, int whole)
{
	unsigned long long fcs = ZSTD_getFrameContentSize(p, avail);

	if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN || fcs != h->usize)
		return -REC_E_ZSTD;
	if (whole && ZSTD_findFrameCompressedSize(p, avail) != h->csize)
		return -REC_E_ZSTD;
	return 0;
}

static int load_table(struct rec_reader *r, const struct rec_chunk_hdr *h, uint64_t off)
{
	uint8_t *c, *u = NULL;
	size_t got;
	int ret = -REC_E_NOMEM;

	c = malloc(h->csize ? h->csize : 1);
	if (!c)
		goto out;
	ret = rec_read_at(r, off, c, h->csize);
	if (ret)
		goto out_free_c;
	ret = check_frame(c, h->csize, h, 1);
	if (ret)
		goto out_free_c;
	ret = -REC_E_NOMEM;
	u = malloc(h->usize ? h->usize : 1);
	if (!u)
		goto out_free_c;
	got = ZSTD_decompressDCtx(r->dctx, u, h->usize, c, h->csize);
	if (ZSTD_isError(got) || got != h->usize) {
		ret = -REC_E_ZSTD;
		goto out_free_u;
	}
	ret = rec_decode_table(r, h, u, h->usize);
	/* string and module records point into u: it lives until rec_close */
	if (h->section == REC_SEC_STRINGS || h->section == REC_SEC_MODULES) {
		int kret = rec_keep_block(r, u);

		u = NULL;
		if (!ret)
			ret = kret;
	}
out_free_u:
	free(u);
out_free_c:
	free(c);
out:
	return ret;
}

static int index_events(struct rec_reader *r, const struct rec_chunk_hdr *h, uint64_t off)
{
	uint8_t head[18]; /* ZSTD_FRAMEHEADERSIZE_MAX (static-only API) */
	size_t n = h->csize < sizeof(head) ? h->csize : sizeof(head);
	struct rec_evchunk *e;
	int ret;

	/* every event takes at least one byte */
	if (h->first != r->nevents || !h->count || h->count > h->usize)
		return -REC_E_CORRUPT;
	ret = rec_read_at(r, off, head, n);
	if (ret)
		return ret;
	ret = check_frame(head, n, h, 0);
	if (ret)
		return ret;
	ret = rec_grow((void **)&r->evc, &r->cap_evc, r->nevc, 1, sizeof(*r->evc));
	if (ret)
		return ret;
	e = &r->evc[r->nevc++];
	e->off = off;
	e->csize = h->csize;
	e->usize = h->usize;
	e->first = h->first;
	e->count = h->count;
	r->nevents += h->count;
	return 0;
}

/* walk the chunks after the file header; returns why it stopped (0 = END seen) */
static int walk(struct rec_reader *r)
{
	uint8_t raw[REC_CHUNK_HDR];
	struct rec_chunk_hdr h;
	uint64_t off = REC_FILE_HDR;
	int ret;

	for (;;) {
		if (off == r->size)
			return -REC_E_TRUNCATED; /* cut between chunks: no END */
		ret = rec_read_at(r, off, raw, sizeof(raw));
		if (ret)
			return ret;
		ret = rec_chunk_decode(raw, &h);
		if (ret)
			return ret;
		off += REC_CHUNK_HDR;
		if (h.usize > REC_MAX_CHUNK || h.csize > ZSTD_compressBound(REC_MAX_CHUNK))
			return -REC_E_CORRUPT;
		if (h.csize > r->size - off)
			return -REC_E_TRUNCATED;
		if (h.section == REC_SEC_END) {
			if (h.csize || h.first != r->nevents)
				return -REC_E_CORRUPT;
			return 0;
		}
		if (h.section == REC_SEC_EVENTS)
			ret = index_events(r, &h, off);
		else if ((h.section >= REC_SEC_STRINGS && h.section <= REC_SEC_META) ||
			 h.section == REC_SEC_SITES || h.section == REC_SEC_XFRAMES)
			ret = load_table(r, &h, off);
		else
			ret = 0; /* a section of a later minor revision: skip it */
		if (ret)
			return ret;
		off += h.csize;
	}
}

static struct rec_reader *open_common(struct rec_reader *r, int *err)
{
	uint8_t hdr[REC_FILE_HDR];
	size_t n = r->size < sizeof(hdr) ? (size_t)r->size : sizeof(hdr);
	int ret;

	ret = rec_read_at(r, 0, hdr, n);
	if (ret)
		goto out_close;
	/* a file shorter than the header is cut short only if what is there fits */
	if (memcmp(hdr, REC_MAGIC, n < REC_MAGIC_LEN ? n : REC_MAGIC_LEN)) {
		ret = -REC_E_MAGIC;
		goto out_close;
	}
	if (n < sizeof(hdr)) {
		ret = -REC_E_TRUNCATED;
		goto out_close;
	}
	if (rec_get32(hdr + 8) == 0) {
		ret = -REC_E_MAGIC;
		goto out_close;
	}
	if (rec_get32(hdr + 8) > REC_VERSION) {
		ret = -REC_E_VERSION;
		goto out_close;
	}
	ret = -REC_E_NOMEM;
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx)
		goto out_close;
	ret = rec_grow((void **)&r->strs, &r->cap_strs, 0, 1, sizeof(*r->strs));
	if (ret)
		goto out_close;
	r->strs[r->nstrs++] = "";
	ret = rec_grow((void **)&r->traces, &r->cap_traces, 0, 1, sizeof(*r->traces));
	if (ret)
		goto out_close;
	r->traces[r->ntraces++] = (struct rec_trace){ .parent = 0, .ip = REC_NONE };

	ret = walk(r);
	if (ret == -REC_E_NOMEM || ret == -REC_E_IO)
		goto out_close;
	r->truncated = -ret;
	rec_fixup(r);
	ZSTD_freeDCtx(r->dctx);
	r->dctx = NULL;
	*err = 0;
	return r;

out_close:
	*err = -ret;
	rec_close(r);
	return NULL;
}

struct rec_reader *rec_open(const char *path, int *err)
{
	struct rec_reader *r;
	struct stat st;
	int e;

	r = calloc(1, sizeof(*r));
	if (!r) {
		*err = REC_E_NOMEM;
		return NULL;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0 || fstat(r->fd, &st) < 0) {
		e = errno;
		rec_close(r);
		errno = e;
		*err = REC_E_IO;
		return NULL;
	}
	r->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	return open_common(r, err);
}

struct rec_reader *rec_open_mem(const void *buf, size_t len, int *err)
{
	struct rec_reader *r;

	r = calloc(1, sizeof(*r));
	if (!r) {
		*err = REC_E_NOMEM;
		return NULL;
	}
	r->fd = -1;
	r->mem = malloc(len ? len : 1);
	if (!r->mem) {
		free(r);
		*err = REC_E_NOMEM;
		return NULL;
	}
	if (len)
		memcpy(r->mem, buf, len);
	r->size = len;
	return open_common(r, err);
}

void rec_close(struct rec_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->mem);
	ZSTD_freeDCtx(r->dctx);
	for (size_t i = 0; i < r->nblocks; i++)
		free(r->blocks[i]);
	free(r->blocks);
	for (size_t i = 0; i < r->nmeta; i++) {
		free(r->meta[i].key);
		free(r->meta[i].value);
	}
	free(r->meta);
	free(r->strs);
	free(r->mods);
	free(r->mod_path);
	free(r->ips);
	free(r->frames);
	free(r->traces);
	free(r->infos);
	free(r->ticks);
	free(r->sites);
	free(r->xfs);
	free(r->evc);
	free(r->syms);
	free(r);
}
