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

/* The conversion's state: the writer and heaptrack's indices mapped to the recording's. */
struct conv {
	struct rec_writer *w;
	struct map soff, ips, traces, mods, modstr; /* soff: offsets of the strings in arena */
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t time_ms, page, prev_alloc;
};

#define BAD_LINE 2 /* a line's return: it refers to what does not exist */

/* put_string - heaptrack's "s" line: one more string. 0 or -1 */
static int put_string(struct conv *cv, char *p)
{
	char *s = strchr(p, ' ');
	size_t n;

	s = s ? s + 1 : p + strlen(p);
	n = strlen(s) + 1;
	if (rec_grow((void **)&cv->arena, &cv->arena_cap, cv->arena_len, n, 1) ||
	    map_add(&cv->soff, (uint32_t)cv->arena_len))
		return -1;
	memcpy(cv->arena + cv->arena_len, s, n);
	cv->arena_len += n;
	return 0;
}

/* put_ip - heaptrack's "i" line: an ip, its module and its frames. 0 or -1 */
static int put_ip(struct conv *cv, char *p)
{
	struct rec_sym chain[64];
	uint64_t ip = hex(&p), mod = hex(&p);
	uint32_t m = REC_NONE, idx;
	size_t n = 0;

	/* one recording module per heaptrack module string */
	for (size_t k = 0; k < cv->modstr.n; k++)
		if (cv->modstr.v[k] == mod)
			m = cv->mods.v[k];
	if (m == REC_NONE && str_of(&cv->soff, cv->arena, mod)) {
		if (rec_put_module(cv->w, str_of(&cv->soff, cv->arena, mod), 0, 0, NULL, 0, &m) ||
		    map_add(&cv->modstr, (uint32_t)mod) || map_add(&cv->mods, m))
			return -1;
	}
	while (*p && n < 64) {
		chain[n].function = str_of(&cv->soff, cv->arena, hex(&p));
		chain[n].file = *p ? str_of(&cv->soff, cv->arena, hex(&p)) : NULL;
		chain[n].line = *p ? (uint32_t)hex(&p) : 0;
		n++;
	}
	if (rec_put_ip(cv->w, ip, &idx) || rec_put_symbol(cv->w, idx, m, chain, n) ||
	    map_add(&cv->ips, idx))
		return -1;
	return 0;
}

/* put_line - one line of heaptrack's data (its type letter first). 0, -1 or BAD_LINE */
static int put_line(struct conv *cv, char *line)
{
	char *p = line + 2;
	uint64_t a, b;
	uint32_t idx;

	switch (line[0]) {
	case 's':
		return put_string(cv, p);
	case 'i':
		return put_ip(cv, p);
	case 't':
		a = hex(&p); /* ip */
		b = hex(&p); /* parent */
		if (!a || a > cv->ips.n || b > cv->traces.n)
			return BAD_LINE;
		if (rec_put_trace(cv->w, b ? cv->traces.v[b - 1] : 0, cv->ips.v[a - 1], &idx) ||
		    map_add(&cv->traces, idx))
			return -1;
		return 0;
	case 'a':
		a = hex(&p); /* size */
		b = hex(&p); /* trace */
		if (b > cv->traces.n)
			return BAD_LINE;
		return rec_put_allocinfo(cv->w, a, b ? cv->traces.v[b - 1] : 0, 1 /* WIRE_KIND_MALLOC */,
					 &idx) ? -1 : 0;
	case '+':
		cv->prev_alloc = hex(&p);
		return rec_put_alloc(cv->w, (uint32_t)cv->prev_alloc, 0) ? -1 : 0;
	case '-':
		a = hex(&p);
		b = a == cv->prev_alloc;
		cv->prev_alloc = UINT64_MAX;
		return rec_put_free(cv->w, (uint32_t)a, (int)b) ? -1 : 0;
	case 'c':
		cv->time_ms = hex(&p);
		return 0;
	case 'R':
		return rec_put_tick(cv->w, cv->time_ms * 1000000, hex(&p) * cv->page) ? -1 : 0;
	case 'I':
		cv->page = hex(&p);
		return 0;
	case 'X':
		return rec_put_meta(cv->w, "cmdline", p) ? -1 : 0;
	default:
		return 0;
	}
}

static void conv_free(struct conv *cv)
{
	free(cv->arena);
	free(cv->soff.v);
	free(cv->ips.v);
	free(cv->traces.v);
	free(cv->mods.v);
	free(cv->modstr.v);
}

int main(int argc, char **argv)
{
	struct conv cv = { .time_ms = 0, .page = 4096, .prev_alloc = UINT64_MAX };
	char *line = NULL;
	size_t lcap = 0;
	FILE *in;
	ssize_t len;
	int err, rc, ret = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: heaptap_ht2rec HEAPTRACK-TEXT|- OUT\n");
		return 2;
	}
	in = strcmp(argv[1], "-") ? fopen(argv[1], "r") : stdin;
	if (!in) {
		perror(argv[1]);
		return 1;
	}
	cv.w = rec_writer_create(argv[2], &err);
	if (!cv.w) {
		fprintf(stderr, "heaptap_ht2rec: %s: %s\n", argv[2], rec_strerror(err));
		if (in != stdin)
			fclose(in);
		return 1;
	}
	while ((len = getline(&line, &lcap, in)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = 0;
		if (len < 2)
			continue;
		rc = put_line(&cv, line);
		if (rc == BAD_LINE)
			fprintf(stderr, "heaptap_ht2rec: bad line: %s\n", line);
		if (rc)
			goto out;
	}
	ret = rec_writer_close(cv.w);
	cv.w = NULL;
	if (ret) {
		fprintf(stderr, "heaptap_ht2rec: %s: %s\n", argv[2], rec_strerror(ret));
		goto out;
	}
	sizes(argv[2]);
	ret = 0;
out:
	if (cv.w) {
		fprintf(stderr, "heaptap_ht2rec: conversion failed\n");
		rec_writer_abort(cv.w);
	}
	free(line);
	conv_free(&cv);
	if (in != stdin)
		fclose(in);
	return ret ? 1 : 0;
}
