/* cli/top_model.c - heaptap top's model: snapshots folded per call site, status, history */
/* SPDX-License-Identifier: MIT */
/*
 * The session thread calls the hooks here (top_model_options installs
 * them): the interpreter's status (every 250 ms), its log messages, and a
 * snapshot every second (interpret/agg.c). A snapshot's stacks are folded
 * into one row per call site, the innermost frame of a stack: sums of
 * the bytes and blocks not freed now, rates over the snapshot's interval of
 * bytes, calls and temporary allocations, the change of "not freed" since
 * the previous frame, and the stack holding most of it. A snapshot with
 * call sites not named yet comes twice (itp_options.snapshot_early): its
 * figures at once, then the same with the names. The frame is
 * published under the lock; the screen takes it (top_model_take) or, when
 * it did not (paused), the next one replaces it. Each frame also adds a
 * point of heap and RSS to the history the sparklines draw.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cli/top.h"
#include "report/report.h"
#include "track/wire.h"
#include "util/procread.h"

void top_model_init(struct top_model *m, pid_t pid, uint64_t sample)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	m->pid = pid;
	m->sample = sample;
	m->sample_asked = sample ? sample : TOP_DEFAULT_SAMPLE;
	m->conn = -1;
	/* without it the screen still looks every KEY_WAIT_MS */
	m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void top_model_destroy(struct top_model *m)
{
	if (m->wake_fd >= 0)
		close(m->wake_fd);
	m->wake_fd = -1;
	top_frame_free(m->frame);
	m->frame = NULL;
	free(m->prev);
	m->prev = NULL;
	pthread_mutex_destroy(&m->lock);
}

void top_frame_free(struct top_frame *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nmods; i++) {
		free(f->mods[i].path);
		free(f->mods[i].build_id);
	}
	free(f->mods);
	for (size_t i = 0; i < f->nsyms; i++) {
		free(f->syms[i].function);
		free(f->syms[i].file);
	}
	free(f->syms);
	free(f->rows);
	free(f);
}

char *top_clean(char *dst, size_t len, const char *src, size_t n)
{
	if (len)
		rpt_escape(dst, len, src, strnlen(src, n));
	return dst;
}

/* A trace with something to show, and the call site it belongs to. */
struct leaf {
	uint64_t ip;
	size_t t;
};

static int leaf_cmp(const void *a, const void *b)
{
	const struct leaf *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static const struct top_prev *prev_find(const struct top_prev *p, size_t n, uint64_t ip)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].ip == ip)
			return &p[mid];
		if (p[mid].ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* the stack of trace t, innermost first, into r */
static void take_stack(const struct itp_snapshot *s, size_t t, struct top_row *r)
{
	size_t k = t;

	r->nstack = 0;
	while (k && k < s->ntraces && r->nstack < TOP_STACK_MAX) {
		uint32_t ip = s->traces[k].ip;

		if (ip < s->nips)
			r->stack[r->nstack++] = s->ips[ip];
		if (s->traces[k].parent >= k)
			break; /* parents are older: anything else is corrupt */
		k = s->traces[k].parent;
	}
}

static int copy_mods(const struct itp_snapshot *s, struct top_frame *f)
{
	f->mods = calloc(s->nmods + 1, sizeof(*f->mods));
	if (!f->mods)
		return -ENOMEM;
	for (size_t i = 0; i < s->nmods; i++) {
		const struct itp_snap_module *sm = &s->mods[i];
		struct top_mod *m = &f->mods[f->nmods];

		m->path = strdup(sm->path ? sm->path : "");
		if (!m->path)
			return -ENOMEM;
		f->nmods++;
		m->base = sm->base;
		m->lo = sm->lo;
		m->hi = sm->hi;
		if (sm->build_id_len) {
			m->build_id = malloc(sm->build_id_len);
			if (!m->build_id)
				return -ENOMEM;
			memcpy(m->build_id, sm->build_id, sm->build_id_len);
			m->build_id_len = sm->build_id_len;
		}
	}
	return 0;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct top_fsym *x = a, *y = b;

	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* add ip index i's name (if s named it and f has none for it yet) to f->syms; 0 or -ENOMEM */
static int add_sym(const struct itp_snapshot *s, uint32_t i, struct top_frame *f, size_t *cap)
{
	const struct itp_snap_frames *fr;
	struct top_fsym *e;

	if (!s->frames || i >= s->nips || !s->frames[i].n)
		return 0;
	fr = &s->frames[i];
	if (f->nsyms == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct top_fsym *v = realloc(f->syms, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->syms = v;
		*cap = ncap;
	}
	e = &f->syms[f->nsyms];
	e->ip = s->ips[i];
	e->line = fr->v[0].line;
	e->xframe = s->xframes ? s->xframes[i].xframe : 0;
	e->lang = s->xframes ? s->xframes[i].lang : 0;
	e->xkind = s->xframes ? s->xframes[i].xkind : 0;
	e->function = fr->v[0].function ? strdup(fr->v[0].function) : NULL;
	e->file = fr->v[0].file ? strdup(fr->v[0].file) : NULL;
	f->nsyms++;
	if ((fr->v[0].function && !e->function) || (fr->v[0].file && !e->file))
		return -ENOMEM;
	return 0;
}

/* the names of every ip the rows and their stacks show, sorted by ip, once each */
static int copy_syms(const struct itp_snapshot *s, const struct leaf *v, size_t n,
		     struct top_frame *f)
{
	uint8_t *seen;
	size_t cap = 0, w = 0;
	int rc = 0;

	if (!s->frames)
		return 0;
	seen = calloc(s->nips + 1, 1);
	if (!seen)
		return -ENOMEM;
	/* every frame of the stacks through the call sites shown (not only the heaviest) */
	for (size_t i = 0; i < n && !rc; i++) {
		size_t k = v[i].t;

		for (unsigned d = 0; k && k < s->ntraces && d < TOP_STACK_MAX && !rc; d++) {
			uint32_t ip = s->traces[k].ip;

			if (ip < s->nips && !seen[ip]) {
				seen[ip] = 1;
				rc = add_sym(s, ip, f, &cap);
			}
			if (s->traces[k].parent >= k)
				break;
			k = s->traces[k].parent;
		}
	}
	free(seen);
	qsort(f->syms, f->nsyms, sizeof(*f->syms), fsym_cmp);
	/* two ip indices of one address (cannot happen in a sane session): keep one */
	for (size_t i = 0; i < f->nsyms; i++) {
		if (w && f->syms[w - 1].ip == f->syms[i].ip) {
			free(f->syms[i].function);
			free(f->syms[i].file);
			continue;
		}
		f->syms[w++] = f->syms[i];
	}
	f->nsyms = w;
	return rc;
}

const struct top_fsym *top_frame_sym(const struct top_frame *f, uint64_t ip)
{
	size_t lo = 0, hi = f ? f->nsyms : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].ip == ip)
			return &f->syms[mid];
		if (f->syms[mid].ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* fold the traces of one call site, leaves [i, j) of v, into r */
static void fold_site(const struct itp_snapshot *s, const struct leaf *v, size_t i, size_t j,
		      double dt, struct top_row *r)
{
	int64_t best_live = INT64_MIN;
	uint64_t best_alloc = 0, calls = 0, bytes = 0, temp = 0;
	size_t best = v[i].t;

	memset(r, 0, sizeof(*r));
	r->ip = v[i].ip;
	for (size_t k = i; k < j; k++) {
		const struct itp_snap_trace *tr = &s->traces[v[k].t];

		r->live_bytes += tr->inuse_bytes;
		r->live_objects += tr->inuse_objects;
		calls += tr->alloc_objects;
		bytes += tr->alloc_bytes;
		temp += tr->temp_objects;
		if (tr->inuse_bytes > best_live ||
		    (tr->inuse_bytes == best_live && tr->alloc_bytes > best_alloc)) {
			best_live = tr->inuse_bytes;
			best_alloc = tr->alloc_bytes;
			best = v[k].t;
		}
	}
	/* estimates of a sampled session may dip below zero */
	if (r->live_bytes < 0)
		r->live_bytes = 0;
	if (r->live_objects < 0)
		r->live_objects = 0;
	r->calls_ps = (double)calls / dt;
	r->bytes_ps = (double)bytes / dt;
	r->temp_ps = (double)temp / dt;
	take_stack(s, best, r);
}

/* r's rates over dt seconds brought to a window of w > dt seconds: the time before at p's rates */
static void widen(struct top_row *r, const struct top_prev *p, double dt, double w)
{
	r->calls_ps = (r->calls_ps * dt + (p ? p->calls_ps : 0) * (w - dt)) / w;
	r->bytes_ps = (r->bytes_ps * dt + (p ? p->bytes_ps : 0) * (w - dt)) / w;
	r->temp_ps = (r->temp_ps * dt + (p ? p->temp_ps : 0) * (w - dt)) / w;
}

struct top_frame *top_model_fold(const struct itp_snapshot *s, const struct top_prev *prev,
				 size_t nprev, double window_s)
{
	struct top_frame *f = calloc(1, sizeof(*f));
	struct leaf *v = NULL;
	size_t n = 0, i, j;
	double dt, w;

	if (!f)
		return NULL;
	f->elapsed_ns = s->elapsed_ns;
	dt = s->elapsed_ns > s->since_ns ? (double)(s->elapsed_ns - s->since_ns) / 1e9 : 0;
	if (dt < 0.01)
		dt = 0.01; /* the first or the last snapshot may come at once */
	/* a short snapshot (the last one) over the window of the others, not its own few ms */
	w = prev && window_s > dt ? window_s : dt;
	f->interval_s = w;
	if (s->ntraces)
		v = malloc(s->ntraces * sizeof(*v));
	if (s->ntraces && !v)
		goto fail;
	for (i = 1; i < s->ntraces; i++) {
		const struct itp_snap_trace *tr = &s->traces[i];

		if (!tr->alloc_objects && tr->inuse_bytes <= 0 && !tr->temp_objects)
			continue;
		v[n].ip = tr->ip < s->nips ? s->ips[tr->ip] : 0;
		v[n++].t = i;
	}
	qsort(v, n, sizeof(*v), leaf_cmp);
	f->rows = calloc(n + 1, sizeof(*f->rows));
	if (!f->rows)
		goto fail;
	for (i = 0; i < n; i = j) {
		struct top_row *r = &f->rows[f->nrows++];
		const struct top_prev *p;

		for (j = i + 1; j < n && v[j].ip == v[i].ip;)
			j++;
		fold_site(s, v, i, j, dt, r);
		f->calls_ps += r->calls_ps;
		f->bytes_ps += r->bytes_ps;
		p = prev ? prev_find(prev, nprev, r->ip) : NULL;
		if (w > dt)
			widen(r, p, dt, w);
		r->change = !prev ? 0 : p ? r->live_bytes - p->live : r->live_bytes;
	}
	if (w > dt) {
		/* the totals, with the sites that allocated before this snapshot and not in it */
		double pc = 0, pb = 0;

		for (i = 0; i < nprev; i++) {
			pc += prev[i].calls_ps;
			pb += prev[i].bytes_ps;
		}
		f->calls_ps = (f->calls_ps * dt + pc * (w - dt)) / w;
		f->bytes_ps = (f->bytes_ps * dt + pb * (w - dt)) / w;
	}
	if (copy_syms(s, v, n, f) < 0)
		goto fail;
	free(v);
	v = NULL;
	if (copy_mods(s, f) < 0)
		goto fail;
	return f;
fail:
	free(v);
	top_frame_free(f);
	return NULL;
}

const struct top_mod *top_module_of(const struct top_frame *f, uint64_t ip)
{
	for (size_t i = 0; f && i < f->nmods; i++)
		if (ip >= f->mods[i].lo && ip < f->mods[i].hi)
			return &f->mods[i];
	return NULL;
}

/* the target's resident set now (/proc/PID/statm), 0 when it cannot be read */
static uint64_t proc_rss(pid_t pid)
{
	char buf[128];
	unsigned long long size, res;
	int err = util_proc_read(pid, "statm", buf, sizeof(buf), NULL);

	if ((err && err != -EFBIG) || sscanf(buf, "%llu %llu", &size, &res) != 2)
		return 0;
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void hist_push(struct top_hist *h, uint64_t heap, uint64_t rss)
{
	h->heap[h->head] = heap;
	h->rss[h->head] = rss;
	h->head = (h->head + 1) % TOP_HIST;
	if (h->n < TOP_HIST)
		h->n++;
}

size_t top_hist_get(const struct top_hist *h, uint64_t *heap, uint64_t *rss)
{
	size_t first = (h->head + TOP_HIST - h->n) % TOP_HIST;

	for (size_t i = 0; i < h->n; i++) {
		heap[i] = h->heap[(first + i) % TOP_HIST];
		rss[i] = h->rss[(first + i) % TOP_HIST];
	}
	return h->n;
}

void top_sparkline(const uint64_t *v, size_t count, char *buf, size_t len, size_t cells, int utf8)
{
	static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
					     "\u2585", "\u2586", "\u2587", "\u2588"};
	static const char ascii[] = "_.-:=+*#";
	uint64_t max = 0, lo = UINT64_MAX;
	size_t per, o = 0;

	if (len)
		buf[0] = '\0';
	if (!count || !cells || !len)
		return;
	per = (count + cells - 1) / cells;
	for (size_t i = 0; i < count; i++) {
		if (v[i] > max)
			max = v[i];
		if (v[i] < lo)
			lo = v[i];
	}
	for (size_t i = 0; i < count; i += per) {
		uint64_t top = 0;
		unsigned level = 0;
		const char *c;
		char one[2];
		size_t cl;

		for (size_t k = i; k < i + per && k < count; k++)
			if (v[k] > top)
				top = v[k];
		/* scaled between the lowest and the highest point: a flat line stays low */
		if (max > lo)
			level =
			    (unsigned)((long double)(top - lo) * 7.0L / (long double)(max - lo) +
				       0.5L);
		if (utf8) {
			c = blocks[level];
		} else {
			one[0] = ascii[level];
			one[1] = '\0';
			c = one;
		}
		cl = strlen(c);
		if (cl >= len - o)
			break;
		memcpy(buf + o, c, cl);
		o += cl;
	}
	buf[o] = '\0';
}

/* ------------------------------------------------------------------ */
/* The interpreter's callbacks (session thread)                         */

static void on_status(const struct itp_status *st, void *arg)
{
	struct top_model *m = arg;

	pthread_mutex_lock(&m->lock);
	m->st = *st;
	pthread_mutex_unlock(&m->lock);
	if (m->status_next)
		m->status_next(st, m->next_arg);
}

static void on_log(int level, const char *msg, size_t len, void *arg)
{
	struct top_model *m = arg;
	size_t n = len < sizeof(m->last_log) - 1 ? len : sizeof(m->last_log) - 1;

	pthread_mutex_lock(&m->lock);
	memcpy(m->last_log, msg, n); /* raw: the screen cleans it */
	m->last_log[n] = '\0';
	pthread_mutex_unlock(&m->lock);
	if (m->log_next)
		m->log_next(level, msg, len, m->next_arg);
}

/* f becomes the newest frame; hist: it adds a point of heap and RSS to the history */
static void publish(struct top_model *m, struct top_frame *f, int hist)
{
	uint64_t rss;
	pid_t pid;

	pthread_mutex_lock(&m->lock);
	pid = m->pid;
	pthread_mutex_unlock(&m->lock);
	rss = pid > 0 ? proc_rss(pid) : 0;
	pthread_mutex_lock(&m->lock);
	if (!rss)
		rss = m->st.rss_bytes;
	f->sampled = m->sample != 0;
	if (hist)
		hist_push(&m->hist, m->st.heap_bytes, rss);
	m->st.rss_bytes = rss;
	top_frame_free(m->frame); /* not taken: the screen is paused */
	m->frame = f;
	m->gen++;
	pthread_mutex_unlock(&m->lock);
	top_model_wake(m);
}

static void on_snapshot(const struct itp_snapshot *s, void *arg)
{
	struct top_model *m = arg;
	struct top_frame *f =
	    top_model_fold(s, m->last_snap_ns ? m->prev : NULL, m->nprev, m->prev_window_s);
	struct top_prev *p;

	if (!f)
		return; /* out of memory: the next second tries again */
	f->unnamed = s->unnamed != 0;
	if (s->unnamed) {
		/* the figures before the names: the named frame of this snapshot follows */
		publish(m, f, 0);
		return;
	}
	m->last_snap_ns = s->elapsed_ns ? s->elapsed_ns : 1;
	p = realloc(m->prev, (f->nrows + 1) * sizeof(*p));
	if (p) {
		/* rows come sorted by ip */
		for (size_t i = 0; i < f->nrows; i++)
			p[i] = (struct top_prev){ .ip = f->rows[i].ip,
						  .live = f->rows[i].live_bytes,
						  .calls_ps = f->rows[i].calls_ps,
						  .bytes_ps = f->rows[i].bytes_ps,
						  .temp_ps = f->rows[i].temp_ps };
		m->prev = p;
		m->nprev = f->nrows;
		m->prev_window_s = f->interval_s;
	}
	publish(m, f, 1);
}

void top_model_options(void *arg, struct itp_options *opt, int conn)
{
	struct top_model *m = arg;

	pthread_mutex_lock(&m->lock);
	m->conn = conn;
	snprintf(m->sysroot, sizeof(m->sysroot), "%s", opt->sysroot ? opt->sysroot : "");
	pthread_mutex_unlock(&m->lock);
	/* the interpreter passes status_arg to both status and log */
	m->status_next = opt->status;
	m->log_next = opt->log;
	m->next_arg = opt->status_arg;
	opt->status = on_status;
	opt->log = on_log;
	opt->status_arg = m;
	opt->snapshot = on_snapshot;
	opt->snapshot_arg = m;
	opt->snapshot_ns = TOP_REFRESH_NS;
	opt->snapshot_first_ns = TOP_FIRST_NS;
	opt->snapshot_early = 1;
}

void top_model_ended(void *arg, int ret, const struct itp_result *res)
{
	struct top_model *m = arg;

	(void)ret;
	pthread_mutex_lock(&m->lock);
	m->ended = 1;
	m->end_reason = res->end_reason;
	m->end_err = res->err;
	m->conn = -1;
	pthread_mutex_unlock(&m->lock);
	top_model_wake(m);
}

void top_model_wake(struct top_model *m)
{
	uint64_t one = 1;

	if (m->wake_fd >= 0 && write(m->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is full (nobody read it for long): the screen wakes anyway */
	}
}

struct top_frame *top_model_take(struct top_model *m)
{
	struct top_frame *f;

	pthread_mutex_lock(&m->lock);
	f = m->frame;
	m->frame = NULL;
	pthread_mutex_unlock(&m->lock);
	return f;
}
