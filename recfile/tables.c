/* recfile/tables.c - decode table chunks and check cross-references */
/* SPDX-License-Identifier: MIT */
/*
 * A chunk is decoded whole or not at all: records go into the free space
 * past each table's end, and the table length moves only when the chunk
 * decoded cleanly and used its payload exactly. References between tables
 * are checked once everything is loaded (rec_fixup): a dangling one becomes
 * 0 or REC_NONE and is counted, never followed.
 */
#include <stdlib.h>

#include "track/wire.h"
#include "recfile/internal.h"

struct cur {
	const uint8_t *p, *end;
};

static int get(struct cur *c, uint64_t *v)
{
	return wire_get_varint(&c->p, c->end, v) ? -REC_E_CORRUPT : 0;
}

static int get32(struct cur *c, uint32_t *v)
{
	uint64_t x;

	if (get(c, &x) || x > UINT32_MAX)
		return -REC_E_CORRUPT;
	*v = (uint32_t)x;
	return 0;
}

/* clamp a delta-decoded index into uint32; out of range becomes REC_NONE (fixed later) */
static uint32_t idx_of(int64_t v)
{
	return v < 0 || v > (int64_t)REC_MAX_INDEX ? REC_NONE : (uint32_t)v;
}

#define ROOM(arr, n, cap, more) rec_grow((void **)&(arr), &(cap), (n), (more), sizeof(*(arr)))

static int dec_strings(struct rec_reader *r, struct cur *c, uint32_t count)
{
	uint8_t *dst;
	uint64_t len;
	int ret = ROOM(r->strs, r->nstrs, r->cap_strs, count);

	for (uint32_t i = 0; !ret && i < count; i++) {
		/* move the bytes over their length prefix and end them with NUL */
		dst = (uint8_t *)c->p;
		if (get(c, &len) || len > (uint64_t)(c->end - c->p))
			return -REC_E_CORRUPT;
		memmove(dst, c->p, len);
		dst[len] = 0;
		c->p += len;
		r->strs[r->nstrs + i] = (const char *)dst;
	}
	if (!ret)
		r->nstrs += count;
	return ret;
}

static int dec_modules(struct rec_reader *r, struct cur *c, uint32_t count)
{
	uint64_t len;
	size_t cap = r->cap_mods;
	int ret = ROOM(r->mods, r->nmods, cap, count);

	if (!ret)
		ret = ROOM(r->mod_path, r->nmods, r->cap_mods, count);
	for (uint32_t i = 0; !ret && i < count; i++) {
		struct rec_module *m = &r->mods[r->nmods + i];

		if (get32(c, &r->mod_path[r->nmods + i]) || get(c, &m->base) || get(c, &m->size) ||
		    get(c, &len) || len > (uint64_t)(c->end - c->p))
			return -REC_E_CORRUPT;
		m->build_id = len ? c->p : NULL;
		m->build_id_len = len;
		m->path = "";
		c->p += len;
	}
	if (!ret)
		r->nmods += count;
	return ret;
}

static int dec_ips(struct rec_reader *r, struct cur *c, uint32_t count)
{
	uint64_t prev = 0, v;
	int ret = ROOM(r->ips, r->nips, r->cap_ips, count);

	for (uint32_t i = 0; !ret && i < count; i++) {
		if (get(c, &v))
			return -REC_E_CORRUPT;
		prev += (uint64_t)rec_unzigzag(v);
		r->ips[r->nips + i] = (struct rec_ip){ .ip = prev, .module = REC_NONE, .frame = REC_NONE };
	}
	if (!ret)
		r->nips += count;
	return ret;
}

static int dec_symbols(struct rec_reader *r, struct cur *c, uint32_t count)
{
	size_t nframes = r->nframes;
	int64_t prev = 0;
	uint64_t v, mod, n;
	int ret = ROOM(r->syms, r->nsyms, r->cap_syms, count);

	for (uint32_t i = 0; !ret && i < count; i++) {
		struct rec_symrec *s = &r->syms[r->nsyms + i];

		if (get(c, &v) || get(c, &mod) || get(c, &n))
			return -REC_E_CORRUPT;
		/* a link takes at least three bytes */
		if (n > (uint64_t)(c->end - c->p) / 3 || nframes + n > REC_MAX_INDEX)
			return -REC_E_CORRUPT;
		prev = (int64_t)((uint64_t)prev + (uint64_t)rec_unzigzag(v));
		s->ip = idx_of(prev);
		s->module = mod == 0 || mod - 1 > REC_MAX_INDEX ? REC_NONE : (uint32_t)(mod - 1);
		s->frame = n ? (uint32_t)nframes : REC_NONE;
		ret = ROOM(r->frames, nframes, r->cap_frames, n);
		for (uint64_t k = 0; !ret && k < n; k++) {
			struct rec_frame *f = &r->frames[nframes + k];

			if (get32(c, &f->function) || get32(c, &f->file) || get32(c, &f->line))
				return -REC_E_CORRUPT;
			f->outer = k + 1 < n ? (uint32_t)(nframes + k + 1) : REC_NONE;
		}
		nframes += n;
	}
	if (!ret) {
		r->nsyms += count;
		r->nframes = nframes;
	}
	return ret;
}

static int dec_traces(struct rec_reader *r, struct cur *c, uint32_t count)
{
	int64_t prev = 0;
	uint64_t d, v;
	int ret = ROOM(r->traces, r->ntraces, r->cap_traces, count);

	/* column 1: parents */
	for (uint32_t i = 0; !ret && i < count; i++) {
		uint64_t own = r->ntraces + i;

		if (get(c, &d) || d == 0 || d > own)
			return -REC_E_CORRUPT;
		r->traces[own].parent = (uint32_t)(own - d);
	}
	/* column 2: ips */
	for (uint32_t i = 0; !ret && i < count; i++) {
		if (get(c, &v))
			return -REC_E_CORRUPT;
		prev = (int64_t)((uint64_t)prev + (uint64_t)rec_unzigzag(v));
		r->traces[r->ntraces + i].ip = idx_of(prev);
	}
	if (!ret)
		r->ntraces += count;
	return ret;
}

static int dec_allocinfos(struct rec_reader *r, struct cur *c, uint32_t count)
{
	int64_t prev = 0;
	uint64_t v;
	int ret = ROOM(r->infos, r->ninfos, r->cap_infos, count);

	/* column 1: sizes */
	for (uint32_t i = 0; !ret && i < count; i++)
		if (get(c, &r->infos[r->ninfos + i].size))
			return -REC_E_CORRUPT;
	/* column 2: trace delta and kind */
	for (uint32_t i = 0; !ret && i < count; i++) {
		struct rec_allocinfo *a = &r->infos[r->ninfos + i];

		if (get(c, &v))
			return -REC_E_CORRUPT;
		a->kind = (uint32_t)(v & 15);
		if (a->kind == REC_KIND_ESC && get32(c, &a->kind))
			return -REC_E_CORRUPT;
		prev = (int64_t)((uint64_t)prev + (uint64_t)rec_unzigzag(v >> 4));
		a->trace = idx_of(prev);
	}
	if (!ret)
		r->ninfos += count;
	return ret;
}

static int dec_ticks(struct rec_reader *r, struct cur *c, uint32_t count)
{
	uint64_t t = 0, ev = 0, rss = 0, a, b, d;
	int ret = ROOM(r->ticks, r->nticks, r->cap_ticks, count);

	for (uint32_t i = 0; !ret && i < count; i++) {
		if (get(c, &a) || get(c, &b) || get(c, &d))
			return -REC_E_CORRUPT;
		t += (uint64_t)rec_unzigzag(a);
		ev += b;
		rss += (uint64_t)rec_unzigzag(d);
		r->ticks[r->nticks + i] = (struct rec_tick){ .time_ns = t, .event_index = ev, .rss = rss };
	}
	if (!ret)
		r->nticks += count;
	return ret;
}

static char *dup_n(struct cur *c)
{
	uint64_t len;
	char *s;

	if (get(c, &len) || len > (uint64_t)(c->end - c->p))
		return NULL;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	memcpy(s, c->p, len);
	s[len] = 0;
	c->p += len;
	return s;
}

static int dec_meta(struct rec_reader *r, struct cur *c, uint32_t count)
{
	size_t n = r->nmeta;
	int ret = ROOM(r->meta, n, r->cap_meta, count);

	for (uint32_t i = 0; !ret && i < count; i++) {
		char *k = dup_n(c);
		char *v = k ? dup_n(c) : NULL;

		if (!v) {
			free(k);
			ret = -REC_E_CORRUPT;
			break;
		}
		r->meta[n++] = (struct rec_meta_kv){ .key = k, .value = v };
	}
	if (ret) {
		while (n > r->nmeta) {
			n--;
			free(r->meta[n].key);
			free(r->meta[n].value);
		}
		return ret;
	}
	r->nmeta = n;
	return 0;
}

static size_t table_len(const struct rec_reader *r, int sec)
{
	switch (sec) {
	case REC_SEC_STRINGS:
		return r->nstrs;
	case REC_SEC_MODULES:
		return r->nmods;
	case REC_SEC_IPS:
		return r->nips;
	case REC_SEC_SYMBOLS:
		return r->nsyms;
	case REC_SEC_TRACES:
		return r->ntraces;
	case REC_SEC_ALLOCINFOS:
		return r->ninfos;
	case REC_SEC_TICKS:
		return r->nticks;
	case REC_SEC_SITES:
		return r->nsites;
	case REC_SEC_XFRAMES:
		return r->nxfs;
	default:
		return r->nmeta;
	}
}

int rec_decode_table(struct rec_reader *r, const struct rec_chunk_hdr *h, uint8_t *p, size_t len)
{
	struct cur c = { .p = p, .end = p + len };
	size_t have = table_len(r, h->section);
	int ret;

	/* every record takes at least one byte; indices must stay below REC_NONE */
	if (h->first != have || h->count > len || h->count > REC_MAX_INDEX - have)
		return -REC_E_CORRUPT;
	switch (h->section) {
	case REC_SEC_STRINGS:
		ret = dec_strings(r, &c, h->count);
		break;
	case REC_SEC_MODULES:
		ret = dec_modules(r, &c, h->count);
		break;
	case REC_SEC_IPS:
		ret = dec_ips(r, &c, h->count);
		break;
	case REC_SEC_SYMBOLS:
		ret = dec_symbols(r, &c, h->count);
		break;
	case REC_SEC_TRACES:
		ret = dec_traces(r, &c, h->count);
		break;
	case REC_SEC_ALLOCINFOS:
		ret = dec_allocinfos(r, &c, h->count);
		break;
	case REC_SEC_TICKS:
		ret = dec_ticks(r, &c, h->count);
		break;
	case REC_SEC_META:
		ret = dec_meta(r, &c, h->count);
		break;
	case REC_SEC_SITES:
		ret = rec_dec_sites(r, &c.p, c.end, h->count);
		break;
	case REC_SEC_XFRAMES:
		ret = rec_dec_xframes(r, &c.p, c.end, h->count);
		break;
	default:
		return -REC_E_CORRUPT;
	}
	if (ret)
		return ret;
	/* the table grew; trailing bytes would mean the writer and reader disagree */
	if (c.p != c.end)
		return -REC_E_CORRUPT;
	return 0;
}

void rec_fixup(struct rec_reader *r)
{
	for (size_t i = 0; i < r->nmods; i++) {
		if (r->mod_path[i] < r->nstrs) {
			r->mods[i].path = r->strs[r->mod_path[i]];
		} else {
			r->mods[i].path = "";
			r->fixed++;
		}
	}
	for (size_t i = 0; i < r->nframes; i++) {
		struct rec_frame *f = &r->frames[i];

		if (f->function >= r->nstrs) {
			f->function = 0;
			r->fixed++;
		}
		if (f->file >= r->nstrs) {
			f->file = 0;
			r->fixed++;
		}
	}
	for (size_t i = 0; i < r->nsyms; i++) {
		const struct rec_symrec *s = &r->syms[i];
		struct rec_ip *ip;

		if (s->ip >= r->nips || r->ips[s->ip].frame != REC_NONE ||
		    r->ips[s->ip].module != REC_NONE) {
			r->fixed++; /* unknown ip, or a second chain for it: keep the first */
			continue;
		}
		ip = &r->ips[s->ip];
		ip->frame = s->frame;
		ip->module = s->module;
		if (s->module != REC_NONE && s->module >= r->nmods) {
			ip->module = REC_NONE;
			r->fixed++;
		}
	}
	for (size_t i = 1; i < r->ntraces; i++) {
		if (r->traces[i].ip >= r->nips) {
			r->traces[i].ip = REC_NONE;
			r->fixed++;
		}
	}
	for (size_t i = 0; i < r->ninfos; i++) {
		if (r->infos[i].trace >= r->ntraces) {
			r->infos[i].trace = 0;
			r->fixed++;
		}
	}
	for (size_t i = 0; i < r->nticks; i++) {
		if (r->ticks[i].event_index > r->nevents) {
			r->ticks[i].event_index = r->nevents;
			r->fixed++;
		}
	}
	rec_fixup_sites(r);
	rec_fixup_xframes(r);
}
