/* interpret/xframe.c - foreign-frame definitions: kept from the stream, written as symbols */
/* SPDX-License-Identifier: MIT */
/*
 * A producer in the target puts ips with bit 63 set into its stacks (Java
 * or Python frames, track/wire.h "Foreign frames") and defines each id once
 * per session with WIRE_REC_XFRAME, before or after the stacks that use it.
 * The definitions are kept here for the session: a table by id (the first
 * definition wins), the strings in one arena, all of it taken from the
 * memory budget. At the end, symbolize.c hands each foreign ip here instead
 * of to the module lookup: it is written as a symbol of no module with the
 * definition's name, file and line, and marked as a foreign frame with its
 * language and kind (rec_put_xframe). Everything in a definition is the
 * target's word: bounded here, escaped where it is printed, never opened.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interpret/internal.h"

/* arena_add - copy len bytes (NULs become '?') and a NUL into the arena; *off its offset. */
static int arena_add(struct itp_ctx *c, const uint8_t *s, size_t len, uint32_t *off)
{
	struct itp_xframes *x = &c->xf;

	if (!len) {
		*off = 0;
		return 0;
	}
	if (x->cap_strs - x->nstrs < len + 1) {
		size_t ncap = x->cap_strs ? x->cap_strs : 4096;
		char *p;

		while (ncap - x->nstrs < len + 1)
			ncap *= 2;
		if (ncap > UINT32_MAX)
			return -E2BIG;
		if (itp_mem_take(&c->mem, ncap - x->cap_strs))
			return -EDQUOT;
		p = realloc(x->strs, ncap);
		if (!p) {
			itp_mem_give(&c->mem, ncap - x->cap_strs);
			return -ENOMEM;
		}
		if (!x->cap_strs)
			p[x->nstrs++] = '\0'; /* offset 0: "" */
		x->strs = p;
		x->cap_strs = ncap;
	}
	*off = (uint32_t)x->nstrs;
	for (size_t i = 0; i < len; i++)
		x->strs[x->nstrs++] = s[i] ? (char)s[i] : '?';
	x->strs[x->nstrs++] = '\0';
	return 0;
}

/* get_str - a length-prefixed string of at most max bytes: 0, or -1 (a detail in *what). */
static int get_str(const uint8_t **p, const uint8_t *end, uint64_t max, const uint8_t **s,
		   uint64_t *len)
{
	if (wire_get_varint(p, end, len) || *len > max || *len > (uint64_t)(end - *p))
		return -1;
	*s = *p;
	*p += *len;
	return 0;
}

static int store_fail(struct itp_ctx *c, int rc)
{
	if (rc == -EDQUOT)
		return itp_fail(c, ITP_E_BUDGET,
				"the memory budget of %llu MiB is used up (by foreign frame names)",
				(unsigned long long)(c->mem.limit >> 20));
	if (rc == -E2BIG)
		return itp_fail(c, ITP_E_CORRUPT, "foreign frame names take more than 4 GiB");
	return itp_fail(c, ITP_E_NOMEM, "out of memory keeping foreign frames");
}

int itp_xframe_parse(struct itp_ctx *c, const uint8_t *p, const uint8_t *end)
{
	struct itp_xframes *x = &c->xf;
	const uint8_t *name, *file;
	uint64_t id, line, nlen, flen;
	uint32_t have;
	uint8_t lang, kind;
	int rc;

	if (wire_get_varint(&p, end, &id) || end - p < 2)
		return itp_fail(c, ITP_E_CORRUPT, "foreign frame record cut short");
	if (id > WIRE_XFRAME_ID_MAX)
		return itp_fail(c, ITP_E_CORRUPT, "foreign frame record: id %#" PRIx64 " out of range",
				id);
	lang = *p++;
	kind = *p++;
	if (wire_get_varint(&p, end, &line) || line > UINT32_MAX)
		return itp_fail(c, ITP_E_CORRUPT, "foreign frame record %" PRIu64 ": bad line", id);
	if (get_str(&p, end, WIRE_XFRAME_MAX_NAME, &name, &nlen))
		return itp_fail(c, ITP_E_CORRUPT,
				"foreign frame record %" PRIu64 ": name cut short or longer than %u bytes",
				id, WIRE_XFRAME_MAX_NAME);
	if (get_str(&p, end, WIRE_XFRAME_MAX_FILE, &file, &flen))
		return itp_fail(c, ITP_E_CORRUPT,
				"foreign frame record %" PRIu64 ": file cut short or longer than %u bytes",
				id, WIRE_XFRAME_MAX_FILE);
	/* bytes after the file: fields of a later revision, ignored */
	if (itp_map_get(&x->by_id, id, &have)) {
		x->redefs++;
		return 0;
	}
	if (x->n >= ITP_MAX_XFRAMES)
		return itp_fail(c, ITP_E_CORRUPT, "more than %u foreign frames defined",
				ITP_MAX_XFRAMES);
	if (x->n == x->cap) {
		size_t ncap = x->cap ? x->cap * 2 : 256;
		struct itp_xframe *v;

		if (itp_mem_take(&c->mem, (ncap - x->cap) * sizeof(*v)))
			return store_fail(c, -EDQUOT);
		v = realloc(x->v, ncap * sizeof(*v));
		if (!v) {
			itp_mem_give(&c->mem, (ncap - x->cap) * sizeof(*v));
			return store_fail(c, -ENOMEM);
		}
		x->v = v;
		x->cap = ncap;
	}
	x->v[x->n] = (struct itp_xframe){ .id = id, .line = (uint32_t)line, .lang = lang, .kind = kind };
	rc = arena_add(c, name, (size_t)nlen, &x->v[x->n].name);
	if (!rc)
		rc = arena_add(c, file, (size_t)flen, &x->v[x->n].file);
	if (!rc)
		rc = itp_map_put(&x->by_id, id, (uint32_t)x->n + 1);
	if (rc)
		return store_fail(c, rc);
	x->n++;
	return 0;
}

static const char *lang_word(unsigned lang)
{
	switch (lang) {
	case WIRE_LANG_PYTHON:
		return "python ";
	case WIRE_LANG_JAVA:
		return "java ";
	default:
		return "";
	}
}

int itp_xframe_chain(const struct itp_xframes *x, uint64_t ip, struct rec_sym *out, char buf[64],
		     unsigned *lang, unsigned *kind)
{
	uint64_t id = wire_xframe_id(ip);
	const struct itp_xframe *f = NULL;
	uint32_t i;

	if (itp_map_get(&x->by_id, id, &i))
		f = &x->v[i - 1];
	*lang = f ? f->lang : 0;
	*kind = f ? f->kind : 0;
	*out = (struct rec_sym){ 0 };
	if (f && f->name) {
		out->function = x->strs + f->name;
	} else {
		snprintf(buf, 64, "[%sframe #%" PRIu64 "]", lang_word(*lang), id);
		out->function = buf;
	}
	if (f) {
		out->file = f->file ? x->strs + f->file : NULL;
		out->line = f->line;
	}
	return f != NULL;
}

int itp_xframe_put(struct itp_ctx *c, uint32_t idx, uint64_t ip)
{
	struct rec_sym s;
	char buf[64];
	unsigned lang, kind;
	int rc;

	if (!itp_xframe_chain(&c->xf, ip, &s, buf, &lang, &kind))
		c->xf.undefined++;
	rc = rec_put_symbol(c->w, idx, REC_NONE, &s, 1);
	if (!rc)
		rc = rec_put_xframe(c->w, idx, lang, kind);
	return rc ? itp_out_fail(c, rc, "foreign frames") : 0;
}

void itp_xframes_free(struct itp_xframes *x)
{
	itp_map_free(&x->by_id);
	free(x->v);
	free(x->strs);
	*x = (struct itp_xframes){ 0 };
}
