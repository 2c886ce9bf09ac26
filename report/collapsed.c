/* report/collapsed.c - rpt_write_collapsed: folded stacks for flamegraph.pl, inferno, speedscope */
/* SPDX-License-Identifier: MIT */
/*
 * One line per trace with a non-zero cost:
 *
 *   outermost;caller;...;allocating function COST\n
 *
 * The frames of one ip go outer to inner as well: the function the code was
 * inlined into first, the innermost inlined function last. A frame without a
 * function name is "module+0xoffset" (module's file name only), or "0xip"
 * without a module; the empty stack is "[no stack]". Inside a name, ';'
 * (the separator) becomes ':' and a newline a space. The readers merge
 * equal lines, so two traces that name the same functions may both appear.
 *
 * Foreign frames follow the flame-graph tools' conventions: a Java frame
 * gets the annotation flamegraph.pl --colors=java colours by, "_[i]" for
 * an inlined one and "_[j]" for every other (JIT-compiled, interpreted,
 * native: all Java, one colour); a Python frame is "name (file:line)" as
 * py-spy writes it; another language's frame is its name.
 *
 * The name of each ip is built once (on first use) and reused by every
 * trace that passes through it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

struct names {
	char **of_ip; /* per ip: "outer;...;inner" of its frames, built on first use */
	size_t nips;
};

/* Append s[0..n) to *buf; a name's ';' and newlines are replaced, sep (a ';') is kept. */
static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n, int sep, int *err)
{
	char *nb;

	if (*err)
		return;
	if (*cap - *len <= n) {
		size_t nc = (*cap ? *cap * 2 : 64) + n;

		nb = realloc(*buf, nc);
		if (!nb) {
			*err = -ENOMEM;
			return;
		}
		*buf = nb;
		*cap = nc;
	}
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!sep)
			c = c == ';' ? ':' : c == '\n' || c == '\r' ? ' ' : c;
		(*buf)[*len + i] = c;
	}
	*len += n;
	(*buf)[*len] = '\0';
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The folded name of a foreign frame (see the file's head); NULL on -ENOMEM. */
static char *xframe_name(const struct rpt_data *d, const struct rec_ip *ip)
{
	const struct rec_frame *fr = ip->frame < d->nframes ? &d->frames[ip->frame] : NULL;
	const char *fn = fr ? rec_string(d->r, fr->function) : "";
	const char *file = fr ? rec_string(d->r, fr->file) : "";
	size_t len = 0, cap = 0;
	char *buf = NULL, tmp[32];
	int err = 0;

	if (!fn[0])
		fn = "[unknown]";
	append(&buf, &len, &cap, fn, strlen(fn), 0, &err);
	if (ip->lang == WIRE_LANG_JAVA) {
		const char *k = rpt_xkind_name(ip->xkind);
		const char *a = k && !strcmp(k, "inlined") ? "_[i]" : "_[j]";

		append(&buf, &len, &cap, a, strlen(a), 0, &err);
	} else if (ip->lang == WIRE_LANG_PYTHON && file[0]) {
		append(&buf, &len, &cap, " (", 2, 0, &err);
		append(&buf, &len, &cap, file, strlen(file), 0, &err);
		if (fr->line)
			snprintf(tmp, sizeof(tmp), ":%u)", fr->line);
		else
			snprintf(tmp, sizeof(tmp), ")");
		append(&buf, &len, &cap, tmp, strlen(tmp), 0, &err);
	}
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The folded name of ip i (NULL on -ENOMEM). */
static const char *ip_name(struct names *nm, const struct rpt_data *d, uint32_t i)
{
	uint32_t links[64];
	size_t n = 0, len = 0, cap = 0;
	char *buf = NULL, tmp[64];
	int err = 0;

	if (nm->of_ip[i])
		return nm->of_ip[i];
	if (d->ips[i].xframe)
		return nm->of_ip[i] = xframe_name(d, &d->ips[i]);
	for (uint32_t k = d->ips[i].frame; k != REC_NONE && k < d->nframes && n < 64;
	     k = d->frames[k].outer)
		if (d->frames[k].function)
			links[n++] = d->frames[k].function;
	if (n == 0) {
		const struct rec_ip *ip = &d->ips[i];

		if (ip->module < d->nmodules && d->modules[ip->module].path &&
		    d->modules[ip->module].path[0]) {
			const char *m = base_name(d->modules[ip->module].path);

			append(&buf, &len, &cap, m, strlen(m), 0, &err);
			snprintf(tmp, sizeof(tmp), "+0x%" PRIx64, ip->ip - d->modules[ip->module].base);
		} else {
			snprintf(tmp, sizeof(tmp), "0x%" PRIx64, ip->ip);
		}
		append(&buf, &len, &cap, tmp, strlen(tmp), 0, &err);
	}
	/* the chain is innermost first: write it backwards */
	while (n--) {
		const char *s = rec_string(d->r, links[n]);

		append(&buf, &len, &cap, s, strlen(s), 0, &err);
		if (n)
			append(&buf, &len, &cap, ";", 1, 1, &err);
	}
	if (err) {
		free(buf);
		return NULL;
	}
	nm->of_ip[i] = buf;
	return buf;
}

static uint64_t fold_cost(const struct rpt_costs *k, enum rpt_fold_cost c)
{
	switch (c) {
	case RPT_FOLD_CALLS:
		return k->calls;
	case RPT_FOLD_BYTES:
		return k->bytes;
	case RPT_FOLD_PEAK:
		return k->peak;
	case RPT_FOLD_LEAKED:
		return k->leaked;
	case RPT_FOLD_TEMPORARY:
		return k->temporary;
	}
	return 0;
}

int rpt_write_collapsed(FILE *f, const struct rpt_data *d, enum rpt_fold_cost c)
{
	struct names nm = { .nips = d->nips };
	uint32_t *path = NULL;
	size_t cap = 0;
	int ret = -ENOMEM;

	nm.of_ip = calloc(d->nips + 1, sizeof(*nm.of_ip));
	if (!nm.of_ip)
		goto out;
	for (uint32_t t = 0; t < d->ntraces; t++) {
		uint64_t v = fold_cost(&d->trace_cost[t], c);
		size_t n = 0;

		if (!v)
			continue;
		/* collect the ips from the allocating frame outwards */
		for (uint32_t u = t; u != 0 && u < d->ntraces; u = d->traces[u].parent) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				uint32_t *np = realloc(path, nc * sizeof(*np));

				if (!np)
					goto out;
				path = np;
				cap = nc;
			}
			path[n++] = d->traces[u].ip;
		}
		if (n == 0)
			fputs("[no stack]", f);
		for (size_t k = n; k--;) {
			const char *s;

			if (path[k] < d->nips) {
				s = ip_name(&nm, d, path[k]);
				if (!s)
					goto out;
			} else {
				s = "[unknown]";
			}
			fputs(s, f);
			if (k)
				fputc(';', f);
		}
		fprintf(f, " %" PRIu64 "\n", v);
	}
	ret = fflush(f) || ferror(f) ? -EIO : 0;
out:
	if (nm.of_ip)
		for (size_t i = 0; i < d->nips; i++)
			free(nm.of_ip[i]);
	free(nm.of_ip);
	free(path);
	return ret;
}
