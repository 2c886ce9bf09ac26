/* report/diff.c - match the call sites of two recordings and sort what grew and what shrank */
/* SPDX-License-Identifier: MIT */
/*
 * A site's key says what it is, independent of where the module was loaded:
 *
 *   symbolized    "<module file name>|<function>@<file>:<line>|<outer>@..."
 *                 (one part per link of the symbol chain, inlined first)
 *   no symbol     "<module file name>|+0x<offset>"
 *   no module     "0x<ip>"      (only matches when nothing moved)
 *   foreign frame "[<lang>]|<function>@<file>:<line>" (its id is the
 *                 producer's, different in each process)
 *   empty stack   "(no stack)"
 *
 * Every site of both recordings goes into one array of (key, side, site),
 * sorted by key; equal keys merge into one struct rpt_diff_site. Sorting
 * once costs O(n log n) and needs no hash table.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/diff_internal.h"
#include "report/internal.h"

struct rpt_diff {
	const struct rpt_data *old, *new;
	enum rpt_diff_by by;
	struct rpt_diff_site *sites;
	size_t nsites;
	char **keys; /* owned, one per site */
	const struct rpt_diff_site **grew, **shrank;
	size_t ngrew, nshrank;
};

struct entry {
	char *key;
	int side; /* 0 = old, 1 = new */
	const struct rpt_data *d;
	const struct rpt_site *s;
};

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p;
}

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

/* the key of site s of d (malloc'd), NULL on failure */
static char *site_key(const struct rpt_data *d, const struct rpt_site *s)
{
	const struct rec_ip *ip;
	char *buf = NULL;
	size_t len = 0, steps = 0;
	uint32_t link;
	FILE *f;

	if (s->ip >= d->nips)
		return strdup("(no stack)");
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	ip = &d->ips[s->ip];
	if (ip->xframe) {
		fprintf(f, "[%s]", rpt_lang_name(ip->lang));
	} else if (ip->module >= d->nmodules) {
		fprintf(f, "0x%" PRIx64, ip->ip);
	} else {
		fputs(base_name(d->modules[ip->module].path), f);
		if (ip->frame >= d->nframes)
			fprintf(f, "|+0x%" PRIx64, ip->ip - d->modules[ip->module].base);
	}
	/* the reader bounds every link; steps bounds a cycle too */
	for (link = ip->frame; link < d->nframes && steps++ <= d->nframes; link = d->frames[link].outer) {
		const struct rec_frame *fr = &d->frames[link];

		fprintf(f, "|%s@%s:%u", rec_string(d->r, fr->function), rec_string(d->r, fr->file),
			fr->line);
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	return c ? c : x->side - y->side;
}

/* what the site is: the innermost link of its ip */
static void describe(struct rpt_diff_site *ds, const struct rpt_data *d, const struct rpt_site *s)
{
	const struct rec_ip *ip;

	if (ds->function || ds->module || s->ip >= d->nips)
		return;
	ip = &d->ips[s->ip];
	ds->xframe = ip->xframe;
	ds->lang = ip->lang;
	ds->xkind = ip->xkind;
	if (ip->module < d->nmodules && !ip->xframe) {
		ds->module = nonempty(d->modules[ip->module].path);
		ds->offset = ip->ip - d->modules[ip->module].base;
	}
	if (ip->frame < d->nframes) {
		ds->function = nonempty(rec_string(d->r, d->frames[ip->frame].function));
		ds->file = nonempty(rec_string(d->r, d->frames[ip->frame].file));
		ds->line = d->frames[ip->frame].line;
	}
}

static uint64_t field(const struct rpt_costs *c, enum rpt_diff_by by)
{
	switch (by) {
	case RPT_DIFF_CALLS:
		return c->calls;
	case RPT_DIFF_PEAK:
		return c->peak;
	case RPT_DIFF_LEAKED:
		return c->leaked;
	case RPT_DIFF_BYTES:
	case RPT_DIFF_BY_MAX:
		break;
	}
	return c->bytes;
}

/*
 * Largest change first: grew compares increases, shrank decreases. Ties:
 * the larger bytes change, then the key, so the order is stable.
 */
static int cmp_change(const void *a, const void *b, void *arg)
{
	const struct rpt_diff_site *x = *(const struct rpt_diff_site *const *)a;
	const struct rpt_diff_site *y = *(const struct rpt_diff_site *const *)b;
	enum rpt_diff_by by = *(const enum rpt_diff_by *)arg;
	uint64_t dx, dy;

	/* |change|: grew and shrank are sorted separately, so each is one sign */
	dx = field(&x->new, by) > field(&x->old, by) ? field(&x->new, by) - field(&x->old, by)
						      : field(&x->old, by) - field(&x->new, by);
	dy = field(&y->new, by) > field(&y->old, by) ? field(&y->new, by) - field(&y->old, by)
						      : field(&y->old, by) - field(&y->new, by);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	dx = x->new.bytes > x->old.bytes ? x->new.bytes - x->old.bytes : x->old.bytes - x->new.bytes;
	dy = y->new.bytes > y->old.bytes ? y->new.bytes - y->old.bytes : y->old.bytes - y->new.bytes;
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* sort the sites into grew and shrank; 0 or -ENOMEM */
static int classify(struct rpt_diff *df)
{
	size_t i;

	df->grew = calloc(df->nsites + 1, sizeof(*df->grew));
	df->shrank = calloc(df->nsites + 1, sizeof(*df->shrank));
	if (!df->grew || !df->shrank)
		return -ENOMEM;
	for (i = 0; i < df->nsites; i++) {
		const struct rpt_diff_site *s = &df->sites[i];
		uint64_t o = field(&s->old, df->by), n = field(&s->new, df->by);

		if (n > o)
			df->grew[df->ngrew++] = s;
		else if (n < o)
			df->shrank[df->nshrank++] = s;
	}
	qsort_r(df->grew, df->ngrew, sizeof(*df->grew), cmp_change, &df->by);
	qsort_r(df->shrank, df->nshrank, sizeof(*df->shrank), cmp_change, &df->by);
	return 0;
}

int rpt_diff_new(const struct rpt_data *old, const struct rpt_data *new, enum rpt_diff_by by,
		 struct rpt_diff **out)
{
	const struct rpt_data *side[2] = { old, new };
	struct rpt_diff *df = NULL;
	struct entry *e = NULL;
	size_t n = 0, i, k;
	int ret = -ENOMEM;

	*out = NULL;
	if (!old || !new || (unsigned)by >= RPT_DIFF_BY_MAX)
		return -EINVAL;
	df = calloc(1, sizeof(*df));
	e = calloc(old->nsites + new->nsites + 1, sizeof(*e));
	if (!df || !e)
		goto out_free;
	df->old = old;
	df->new = new;
	df->by = by;
	for (k = 0; k < 2; k++) {
		for (i = 0; i < side[k]->nsites; i++) {
			e[n] = (struct entry){ NULL, (int)k, side[k], &side[k]->sites[i] };
			e[n].key = site_key(side[k], e[n].s);
			if (!e[n].key)
				goto out_free;
			n++;
		}
	}
	qsort(e, n, sizeof(*e), cmp_entry);
	df->sites = calloc(n + 1, sizeof(*df->sites));
	df->keys = calloc(n + 1, sizeof(*df->keys));
	if (!df->sites || !df->keys)
		goto out_free;
	for (i = 0; i < n; i++) {
		struct rpt_diff_site *ds;

		if (df->nsites && !strcmp(df->sites[df->nsites - 1].key, e[i].key)) {
			ds = &df->sites[df->nsites - 1];
		} else {
			ds = &df->sites[df->nsites];
			df->keys[df->nsites++] = e[i].key;
			ds->key = e[i].key;
			e[i].key = NULL; /* now owned by df */
		}
		describe(ds, e[i].d, e[i].s);
		if (e[i].side) {
			ds->in_new = 1;
			rpt_costs_add(&ds->new, &e[i].s->cost);
		} else {
			ds->in_old = 1;
			rpt_costs_add(&ds->old, &e[i].s->cost);
		}
	}
	ret = classify(df);
	if (ret)
		goto out_free;
	*out = df;
	df = NULL;
out_free:
	for (i = 0; e && i < n; i++)
		free(e[i].key);
	free(e);
	rpt_diff_free(df);
	return ret;
}

void rpt_diff_free(struct rpt_diff *df)
{
	if (!df)
		return;
	for (size_t i = 0; df->keys && i < df->nsites; i++)
		free(df->keys[i]);
	free(df->keys);
	free(df->sites);
	free(df->grew);
	free(df->shrank);
	free(df);
}

const struct rpt_diff_site *const *rpt_diff_grew(const struct rpt_diff *df, size_t *n)
{
	*n = df->ngrew;
	return df->grew;
}

const struct rpt_diff_site *const *rpt_diff_shrank(const struct rpt_diff *df, size_t *n)
{
	*n = df->nshrank;
	return df->shrank;
}

/* diff_write.c needs the two analyses and the sort cost */
const struct rpt_data *rpt_diff_side(const struct rpt_diff *df, int which)
{
	return which ? df->new : df->old;
}

enum rpt_diff_by rpt_diff_sorted_by(const struct rpt_diff *df)
{
	return df->by;
}
