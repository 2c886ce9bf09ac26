/* interpret/snapsym.c - names of the addresses in live heap snapshots, each found once per session */
/* SPDX-License-Identifier: MIT */
/*
 * A snapshot (agg.c) shows the call sites known so far; a session of days
 * shows the same ones over and over, with a new one now and then. Each
 * address is named the first time a snapshot holds it, by the recording's
 * own symbolizer: itp_symbolize runs on the session with its ip table
 * swapped for one of just the new addresses (each with the sequence number
 * that picks its module, as for the recording), and writes into a writer of
 * recfile's that hands each symbol chain back here (rec_writer_symbols).
 * The chains are copied into the cache: one entry per address, its lines
 * in one array, every function and file name stored once. Nothing is ever
 * dropped, so the cache grows with the distinct call-site addresses of the
 * session and never with its length; each entry costs 8 bytes, 24 per line
 * (one line per inlined level), about 40 in the address map, and the names.
 * Addresses that cannot be named (no module, a stripped module without
 * symbols, a file that is gone) are kept with no lines, so they are not
 * looked up again.
 *
 * Foreign frames (Java, Python: track/wire.h) are not cached: their
 * definition may arrive after a snapshot named them, so each view names
 * them afresh from the session's definitions (one hash lookup), marked
 * with their language and kind.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/snap_internal.h"
#include "interpret/sym_internal.h"

/* the addresses of one naming round, by their index in the copied session */
struct round {
	struct itp_snapsym *s;
	const uint32_t *ent; /* per index: the cache entry it fills */
	size_t n;
	int err;
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 256;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* FNV-1a over the string: the key of the name table */
static uint64_t str_hash(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h;
}

/* the stored copy of p (NULL stays NULL), or NULL with *err set */
static const char *intern(struct itp_snapsym *s, const char *p, int *err)
{
	uint64_t key;
	uint32_t id;
	size_t len;
	char *copy;

	if (!p)
		return NULL;
	/* equal hashes of different names take the next key: a probe sequence of keys */
	for (key = str_hash(p); itp_map_get(&s->str_ids, key, &id); key++)
		if (!strcmp(s->strs[id], p))
			return s->strs[id];
	len = strlen(p);
	if (s->nstrs >= ITP_MAX_TABLE ||
	    grow((void **)&s->strs, &s->cap_strs, s->nstrs + 1, sizeof(*s->strs)))
		goto out_nomem;
	copy = malloc(len + 1);
	if (!copy)
		goto out_nomem;
	memcpy(copy, p, len + 1);
	if (itp_map_put(&s->str_ids, key, (uint32_t)s->nstrs)) {
		free(copy);
		goto out_nomem;
	}
	s->strs[s->nstrs++] = copy;
	s->str_bytes += len + 1;
	return copy;
out_nomem:
	*err = -ENOMEM;
	return NULL;
}

/* rec_symbol_fn: itp_symbolize's chain for the round's address ip */
static int take_symbol(void *arg, uint32_t ip, uint32_t module, const struct rec_sym *chain, size_t n)
{
	struct round *r = arg;
	struct itp_snapsym *s = r->s;
	struct itp_snapsym_ent *e;
	int err = 0;

	(void)module;
	if (ip >= r->n)
		return -REC_E_RANGE;
	e = &s->ent[r->ent[ip]];
	if (e->n || !n)
		return 0;
	if (n > ITP_MAX_INLINE)
		n = ITP_MAX_INLINE;
	if (s->nlines > UINT32_MAX - n ||
	    grow((void **)&s->lines, &s->cap_lines, s->nlines + n, sizeof(*s->lines))) {
		r->err = -ENOMEM;
		return -REC_E_NOMEM;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct itp_snap_line *l = &s->lines[s->nlines + i];

		l->function = intern(s, chain[i].function, &err);
		l->file = err ? NULL : intern(s, chain[i].file, &err);
		l->line = chain[i].line;
	}
	if (err) {
		r->err = err;
		return -REC_E_NOMEM;
	}
	e->first = (uint32_t)s->nlines;
	e->n = (uint32_t)n;
	s->nlines += n;
	s->named += chain[0].function != NULL;
	return 0;
}

/*
 * name - name the new addresses ips[0, n) (cache entries ent[0, n)) with
 * itp_symbolize on the session itself, its ip table, writer and result
 * lent out for the call: the symbolizer finds the modules, their index and
 * whatever else it keeps in the session as for the recording, and counts
 * its warnings apart (the recording's are its own business).
 */
static int name(struct itp_ctx *c, struct itp_ipinfo *ips, const uint32_t *ent, size_t n)
{
	struct round r = { .s = &c->snapsym, .ent = ent, .n = n };
	struct itp_ipinfo *own_ips = c->ips;
	size_t own_n = c->nips, own_cap = c->ips_cap;
	struct itp_result *own_res = c->res, scratch;
	struct rec_writer *own_w = c->w, *w;
	int err = 0;

	w = rec_writer_symbols(take_symbol, &r, &err);
	if (!w)
		return -ENOMEM; /* its only failure */
	memset(&scratch, 0, sizeof(scratch));
	c->res = &scratch;
	c->w = w;
	c->ips = ips;
	c->nips = c->ips_cap = n;
	(void)itp_symbolize(c); /* what it cannot name stays unnamed */
	c->ips = own_ips;
	c->nips = own_n;
	c->ips_cap = own_cap;
	c->w = own_w;
	c->res = own_res;
	rec_writer_abort(w);
	return r.err;
}

/*
 * foreign - the foreign frames of ips[0, n) named into v and marked in xf
 * (n entries): their lines and the text of undefined ones live in the same
 * allocation, after xf (room for nx of each).
 */
static void foreign(struct itp_ctx *c, const uint64_t *ips, size_t n, struct itp_snap_frames *v,
		    struct itp_snap_xframe *xf, size_t nx)
{
	struct itp_snap_line *line = (struct itp_snap_line *)(v + n + 1);
	char (*text)[64] = (char (*)[64])(line + nx);
	struct rec_sym sym;
	unsigned lang, kind;

	for (size_t i = 0; i < n; i++) {
		if (!wire_is_xframe(ips[i]))
			continue;
		itp_xframe_chain(&c->xf, ips[i], &sym, *text, &lang, &kind);
		*line = (struct itp_snap_line){ .function = sym.function, .file = sym.file,
						.line = sym.line };
		xf[i] = (struct itp_snap_xframe){ .xframe = 1, .lang = (uint8_t)lang,
						  .xkind = (uint8_t)kind };
		v[i].v = line++;
		v[i].n = 1;
		text++;
	}
}

int itp_snapsym_view(struct itp_ctx *c, const uint64_t *ips, size_t n, int name_new,
		     struct itp_snap_frames **out, struct itp_snap_xframe **xout, size_t *unnamed)
{
	struct itp_snapsym *s = &c->snapsym;
	struct itp_ipinfo *fresh = NULL;
	struct itp_snap_frames *v;
	struct itp_snap_xframe *xf;
	uint32_t *ent = NULL, e, idx;
	size_t i, nfresh = 0, cap_fresh = 0, cap_ent = 0, nx = 0;
	uint64_t t0;
	int rc = 0;

	*out = NULL;
	*xout = NULL;
	if (unnamed)
		*unnamed = 0;
	if (c->opt->no_symbols)
		return 0;
	for (i = 0; i < n; i++)
		nx += wire_is_xframe(ips[i]);
	/* frames, then the foreign frames' lines and texts, then the marks (the smallest alignment last) */
	v = calloc(1, (n + 1) * sizeof(*v) + nx * (sizeof(struct itp_snap_line) + 64) +
			  (n + 1) * sizeof(struct itp_snap_xframe));
	if (!v)
		return -ENOMEM;
	xf = (struct itp_snap_xframe *)((char *)(v + n + 1) + nx * (sizeof(struct itp_snap_line) + 64));
	foreign(c, ips, n, v, xf, nx);
	/* the addresses not seen before get an entry (unnamed so far) */
	for (i = 0; i < n; i++) {
		if (wire_is_xframe(ips[i]) || itp_map_get(&s->by_ip, ips[i], &e))
			continue;
		if (!name_new) {
			if (unnamed)
				(*unnamed)++;
			continue;
		}
		if (s->nent >= ITP_MAX_TABLE ||
		    grow((void **)&s->ent, &s->cap_ent, s->nent + 1, sizeof(*s->ent)) ||
		    grow((void **)&fresh, &cap_fresh, nfresh + 1, sizeof(*fresh)) ||
		    grow((void **)&ent, &cap_ent, nfresh + 1, sizeof(*ent)) ||
		    itp_map_put(&s->by_ip, ips[i], (uint32_t)s->nent)) {
			rc = -ENOMEM;
			goto out_free;
		}
		s->ent[s->nent] = (struct itp_snapsym_ent){ 0, 0 };
		/* the module is picked as for the recording: loaded when the ip was first seen */
		fresh[nfresh].ip = ips[i];
		fresh[nfresh].seq = itp_map_get(&c->ipmap, ips[i], &idx) && idx < c->nips
					? c->ips[idx].seq
					: c->next_seq;
		ent[nfresh++] = (uint32_t)s->nent++;
	}
	if (nfresh) {
		t0 = util_mono_ns();
		rc = name(c, fresh, ent, nfresh);
		s->ns += util_mono_ns() - t0;
		if (rc)
			goto out_free;
	}
	for (i = 0; i < n; i++) {
		if (wire_is_xframe(ips[i]) || !itp_map_get(&s->by_ip, ips[i], &e))
			continue;
		v[i].v = s->ent[e].n ? &s->lines[s->ent[e].first] : NULL;
		v[i].n = s->ent[e].n;
	}
out_free:
	free(fresh);
	free(ent);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*xout = xf;
	return 0;
}

uint64_t itp_snapsym_bytes(const struct itp_snapsym *s)
{
	return s->cap_ent * sizeof(*s->ent) + s->cap_lines * sizeof(*s->lines) +
	       (s->by_ip.cap + s->str_ids.cap) * sizeof(struct itp_map_ent) +
	       s->cap_strs * sizeof(*s->strs) + s->str_bytes;
}

void itp_snapsym_free(struct itp_snapsym *s)
{
	for (size_t i = 0; i < s->nstrs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->ent);
	free(s->lines);
	itp_map_free(&s->by_ip);
	itp_map_free(&s->str_ids);
	memset(s, 0, sizeof(*s));
}
