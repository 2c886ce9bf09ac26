/* report/heaptrack.c - rpt_write_heaptrack: the recording as heaptrack's interpreted data, zstd'd */
/* SPDX-License-Identifier: MIT */
/*
 * heaptrack_print and heaptrack_gui read the text that heaptrack_interpret
 * writes (file format version 3), compressed with zstd. One record per
 * line, numbers in lowercase hex without leading zeros:
 *
 *   v 10400 3            heaptrack version 1.4.0, file format 3
 *   X command line       the debuggee (rest of the line)
 *   A                    attached: heaptrack resets its totals here
 *   I pagesize pages     system info; R lines count pages
 *   s len string         string len bytes long; strings count from 1
 *   i ip module [fn file line]...
 *                        instruction pointer (ips count from 1); module and
 *                        fn/file are string indices (0 = none); the frames
 *                        go innermost (most inlined) first, the function
 *                        all of it was inlined into last
 *   t ip parent          trace node; traces count from 1, 0 is the root;
 *                        a parent is written before its children
 *   a size trace         allocation info; infos count from 0
 *   + info               one allocation of info
 *   - info               one free of an allocation of info; heaptrack calls
 *                        it temporary when the line before is "+ info"
 *   c ms                 time since start in milliseconds (never decreasing)
 *   R pages              RSS
 *
 * heaptap's tables map one to one: a string, ip, trace and allocation info
 * keep their order (ip and string indices shifted by one), so the export
 * writes every table first and then the events, with the ticks placed at
 * their event index. Strings are written on first use. A newline inside a
 * string (the reader splits lines) becomes a space.
 *
 * A foreign (Java, Python) frame is an ip like the others, with its name,
 * file and line, and its language and kind where the module goes.
 *
 * What cannot be carried over: the allocation function (heaptrack has none)
 * and the total memory of the machine (I gives 0 pages). A sampled recording
 * writes each sample as one allocation of its info's mean weight, so bytes,
 * peak and leaked match and calls count samples. A free of an info with
 * nothing live (a stream that started late) is left out, as report/ leaves
 * it out of leaked.
 *
 * The export needs no costs: rpt_load_for_heaptrack gives it the tables and
 * the metadata without replaying the events (except for a sampled
 * recording), so the events are decoded once, while being written.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "report/internal.h"

#define TEXT_BUF (1u << 20)
#define ZSTD_LEVEL 1

struct htw {
	FILE *f;
	ZSTD_CCtx *z;
	char *buf; /* text not yet compressed */
	size_t len;
	void *zout; /* compressed bytes not yet written */
	size_t zcap;
	int err; /* first -errno */
	uint32_t *str_map; /* recording string -> heaptrack string (0: not written) */
	size_t nstr;
	uint32_t *mod_str; /* module -> heaptrack string of its path */
	uint32_t next_str; /* heaptrack index of the next string written */
	uint32_t xmark[3][WIRE_XKIND_MAX + 1]; /* foreign frames' module string by (lang, kind), 0: not written */
};

/* Compress the buffered text (mode ZSTD_e_end also finishes the frame). */
static void htw_flush(struct htw *w, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { w->buf, w->len, 0 };
	size_t left;

	if (w->err) {
		w->len = 0;
		return;
	}
	do {
		ZSTD_outBuffer out = { w->zout, w->zcap, 0 };

		left = ZSTD_compressStream2(w->z, &out, &in, mode);
		if (ZSTD_isError(left)) {
			w->err = -EIO;
			break;
		}
		if (out.pos && fwrite(w->zout, 1, out.pos, w->f) != out.pos) {
			w->err = -EIO;
			break;
		}
	} while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	w->len = 0;
}

/* Room for n more bytes of text (n <= TEXT_BUF). */
static inline char *htw_room(struct htw *w, size_t n)
{
	if (TEXT_BUF - w->len < n)
		htw_flush(w, ZSTD_e_continue);
	return w->buf + w->len;
}

static inline void put_c(struct htw *w, char c)
{
	*htw_room(w, 1) = c;
	w->len++;
}

/* " " + v in lowercase hex, no leading zeros. */
static inline void put_hex(struct htw *w, uint64_t v)
{
	char tmp[16];
	char *p = htw_room(w, 17);
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*p++ = ' ';
	while (n)
		*p++ = tmp[--n];
	w->len = (size_t)(p - w->buf);
}

/* Raw text, split over flushes when long. Newlines become spaces. */
static void put_text(struct htw *w, const char *s, size_t n)
{
	while (n) {
		size_t k = n < TEXT_BUF / 2 ? n : TEXT_BUF / 2;
		char *p = htw_room(w, k);

		for (size_t i = 0; i < k; i++)
			p[i] = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
		w->len += k;
		s += k;
		n -= k;
	}
}

/* Text as it is (the caller's own records, no newline to escape). */
static void put_raw(struct htw *w, const char *s)
{
	size_t n = strlen(s);

	memcpy(htw_room(w, n), s, n);
	w->len += n;
}

/* Write "s len text" and return the new string's index. */
static uint32_t put_string(struct htw *w, const char *s)
{
	size_t n = strlen(s);

	put_c(w, 's');
	put_hex(w, n);
	put_c(w, ' ');
	put_text(w, s, n);
	put_c(w, '\n');
	return w->next_str++;
}

/* The heaptrack index of recording string idx, writing it on first use; 0 for "". */
static uint32_t string_of(struct htw *w, const struct rpt_data *d, uint32_t idx)
{
	const char *s;

	if (idx == 0 || idx >= w->nstr)
		return 0;
	if (!w->str_map[idx]) {
		s = rec_string(d->r, idx);
		if (!s[0])
			return 0;
		w->str_map[idx] = put_string(w, s);
	}
	return w->str_map[idx];
}

static uint32_t module_of(struct htw *w, const struct rpt_data *d, uint32_t m)
{
	if (m == REC_NONE || m >= d->nmodules || !d->modules[m].path || !d->modules[m].path[0])
		return 0;
	if (!w->mod_str[m])
		w->mod_str[m] = put_string(w, d->modules[m].path);
	return w->mod_str[m];
}

/*
 * A foreign (Java, Python) frame has no module: its module column says
 * what it is instead, "[java, compiled]", "[python]".
 */
static uint32_t marker_of(struct htw *w, const struct rec_ip *ip)
{
	unsigned lang = ip->lang < 3 ? ip->lang : 0, kind = ip->xkind <= WIRE_XKIND_MAX ? ip->xkind : 0;
	const char *k = rpt_xkind_mark(kind);
	char buf[48];

	if (!w->xmark[lang][kind]) {
		snprintf(buf, sizeof(buf), "[%s%s%s]", rpt_lang_name(lang), k ? ", " : "", k ? k : "");
		w->xmark[lang][kind] = put_string(w, buf);
	}
	return w->xmark[lang][kind];
}

static void put_header(struct htw *w, const struct rpt_data *d)
{
	const char *ps = rec_meta(d->r, "page_size");
	uint64_t page = ps ? strtoull(ps, NULL, 10) : 0;

	put_raw(w, "v 10400 3\nX ");
	put_text(w, d->sum.command, strlen(d->sum.command));
	put_c(w, '\n');
	if (d->sum.attached)
		put_raw(w, "A\n");
	put_c(w, 'I');
	put_hex(w, page ? page : 4096);
	put_hex(w, 0);
	put_c(w, '\n');
}

/* Every ip with its frames, then every trace, then every allocation info. */
static void put_tables(struct htw *w, const struct rpt_data *d)
{
	size_t i;

	for (i = 0; i < d->nips; i++) {
		const struct rec_ip *ip = &d->ips[i];
		uint32_t fr[3 * 64], mod = ip->xframe ? marker_of(w, ip) : module_of(w, d, ip->module);
		size_t n = 0, hops = 0;

		/* strings first: they must precede the line that names them */
		for (uint32_t k = ip->frame; k != REC_NONE && k < d->nframes && hops < 64;
		     k = d->frames[k].outer, hops++) {
			fr[n++] = string_of(w, d, d->frames[k].function);
			fr[n++] = string_of(w, d, d->frames[k].file);
			fr[n++] = d->frames[k].line;
		}
		put_c(w, 'i');
		put_hex(w, ip->ip);
		put_hex(w, mod);
		for (size_t k = 0; k < n; k++)
			put_hex(w, fr[k]);
		put_c(w, '\n');
	}
	for (i = 1; i < d->ntraces; i++) {
		uint32_t ip = d->traces[i].ip;

		put_c(w, 't');
		put_hex(w, ip < d->nips ? (uint64_t)ip + 1 : 0);
		put_hex(w, d->traces[i].parent);
		put_c(w, '\n');
	}
	for (i = 0; i < d->ninfos; i++) {
		put_c(w, 'a');
		put_hex(w, d->sum.sampled ? d->free_bytes[i] : d->infos[i].size);
		put_hex(w, d->infos[i].trace);
		put_c(w, '\n');
	}
}

struct ticks {
	const struct rec_tick *t;
	size_t n, next;
	uint64_t page, last_ms;
};

/* The ticks whose event index is at most ev: "c ms" (when it moved) and "R pages". */
static void put_ticks(struct htw *w, struct ticks *tk, uint64_t ev)
{
	while (tk->next < tk->n && tk->t[tk->next].event_index <= ev) {
		const struct rec_tick *t = &tk->t[tk->next++];
		uint64_t ms = t->time_ns / 1000000;

		if (ms > tk->last_ms) {
			tk->last_ms = ms;
			put_c(w, 'c');
			put_hex(w, ms);
			put_c(w, '\n');
		}
		put_c(w, 'R');
		put_hex(w, t->rss / tk->page);
		put_c(w, '\n');
	}
}

/* One decoded event chunk; decoded by a helper thread while the one before is written. */
struct chunk {
	const struct rpt_data *d;
	size_t c;
	struct rec_event *e;
	size_t n;
	uint64_t first;
	int rc;
	pthread_t th;
	int threaded; /* th must be joined */
};

static void *decode_chunk(void *arg)
{
	struct chunk *k = arg;

	k->rc = rec_event_chunk(k->d->r, k->c, &k->e, &k->n, &k->first);
	return NULL;
}

/* Start decoding chunk c into *k: in a thread, or right here if none can start. */
static void decode_start(struct chunk *k, const struct rpt_data *d, size_t c)
{
	*k = (struct chunk){ .d = d, .c = c };
	k->threaded = pthread_create(&k->th, NULL, decode_chunk, k) == 0;
	if (!k->threaded)
		decode_chunk(k);
}

static void decode_wait(struct chunk *k)
{
	if (k->threaded)
		pthread_join(k->th, NULL);
	k->threaded = 0;
}

/*
 * The event stream, chunk by chunk, up to the first chunk that does not
 * decode. Chunk c + 1 is decoded in a thread while chunk c is formatted.
 */
static int put_events(struct htw *w, const struct rpt_data *d)
{
	const char *ps = rec_meta(d->r, "page_size");
	struct ticks tk = { 0 };
	uint64_t *live, ev = 0;
	struct chunk cur, next;
	size_t c;

	tk.t = rec_ticks(d->r, &tk.n);
	tk.page = ps ? strtoull(ps, NULL, 10) : 0;
	if (!tk.page)
		tk.page = 4096;
	live = calloc(d->ninfos + 1, sizeof(*live));
	if (!live)
		return -ENOMEM;
	if (d->nchunks)
		decode_start(&next, d, 0);
	for (c = 0; c < d->nchunks; c++) {
		const struct rec_event *e;
		size_t n;

		decode_wait(&next);
		cur = next;
		if (c + 1 < d->nchunks && cur.rc >= 0 && !w->err)
			decode_start(&next, d, c + 1);
		if (cur.rc < 0 || w->err) {
			free(cur.e);
			break;
		}
		e = cur.e;
		n = cur.n;
		ev = cur.first;
		for (size_t k = 0; k < n; k++, ev++) {
			uint32_t i = e[k].info;

			if (tk.next < tk.n && tk.t[tk.next].event_index <= ev)
				put_ticks(w, &tk, ev);
			if (e[k].op == REC_EV_ALLOC) {
				live[i]++;
				put_c(w, '+');
			} else if (live[i]) {
				live[i]--;
				put_c(w, '-');
			} else {
				continue;
			}
			put_hex(w, i);
			put_c(w, '\n');
		}
		free(cur.e);
	}
	put_ticks(w, &tk, UINT64_MAX);
	free(live);
	return 0;
}

int rpt_load_for_heaptrack(const struct rec_reader *r, const struct rpt_options *opt,
			   struct rpt_data **out)
{
	struct rpt_data *d;
	const char *s = rec_meta(r, "sampled"), *sb = rec_meta(r, "sample_bytes");
	int ret;

	/* a sampled recording needs each info's mean weight: the full analysis */
	if ((s && strcmp(s, "0") && *s) || (sb && strcmp(sb, "0") && *sb))
		return rpt_analyze(r, opt, out);
	*out = NULL;
	d = rpt_data_new(r);
	if (!d)
		return -ENOMEM;
	ret = opt && opt->native_all ? 0 : rpt_fold_interp(d);
	if (ret == 0)
		ret = rpt_summary_meta(d);
	if (ret < 0) {
		rpt_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

int rpt_write_heaptrack(FILE *f, const struct rpt_data *d)
{
	struct htw w = { .f = f, .next_str = 1 };
	int ret = -ENOMEM;

	/* the highest string index any frame names bounds the string map */
	for (size_t i = 0; i < d->nframes; i++) {
		if (d->frames[i].function >= w.nstr)
			w.nstr = (size_t)d->frames[i].function + 1;
		if (d->frames[i].file >= w.nstr)
			w.nstr = (size_t)d->frames[i].file + 1;
	}
	w.z = ZSTD_createCCtx();
	w.buf = malloc(TEXT_BUF);
	w.zcap = ZSTD_CStreamOutSize();
	w.zout = malloc(w.zcap);
	w.str_map = calloc(w.nstr + 1, sizeof(*w.str_map));
	w.mod_str = calloc(d->nmodules + 1, sizeof(*w.mod_str));
	if (!w.z || !w.buf || !w.zout || !w.str_map || !w.mod_str)
		goto out;
	ZSTD_CCtx_setParameter(w.z, ZSTD_c_compressionLevel, ZSTD_LEVEL);
	/* a worker thread compresses while this one formats; fails harmlessly without MT */
	ZSTD_CCtx_setParameter(w.z, ZSTD_c_nbWorkers, 1);

	put_header(&w, d);
	put_tables(&w, d);
	ret = put_events(&w, d);
	if (ret < 0)
		goto out;
	htw_flush(&w, ZSTD_e_end);
	ret = w.err;
	if (!ret && fflush(f) != 0)
		ret = -EIO;
out:
	free(w.mod_str);
	free(w.str_map);
	free(w.zout);
	free(w.buf);
	ZSTD_freeCCtx(w.z);
	return ret;
}
