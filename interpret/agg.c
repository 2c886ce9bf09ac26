/* interpret/agg.c - running heap totals per trace for periodic snapshots (attach --snapshot-every, top) */
/* SPDX-License-Identifier: MIT */
/*
 * Only when itp_options.snapshot is set. Nothing per event is kept: per
 * recording trace index the bytes and objects in use, allocated since
 * the last snapshot and freed as temporary since then (struct
 * itp_snap_trace), per allocation info its trace and size (a free finds
 * its info in the pointer map), per ip index its address. Memory grows with
 * distinct stacks and allocation infos, never with time. Every
 * snapshot_ns the read loop hands the callback a view (struct
 * itp_snapshot) and the "since the last snapshot" sums start again. With
 * snapshot_early a view holding addresses not named yet goes out twice:
 * first with the names known so far, then after the naming (snapsym.c).
 *
 * Objects of a sampled allocation are rec_weight_calls of its weight and
 * size (recfile/recfile.h): the estimate the report uses too.
 *
 * Calibration (sampled sessions; as report/calibrate.c does for a
 * recording): the exact counts per immediate call site (interpret/sites.c,
 * summed as WIRE_REC_SITES records come, about once a second) are
 * auxiliary information. Traces that never had a weighted allocation (full
 * tracing) are exact and left alone; samples at a site the counts do not
 * name join the counts' "other" entry (ip 0), or stay as sampled when there
 * is none. For a site with counts:
 *   - in use: the ratio estimate, each trace's values times the site's
 *     exact bytes (calls) over its samples' sums when those counts came
 *     (itp_agg_sites notes them), so the counts' lag does not bias it;
 *   - allocated since the last snapshot: the site's rate over the last
 *     round of counts (itp_sites_rate: the growth of its exact counts
 *     between the last two rounds over the library's time between them)
 *     times the time since the last snapshot, shared by the site's traces
 *     as their samples since then (as all their samples when none came).
 *     The counts come about once a second out of step with the snapshots
 *     and a sample stands for 512K of a site's allocations: the growth of
 *     the counts between two snapshots (one round, none or two) or the
 *     samples since the last counts would make the rates jump from zero to
 *     several times the real one. Before two rounds ended: the growth of
 *     the counts since the last snapshot, brought to now (the samples that
 *     came after the last counts are added at the ratio), or, before the
 *     first counts, the raw samples and the ratio.
 * A trace that had samples and then fully traced allocations (the rate was
 * changed to full tracing during the session) is calibrated for its
 * sampled part only; the exact part since the last snapshot is added as it
 * is (the site counts stop with sampling).
 * A site counted since the last snapshot but never sampled gets a trace of
 * its own (the site alone) with its calls and bytes allocated since then
 * (at its rate, as above) and nothing in use (not known).
 */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpret/internal.h"
#include "interpret/snap_internal.h"

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 1024;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	memset((char *)nv + *cap * elem, 0, (ncap - *cap) * elem);
	*v = nv;
	*cap = ncap;
	return 0;
}

int itp_agg_trace(struct itp_ctx *c, uint32_t idx, uint32_t parent, uint32_t ip)
{
	struct itp_agg *g = &c->agg;

	if (!c->opt->snapshot)
		return 0;
	if (grow((void **)&g->t, &g->cap_t, (size_t)idx + 1, sizeof(*g->t)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot traces");
	g->t[idx].parent = parent;
	g->t[idx].ip = ip;
	if (idx >= g->nt)
		g->nt = (size_t)idx + 1;
	return 0;
}

int itp_agg_ip(struct itp_ctx *c, uint32_t idx, uint64_t ip)
{
	struct itp_agg *g = &c->agg;

	if (!c->opt->snapshot)
		return 0;
	if (grow((void **)&g->ips, &g->cap_ips, (size_t)idx + 1, sizeof(*g->ips)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot ips");
	g->ips[idx] = ip;
	if (idx >= g->nips)
		g->nips = (size_t)idx + 1;
	return 0;
}

/* objects - rec_weight_calls as a signed count (bytes: the weight, or the size when unsampled) */
static int64_t objects(uint64_t size, uint64_t bytes)
{
	uint64_t n = rec_weight_calls(bytes, size);

	return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

int itp_agg_alloc(struct itp_ctx *c, uint32_t info, uint32_t trace, uint64_t size, uint64_t bytes,
		  int weighted)
{
	struct itp_agg *g = &c->agg;
	struct itp_snap_trace *t;
	int64_t n = objects(size, bytes);

	if (!c->opt->snapshot)
		return 0;
	if (grow((void **)&g->info, &g->cap_info, (size_t)info + 1, sizeof(*g->info)) ||
	    grow((void **)&g->t, &g->cap_t, (size_t)trace + 1, sizeof(*g->t)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot sums");
	g->info[info].trace = trace;
	g->info[info].size = size;
	if (trace >= g->nt)
		g->nt = (size_t)trace + 1;
	t = &g->t[trace];
	t->inuse_objects += n;
	t->inuse_bytes += (int64_t)bytes;
	t->alloc_objects += (uint64_t)n;
	t->alloc_bytes += bytes;
	if (weighted) {
		if (grow((void **)&g->cum, &g->cap_cum, (size_t)trace + 1, sizeof(*g->cum)))
			return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot sums");
		g->cum[trace].bytes += bytes;
		g->cum[trace].objects += (uint64_t)n;
	} else if (trace < g->cap_cum && g->cum[trace].bytes) {
		/* full tracing now, samples before: these are exact, not to be calibrated */
		if (grow((void **)&g->exact, &g->cap_exact, (size_t)trace + 1, sizeof(*g->exact)))
			return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot sums");
		g->exact[trace].bytes += bytes;
		g->exact[trace].objects += (uint64_t)n;
	}
	return 0;
}

void itp_agg_free(struct itp_ctx *c, uint32_t info, uint64_t bytes, int temp)
{
	struct itp_agg *g = &c->agg;
	struct itp_snap_trace *t;
	int64_t n;

	if (!c->opt->snapshot || info >= g->cap_info || g->info[info].trace >= g->nt)
		return;
	t = &g->t[g->info[info].trace];
	n = objects(g->info[info].size, bytes);
	t->inuse_objects -= n;
	t->inuse_bytes -= (int64_t)bytes;
	if (temp)
		t->temp_objects += (uint64_t)n;
}

/* A site's exact counts brought to the moment of a snapshot (see calibrate). */
struct est_sums {
	long double bytes, objects;
};

/* A view's traces and ips calibrated to the site counts (owned copies). */
struct calib {
	struct itp_snap_trace *t;
	size_t nt;
	uint64_t *ips;
	size_t nips;
	struct est_sums *est; /* per site index */
};

/* trace t's fully traced allocations since the last snapshot (none: zeros) */
static struct itp_agg_cum exact_of(const struct itp_agg *g, size_t t)
{
	return t < g->cap_exact ? g->exact[t] : (struct itp_agg_cum){ 0, 0 };
}

/* The site index of trace t's leaf, or other (UINT32_MAX: none). */
static uint32_t site_of(const struct itp_ctx *c, size_t t, uint32_t other)
{
	const struct itp_agg *g = &c->agg;
	uint32_t ip = g->t[t].ip, si;

	if (t == 0 || ip >= g->nips)
		return other;
	return itp_map_get(&c->sites.idx, g->ips[ip], &si) ? si : other;
}

static int64_t times(int64_t x, long double f)
{
	long double v = (long double)x * f;

	if (v >= 9.2e18L)
		return INT64_MAX;
	if (v <= -9.2e18L)
		return -INT64_MAX;
	return (int64_t)(v < 0 ? v - 0.5L : v + 0.5L);
}

/* sums - per site index, the sums of its traces' weighted allocations so far. */
static void sums(struct itp_ctx *c, long double *sb, long double *so, uint32_t other)
{
	struct itp_agg *g = &c->agg;
	uint32_t si;

	for (size_t t = 1; t < g->nt && t < g->cap_cum; t++) {
		if (!g->cum[t].bytes || (si = site_of(c, t, other)) == UINT32_MAX)
			continue;
		sb[si] += (long double)g->cum[t].bytes;
		so[si] += (long double)g->cum[t].objects;
	}
}

static uint32_t other_site(const struct itp_ctx *c)
{
	uint32_t other;

	return itp_map_get(&c->sites.idx, 0, &other) ? other : UINT32_MAX;
}

int itp_agg_sites(struct itp_ctx *c)
{
	struct itp_agg *g = &c->agg;
	const struct itp_sites *st = &c->sites;
	long double *sb, *so;

	if (!c->opt->snapshot || !st->n || !g->cum)
		return 0;
	if (grow((void **)&g->site_s, &g->cap_site_s, st->n, sizeof(*g->site_s)))
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot sums");
	sb = calloc(st->n, sizeof(*sb));
	so = calloc(st->n, sizeof(*so));
	if (!sb || !so) {
		free(sb);
		free(so);
		return itp_fail(c, ITP_E_NOMEM, "out of memory for snapshot sums");
	}
	sums(c, sb, so, other_site(c));
	for (size_t i = 0; i < st->n; i++) {
		g->site_s[i].bytes = (uint64_t)sb[i];
		g->site_s[i].objects = (uint64_t)so[i];
	}
	free(sb);
	free(so);
	return 0;
}

/* What a calibration works from, per site index. */
struct site_sums {
	long double *sb, *so;	/* its samples' sums so far (bytes, objects) */
	long double *db, *dob;	/* its samples' sums since the last snapshot */
	struct est_sums *est;	/* its exact counts brought to now */
	uint32_t other;		/* the counts' "other" site, UINT32_MAX: none */
	long double dt;		/* seconds since the last snapshot */
};

static void site_sums_free(struct site_sums *ss)
{
	free(ss->sb);
	free(ss->so);
	free(ss->db);
	free(ss->dob);
	free(ss->est);
}

/*
 * site_sums_fill - the samples' sums per site, so far and since the last
 * snapshot, and each site's exact counts brought to now: the counts came
 * with its samples' sums at that moment (site_s); the samples since then
 * are added at the ratio of the two. When the last counts came after every
 * sample (the end of a session) this is the counts themselves. 0 or
 * -ENOMEM.
 */
static int site_sums_fill(struct itp_ctx *c, struct site_sums *ss)
{
	const struct itp_agg *g = &c->agg;
	const struct itp_sites *st = &c->sites;
	uint32_t si;

	ss->other = other_site(c);
	ss->dt = c->st.elapsed_ns > g->last_ns ? (long double)(c->st.elapsed_ns - g->last_ns) / 1e9L
					       : 0;
	ss->sb = calloc(st->n, sizeof(*ss->sb));
	ss->so = calloc(st->n, sizeof(*ss->so));
	ss->db = calloc(st->n, sizeof(*ss->db));
	ss->dob = calloc(st->n, sizeof(*ss->dob));
	ss->est = calloc(st->n, sizeof(*ss->est));
	if (!ss->sb || !ss->so || !ss->db || !ss->dob || !ss->est)
		return -ENOMEM;
	sums(c, ss->sb, ss->so, ss->other);
	for (size_t t = 1; t < g->nt && t < g->cap_cum; t++) {
		if (!g->cum[t].bytes || (si = site_of(c, t, ss->other)) == UINT32_MAX)
			continue;
		ss->db[si] += (long double)(g->t[t].alloc_bytes - exact_of(g, t).bytes);
		ss->dob[si] += (long double)(g->t[t].alloc_objects - exact_of(g, t).objects);
	}
	for (size_t i = 0; i < st->n; i++) {
		long double at = i < g->cap_site_s ? (long double)g->site_s[i].bytes : 0;
		long double ato = i < g->cap_site_s ? (long double)g->site_s[i].objects : 0;

		ss->est[i].bytes = (long double)st->v[i].bytes;
		ss->est[i].objects = (long double)st->v[i].calls;
		if (at > 0 && ss->sb[i] > at)
			ss->est[i].bytes += (ss->sb[i] - at) * (long double)st->v[i].bytes / at;
		if (ato > 0 && ss->so[i] > ato)
			ss->est[i].objects += (ss->so[i] - ato) * (long double)st->v[i].calls / ato;
	}
	return 0;
}

/* calibrate_trace - trace t (its copy tr) of site si, which has samples (see the file header) */
static void calibrate_trace(const struct itp_ctx *c, const struct site_sums *ss, size_t t,
			    uint32_t si, struct itp_snap_trace *tr)
{
	const struct itp_agg *g = &c->agg;
	const struct itp_sites *st = &c->sites;
	struct itp_agg_cum ex = exact_of(g, t);
	long double fb, fo, rc, rb;

	/* the sampled part is calibrated, the fully traced part is added as it is */
	tr->alloc_bytes -= ex.bytes;
	tr->alloc_objects -= ex.objects;
	/* the samples' sums as they were when the counts came, if any then */
	if (si < g->cap_site_s && g->site_s[si].bytes) {
		fb = (long double)st->v[si].bytes / (long double)g->site_s[si].bytes;
		fo = g->site_s[si].objects ? (long double)st->v[si].calls /
						 (long double)g->site_s[si].objects
					   : 1;
	} else {
		fb = (long double)st->v[si].bytes / ss->sb[si];
		fo = ss->so[si] > 0 ? (long double)st->v[si].calls / ss->so[si] : 1;
	}
	tr->inuse_bytes = times(tr->inuse_bytes, fb);
	tr->inuse_objects = times(tr->inuse_objects, fo);
	if (!itp_sites_rate(st, si, &rc, &rb)) {
		/* the site's rate over the last round of counts, for the time since the last snapshot */
		long double wb = ss->db[si] > 0 ? (long double)tr->alloc_bytes / ss->db[si]
						: (long double)g->cum[t].bytes / ss->sb[si];
		long double wo = ss->dob[si] > 0 ? (long double)tr->alloc_objects / ss->dob[si]
			       : ss->so[si] > 0	 ? (long double)g->cum[t].objects / ss->so[si]
						 : 0;

		tr->alloc_bytes = (uint64_t)times(1, rb * ss->dt * wb) + ex.bytes;
		tr->alloc_objects = (uint64_t)times(1, rc * ss->dt * wo) + ex.objects;
		return;
	}
	if (si < g->nsite_last) {
		/*
		 * A site the last snapshot calibrated: what it allocated
		 * since then is the growth of its exact counts, brought
		 * to now (est_now), shared by its stacks as their samples
		 * since then (or, with none, as all their samples).
		 */
		long double eb = ss->est[si].bytes - (long double)g->site_last[si].bytes;
		long double ec = ss->est[si].objects - (long double)g->site_last[si].objects;
		long double wb = ss->db[si] > 0 ? (long double)tr->alloc_bytes / ss->db[si]
						: (long double)g->cum[t].bytes / ss->sb[si];
		long double wo = ss->dob[si] > 0 ? (long double)tr->alloc_objects / ss->dob[si]
			       : ss->so[si] > 0	 ? (long double)g->cum[t].objects / ss->so[si]
						 : 0;

		tr->alloc_bytes = (eb > 0 ? (uint64_t)times(1, eb * wb) : 0) + ex.bytes;
		tr->alloc_objects = (ec > 0 ? (uint64_t)times(1, ec * wo) : 0) + ex.objects;
		return;
	}
	tr->alloc_bytes = (uint64_t)times((int64_t)(tr->alloc_bytes > INT64_MAX ? INT64_MAX
									 : tr->alloc_bytes), fb) + ex.bytes;
	tr->alloc_objects = (uint64_t)times((int64_t)(tr->alloc_objects > INT64_MAX
							   ? INT64_MAX : tr->alloc_objects), fo) +
			    ex.objects;
}

/* a site never sampled that allocates (it gets a trace of its own): at a rate, else counted since the last snapshot */
static int unsampled(const struct itp_ctx *c, const struct site_sums *ss, size_t i)
{
	long double rc, rb;

	if (ss->sb[i] != 0)
		return 0;
	if (!itp_sites_rate(&c->sites, i, &rc, &rb))
		return rc > 0 || rb > 0;
	return c->sites.v[i].calls != c->agg.site_last[i].objects;
}

/*
 * calibrate - fill cal (see the file header); 0 with cal empty when there
 * is nothing to calibrate, -ENOMEM. The sites seen now become "the last
 * snapshot's" for the next one only when the caller says so (site_last_set).
 */
static int calibrate(struct itp_ctx *c, struct calib *cal)
{
	struct itp_agg *g = &c->agg;
	const struct itp_sites *st = &c->sites;
	struct site_sums ss = {0};
	long double rc, rb;
	uint32_t si;
	size_t t, i, nx = 0, x = 0;
	int ret = -ENOMEM;

	memset(cal, 0, sizeof(*cal));
	if (!st->n || !g->cum)
		return 0;
	if (grow((void **)&g->site_last, &g->cap_site_last, st->n, sizeof(*g->site_last)))
		return -ENOMEM;
	if (site_sums_fill(c, &ss))
		goto out;
	for (i = 0; i < st->n; i++)
		nx += unsampled(c, &ss, i);
	cal->t = malloc((g->nt + nx + 1) * sizeof(*cal->t));
	cal->ips = malloc((g->nips + nx + 1) * sizeof(*cal->ips));
	if (!cal->t || !cal->ips)
		goto out;
	memcpy(cal->t, g->t, g->nt * sizeof(*cal->t));
	memcpy(cal->ips, g->ips, g->nips * sizeof(*cal->ips));
	for (t = 1; t < g->nt && t < g->cap_cum; t++) {
		if (!g->cum[t].bytes || (si = site_of(c, t, ss.other)) == UINT32_MAX ||
		    ss.sb[si] <= 0)
			continue;
		calibrate_trace(c, &ss, t, si, &cal->t[t]);
	}
	for (i = 0; i < st->n; i++) {
		struct itp_snap_trace *tr;

		if (!unsampled(c, &ss, i))
			continue;
		tr = &cal->t[g->nt + x];
		memset(tr, 0, sizeof(*tr));
		tr->parent = 0;
		tr->ip = (uint32_t)(g->nips + x);
		if (!itp_sites_rate(st, i, &rc, &rb)) {
			tr->alloc_objects = (uint64_t)times(1, rc * ss.dt);
			tr->alloc_bytes = (uint64_t)times(1, rb * ss.dt);
		} else {
			tr->alloc_objects = st->v[i].calls - g->site_last[i].objects;
			tr->alloc_bytes = st->v[i].bytes - g->site_last[i].bytes;
		}
		cal->ips[g->nips + x] = st->v[i].ip;
		x++;
	}
	cal->nt = g->nt + nx;
	cal->nips = g->nips + nx;
	cal->est = ss.est;
	ss.est = NULL;
	ret = 0;
out:
	site_sums_free(&ss);
	if (ret) {
		free(cal->t);
		free(cal->ips);
		memset(cal, 0, sizeof(*cal));
	}
	return ret;
}

/* m's executable segment, widened to whole pages as the loader maps it (see itp_snap_module) */
static void text_segment(const struct itp_module *m, struct itp_snap_module *sm)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t page = ps > 0 ? (uint64_t)ps : 4096, lo, hi;
	const struct itp_seg *x = NULL;

	for (size_t i = 0; i < m->nseg; i++) {
		if (!(m->seg[i].flags & PF_X))
			continue;
		if (x)
			return; /* several: no one mapping stands for the module */
		x = &m->seg[i];
	}
	/* the parser checked that base + vaddr + memsz does not wrap */
	if (!x || !x->memsz)
		return;
	lo = (m->base + x->vaddr) & ~(page - 1);
	hi = m->base + x->vaddr + x->memsz;
	if (hi > UINT64_MAX - (page - 1))
		return;
	sm->text_lo = lo;
	sm->text_hi = (hi + page - 1) & ~(page - 1);
	sm->text_vaddr = x->vaddr & ~(page - 1);
}

void itp_agg_snapshot(struct itp_ctx *c, uint64_t now_ns)
{
	struct itp_agg *g = &c->agg;
	struct itp_snapshot s;
	struct itp_snap_module *mods = NULL;
	struct itp_snap_frames *frames = NULL;
	struct itp_snap_xframe *xframes = NULL;
	struct calib cal;
	size_t i, n = 0;

	if (!c->opt->snapshot || !c->have_header)
		return;
	/* modules loaded now (a removed one keeps its slot in c->mods with seq_del set) */
	if (c->mods.n)
		mods = calloc(c->mods.n, sizeof(*mods));
	for (i = 0; mods && i < c->mods.n; i++) {
		const struct itp_module *m = c->mods.v[i];

		if (m->seq_del != UINT64_MAX)
			continue;
		mods[n] = (struct itp_snap_module){ .path = m->path, .base = m->base, .lo = m->lo,
						     .hi = m->hi, .build_id = m->build_id,
						     .build_id_len = m->build_id_len };
		text_segment(m, &mods[n++]);
	}
	memset(&s, 0, sizeof(s));
	s.start_realtime_ns = c->hdr.start_realtime_ns;
	s.since_ns = g->last_ns;
	s.elapsed_ns = c->st.elapsed_ns;
	s.sample_bytes = c->hdr.sample_bytes;
	s.traces = g->t;
	s.ntraces = g->nt;
	s.ips = g->ips;
	s.nips = g->nips;
	s.mods = mods;
	s.nmods = n;
	/* out of memory for the calibrated copy: the raw estimates are still a profile */
	if (!calibrate(c, &cal) && cal.t) {
		s.traces = cal.t;
		s.ntraces = cal.nt;
		s.ips = cal.ips;
		s.nips = cal.nips;
		for (i = 0; i < c->sites.n; i++) {
			uint64_t eb = (uint64_t)(cal.est[i].bytes + 0.5L);
			uint64_t eo = (uint64_t)(cal.est[i].objects + 0.5L);

			/* an estimate that went too far last time is not counted twice */
			if (eb > g->site_last[i].bytes || i >= g->nsite_last)
				g->site_last[i].bytes = eb;
			if (eo > g->site_last[i].objects || i >= g->nsite_last)
				g->site_last[i].objects = eo;
		}
		g->nsite_last = c->sites.n;
	}
	/* new addresses to name: the figures first (snapshot_early), the names after */
	if (c->opt->snapshot_early &&
	    !itp_snapsym_view(c, s.ips, s.nips, 0, &frames, &xframes, &s.unnamed) && s.unnamed) {
		s.frames = frames;
		s.xframes = xframes;
		c->opt->snapshot(&s, c->opt->snapshot_arg);
	}
	free(frames); /* the marks are in the same allocation */
	s.unnamed = 0;
	/* out of memory for the names: the profile has addresses only */
	if (itp_snapsym_view(c, s.ips, s.nips, 1, &frames, &xframes, NULL)) {
		frames = NULL;
		xframes = NULL;
	}
	s.frames = frames;
	s.xframes = xframes;
	c->opt->snapshot(&s, c->opt->snapshot_arg);
	free(frames);
	free(cal.t);
	free(cal.ips);
	free(cal.est);
	free(mods);
	/* "allocated since the last snapshot" starts again */
	for (i = 0; i < g->nt; i++)
		g->t[i].alloc_objects = g->t[i].alloc_bytes = g->t[i].temp_objects = 0;
	if (g->exact)
		memset(g->exact, 0, g->cap_exact * sizeof(*g->exact));
	g->last_ns = s.elapsed_ns;
	(void)now_ns;
}

void itp_agg_free_all(struct itp_agg *g)
{
	free(g->t);
	free(g->ips);
	free(g->info);
	free(g->cum);
	free(g->site_last);
	free(g->site_s);
	free(g->exact);
	memset(g, 0, sizeof(*g));
}
