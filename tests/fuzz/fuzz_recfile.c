/* tests/fuzz/fuzz_recfile.c - libFuzzer harness for the recording reader */
/* SPDX-License-Identifier: MIT */
/*
 * Two ways in, picked by the first byte:
 *   even: the rest is a recording file as is (rec_open_mem);
 *   odd:  the rest describes chunks, which get valid headers, zstd frames
 *         and checksums here, so mutations reach the record decoders
 *         instead of dying at a checksum:
 *           u8 section, u8 first, u8 count, u8 len, len payload bytes, ...
 * Either way every table is walked, every event chunk decoded, and the
 * reader's promises (indices in range) checked with abort().
 *
 * Built with -DFUZZ_RECFILE_SEED it is instead a program writing a seed
 * corpus of real recordings into the directory given as argument.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "recfile/internal.h"
#include "recfile/recfile.h"

#ifndef FUZZ_RECFILE_SEED
static void check_reader(const struct rec_reader *r)
{
	const struct rec_module *m;
	const struct rec_ip *ip;
	const struct rec_frame *f;
	const struct rec_trace *t;
	const struct rec_allocinfo *a;
	const struct rec_tick *tk;
	size_t nm, nip, nf, nt, na, ntk, total = 0;

	m = rec_modules(r, &nm);
	ip = rec_ips(r, &nip);
	f = rec_frames(r, &nf);
	t = rec_traces(r, &nt);
	a = rec_allocinfos(r, &na);
	tk = rec_ticks(r, &ntk);
	for (size_t i = 0; i < nm; i++)
		if (!m[i].path || strlen(m[i].path) > REC_MAX_CHUNK ||
		    (m[i].build_id_len && !m[i].build_id))
			abort();
	for (size_t i = 0; i < nip; i++) {
		if (ip[i].module != REC_NONE && ip[i].module >= nm)
			abort();
		/* follow the chain: links only point forward, so it ends */
		for (uint32_t k = ip[i].frame; k != REC_NONE; k = f[k].outer) {
			if (k >= nf || (f[k].outer != REC_NONE && f[k].outer <= k))
				abort();
			(void)rec_string(r, f[k].function);
			(void)rec_string(r, f[k].file);
		}
	}
	if (nt < 1 || t[0].parent != 0)
		abort();
	for (size_t i = 1; i < nt; i++)
		if (t[i].parent >= i || (t[i].ip != REC_NONE && t[i].ip >= nip))
			abort();
	for (size_t i = 0; i < na; i++)
		if (a[i].trace >= nt)
			abort();
	for (size_t i = 0; i < ntk; i++)
		if (tk[i].event_index > rec_nevents(r))
			abort();
	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev;
		size_t n;
		uint64_t first;

		if (rec_event_chunk(r, c, &ev, &n, &first))
			continue;
		for (size_t k = 0; k < n; k++)
			if (ev[k].info >= na || ev[k].op > REC_EV_FREE_TEMP)
				abort();
		total += n;
		free(ev);
	}
	if (total > rec_nevents(r))
		abort();
	(void)rec_meta(r, "exe");
	(void)rec_strerror(rec_truncated(r));
}

/* build a file from the chunk description in p[0..n) */
static uint8_t *build(const uint8_t *p, size_t n, size_t *out_len)
{
	/* a chunk of plen bytes takes at most REC_CHUNK_HDR + ZSTD_compressBound(plen) */
	size_t cap = REC_FILE_HDR + (n / 4 + 1) * (REC_CHUNK_HDR + ZSTD_compressBound(0)) + 2 * n + 4096;
	size_t len = REC_FILE_HDR;
	uint8_t *out = malloc(cap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	if (!out || !cc)
		goto fail;
	memcpy(out, REC_MAGIC, REC_MAGIC_LEN);
	rec_le32(out + 8, REC_VERSION);
	rec_le32(out + 12, 0);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
	while (n >= 4) {
		struct rec_chunk_hdr h = { .section = p[0], .first = p[1], .count = p[2] };
		size_t plen = p[3] < n - 4 ? p[3] : n - 4;
		size_t cs = 0;

		p += 4;
		n -= 4;
		if (cap - len < REC_CHUNK_HDR + ZSTD_compressBound(plen))
			goto fail;
		if (h.section != REC_SEC_END || plen) {
			cs = ZSTD_compress2(cc, out + len + REC_CHUNK_HDR, cap - len - REC_CHUNK_HDR, p,
					    plen);
			if (ZSTD_isError(cs))
				goto fail;
		}
		h.csize = (uint32_t)cs;
		h.usize = (uint32_t)plen;
		rec_chunk_encode(out + len, &h);
		len += REC_CHUNK_HDR + cs;
		p += plen;
		n -= plen;
	}
	ZSTD_freeCCtx(cc);
	*out_len = len;
	return out;
fail:
	ZSTD_freeCCtx(cc);
	free(out);
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_reader *r;
	uint8_t *file = NULL;
	size_t len;
	int err;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		file = build(data + 1, size - 1, &len);
		if (!file)
			return 0;
		r = rec_open_mem(file, len, &err);
	} else {
		r = rec_open_mem(data + 1, size - 1, &err);
	}
	if (r) {
		check_reader(r);
		rec_close(r);
	} else if (err <= 0 || err >= REC_E_MAX) {
		abort();
	}
	free(file);
	return 0;
}
#else
/* ------------------------------------------------------------------ */
/* Seed corpus: a few real recordings, each prefixed with the mode byte */

#include <fcntl.h>
#include <unistd.h>

/*
 * event k of two threads (numbers 1 and 70) interleaved at random, each
 * freeing its own allocations in order, 20 alive at once (LANES)
 */
static void lanes_event(struct rec_writer *w, uint32_t k)
{
	static uint64_t no[2][20];
	static uint32_t info[2][20], nlive[2], head[2], r = 2463534242u;
	uint32_t t, i;

	r ^= r << 13, r ^= r >> 17, r ^= r << 5;
	t = r >> 31;
	rec_put_lane(w, t ? 70 : 1);
	if (nlive[t] < 20) {
		i = (head[t] + nlive[t]++) % 20;
		no[t][i] = rec_writer_nallocs(w);
		info[t][i] = (k * 7 / 3) % 6;
		rec_put_alloc(w, info[t][i], 0);
		return;
	}
	i = head[t];
	head[t] = (head[t] + 1) % 20;
	nlive[t]--;
	rec_put_free_of(w, info[t][i], 0, no[t][i]);
}

static int seed(const char *dir, const char *name, int nev, int flush, int pattern)
{
	char path[4096], tmp[4096];
	struct rec_sym chain[2] = { { "f", "f.c", 3 }, { "g", "g.c", 4 } };
	struct rec_writer *w;
	uint32_t m, ip, t = 0, a;
	uint8_t buf[1 << 16];
	int fd, err, lanes = pattern == 3;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	unlink(tmp);
	w = rec_writer_create(tmp, &err);
	if (!w)
		return -1;
	rec_put_meta(w, "exe", "/bin/true");
	rec_put_module(w, "/bin/true", 0x1000, 0x2000, (const uint8_t *)"\1\2\3\4", 4, &m);
	for (int i = 0; i < 6; i++) {
		rec_put_ip(w, 0x1100 + 8 * i, &ip);
		rec_put_symbol(w, ip, m, chain, i % 3);
		rec_put_trace(w, i % 2 ? t : 0, ip, &t);
		rec_put_allocinfo(w, 16 * i, t, 1 + i % 3, &a);
		if (flush)
			rec_writer_flush(w);
	}
	rec_put_tick(w, 10, 4096);
	for (int k = 0; k < nev && lanes; k++)
		lanes_event(w, (uint32_t)k);
	for (int k = 0; k < nev && !lanes; k++) {
		uint32_t info = k % 6;

		/*
		 * pattern: 0 mixed, 1 FIFO frees with hints (AGE), 2 new infos
		 * (RECENT/DELTA); 3 is lanes_event's
		 */
		if (pattern == 1 && k % 2) {
			rec_put_free_of(w, (uint32_t)((k / 2 / 7) % 6), 0,
					rec_writer_nallocs(w) > 50 ? rec_writer_nallocs(w) - 50 : UINT64_MAX);
			continue;
		}
		if (pattern == 1) {
			rec_put_alloc(w, (uint32_t)((k / 2 / 7) % 6), 0);
			continue;
		}
		if (pattern == 2 && k % 2 == 0) {
			rec_put_allocinfo(w, 8, t, 1, &a);
			info = a;
		}
		if (k % 3 == 0 || pattern == 2)
			rec_put_alloc(w, info, k % 5 ? 0 : 4096);
		else
			rec_put_free(w, info, k % 2);
	}
	rec_put_tick(w, 20, 8192);
	if (rec_writer_close(w))
		return -1;
	fd = open(tmp, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf + 1, sizeof(buf) - 1);
	close(fd);
	unlink(tmp);
	if (n <= 0)
		return -1;
	buf[0] = 0; /* raw mode */
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n + 1) != n + 1)
		return -1;
	return close(fd);
}

int main(int argc, char **argv)
{
	/* chunk-description mode: strings, ips, traces, allocinfos, events, end */
	static const uint8_t desc[] = {
		1, REC_SEC_STRINGS, 1, 1, 2, 1, 'x',
		REC_SEC_IPS, 0, 2, 2, 2, 4,
		REC_SEC_SYMBOLS, 0, 1, 6, 0, 0, 1, 1, 0, 7,
		REC_SEC_TRACES, 1, 2, 4, 1, 0, 1, 2,
		REC_SEC_ALLOCINFOS, 0, 2, 4, 8, 0x21, 9, 0x11,
		REC_SEC_EVENTS, 0, 3, 6, REC_EVM_RECENT, 0 | 1 << 2 | 3 << 4, 0, 0, 3, 9,
		REC_SEC_TICKS, 0, 1, 3, 2, 3, 4,
		REC_SEC_META, 0, 1, 4, 1, 'k', 1, 'v',
		REC_SEC_END, 3, 0, 0,
	};
	/* valid tables, then events with allocs' and frees' codes in two columns (REC_EVF_SPLIT) */
	static const uint8_t split[] = {
		1, REC_SEC_STRINGS, 1, 1, 2, 1, 'x',
		REC_SEC_IPS, 0, 2, 2, 2, 4,
		REC_SEC_TRACES, 1, 2, 4, 1, 1, 0, 2,
		REC_SEC_ALLOCINFOS, 0, 2, 4, 8, 9, 0x21, 0x11,
		REC_SEC_EVENTS, 0, 3, 10, REC_EVM_RECENT | REC_EVF_SPLIT, 0 | 1 << 2 | 3 << 4,
		2, 0, 0, 0, 0, 3, 0, 9,
		REC_SEC_EVENTS, 3, 4, 10, REC_EVM_DELTA | REC_EVF_AGE | REC_EVF_SPLIT, 0 | 1 << 2 | 0 << 4 | 2 << 6,
		2, 0, 0, 0, 2, 1, 0, 0,
		REC_SEC_END, 7, 0, 0,
	};
	/* events in lanes (REC_EVF_LANES): each lane frees its own alloc */
	static const uint8_t lanes[] = {
		1, REC_SEC_STRINGS, 1, 1, 2, 1, 'x',
		REC_SEC_IPS, 0, 2, 2, 2, 4,
		REC_SEC_TRACES, 1, 2, 4, 1, 1, 0, 2,
		REC_SEC_ALLOCINFOS, 0, 2, 4, 8, 9, 0x21, 0x11,
		REC_SEC_EVENTS, 0, 4, 13,
		REC_EVM_RECENT | REC_EVF_AGE | REC_EVF_SPLIT | REC_EVF_LANES, 0, 0 | 1 << 2, 1, 2 | 1 << 2,
		2, 0, 0, 0, 0, 0, 0, 0,
		REC_SEC_END, 4, 0, 0,
	};
	char path[4096];
	FILE *f;

	if (argc != 2)
		return 2;
	if (seed(argv[1], "small", 30, 0, 0) || seed(argv[1], "flushed", 200, 1, 0) ||
	    seed(argv[1], "events", 3000, 0, 0) || seed(argv[1], "fifo", 3000, 0, 1) ||
	    seed(argv[1], "newinfos", 1000, 0, 2) || seed(argv[1], "lanes", 3000, 0, 3))
		return 1;
	snprintf(path, sizeof(path), "%s/crafted", argv[1]);
	f = fopen(path, "wb");
	if (!f || fwrite(desc, 1, sizeof(desc), f) != sizeof(desc) || fclose(f))
		return 1;
	snprintf(path, sizeof(path), "%s/crafted_split", argv[1]);
	f = fopen(path, "wb");
	if (!f || fwrite(split, 1, sizeof(split), f) != sizeof(split) || fclose(f))
		return 1;
	snprintf(path, sizeof(path), "%s/crafted_lanes", argv[1]);
	f = fopen(path, "wb");
	if (!f || fwrite(lanes, 1, sizeof(lanes), f) != sizeof(lanes) || fclose(f))
		return 1;
	return 0;
}
#endif
