/* pyframes/producer.c - the calling thread's Python frames spliced into its native stack */
/* SPDX-License-Identifier: MIT */
/*
 * Called by track/ inside a recorded allocation, after the native walk
 * (trk_xframe_fn). Nothing happens unless the stack holds a frame of
 * CPython's evaluation loop (_PyEval_EvalFrameDefault): one compare per
 * native frame. Then:
 *
 *   thread state   the thread's own (the GIL state's TSS key, as
 *                  PyGILState_GetThisThreadState); with sub-interpreters
 *                  the GIL holder's when that is this thread, else the one
 *                  of this thread's states (one per interpreter it entered)
 *                  whose cframe lies innermost on its stack; when that
 *                  state's chain ends, the next one outward goes on
 *   current frame  tstate->cframe->current_frame; the cframe is a local of
 *                  the innermost evaluation loop, on this thread's stack,
 *                  or the thread state's root_cframe
 *   segments       one evaluation-loop C frame runs the Python frames from
 *                  its current frame up to the next frame marked is_entry
 *                  (3.11); the innermost C frame gets the innermost segment
 *
 * The Python frames of a segment go in front of (inner to) their C frame,
 * innermost first, so a stack reads malloc, PyBytes_FromStringAndSize,
 * make_blob, main, <module>, _PyEval_EvalFrameDefault, PyEval_EvalCode ...
 *
 * Reads: the runtime's globals (mapped for the life of the process), the
 * cframe (checked to lie on this thread's stack), and frames that lie in
 * the thread's frame stack below its top (checked against the chunks the
 * thread state lists): memory the interpreter keeps mapped while the
 * thread runs those frames, read directly. A frame anywhere else (a
 * generator's or a coroutine's, which live in their objects) is read with
 * pyf_read, and so is its code object. Code objects of the frame stack are
 * alive (their frames hold them), so intern.c reads their identity
 * directly.
 */
#include <errno.h>
#include <pthread.h>

#include "pyframes/internal.h"
#include "track/track.h"

extern void *__libc_stack_end;

#define STACK_SPAN_MAX (1ul << 30) /* a cframe further above sp than this is not believed */

struct chunks {
	unsigned n;
	struct {
		uintptr_t lo, hi;
	} r[PYF_CHUNKS_MAX];
};

static inline uintptr_t ld_ptr(uintptr_t a)
{
	return *(const uintptr_t *)a;
}

/* stack_hi - the top of the calling thread's stack (track/unwind.c does the same), 0 if unknown. */
static uintptr_t stack_hi(uintptr_t sp)
{
	uintptr_t self = (uintptr_t)pthread_self(), end = (uintptr_t)__libc_stack_end;

	if (self > sp && self - sp < STACK_SPAN_MAX)
		return self; /* a glibc thread: its descriptor sits at the top of its stack */
	if (end > sp && end - sp < STACK_SPAN_MAX)
		return end;  /* the main thread */
	return 0;
}

/*
 * next_state - with sub-interpreters: of the thread states of every
 * interpreter that belong to this thread (a thread that entered a
 * sub-interpreter has one in each), the one whose cframe lies lowest on
 * this thread's stack above lo (exclusive) and below hi: with lo = sp the
 * one running the innermost evaluation loop, with lo = the cframe of one
 * state the state whose frames come next, outward. 0 if none. Other
 * threads' states may be freed under us: everything through pyf_read.
 */
static uintptr_t next_state(uintptr_t lo, uintptr_t hi, uintptr_t *cf_out)
{
	const struct pyf_layout *L = pyf_g.L;
	unsigned long self = (unsigned long)pthread_self();
	uintptr_t interp, best = 0, best_cf = UINTPTR_MAX;
	unsigned ni, nt;

	if (pyf_read(&interp, pyf_g.runtime + L->rt_interp_head, sizeof(interp)) < 0)
		return 0;
	for (ni = 0; interp && ni < PYF_INTERPS_MAX; ni++) {
		uintptr_t ts;

		if (pyf_read(&ts, interp + L->is_threads_head, sizeof(ts)) < 0)
			break;
		for (nt = 0; ts && nt < PYF_TSTATES_MAX; nt++) {
			unsigned long tid;
			uintptr_t cf;

			if (pyf_read(&tid, ts + L->ts_thread_id, sizeof(tid)) < 0 ||
			    pyf_read(&cf, ts + L->ts_cframe, sizeof(cf)) < 0)
				break;
			if (tid == self && cf > lo && cf < hi && cf < best_cf) {
				best = ts;
				best_cf = cf;
			}
			if (pyf_read(&ts, ts + L->ts_next, sizeof(ts)) < 0)
				break;
		}
		if (pyf_read(&interp, interp + L->is_next, sizeof(interp)) < 0)
			break;
	}
	*cf_out = best_cf;
	return best;
}

static inline bool one_interp(void)
{
	const struct pyf_layout *L = pyf_g.L;

	return ld_ptr(pyf_g.runtime + L->rt_interp_head) == ld_ptr(pyf_g.runtime + L->rt_interp_main);
}

/*
 * thread_state - the PyThreadState whose frames this thread runs, or 0.
 * The TSS key is only read once the runtime made it (a launched python3
 * runs the library's start before Py_Initialize). With one interpreter
 * the TSS key's state is the thread's (PyGILState_GetThisThreadState);
 * with sub-interpreters the GIL holder's when that is this thread, else
 * the one running the innermost evaluation loop (next_state).
 */
static uintptr_t thread_state(uintptr_t sp, uintptr_t hi)
{
	const struct pyf_layout *L = pyf_g.L;
	uintptr_t rt = pyf_g.runtime, tss, cur;
	unsigned long tid;
	pthread_key_t key;

	if (!*(const volatile int *)(rt + L->rt_tss_init))
		return 0;
	key = *(const pthread_key_t *)(rt + L->rt_tss_key);
	tss = (uintptr_t)pthread_getspecific(key);
	if (one_interp())
		return tss;
	cur = atomic_load_explicit((_Atomic uintptr_t *)(rt + L->rt_tstate_current), memory_order_relaxed);
	if (cur && cur == tss)
		return tss;
	if (cur && pyf_read(&tid, cur + L->ts_thread_id, sizeof(tid)) == 0 &&
	    tid == (unsigned long)pthread_self())
		return cur;
	return next_state(sp, hi, &cur);
}

/* frame_chunks - the thread's frame-stack chunks, each up to its top. */
static void frame_chunks(uintptr_t ts, struct chunks *c)
{
	const struct pyf_layout *L = pyf_g.L;
	uintptr_t ch = ld_ptr(ts + L->ts_chunk), top = ld_ptr(ts + L->ts_top);

	c->n = 0;
	while (ch && pyf_ptr_ok(ch) && c->n < PYF_CHUNKS_MAX) {
		uintptr_t lo = ch + L->ch_data, size = ld_ptr(ch + L->ch_size), hi;

		if (c->n == 0) {
			hi = top;
		} else {
			hi = lo + ld_ptr(ch + L->ch_top) * sizeof(void *);
		}
		if (hi < lo || hi - ch > size)
			break;
		c->r[c->n].lo = lo;
		c->r[c->n].hi = hi;
		c->n++;
		ch = ld_ptr(ch + L->ch_previous);
	}
}

static inline bool in_chunks(const struct chunks *c, uintptr_t f, size_t len)
{
	unsigned i;

	for (i = 0; i < c->n; i++)
		if (f >= c->r[i].lo && f < c->r[i].hi && len <= c->r[i].hi - f)
			return true;
	return false;
}

/* One frame's fields, as read. */
struct frame {
	uintptr_t code, previous, prev_instr;
	uint8_t is_entry, owner;
	bool direct;
};

static int read_frame(const struct chunks *c, uintptr_t f, struct frame *out)
{
	const struct pyf_layout *L = pyf_g.L;
	uint8_t buf[256];
	const uint8_t *b = buf;

	if (!pyf_ptr_ok(f) || L->fr_head > sizeof(buf))
		return -1;
	out->direct = in_chunks(c, f, L->fr_head);
	if (out->direct)
		b = (const uint8_t *)f;
	else if (pyf_read(buf, f, L->fr_head) < 0)
		return -1;
	memcpy(&out->code, b + L->fr_code, sizeof(uintptr_t));
	memcpy(&out->previous, b + L->fr_previous, sizeof(uintptr_t));
	memcpy(&out->prev_instr, b + L->fr_prev_instr, sizeof(uintptr_t));
	out->is_entry = b[L->fr_is_entry];
	out->owner = b[L->fr_owner];
	return 0;
}

/* current_frame - the innermost Python frame of thread state ts, or 0; sp, hi: this thread's stack. */
static uintptr_t current_frame(uintptr_t ts, uintptr_t sp, uintptr_t hi)
{
	const struct pyf_layout *L = pyf_g.L;
	uintptr_t cf = ld_ptr(ts + L->ts_cframe);

	if (cf != ts + L->ts_root_cframe &&
	    (cf <= sp || cf > hi - L->cf_current_frame - sizeof(void *) || (cf & 7)))
		return 0;
	return ld_ptr(cf + L->cf_current_frame);
}

static inline bool in_eval(uintptr_t ip)
{
	return ip - pyf_g.eval_lo < pyf_g.eval_hi - pyf_g.eval_lo;
}

/*
 * segments - follow thread state ts's frame chain for each evaluation-loop
 * frame of ips[first, n), innermost first: the ids go to out (at most
 * PYF_FRAMES_MAX), seg_end[j] is where the j-th such frame's segment ends
 * in out, evals[j] its index in ips. When the chain ends with evaluation
 * loops left, a thread in a sub-interpreter goes on with its state in the
 * interpreter it came from (next_state). Returns the number of segments.
 */
static size_t segments(const uintptr_t *ips, size_t first, size_t n, uintptr_t ts, uintptr_t sp,
		       uintptr_t hi, uintptr_t *out, size_t *m, uint16_t *seg_end, uint16_t *evals)
{
	uintptr_t f = current_frame(ts, sp, hi);
	size_t i, nseg = 0;
	unsigned follow = 0, switched = 0;
	struct chunks ch;

	frame_chunks(ts, &ch);
	for (i = first; i < n && i <= UINT16_MAX && nseg < PYF_SEGMENTS_MAX; i++) {
		if (!in_eval(ips[i]))
			continue;
		if (!f) {
			uintptr_t cf = ld_ptr(ts + pyf_g.L->ts_cframe);

			if (one_interp() || switched++ >= PYF_INTERPS_MAX)
				break;
			ts = next_state(cf, hi, &cf);
			if (!ts)
				break;
			f = current_frame(ts, sp, hi);
			frame_chunks(ts, &ch);
		}
		while (f && follow < PYF_SEGMENT_MAX) {
			struct frame fr;
			uint64_t id;

			follow++;
			if (read_frame(&ch, f, &fr) < 0) {
				f = 0;
				break;
			}
			id = pyf_frame_id(fr.code, fr.prev_instr, fr.owner, fr.direct);
			if (id == UINT64_MAX)
				atomic_fetch_add_explicit(&pyf_g.dropped, 1, memory_order_relaxed);
			else if (id && *m < PYF_FRAMES_MAX)
				out[(*m)++] = (uintptr_t)wire_xframe_ip(id);
			f = fr.previous;
			if (fr.is_entry)
				break;
		}
		evals[nseg] = (uint16_t)i;
		seg_end[nseg++] = (uint16_t)*m;
	}
	return nseg;
}

size_t pyf_produce(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	uintptr_t py[PYF_FRAMES_MAX], ts, sp, hi;
	uint16_t seg_end[PYF_SEGMENTS_MAX], evals[PYF_SEGMENTS_MAX];
	size_t first, m = 0, nseg, len, drop, w, i, s;
	int e = errno;

	(void)arg;
	if (!atomic_load_explicit(&pyf_g.on, memory_order_relaxed) || !trk_xframe_wanted(WIRE_LANG_PYTHON))
		return n;
	for (first = 0; first < n && !in_eval(ips[first]); first++)
		;
	if (first == n)
		return n;
	sp = (uintptr_t)__builtin_frame_address(0);
	hi = stack_hi(sp);
	if (!hi)
		goto out;
	ts = thread_state(sp, hi);
	if (!ts || !pyf_ptr_ok(ts))
		goto out;
	nseg = segments(ips, first, n, ts, sp, hi, py, &m, seg_end, evals);
	if (!m || n > cap)
		goto out;
	/*
	 * Each segment in front of (inner to) its evaluation-loop frame, in
	 * place from the outermost end: the outermost frames give way when
	 * cap is reached. Writing index w never passes the native frame i
	 * being read (w > i: the Python frames inside i are still to come).
	 */
	len = n + m < cap ? n + m : cap;
	drop = n + m - len;
	w = len;
	s = nseg;
	for (i = n; i-- > 0;) {
		if (drop)
			drop--;
		else
			ips[--w] = ips[i];
		if (s && i == evals[s - 1]) {
			size_t lo = s > 1 ? seg_end[s - 2] : 0, k;

			for (k = seg_end[s - 1]; k > lo; k--) {
				if (drop)
					drop--;
				else
					ips[--w] = py[k - 1];
			}
			s--;
		}
	}
	n = len;
out:
	errno = e;
	return n;
}
