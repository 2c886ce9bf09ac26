/* report/fold.c - the interpreter's own C frames folded away where Python frames stand for them */
/* SPDX-License-Identifier: MIT */
/*
 * A stack of a CPython program reads, innermost first: the allocating C
 * code, the Python frames of one evaluation loop, the loop's own C frame
 * (_PyEval_EvalFrameDefault) and the call machinery that entered it
 * (_PyFunction_Vectorcall, PyEval_EvalCode, ...), then the next Python
 * frames or main(). The Python frames say what those C frames did, so by
 * default a run of them (names in fold_names) that lies directly outside a
 * Python frame is left out; anything else between (a C function that
 * called back into Python, an unnamed frame) stops the run and is kept,
 * and so is a run with no Python frame inside it. `heaptap report
 * --native-all` shows everything.
 *
 * Done once, before the replay: the trace table is rebuilt without those
 * frames (each old trace maps to the new trace of its folded path) and the
 * allocation infos point at the new traces, so every format, the call
 * sites and their costs see the folded stacks.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"
#include "track/wire.h"

/* CPython's evaluation loop and the calls that enter it (3.11's names) */
static const char *const fold_names[] = {
	"_PyEval_EvalFrameDefault", "_PyEval_EvalFrame", "_PyEval_Vector", "_PyFunction_Vectorcall",
	"PyEval_EvalCode", "PyEval_EvalCodeEx", "_PyObject_VectorcallTstate", "PyObject_Vectorcall",
	"_PyObject_Call", "PyObject_Call", "_PyObject_FastCallDictTstate", "_PyObject_Call_Prepend",
	"_PyObject_MakeTpCall", "PyObject_CallObject", "method_vectorcall", "slot_tp_call",
	"run_eval_code_obj", "run_mod", "pyrun_file", "_PyRun_SimpleFileObject",
	"_PyRun_AnyFileObject", "pymain_run_file_obj", "pymain_run_file", "pymain_run_python",
	"Py_RunMain", "pymain_main", "Py_BytesMain", "thread_run",
};

enum { OTHER, PYTHON, FOLD };

struct fold {
	struct rpt_data *d;
	uint8_t *cls;		/* per ip */
	struct rec_trace *nt;	/* the new traces */
	size_t n, cap;
	uint32_t *slot;		/* (parent, ip) -> new trace + 1, open addressing */
	size_t nslot;
	uint32_t *path;		/* scratch: a pending run, outer to inner */
};

/* classify - each ip: a Python frame, a foldable frame or other. */
static void classify(struct fold *f)
{
	const struct rpt_data *d = f->d;
	size_t i, k;

	for (i = 0; i < d->nips; i++) {
		const struct rec_ip *ip = &d->ips[i];
		uint32_t link = ip->frame, last = REC_NONE;
		size_t steps = 0;
		const char *fn;

		if (ip->xframe) {
			f->cls[i] = ip->lang == WIRE_LANG_PYTHON ? PYTHON : OTHER;
			continue;
		}
		while (link < d->nframes && steps++ <= d->nframes) {
			last = link;
			link = d->frames[link].outer;
		}
		if (last >= d->nframes)
			continue;
		fn = rec_string(d->r, d->frames[last].function);
		for (k = 0; fn && k < sizeof(fold_names) / sizeof(fold_names[0]); k++)
			if (!strcmp(fn, fold_names[k]))
				f->cls[i] = FOLD;
	}
}

/* any_python - whether some ip is a Python frame (else nothing is folded, nothing else looked at). */
static bool any_python(const struct rpt_data *d)
{
	size_t i;

	for (i = 0; i < d->nips; i++)
		if (d->ips[i].xframe && d->ips[i].lang == WIRE_LANG_PYTHON)
			return true;
	return false;
}

static inline size_t hash_pair(uint32_t parent, uint32_t ip, size_t mask)
{
	return (size_t)((((uint64_t)parent << 32 | ip) * 0x9e3779b97f4a7c15ull) >> 20) & mask;
}

static int grow_slots(struct fold *f)
{
	size_t n = f->nslot ? f->nslot * 2 : 1024, i;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 1; i < f->n; i++) {
		size_t h = hash_pair(f->nt[i].parent, f->nt[i].ip, n - 1);

		while (s[h])
			h = (h + 1) & (n - 1);
		s[h] = (uint32_t)i + 1;
	}
	free(f->slot);
	f->slot = s;
	f->nslot = n;
	return 0;
}

#define FAILED UINT32_MAX

/* node - the new trace (parent, ip), made if new; FAILED when out of memory. */
static uint32_t node(struct fold *f, uint32_t parent, uint32_t ip)
{
	size_t h;

	if (parent == FAILED || (2 * (f->n + 1) > f->nslot && grow_slots(f) < 0))
		return FAILED;
	for (h = hash_pair(parent, ip, f->nslot - 1); f->slot[h]; h = (h + 1) & (f->nslot - 1)) {
		const struct rec_trace *t = &f->nt[f->slot[h] - 1];

		if (t->parent == parent && t->ip == ip)
			return f->slot[h] - 1;
	}
	if (f->n == f->cap) {
		size_t cap = f->cap * 2;
		struct rec_trace *nt = cap > UINT32_MAX - 1 ? NULL : realloc(f->nt, cap * sizeof(*nt));

		if (!nt)
			return FAILED;
		f->nt = nt;
		f->cap = cap;
	}
	f->nt[f->n].parent = parent;
	f->nt[f->n].ip = ip;
	f->slot[h] = (uint32_t)f->n + 1;
	return (uint32_t)f->n++;
}

/* unfold - base with the old path (anchor, t] put back on it (a pending run kept); FAILED when out of memory. */
static uint32_t unfold(struct fold *f, uint32_t base, uint32_t anchor, uint32_t t)
{
	const struct rpt_data *d = f->d;
	size_t k = 0;

	while (t != anchor && t != 0 && k < d->ntraces) {
		f->path[k++] = t;
		t = d->traces[t].parent;
	}
	while (k > 0)
		base = node(f, base, d->traces[f->path[--k]].ip);
	return base;
}

int rpt_fold_interp(struct rpt_data *d)
{
	struct fold f = { .d = d };
	uint32_t *base = NULL, *anchor = NULL, *full = NULL;
	struct rec_allocinfo *infos = NULL;
	size_t t, i;
	int ret = -ENOMEM;

	if (d->ntraces < 2 || !any_python(d))
		return 0; /* no Python frame: nothing changes */
	f.cls = calloc(d->nips, 1);
	if (!f.cls)
		return -ENOMEM;
	classify(&f);
	/*
	 * base[t]: the new trace of t's path with its pending run (the
	 * foldable frames since anchor[t], exclusive) left out (0: the root).
	 * full[t]: the new trace of t's
	 * whole path (pending run kept), for the infos.
	 */
	base = calloc(d->ntraces, sizeof(*base));
	anchor = calloc(d->ntraces, sizeof(*anchor));
	full = calloc(d->ntraces, sizeof(*full));
	f.path = calloc(d->ntraces, sizeof(*f.path));
	f.cap = d->ntraces + 16;
	f.nt = malloc(f.cap * sizeof(*f.nt));
	infos = malloc((d->ninfos + 1) * sizeof(*infos));
	if (!base || !anchor || !full || !f.path || !f.nt || !infos || grow_slots(&f) < 0)
		goto out;
	f.nt[0] = d->traces[0];
	f.n = 1;
	for (t = 1; t < d->ntraces; t++) {
		uint32_t p = d->traces[t].parent, ipi = d->traces[t].ip, b;
		int c = ipi < d->nips ? f.cls[ipi] : OTHER;

		if (p >= t)
			p = 0; /* the reader keeps parents below: a bad one is the root */
		if (c == FOLD) {
			base[t] = base[p];
			anchor[t] = anchor[p];
		} else {
			/* a Python frame drops the pending run before it; anything else keeps it */
			b = c == PYTHON || anchor[p] == p ? base[p] : unfold(&f, base[p], anchor[p], p);
			b = node(&f, b, ipi);
			if (b == FAILED)
				goto out;
			base[t] = b;
			anchor[t] = (uint32_t)t;
		}
		full[t] = anchor[t] == t ? base[t] : unfold(&f, base[t], anchor[t], (uint32_t)t);
		if (full[t] == FAILED)
			goto out;
	}
	for (i = 0; i < d->ninfos; i++) {
		infos[i] = d->infos[i];
		if (infos[i].trace < d->ntraces)
			infos[i].trace = full[infos[i].trace];
	}
	d->fold_traces = f.nt;
	d->fold_infos = infos;
	d->traces = f.nt;
	d->ntraces = f.n;
	d->infos = infos;
	f.nt = NULL;
	infos = NULL;
	ret = 0;
out:
	free(f.cls);
	free(f.slot);
	free(f.path);
	free(f.nt);
	free(infos);
	free(base);
	free(anchor);
	free(full);
	return ret;
}
