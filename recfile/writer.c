/* recfile/writer.c - create, flush, close: the writer's chunk output */
/* SPDX-License-Identifier: MIT */
/*
 * Each section has its own buffer of encoded records. A buffer that passes
 * REC_CHUNK_TARGET is compressed into one chunk, after every non-empty
 * buffer it depends on (lower section number), so a file cut after any
 * chunk never refers forward to something it does not hold. With the chunk
 * thread (rec_writer_thread, bg.c) a full buffer is handed to it instead,
 * in the same order, and it encodes, compresses and writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

#include "recfile/internal.h"

static int set_err(struct rec_writer *w, int ret)
{
	if (ret < 0 && !w->err)
		w->err = -ret;
	return ret;
}

/* the chunk thread's writes too: the error is the caller's to keep; w->written is read by others */
static int write_all(struct rec_writer *w, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(w->fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -REC_E_IO;
		}
		if (n == 0) {
			errno = EIO;
			return -REC_E_IO;
		}
		p += n;
		len -= (size_t)n;
		__atomic_fetch_add(&w->written, (uint64_t)n, __ATOMIC_RELAXED);
	}
	return 0;
}

int rec_wbuf_reserve(struct rec_wbuf *b, size_t more)
{
	return rec_grow((void **)&b->p, &b->cap, b->len, more, 1);
}

/* write one chunk: header, then the zstd frame of payload p[0..len) */
int rec_write_chunk(struct rec_writer *w, int sec, const uint8_t *p, size_t len, uint64_t first,
		    uint32_t count)
{
	struct rec_chunk_hdr h = { .section = (uint16_t)sec, .first = first, .count = count };
	size_t bound = len ? ZSTD_compressBound(len) : 0;
	size_t csize = 0;
	int ret;

	if (len > REC_MAX_CHUNK)
		return -REC_E_RANGE;
	if (w->discard)
		return 0;
	ret = rec_grow((void **)&w->out, &w->out_cap, 0, REC_CHUNK_HDR + bound, 1);
	if (ret)
		return ret;
	if (len) {
		csize = ZSTD_compress2(w->cctx, w->out + REC_CHUNK_HDR, bound, p, len);
		if (ZSTD_isError(csize))
			return -REC_E_ZSTD;
	}
	h.csize = (uint32_t)csize;
	h.usize = (uint32_t)len;
	rec_chunk_encode(w->out, &h);
	return write_all(w, w->out, REC_CHUNK_HDR + csize);
}

static int flush_section(struct rec_writer *w, int sec)
{
	struct rec_wbuf *b = &w->sec[sec];
	int ret;

	if (!b->count)
		return 0;
	if (sec == REC_SEC_EVENTS && w->bg) {
		ret = rec_bg_submit(w, sec, b);
		if (ret)
			return set_err(w, ret);
		goto out_reset;
	}
	if (sec == REC_SEC_EVENTS) {
		ret = rec_encode_events(w, &w->ev, b->count, w->ninfos, b);
		if (ret)
			return set_err(w, ret);
	}
	if (b->len2) {
		ret = rec_wbuf_reserve(b, b->len2);
		if (ret)
			return set_err(w, ret);
		memcpy(b->p + b->len, b->p2, b->len2);
		b->len += b->len2;
		b->len2 = 0;
	}
	ret = w->bg ? rec_bg_submit(w, sec, b) : rec_write_chunk(w, sec, b->p, b->len, b->first,
								 b->count);
	if (ret)
		return set_err(w, ret);
out_reset:
	b->first += b->count;
	b->count = 0;
	b->len = 0;
	b->prev_a = 0;
	b->prev_b = 0;
	b->prev_c = 0;
	if (sec == REC_SEC_EVENTS)
		w->ev.weights.len = 0;
	return 0;
}

int rec_writer_flush_upto(struct rec_writer *w, int sec)
{
	int ret;

	if (w->err)
		return -w->err;
	for (int s = REC_SEC_STRINGS; s <= sec; s++) {
		ret = flush_section(w, s);
		if (ret)
			return ret;
	}
	return 0;
}

int rec_writer_record_done(struct rec_writer *w, int sec)
{
	struct rec_wbuf *b = &w->sec[sec];

	b->count++;
	if (sec == REC_SEC_EVENTS) {
		if (b->count < REC_EV_CHUNK && w->ev.weights.len < REC_CHUNK_TARGET)
			return 0;
	} else if (b->len + b->len2 < REC_CHUNK_TARGET && b->count < REC_MAX_INDEX) {
		return 0;
	}
	return rec_writer_flush_upto(w, sec);
}

struct rec_writer *rec_writer_create(const char *path, int *err)
{
	uint8_t hdr[REC_FILE_HDR];
	struct rec_writer *w;
	int ret = -REC_E_NOMEM;
	int e;

	w = calloc(1, sizeof(*w));
	if (!w)
		goto out;
	w->fd = -1;
	w->ntraces = 1; /* the root */
	w->sec[REC_SEC_STRINGS].first = 1;
	w->sec[REC_SEC_TRACES].first = 1;
	w->cctx = ZSTD_createCCtx();
	if (!w->cctx)
		goto out_free;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, REC_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1))) {
		ret = -REC_E_ZSTD;
		goto out_free;
	}
	/* 0600: a recording holds the process's command line, paths and symbols */
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		ret = errno == EEXIST ? -REC_E_EXISTS : -REC_E_IO;
		goto out_free;
	}
	memcpy(hdr, REC_MAGIC, REC_MAGIC_LEN);
	rec_le32(hdr + 8, REC_VERSION);
	rec_le32(hdr + 12, 0);
	ret = write_all(w, hdr, sizeof(hdr));
	if (ret)
		goto out_unlink;
	*err = 0;
	return w;

out_unlink:
	e = errno;
	unlink(path);
	errno = e;
out_free:
	e = errno;
	if (w->fd >= 0)
		close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	free(w);
	errno = e;
out:
	*err = -ret;
	return NULL;
}

struct rec_writer *rec_writer_discard(int *err)
{
	struct rec_writer *w = calloc(1, sizeof(*w));

	if (!w) {
		*err = REC_E_NOMEM;
		return NULL;
	}
	w->fd = -1;
	w->discard = 1;
	w->ntraces = 1; /* the root */
	w->sec[REC_SEC_STRINGS].first = 1;
	w->sec[REC_SEC_TRACES].first = 1;
	*err = 0;
	return w;
}

struct rec_writer *rec_writer_symbols(rec_symbol_fn fn, void *arg, int *err)
{
	struct rec_writer *w;

	if (!fn) {
		*err = REC_E_RANGE;
		return NULL;
	}
	w = rec_writer_discard(err);
	if (w) {
		w->on_symbol = fn;
		w->on_symbol_arg = arg;
	}
	return w;
}

int rec_writer_flush(struct rec_writer *w)
{
	/* REC_SEC_END in between holds nothing: it is written by rec_writer_close */
	return rec_writer_flush_upto(w, REC_SEC_XFRAMES);
}

static void writer_free(struct rec_writer *w)
{
	for (int s = 0; s < REC_SEC_NUM; s++) {
		free(w->sec[s].p);
		free(w->sec[s].p2);
	}
	rec_strtab_free(&w->strs);
	free(w->ev.info);
	free(w->ev.op);
	free(w->ev_lpos);
	free(w->ev.weights.p);
	free(w->ev_freq);
	free(w->ev_rank);
	free(w->ev_ids);
	free(w->ev_hist);
	free(w->ev.age);
	ZSTD_freeCCtx(w->sample_cctx);
	free(w->sample);
	free(w->ev_fcol);
	free(w->sample_out);
	free(w->symbolized);
	free(w->out);
	ZSTD_freeCCtx(w->cctx);
	free(w);
}

int rec_writer_close(struct rec_writer *w)
{
	int ret;

	if (!w)
		return 0;
	ret = rec_writer_flush(w);
	if (rec_bg_stop(w) && !ret)
		ret = -w->err;
	if (!ret)
		ret = set_err(w, rec_write_chunk(w, REC_SEC_END, NULL, 0, w->nevents, 0));
	if (w->fd >= 0 && close(w->fd) < 0 && !ret && errno != EINTR)
		ret = set_err(w, -REC_E_IO);
	if (w->err)
		ret = -w->err;
	writer_free(w);
	return ret;
}

void rec_writer_abort(struct rec_writer *w)
{
	if (!w)
		return;
	rec_bg_stop(w);
	if (w->fd >= 0)
		close(w->fd);
	writer_free(w);
}

/* rec_writer_bytes - bytes written to the file so far (chunks already flushed). */
uint64_t rec_writer_bytes(const struct rec_writer *w)
{
	return w ? __atomic_load_n(&w->written, __ATOMIC_RELAXED) : 0;
}
