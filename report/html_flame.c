/* report/html_flame.c - the trace tree merged by function, pruned, for the HTML flame graph */
/* SPDX-License-Identifier: MIT */
/*
 * A trace node is one ip under its parent trace; the flame tree wants one
 * node per function under its caller's node. So each trace maps to a flame
 * node: starting at its parent trace's node, the ip's symbol chain is walked
 * from the real (outermost) function to the most inlined one, each link a
 * child found or made by (parent node, function). An ip without symbols is
 * one link named after its module ("[libfoo.so]"), or "[unknown]". A
 * foreign (Java, Python) frame is a node of its own language: it never
 * merges with a native function of the same name, and carries its
 * language for the page to colour.
 *
 * Finding a child: most nodes have a few children, and a node's parent was
 * usually made just before it, so each node keeps its children as a chain
 * (first child, next sibling) next to its key, and the chain is searched.
 * A node whose chain grows past CHAIN_MAX moves its children into a hash
 * map keyed by (parent, key) and is searched there from then on. (One hash
 * map for every child made each lookup a cache miss in a table of millions
 * of slots: 22% of the report's time on the deep bench workload.)
 *
 * Costs: the self costs of each trace (rpt_trace_costs) go to its node;
 * then, since a node's parent always has a lower index, one backward sweep
 * makes them inclusive. Pruning keeps a node when its parent is kept and
 * one of calls, bytes, peak or leaked is at least 1/K of the root's; K
 * starts at 1000 and halves until at most max_nodes are kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_internal.h"
#include "util/hash.h"

#define MAX_CHAIN 64
#define KEY_NOSYM (1ull << 32)	/* | module index: an ip without symbols */
#define KEY_UNKNOWN (2ull << 32) /* no module either */
#define KEY_ROOT (3ull << 32)	 /* the root's name */
#define KEY_XFRAME (1ull << 48)	 /* | lang << 40 | string: a foreign frame (its own colour) */
#define CHAIN_MAX 8		 /* children searched along a chain at most */
#define NONE UINT32_MAX		 /* no node */
#define HASHED (UINT32_MAX - 1)	 /* link.first: the children are in build.children */

/* Open-addressing map (parent, key) -> value; parent UINT32_MAX for the name map. */
struct slot {
	uint64_t key;
	uint32_t parent;
	uint32_t value; /* UINT32_MAX = empty */
};

struct map {
	struct slot *s;
	size_t cap, used; /* cap is a power of two */
};

static int map_grow(struct map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024, i;
	struct slot *s = malloc(cap * sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		s[i].value = UINT32_MAX;
	for (i = 0; i < m->cap; i++) {
		size_t h;

		if (m->s[i].value == UINT32_MAX)
			continue;
		h = util_fmix64(m->s[i].key ^ ((uint64_t)m->s[i].parent << 40)) & (cap - 1);
		while (s[h].value != UINT32_MAX)
			h = (h + 1) & (cap - 1);
		s[h] = m->s[i];
	}
	free(m->s);
	m->s = s;
	m->cap = cap;
	return 0;
}

/* The slot of (parent, key): found (value set) or the empty one to fill. NULL: no memory. */
static struct slot *map_find(struct map *m, uint32_t parent, uint64_t key)
{
	size_t h;

	if ((m->used + 1) * 2 > m->cap && map_grow(m) < 0)
		return NULL;
	h = util_fmix64(key ^ ((uint64_t)parent << 40)) & (m->cap - 1);
	while (m->s[h].value != UINT32_MAX) {
		if (m->s[h].key == key && m->s[h].parent == parent)
			return &m->s[h];
		h = (h + 1) & (m->cap - 1);
	}
	return &m->s[h];
}

/* Per node while building: its key and its children. */
struct link {
	uint64_t key;
	uint32_t first; /* first child, NONE, or HASHED */
	uint32_t next;	/* next sibling in the parent's chain, NONE at the end */
};

struct build {
	const struct rpt_data *d;
	struct html_flame *fl;
	struct link *links; /* per node; cap of them */
	size_t cap, names_cap;
	struct map children, names;
};

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The name index of key, made on first use. Returns UINT32_MAX when out of memory. */
static uint32_t name_of(struct build *b, uint64_t key)
{
	struct html_flame *fl = b->fl;
	struct slot *s = map_find(&b->names, UINT32_MAX, key);
	const char *text;
	char *copy;

	if (!s)
		return UINT32_MAX;
	if (s->value != UINT32_MAX)
		return s->value;
	if (key < KEY_NOSYM || (key & KEY_XFRAME)) {
		text = rec_string(b->d->r, (uint32_t)key);
		copy = strdup(text);
	} else if (key == KEY_UNKNOWN) {
		copy = strdup("[unknown]");
	} else if (key == KEY_ROOT) {
		copy = strdup("all");
	} else {
		text = basename_of(b->d->modules[(uint32_t)key].path);
		copy = malloc(strlen(text) + 3);
		if (copy)
			sprintf(copy, "[%s]", text);
	}
	if (!copy)
		return UINT32_MAX;
	if (fl->nnames == b->names_cap) {
		size_t cap = b->names_cap ? b->names_cap * 2 : 256;
		char **nn = realloc(fl->names, cap * sizeof(*nn));

		if (!nn) {
			free(copy);
			return UINT32_MAX;
		}
		fl->names = nn;
		b->names_cap = cap;
	}
	fl->names[fl->nnames] = copy;
	s->key = key;
	s->parent = UINT32_MAX;
	s->value = (uint32_t)fl->nnames++;
	b->names.used++;
	return s->value;
}

/* A new node under parent, named after key. Returns its index or NONE when out of memory. */
static uint32_t new_node(struct build *b, uint32_t parent, uint64_t key)
{
	struct html_flame *fl = b->fl;
	uint32_t name;

	name = name_of(b, key);
	if (name == UINT32_MAX)
		return NONE;
	/* node indices stay below HASHED */
	if (fl->n >= HASHED)
		return NONE;
	if (fl->n == b->cap) {
		size_t cap = b->cap * 2;
		struct html_flame_node *nn = realloc(fl->nodes, cap * sizeof(*nn));
		struct link *nl;

		if (!nn)
			return NONE;
		fl->nodes = nn;
		nl = realloc(b->links, cap * sizeof(*nl));
		if (!nl)
			return NONE;
		b->links = nl;
		b->cap = cap;
	}
	memset(&fl->nodes[fl->n], 0, sizeof(fl->nodes[0]));
	fl->nodes[fl->n].parent = parent;
	fl->nodes[fl->n].name = name;
	fl->nodes[fl->n].lang = key & KEY_XFRAME ? (uint8_t)(key >> 40) : 0;
	fl->nodes[fl->n].xframe = !!(key & KEY_XFRAME);
	b->links[fl->n].key = key;
	b->links[fl->n].first = NONE;
	b->links[fl->n].next = NONE;
	return (uint32_t)fl->n++;
}

/* Move the children of parent from its chain into the hash map. Returns 0 or -ENOMEM. */
static int to_map(struct build *b, uint32_t parent)
{
	uint32_t c;

	for (c = b->links[parent].first; c != NONE; c = b->links[c].next) {
		struct slot *s = map_find(&b->children, parent, b->links[c].key);

		if (!s)
			return -ENOMEM;
		s->key = b->links[c].key;
		s->parent = parent;
		s->value = c;
		b->children.used++;
	}
	b->links[parent].first = HASHED;
	return 0;
}

/* The child of parent named key, made on first use. Returns UINT32_MAX when out of memory. */
static uint32_t child_of(struct build *b, uint32_t parent, uint64_t key)
{
	struct slot *s = NULL;
	uint32_t c, v;
	size_t len = 0;

	if (b->links[parent].first != HASHED) {
		for (c = b->links[parent].first; c != NONE; c = b->links[c].next, len++)
			if (b->links[c].key == key)
				return c;
		if (len >= CHAIN_MAX && to_map(b, parent) < 0)
			return UINT32_MAX;
	}
	if (b->links[parent].first == HASHED) {
		s = map_find(&b->children, parent, key);
		if (!s)
			return UINT32_MAX;
		if (s->value != UINT32_MAX)
			return s->value;
	}
	v = new_node(b, parent, key);
	if (v == NONE)
		return UINT32_MAX;
	if (s) {
		/* new_node() touches the names map only: s is still the slot */
		s->key = key;
		s->parent = parent;
		s->value = v;
		b->children.used++;
	} else {
		b->links[v].next = b->links[parent].first;
		b->links[parent].first = v;
	}
	return v;
}

/* The flame node of trace t under node at (its parent trace's node). */
static uint32_t trace_node(struct build *b, uint32_t t, uint32_t at)
{
	const struct rpt_data *d = b->d;
	uint32_t ipi = d->traces[t].ip, link;
	uint64_t keys[MAX_CHAIN], nosym;
	size_t n = 0;

	if (ipi >= d->nips)
		return child_of(b, at, KEY_UNKNOWN);
	link = d->ips[ipi].frame;
	/* string 0 is "": no function name, so the module names it */
	nosym = d->ips[ipi].module < d->nmodules ? KEY_NOSYM | d->ips[ipi].module : KEY_UNKNOWN;
	/* innermost first; the reader bounds every link, n bounds a cycle */
	while (link < d->nframes && n < MAX_CHAIN) {
		keys[n++] = d->frames[link].function ? d->frames[link].function : nosym;
		link = d->frames[link].outer;
	}
	if (d->ips[ipi].xframe && n == 1 && keys[0] < KEY_NOSYM)
		keys[0] |= KEY_XFRAME | (uint64_t)d->ips[ipi].lang << 40; /* not merged with native code */
	if (!n)
		keys[n++] = nosym;
	while (n-- && at != UINT32_MAX)
		at = child_of(b, at, keys[n]);
	return at;
}

static void add(struct html_flame_node *to, const struct html_flame_node *from)
{
	to->calls += from->calls;
	to->bytes += from->bytes;
	to->peak += from->peak;
	to->leaked += from->leaked;
}

/* 1 if node v reaches 1/k of the root in some cost */
static int big(const struct html_flame_node *v, const struct html_flame_node *root, uint64_t k)
{
	return (v->calls && v->calls >= root->calls / k) || (v->bytes && v->bytes >= root->bytes / k) ||
	       (v->peak && v->peak >= root->peak / k) || (v->leaked && v->leaked >= root->leaked / k);
}

/* Keep the nodes that pass at k; returns how many. */
static size_t mark(const struct html_flame *fl, uint64_t k, uint32_t *keep)
{
	size_t i, n = 1;

	keep[0] = 0;
	for (i = 1; i < fl->n; i++) {
		const struct html_flame_node *v = &fl->nodes[i];

		keep[i] = UINT32_MAX;
		if (keep[v->parent] != UINT32_MAX && big(v, &fl->nodes[0], k))
			keep[i] = (uint32_t)n++;
	}
	return n;
}

/* Drop the names no kept node uses. */
static int compact_names(struct html_flame *fl)
{
	uint32_t *to = malloc((fl->nnames + 1) * sizeof(*to));
	size_t i, n = 0;

	if (!to)
		return -ENOMEM;
	for (i = 0; i < fl->nnames; i++)
		to[i] = UINT32_MAX;
	for (i = 0; i < fl->n; i++)
		to[fl->nodes[i].name] = 0;
	for (i = 0; i < fl->nnames; i++) {
		if (to[i] == UINT32_MAX) {
			free(fl->names[i]);
			continue;
		}
		to[i] = (uint32_t)n;
		fl->names[n++] = fl->names[i];
	}
	for (i = 0; i < fl->n; i++)
		fl->nodes[i].name = to[fl->nodes[i].name];
	fl->nnames = n;
	free(to);
	return 0;
}

static int prune(struct html_flame *fl, size_t max_nodes)
{
	uint32_t *keep = malloc(fl->n * sizeof(*keep));
	uint64_t k = 1000;
	size_t i, n;

	if (!keep)
		return -ENOMEM;
	while ((n = mark(fl, k, keep)) > max_nodes && k > 1)
		k /= 2;
	/* keep[i] < i for a kept node: compact in place, parents first */
	for (i = 1; i < fl->n; i++) {
		if (keep[i] == UINT32_MAX)
			continue;
		fl->nodes[keep[i]] = fl->nodes[i];
		fl->nodes[keep[i]].parent = keep[fl->nodes[i].parent];
	}
	fl->n = n;
	free(keep);
	return compact_names(fl);
}

int html_flame_build(const struct rpt_data *d, size_t max_nodes, struct html_flame *fl)
{
	/* about one node per trace: room for that from the start */
	struct build b = { .d = d, .fl = fl, .cap = d->ntraces < 1024 ? 1024 : d->ntraces + 1 };
	uint32_t *tnode = NULL;
	size_t t, i, ncosted;
	int ret = -ENOMEM;

	memset(fl, 0, sizeof(*fl));
	fl->nodes = malloc(b.cap * sizeof(*fl->nodes));
	b.links = malloc(b.cap * sizeof(*b.links));
	tnode = malloc((d->ntraces + 1) * sizeof(*tnode));
	if (!fl->nodes || !b.links || !tnode || !max_nodes)
		goto out;
	/* their page faults cost more than the work on them (deep: 384 k nodes) */
	rpt_want_huge_pages(fl->nodes, b.cap * sizeof(*fl->nodes));
	rpt_want_huge_pages(b.links, b.cap * sizeof(*b.links));
	/* the root */
	if (new_node(&b, 0, KEY_ROOT) != 0)
		goto out;
	tnode[0] = 0;
	for (t = 1; t < d->ntraces; t++) {
		uint32_t parent = d->traces[t].parent;

		tnode[t] = trace_node(&b, (uint32_t)t, parent < t ? tnode[parent] : 0);
		if (tnode[t] == UINT32_MAX)
			goto out;
	}
	/*
	 * Self costs: only the traces of the call sites (rpt_sites_build), which
	 * are every trace with a cost; most traces are inner nodes without one,
	 * and reading all of trace_cost took longer than the rest of this loop.
	 */
	ncosted = d->nsites ? d->site_first[d->nsites] : 0;
	for (i = 0; i < ncosted; i++) {
		uint32_t tr = d->site_traces[i];
		const struct rpt_costs *c = &d->trace_cost[tr];
		struct html_flame_node *v;

		if (tr >= d->ntraces)
			continue;
		v = &fl->nodes[tnode[tr]];
		v->calls += c->calls;
		v->bytes += c->bytes;
		v->peak += c->peak;
		v->leaked += c->leaked;
	}
	for (i = fl->n; i-- > 1;)
		add(&fl->nodes[fl->nodes[i].parent], &fl->nodes[i]);
	ret = prune(fl, max_nodes);
out:
	free(tnode);
	free(b.links);
	free(b.children.s);
	free(b.names.s);
	if (ret < 0)
		html_flame_free(fl);
	return ret;
}

void html_flame_free(struct html_flame *fl)
{
	size_t i;

	for (i = 0; i < fl->nnames; i++)
		free(fl->names[i]);
	free(fl->names);
	free(fl->nodes);
	memset(fl, 0, sizeof(*fl));
}
