/* cli/top_syms.c - heaptap top's screen names: each address's cleaned text, kept once drawn */
/* SPDX-License-Identifier: MIT */
/*
 * The frame carries what the interpreter named each address (top_frame_sym);
 * the screen (top_loop.c, top_view.c) asks top_sym for an ip's cleaned
 * function, file:line or module+offset, kept in an open-addressing table
 * until it grows past SYM_MAX, then started over. A frame whose names came
 * after its figures empties the table (top_loop.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top.h"
#include "report/report.h"
#include "track/wire.h"

#define SYM_MAX (1u << 16) /* symbols kept; the cache starts over past it */

static size_t sym_slot(uint64_t ip, size_t cap)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* what the frame's snapshot named ip, into s (cleaned): function, file:line or module+offset */
static void resolve(struct top_ui *u, uint64_t ip, struct top_sym *s)
{
	const struct top_mod *m = top_module_of(u->f, ip);
	const struct top_fsym *fs = top_frame_sym(u->f, ip);
	char file[300], mod[200];

	s->ip = ip;
	top_clean(s->func, sizeof(s->func), fs && fs->function ? fs->function : "", SIZE_MAX);
	if (fs && fs->file) {
		top_clean(file, sizeof(file), fs->file, SIZE_MAX);
		if (fs->line) {
			snprintf(s->where, sizeof(s->where), "%.280s:%u", file, fs->line);
			snprintf(s->base, sizeof(s->base), "%.100s:%u", base_name(file), fs->line);
		} else {
			snprintf(s->where, sizeof(s->where), "%.290s", file);
			snprintf(s->base, sizeof(s->base), "%.110s", base_name(file));
		}
	} else if (m && !(fs && fs->xframe)) {
		top_clean(mod, sizeof(mod), m->path, strlen(m->path));
		snprintf(s->where, sizeof(s->where), "%.180s+0x%" PRIx64, mod, ip - m->base);
		snprintf(s->base, sizeof(s->base), "%.90s+0x%" PRIx64, base_name(mod),
			 ip - m->base);
	} else if (!(fs && fs->xframe)) {
		snprintf(s->where, sizeof(s->where), "0x%" PRIx64, ip);
		snprintf(s->base, sizeof(s->base), "0x%" PRIx64, ip);
	}
	if (fs && fs->xframe) {
		/* a Java or Python frame: marked after where it is, "views.py:142 [python]" */
		const char *k = rpt_xkind_name(fs->xkind);
		char mark[40];
		size_t w = strlen(s->where), b = strlen(s->base);

		snprintf(mark, sizeof(mark), "[%s%s%s]", rpt_lang_name(fs->lang), k ? ", " : "",
			 k ? k : "");
		snprintf(s->where + w, sizeof(s->where) - w, "%s%s", w ? " " : "", mark);
		snprintf(s->base + b, sizeof(s->base) - b, "%s%s", b ? " " : "", mark);
	}
}

const struct top_sym *top_sym(struct top_ui *u, uint64_t ip)
{
	static struct top_sym none;
	size_t i;

	if (!u->cap_syms || (u->nsyms + 1) * 2 > u->cap_syms) {
		size_t ncap = u->cap_syms ? u->cap_syms * 2 : 256;
		struct top_sym *v;

		if (ncap > SYM_MAX * 2) {
			/* start over rather than grow without end */
			memset(u->syms, 0, u->cap_syms * sizeof(*u->syms));
			u->nsyms = 0;
		} else if ((v = calloc(ncap, sizeof(*v)))) {
			for (i = 0; i < u->cap_syms; i++)
				if (u->syms[i].ip) {
					size_t k = sym_slot(u->syms[i].ip, ncap);

					while (v[k].ip)
						k = (k + 1) & (ncap - 1);
					v[k] = u->syms[i];
				}
			free(u->syms);
			u->syms = v;
			u->cap_syms = ncap;
		}
	}
	if (!u->cap_syms) {
		resolve(u, ip, &none); /* out of memory: no cache */
		return &none;
	}
	for (i = sym_slot(ip, u->cap_syms); u->syms[i].ip; i = (i + 1) & (u->cap_syms - 1)) {
		if (u->syms[i].ip == ip) {
			/* a foreign frame's definition may have come since: named again */
			if (wire_is_xframe(ip))
				resolve(u, ip, &u->syms[i]);
			return &u->syms[i];
		}
	}
	resolve(u, ip, &u->syms[i]);
	u->nsyms++;
	return &u->syms[i];
}
