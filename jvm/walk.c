/* jvm/walk.c - inside the allocation hook: HotSpot's physical frames, the kinds, the outer native frames */
/* SPDX-License-Identifier: MIT */
/*
 * AsyncGetCallTrace names the Java frames (vframes: one per method, an
 * inlined method a frame of its own) but says neither how each ran nor
 * where the native frames outer to them are. Both come from the physical
 * frames, walked here from the one the native walk stopped at (x86-64,
 * HotSpot 17's layout, offsets from vmstructs.c):
 *
 *   the call stub (ra == StubRoutines::_call_stub_return_address): the
 *     frame that JavaCalls::call_helper entered Java through; a plain rbp
 *     frame (saved rbp at [rbp], return address at [rbp + 8]), after which
 *     the native CFI walk goes on (trk_xframe_walk_on) in libjvm.so, up to
 *     thread start or the next Java section (a JNI upcall);
 *   the template interpreter (ra in its code): a frame on rbp, with the
 *     Method* at rbp - 3 words, the caller's sp at rbp - 1 word, the saved
 *     rbp at [rbp] and the return address at [rbp + 8]; one vframe;
 *   a code blob found through its code heap's segment map: an nmethod
 *     (C1 or C2, by its _comp_level) has a fixed frame size: the caller's
 *     sp is sp + _frame_size words, below it the return address and the
 *     saved rbp; its vframes are the scopes of the PcDesc at the return
 *     address (innermost first, the outermost the nmethod's own method,
 *     the others inlined into it); a native method's wrapper ("native
 *     nmethod") is one vframe; any other blob (runtime stub) is stepped
 *     over by its frame size, only before the first Java frame.
 *
 * Every vframe must match: the Method* of its physical frame (from the
 * interpreter frame or the scope) is the one its jmethodID points to, in
 * order, and all of them are used. Then the stack is the native frames
 * inner to the Java ones, the Java frames with their kinds, and the native
 * frames outer to them; on any doubt nothing is written and the caller
 * keeps AsyncGetCallTrace's frames alone.
 *
 * Reads: the thread's stack only between the walk's sp and the top of
 * the stack; code blobs only inside the committed part of their code heap
 * (which the JVM never unmaps), their name only inside libjvm.so's
 * segments; a jmethodID's Method* (AsyncGetCallTrace just handed it out).
 * No lock, no call into the JVM, no allocation.
 */
#include <stdbool.h>
#include <string.h>

#include "jvm/agent_internal.h"

#define SCOPES_MAX 64	     /* inline depth followed per compiled frame */
#define SEGMAP_HOPS 4096     /* segment map steps to a blob's start, at most */

struct walk {
	struct jvm_hook *h;
	const struct jvm_vm *vm;
	const struct jvm_asgct_frame *fr;
	int nfr, k; /* vframes, the next one to match */
	uintptr_t *out;
	size_t at, cap;
	uintptr_t lo, hi;		 /* the thread's stack */
	uintptr_t ra, sp, usp, rbp;	 /* the frame being looked at; usp: HotSpot's unextended sp */
};

static inline uintptr_t rd(uintptr_t a)
{
	return *(const volatile uintptr_t *)a;
}

static inline int32_t rd32(uintptr_t a)
{
	return *(const volatile int32_t *)a;
}

/* Whether the stack word at a lies in [lo, hi), aligned. */
static inline bool stack_ok(const struct walk *w, uintptr_t a)
{
	return a >= w->lo && a <= w->hi - 8 && !(a & 7);
}

/* The code heap holding pc, with its committed end in *end. */
static const struct jvm_heap *heap_of(const struct jvm_vm *vm, uintptr_t pc, uintptr_t *end)
{
	for (unsigned i = 0; i < vm->nheaps; i++) {
		const struct jvm_heap *x = &vm->heap[i];
		uintptr_t high = rd(x->high_at);

		if (pc >= x->low && pc < high) {
			*end = high;
			return x;
		}
	}
	return NULL;
}

/* The CodeBlob holding pc (CodeHeap::find_start's walk over the segment map), 0 if none. */
static uintptr_t find_blob(const struct jvm_vm *vm, uintptr_t pc, uintptr_t *end)
{
	const struct jvm_heap *x = heap_of(vm, pc, end);
	uintptr_t seg, blk;
	unsigned hop;

	if (!x)
		return 0;
	seg = (pc - x->low) >> x->log2_seg;
	for (hop = 0; hop < SEGMAP_HOPS; hop++) {
		uint8_t b = *(const volatile uint8_t *)(x->segmap + seg);

		if (b == 0xff)
			return 0; /* a free segment */
		if (b == 0)
			break;
		if (b > seg)
			return 0;
		seg -= b;
	}
	if (hop == SEGMAP_HOPS)
		return 0;
	blk = x->low + (seg << x->log2_seg);
	if (blk + vm->hb_size + vm->nm_size > *end || !*(const volatile uint8_t *)(blk + vm->hb_used))
		return 0;
	return blk + vm->hb_size;
}

enum blob { BLOB_OTHER, BLOB_NMETHOD, BLOB_NATIVE };

/* What a blob's name says: "nmethod", "native nmethod", or anything else. */
static enum blob blob_kind(const struct jvm_vm *vm, uintptr_t blob)
{
	static const char nm[] = "nmethod", nat[] = "native nmethod";
	uintptr_t name = rd(blob + vm->cb_name);

	for (unsigned i = 0; i < vm->nsegs; i++) {
		if (name < vm->seg[i].lo || name + sizeof(nat) > vm->seg[i].hi)
			continue;
		if (!memcmp((const void *)name, nm, sizeof(nm)))
			return BLOB_NMETHOD;
		if (!memcmp((const void *)name, nat, sizeof(nat)))
			return BLOB_NATIVE;
		return BLOB_OTHER;
	}
	return BLOB_OTHER;
}

/* The Method* of the next vframe (what its jmethodID points to), 0 when none is left. */
static uintptr_t next_method(const struct walk *w)
{
	if (w->k >= w->nfr || !w->fr[w->k].method_id)
		return 0;
	return rd((uintptr_t)w->fr[w->k].method_id);
}

/* The next vframe, as kind, into the stack. false: no room or the table is full. */
static bool emit(struct walk *w, unsigned kind)
{
	const struct jvm_asgct_frame *f = &w->fr[w->k];
	uint32_t id;

	if (w->at >= w->cap)
		return false;
	id = jvm_table_id(w->h->table, (uint64_t)(uintptr_t)f->method_id, jvm_key(f->lineno, kind));
	if (!id)
		return false;
	w->out[w->at++] = (uintptr_t)(WIRE_XFRAME_BIT | id);
	w->k++;
	return true;
}

/* A compiled frame's step: the caller's sp is usp + frame size; below it ra and the saved rbp. */
static bool step_fixed(struct walk *w, uintptr_t blob)
{
	int32_t fs = rd32(blob + w->vm->cb_frame_size);
	uintptr_t ssp;

	if (fs <= 1 || fs > (1 << 20))
		return false;
	ssp = w->usp + (uintptr_t)fs * 8;
	if (ssp <= w->sp || !stack_ok(w, ssp - 16) || ssp > w->hi)
		return false;
	w->ra = rd(ssp - 8);
	w->rbp = rd(ssp - 16);
	w->sp = w->usp = ssp;
	return true;
}

/* An interpreter frame: one vframe (its Method* at rbp - 3 words), then the step on rbp. */
static bool interpreted(struct walk *w)
{
	uintptr_t fp = w->rbp, m, ssp;
	int32_t bci;

	if (fp < w->sp || !stack_ok(w, fp - 24) || !stack_ok(w, fp + 8))
		return false;
	m = next_method(w);
	if (!m || rd(fp - 24) != m)
		return false;
	bci = w->fr[w->k].lineno;
	if (!emit(w, bci == -3 ? WIRE_XKIND_NATIVE : WIRE_XKIND_INTERPRETED))
		return false;
	ssp = rd(fp - 8); /* the caller's sp before any adapter extended it */
	w->ra = rd(fp + 8);
	w->rbp = rd(fp);
	w->sp = fp + 16;
	w->usp = ssp;
	return ssp >= fp + 16 && ssp < w->hi;
}

/* CompressedReadStream::read_int (UNSIGNED5) within [*p, end); -1 past the end. */
static int64_t read_u5(uintptr_t *p, uintptr_t end)
{
	int64_t sum = 0;
	unsigned shift = 0;

	for (int i = 0; i < 5; i++) {
		uint32_t b;

		if (*p >= end)
			return -1;
		b = *(const volatile uint8_t *)(*p)++;
		sum += (int64_t)b << shift;
		if (b < 192 || i == 4)
			return sum;
		shift += 6;
	}
	return -1;
}

/* The PcDesc of nmethod blob whose pc is ra exactly (binary search over sorted pc offsets), 0 if none. */
static uintptr_t pc_desc(const struct jvm_vm *vm, uintptr_t blob, uintptr_t bend, uintptr_t ra)
{
	uintptr_t code = rd(blob + vm->cb_code_begin);
	uintptr_t pcs = blob + (uintptr_t)rd32(blob + vm->nm_pcs);
	uintptr_t pce = blob + (uintptr_t)rd32(blob + vm->nm_deps);
	size_t lo = 0, hi;
	int64_t want = (int64_t)(ra - code);

	if (pcs < blob || pce < pcs || pce > bend || (pce - pcs) % vm->pc_size)
		return 0;
	hi = (pce - pcs) / vm->pc_size;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t off = rd32(pcs + mid * vm->pc_size + vm->pc_offset);

		if (off == want)
			return pcs + mid * vm->pc_size;
		if (off < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The kinds of a compiled frame of level lvl: its own method, and methods inlined into it. */
static unsigned tier_kind(int32_t lvl, bool inlined)
{
	if (lvl >= 1 && lvl <= 3)
		return inlined ? WIRE_XKIND_INLINED_C1 : WIRE_XKIND_COMPILED_C1;
	if (lvl == 4)
		return inlined ? WIRE_XKIND_INLINED_C2 : WIRE_XKIND_COMPILED_C2;
	return inlined ? WIRE_XKIND_INLINED : WIRE_XKIND_COMPILED;
}

/*
 * An nmethod's vframes: the scope chain of the PcDesc at ra (ScopeDesc:
 * sender offset, method index into the metadata, bci, ...), innermost
 * first, each matched against the next vframe; the last scope (sender
 * offset 0) is the nmethod's own method.
 */
static bool compiled(struct walk *w, uintptr_t blob, uintptr_t end)
{
	const struct jvm_vm *vm = w->vm;
	int32_t size = rd32(blob + vm->cb_size), lvl = rd32(blob + vm->nm_comp_level);
	uintptr_t bend, pd, sd, md, mdend, own = rd(blob + vm->cm_method);
	int64_t off;

	if (size <= 0 || blob + (uintptr_t)size > end)
		return false;
	bend = blob + (uintptr_t)size;
	pd = pc_desc(vm, blob, bend, w->ra);
	sd = rd(blob + vm->cm_scopes_data);
	md = blob + (uintptr_t)rd32(blob + vm->nm_metadata);
	mdend = sd; /* the metadata ends where the scopes data begins */
	if (!pd || sd < blob || sd >= bend || md < blob || md > mdend)
		return false;
	off = rd32(pd + vm->pc_scope);
	for (int depth = 0; off > 0; depth++) {
		uintptr_t p = sd + (uintptr_t)off, m;
		int64_t sender, idx;

		if (depth == SCOPES_MAX || p >= bend)
			return false;
		sender = read_u5(&p, bend);
		idx = read_u5(&p, bend);
		if (sender < 0 || idx <= 0 || md + (uintptr_t)idx * 8 > mdend)
			return false;
		m = rd(md + (uintptr_t)(idx - 1) * 8);
		if (!m || m != next_method(w) || (sender == 0 && m != own))
			return false;
		if (!emit(w, tier_kind(lvl, sender != 0)))
			return false;
		off = sender;
	}
	return off == 0;
}

/* A native method's wrapper: one vframe, the native method. */
static bool native_wrapper(struct walk *w, uintptr_t blob)
{
	uintptr_t m = next_method(w);

	if (!m || rd(blob + w->vm->cm_method) != m || w->fr[w->k].lineno != -3)
		return false;
	return emit(w, WIRE_XKIND_NATIVE);
}

/*
 * The call stub: its rbp frame, then native frames to the thread's start
 * or the next Java section (*how TRK_XF_CUT, its registers in w). A
 * native frame the CFI walker cannot step after the last Java frame ends
 * the stack with the cut marker; before it, the walk is in doubt.
 */
static bool entry(struct walk *w, enum trk_xf_end *how)
{
	struct trk_xf_regs r;
	uintptr_t fp = w->rbp;

	if (fp < w->sp || !stack_ok(w, fp) || !stack_ok(w, fp + 8))
		return false;
	r.ra = rd(fp + 8);
	r.rbp = rd(fp);
	r.sp = fp + 16;
	w->at += trk_xframe_walk_on(&r, w->out + w->at, w->cap - w->at, how);
	if (*how == TRK_XF_FAIL) {
		if (w->k != w->nfr)
			return false;
		if (w->at < w->cap)
			w->out[w->at++] = WIRE_IP_CUT;
		*how = TRK_XF_FULL;
	}
	if (*how == TRK_XF_CUT) {
		if (r.sp <= fp)
			return false;
		w->ra = r.ra;
		w->sp = w->usp = r.sp;
		w->rbp = r.rbp;
	}
	return true;
}

/* One physical frame at w->ra. 1: go on, 0: the stack ended well, -1: doubt. */
static int frame(struct walk *w)
{
	const struct jvm_vm *vm = w->vm;
	enum trk_xf_end how;
	uintptr_t blob, end;

	if (w->ra == vm->call_stub_ra) {
		if (w->k == 0 || !entry(w, &how))
			return -1;
		if (how == TRK_XF_CUT)
			return w->at < w->cap ? 1 : 0;
		return 0; /* the outermost frame, or the stack is full */
	}
	if (w->ra >= vm->interp_lo && w->ra < vm->interp_hi)
		return interpreted(w) ? 1 : -1;
	if (w->ra < vm->cc_lo || w->ra >= vm->cc_hi)
		return -1;
	blob = find_blob(vm, w->ra, &end);
	if (!blob || w->ra < rd(blob + vm->cb_code_begin) || w->ra >= rd(blob + vm->cb_code_end))
		return -1;
	switch (blob_kind(vm, blob)) {
	case BLOB_NMETHOD:
		if (!compiled(w, blob, end))
			return -1;
		break;
	case BLOB_NATIVE:
		if (!native_wrapper(w, blob))
			return -1;
		break;
	default:
		if (w->k != 0)
			return -1; /* a stub between Java frames: not a layout known here */
		break;
	}
	return step_fixed(w, blob) ? 1 : -1;
}

size_t jvm_walk(struct jvm_hook *h, const struct jvm_asgct_frame *fr, int nfr, int truncated,
		uintptr_t *ips, size_t n, size_t cap)
{
	uintptr_t buf[TRK_DEPTH_MAX + 32];
	struct trk_xf_regs r;
	struct walk w;
	int rc = 1;

	if (!h->layout.ok || n < 2 || cap > TRK_DEPTH_MAX + 32 ||
	    trk_xframe_cut_regs(&r, &w.lo, &w.hi) < 0 || r.ra - 1 != ips[n - 2])
		return 0;
	w.h = h;
	w.vm = &h->layout;
	w.fr = fr;
	w.nfr = nfr;
	w.k = 0;
	w.out = buf;
	w.cap = cap;
	w.at = n - 2;
	memcpy(buf, ips, (n - 2) * sizeof(*ips));
	w.ra = r.ra;
	w.sp = w.usp = r.sp;
	w.rbp = r.rbp;
	for (unsigned frames = 0; rc == 1; frames++) {
		if (frames > 4 * TRK_DEPTH_MAX)
			return 0;
		if (w.k == w.nfr && truncated && w.ra != w.vm->call_stub_ra) {
			/* AsyncGetCallTrace had no room for more: the stack is cut here */
			if (w.at < w.cap)
				w.out[w.at++] = WIRE_IP_CUT;
			break;
		}
		if (w.at >= w.cap)
			break; /* as deep as stacks go: the rest is cut like any deep stack */
		rc = frame(&w);
	}
	if (rc < 0 || (w.k != w.nfr && w.at < w.cap))
		return 0;
	memcpy(ips, buf, w.at * sizeof(*ips));
	return w.at;
}
