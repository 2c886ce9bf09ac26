/* bench/recfile/ht2rec.c - convert a heaptrack data file into a heaptap recording (size benchmark) */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap_ht2rec IN OUT: reads heaptrack's uncompressed text data (pipe it
 * through `zstd -dc file.zst`; "-" = stdin) and replays every string,
 * instruction pointer with its frames, trace, allocation info, allocation,
 * free and RSS sample through the recording writer. Both files then hold
 * the same run, which makes their sizes comparable. It prints the size of
 * each section of the result. A free directly after the allocation of the
 * same info is stored as temporary.
 *
 * This is a measuring tool, not part of heaptap; it prints by design.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "recfile/internal.h"

struct map {
	uint32_t *v;
	size_t n, cap;
};

static int map_add(struct map *m, uint32_t v)
{
	if (rec_grow((void **)&m->v, &m->cap, m->n, 1, sizeof(*m->v)))
		return -1;
	m->v[m->n++] = v;
	return 0;
}

static uint64_t hex(char **p)
{
	uint64_t v = strtoull(*p, p, 16);

	while (**p == ' ')
		(*p)++;
	return v;
}

static const char *str_of(const struct map *strs_off, const char *arena, uint64_t i)
{
	/* heaptrack's strings count from 1; 0 is "none" */
	return i && i <= strs_off->n ? arena + strs_off->v[i - 1] : NULL;
}

static void sizes(const char *path)
{
	static const char *names[REC_SEC_NUM] = { "?",	"strings", "modules", "ips", "symbols", "traces",
						  "allocinfos", "events", "ticks", "meta", "end" };
	uint64_t cs[REC_SEC_NUM] = { 0 }, us[REC_SEC_NUM] = { 0 }, nch[REC_SEC_NUM] = { 0 }, total = 0;
	uint8_t raw[REC_CHUNK_HDR];
	struct rec_chunk_hdr h;
	FILE *f = fopen(path, "rb");

	if (!f || fseek(f, REC_FILE_HDR, SEEK_SET))
		return;
	while (fread(raw, 1, sizeof(raw), f) == sizeof(raw) && !rec_chunk_decode(raw, &h)) {
		int s = h.section < REC_SEC_NUM ? h.section : 0;

		cs[s] += h.csize + REC_CHUNK_HDR;
		us[s] += h.usize;
		nch[s]++;
		total += h.csize + REC_CHUNK_HDR;
		if (fseek(f, h.csize, SEEK_CUR))
			break;
	}
	fclose(f);
	for (int s = 1; s < REC_SEC_NUM; s++)
		if (nch[s])
			printf("%-11s %4llu chunks %12llu bytes  (%llu uncompressed)\n", names[s],
			       (unsigned long long)nch[s], (unsigned long long)cs[s],
			       (unsigned long long)us[s]);
	printf("total       %12llu bytes\n", (unsigned long long)(total + REC_FILE_HDR));
}

int main(int argc, char **argv)
{
	struct map soff = { 0 }, ips = { 0 }, traces = { 0 }, mods = { 0 }, modstr = { 0 };
	char *arena = NULL, *line = NULL;
	size_t arena_len = 0, arena_cap = 0, lcap = 0;
	uint64_t time_ms = 0, page = 4096, prev_alloc = UINT64_MAX;
	struct rec_writer *w;
	FILE *in;
	ssize_t len;
	int err, ret = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: heaptap_ht2rec HEAPTRACK-TEXT|- OUT\n");
		return 2;
	}
	in = strcmp(argv[1], "-") ? fopen(argv[1], "r") : stdin;
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	w = rec_writer_create(argv[2], &err);
	if (!w) {
		fprintf(stderr, "heaptap_ht2rec: %s: %s\n", argv[2], rec_strerror(err));
		return 1;
	}
	while ((len = getline(&line, &lcap, in)) > 0) {
		char *p = line + 2;
		uint32_t idx;

		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (len < 2)
			continue;
		switch (line[0]) {
		case 's': {
			char *s = strchr(p, ' ');

			s = s ? s + 1 : p + strlen(p);
			if (rec_grow((void **)&arena, &arena_cap, arena_len, strlen(s) + 1, 1) ||
			    map_add(&soff, (uint32_t)arena_len))
				goto out;
			memcpy(arena + arena_len, s, strlen(s) + 1);
			arena_len += strlen(s) + 1;
			break;
		}
		case 'i': {
			struct rec_sym chain[64];
			uint64_t ip = hex(&p), mod = hex(&p);
			uint32_t m = REC_NONE;
			size_t n = 0;

			/* one recording module per heaptrack module string */
			for (size_t k = 0; k < modstr.n; k++)
				if (modstr.v[k] == mod)
					m = mods.v[k];
			if (m == REC_NONE && str_of(&soff, arena, mod)) {
				if (rec_put_module(w, str_of(&soff, arena, mod), 0, 0, NULL, 0, &m) ||
				    map_add(&modstr, (uint32_t)mod) || map_add(&mods, m))
					goto out;
			}
			while (*p && n < 64) {
				chain[n].function = str_of(&soff, arena, hex(&p));
				chain[n].file = *p ? str_of(&soff, arena, hex(&p)) : NULL;
				chain[n].line = *p ? (uint32_t)hex(&p) : 0;
				n++;
			}
			if (rec_put_ip(w, ip, &idx) || rec_put_symbol(w, idx, m, chain, n) ||
			    map_add(&ips, idx))
				goto out;
			break;
		}
		case 't': {
			uint64_t ip = hex(&p), parent = hex(&p);

			if (!ip || ip > ips.n || parent > traces.n)
				goto bad;
			if (rec_put_trace(w, parent ? traces.v[parent - 1] : 0, ips.v[ip - 1], &idx) ||
			    map_add(&traces, idx))
				goto out;
			break;
		}
		case 'a': {
			uint64_t size = hex(&p), t = hex(&p);

			if (t > traces.n)
				goto bad;
			if (rec_put_allocinfo(w, size, t ? traces.v[t - 1] : 0, 1 /* WIRE_KIND_MALLOC */, &idx))
				goto out;
			break;
		}
		case '+':
			prev_alloc = hex(&p);
			if (rec_put_alloc(w, (uint32_t)prev_alloc, 0))
				goto out;
			break;
		case '-': {
			uint64_t i = hex(&p);

			if (rec_put_free(w, (uint32_t)i, i == prev_alloc))
				goto out;
			prev_alloc = UINT64_MAX;
			break;
		}
		case 'c':
			time_ms = hex(&p);
			break;
		case 'R':
			if (rec_put_tick(w, time_ms * 1000000, hex(&p) * page))
				goto out;
			break;
		case 'I':
			page = hex(&p);
			break;
		case 'X':
			if (rec_put_meta(w, "cmdline", p))
				goto out;
			break;
		default:
			break;
		}
		continue;
bad:
		fprintf(stderr, "heaptap_ht2rec: bad line: %s\n", line);
		goto out;
	}
	ret = rec_writer_close(w);
	w = NULL;
	if (ret) {
		fprintf(stderr, "heaptap_ht2rec: %s: %s\n", argv[2], rec_strerror(ret));
		goto out;
	}
	sizes(argv[2]);
	ret = 0;
out:
	if (w) {
		fprintf(stderr, "heaptap_ht2rec: conversion failed\n");
		rec_writer_abort(w);
	}
	free(line);
	free(arena);
	free(soff.v);
	free(ips.v);
	free(traces.v);
	free(mods.v);
	free(modstr.v);
	if (in != stdin)
		fclose(in);
	return ret ? 1 : 0;
}
