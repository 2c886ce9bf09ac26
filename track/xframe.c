/* track/xframe.c - foreign frames: the producer's splice point and the definition queue */
/* SPDX-License-Identifier: MIT */
/*
 * A producer in the target (a JVM agent, a Python frame reader) adds
 * frames of another language to the native stacks (track.h, wire.h
 * "Foreign frames"). Two things live here:
 *
 * The splice point. trk_xframe_set_producer publishes one atomic pointer to
 * an immutable (fn, arg) slot; the hooks load it once per recorded stack
 * and, when set, capture through trk_xf_capture: native walk, fn, tree.
 * Slots are never reused for another pair, so a hook holding an old
 * pointer reads a whole, valid pair.
 *
 * The definition queue. trk_xframe_define may run in any thread, inside a
 * hook or a signal handler, while another thread holds the socket lock and
 * waits for heaptap to read: it must not lock. It encodes the record into a
 * slot of a bounded multi-producer queue (Vyukov's: a slot's tag says
 * whose turn it is) mapped on first use; the timer thread (or the hook that
 * does its work, or the end of the session) takes the slots in order and
 * sends them under the socket lock like TICK. A slot tagged with an older
 * session is dropped: its id is defined again by the producer in the new
 * one (trk_xframe_session).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"
#include "track/xframe_internal.h"

/* ---- the producer ------------------------------------------------------- */

_Atomic(const struct trk_xf_prod *) trk_xf_cur;

static struct trk_xf_prod prods[TRK_XFRAME_PRODUCERS];
static unsigned nprods;
static pthread_mutex_t prod_lock = PTHREAD_MUTEX_INITIALIZER;

int trk_xframe_set_producer(trk_xframe_fn fn, void *arg)
{
	return trk_xframe_set_producer_lang(fn, arg, 0);
}

int trk_xframe_set_producer_lang(trk_xframe_fn fn, void *arg, unsigned lang)
{
	uint32_t off_bit = lang && lang < 32 ? 1u << lang : 0;
	const struct trk_xf_prod *p = NULL;
	unsigned i;
	int ret = 0;

	if (!fn) {
		atomic_store_explicit(&trk_xf_cur, NULL, memory_order_release);
		return 0;
	}
	pthread_mutex_lock(&prod_lock);
	for (i = 0; i < nprods; i++)
		if (prods[i].fn == fn && prods[i].arg == arg && prods[i].off_bit == off_bit)
			p = &prods[i];
	if (!p && nprods < TRK_XFRAME_PRODUCERS) {
		prods[nprods] = (struct trk_xf_prod){ .fn = fn, .arg = arg, .off_bit = off_bit };
		p = &prods[nprods++];
	}
	if (p)
		atomic_store_explicit(&trk_xf_cur, p, memory_order_release);
	else
		ret = -ENOSPC;
	pthread_mutex_unlock(&prod_lock);
	return ret;
}

static _Atomic(void (*)(void *)) flush_fn;
static void *_Atomic flush_arg;

void trk_xframe_set_flush(void (*fn)(void *arg), void *arg)
{
	atomic_store_explicit(&flush_fn, NULL, memory_order_release);
	atomic_store_explicit(&flush_arg, arg, memory_order_release);
	atomic_store_explicit(&flush_fn, fn, memory_order_release);
}

void trk_xf_flush(void)
{
	void (*fn)(void *) = atomic_load_explicit(&flush_fn, memory_order_acquire);

	if (fn && atomic_load_explicit(&trk_g.state, memory_order_acquire) == TRK_ON)
		fn(atomic_load_explicit(&flush_arg, memory_order_acquire));
}

uint32_t trk_xf_capture(struct trk_thr *t, const void *ra, const uintptr_t *fp, uint32_t *gen,
			const struct trk_xf_prod *p)
{
	size_t n = 0, m;

	t->cut_ok = 0; /* trk_walk sets it when it ends at JIT code */
	if (likely(trk_g.fast_unwind) && fp[1] == (uintptr_t)ra)
		n = trk_walk(t, t->frames, (uintptr_t)ra, fp);
	if (!n)
		n = trk_cut_stack(t, t->frames, trk_capture_libunwind(t->frames, ra));
	/* t->frames has TRK_DEPTH_MAX + 32 slots; the tree's node arrays TRK_DEPTH_MAX */
	m = p->fn(p->arg, t->frames, n, TRK_DEPTH_MAX);
	if (m > TRK_DEPTH_MAX)
		m = TRK_DEPTH_MAX;
	return trk_tree_trace(t, m, gen);
}

int trk_xframe_cut_regs(struct trk_xf_regs *r, uintptr_t *lo, uintptr_t *hi)
{
	struct trk_thr *t = trk_tls_thr;

	if (!t || !t->cut_ok || !t->stack_hi)
		return -ENOENT;
	r->ra = t->cut_ra;
	r->sp = t->cut_sp;
	r->rbp = t->cut_rbp;
	*lo = t->stack_lo;
	*hi = t->stack_hi;
	return 0;
}

/* in8 - whether the 8 bytes at a lie in [lo, hi), aligned. */
static inline bool in8(uintptr_t a, uintptr_t lo, uintptr_t hi)
{
	return a >= lo && a <= hi - 8 && !(a & 7);
}

/*
 * The steps are trk_walk's (unwind.c) without its memo: a stack that
 * went through JIT code is not one the memo can vouch for.
 */
size_t trk_xframe_walk_on(struct trk_xf_regs *r, uintptr_t *out, size_t cap, enum trk_xf_end *end)
{
	struct trk_thr *t = trk_tls_thr;
	uintptr_t ra = r->ra, sp = r->sp, rbp = r->rbp, hi, cfa;
	size_t n = 0;

	*end = TRK_XF_FAIL;
	if (!t || !t->stack_hi || sp < t->stack_lo || sp >= t->stack_hi || ra < 4096)
		return 0;
	hi = t->stack_hi;
	for (;;) {
		const struct trk_rule *rl = trk_unwind_rule(t, ra - 1);

		if (rl->cfa_reg == TRK_CFA_CUT) {
			r->ra = ra;
			r->sp = sp;
			r->rbp = rbp;
			*end = TRK_XF_CUT;
			return n;
		}
		if (rl->cfa_reg != TRK_CFA_RSP && rl->cfa_reg != TRK_CFA_RBP)
			return n;
		if (n == cap) {
			*end = TRK_XF_FULL;
			return n;
		}
		out[n++] = ra - 1;
		if (rl->ra_off == 0)
			break;
		cfa = (rl->cfa_reg == TRK_CFA_RSP ? sp : rbp) + (uintptr_t)(intptr_t)rl->cfa_off;
		if (cfa <= sp || cfa > hi || !in8(cfa + (uintptr_t)(intptr_t)rl->ra_off, sp, hi))
			return n;
		ra = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)rl->ra_off);
		if (rl->rbp_off) {
			if (!in8(cfa + (uintptr_t)(intptr_t)rl->rbp_off, sp, hi))
				return n;
			rbp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)rl->rbp_off);
		}
		sp = cfa;
		if (ra == 0)
			break;
		if (ra < 4096)
			return n;
	}
	*end = TRK_XF_OUTERMOST;
	return n;
}

uint32_t trk_xframe_session(void)
{
	if (atomic_load_explicit(&trk_g.state, memory_order_acquire) != TRK_ON)
		return 0;
	return atomic_load_explicit(&trk_g.sess_gen, memory_order_acquire);
}

/* ---- the definition queue ----------------------------------------------- */

#define XQ_SLOTS 1024u /* 2 MiB, mapped on the first definition */
#define XQ_PAYLOAD (4 * WIRE_VARINT_MAX + 2 + WIRE_XFRAME_MAX_NAME + WIRE_XFRAME_MAX_FILE)

/*
 * A slot's tag holds its turn minus its index, so zeroed memory is a queue
 * whose every slot is free for the first lap: slot i (pos & mask) is free
 * for the writer at pos when tag + i == pos, and holds the record of pos
 * for the reader when tag + i == pos + 1.
 */
struct xq_slot {
	_Atomic uint64_t tag;
	uint32_t gen; /* the session it was defined in */
	uint32_t len;
	uint8_t p[XQ_PAYLOAD];
} __attribute__((aligned(64)));

struct xq {
	_Atomic uint64_t tail __attribute__((aligned(64))); /* next pos a writer takes */
	uint64_t head __attribute__((aligned(64)));	    /* next pos the reader takes (drain_lock) */
	struct xq_slot s[XQ_SLOTS];
};

static _Atomic(struct xq *) xq_map;
static _Atomic int xq_failed;
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t drain_buf[XQ_PAYLOAD]; /* drain_lock */

static struct xq *xq_get(void)
{
	struct xq *q = atomic_load_explicit(&xq_map, memory_order_acquire), *exp = NULL;
	void *m;

	if (likely(q != NULL) || atomic_load_explicit(&xq_failed, memory_order_relaxed))
		return q;
	m = mmap(NULL, sizeof(struct xq), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		atomic_store(&xq_failed, 1);
		return NULL;
	}
	if (!atomic_compare_exchange_strong_explicit(&xq_map, &exp, (struct xq *)m,
						     memory_order_acq_rel, memory_order_acquire)) {
		munmap(m, sizeof(struct xq));
		return exp;
	}
	return m;
}

/* encode - the record's payload into p (XQ_PAYLOAD bytes of room); its length. */
static size_t encode(uint8_t *p, uint64_t id, unsigned lang, unsigned kind, uint32_t line,
		     const char *name, size_t name_len, const char *file, size_t file_len)
{
	static const char dots[] = "...";
	size_t n = 0;

	n += wire_put_varint(p + n, id);
	p[n++] = (uint8_t)lang;
	p[n++] = (uint8_t)kind;
	n += wire_put_varint(p + n, line);
	if (name_len > WIRE_XFRAME_MAX_NAME)
		name_len = WIRE_XFRAME_MAX_NAME;
	n += wire_put_varint(p + n, name_len);
	if (name_len)
		memcpy(p + n, name, name_len);
	n += name_len;
	if (file_len > WIRE_XFRAME_MAX_FILE) {
		/* the end of a path says the most: "..." and the last bytes */
		size_t keep = WIRE_XFRAME_MAX_FILE - (sizeof(dots) - 1);

		n += wire_put_varint(p + n, WIRE_XFRAME_MAX_FILE);
		memcpy(p + n, dots, sizeof(dots) - 1);
		n += sizeof(dots) - 1;
		memcpy(p + n, file + (file_len - keep), keep);
		return n + keep;
	}
	n += wire_put_varint(p + n, file_len);
	if (file_len)
		memcpy(p + n, file, file_len);
	return n + file_len;
}

int trk_xframe_define(uint64_t id, unsigned lang, unsigned kind, uint32_t line, const char *name,
		      size_t name_len, const char *file, size_t file_len)
{
	int saved_errno = errno;
	uint32_t gen = trk_xframe_session();
	struct xq_slot *s;
	struct xq *q;
	uint64_t pos;

	if (id > WIRE_XFRAME_ID_MAX || lang > 255 || kind > 255 || (name_len && !name) ||
	    (file_len && !file))
		return -EINVAL;
	if (!gen)
		return -EPIPE;
	q = xq_get();
	errno = saved_errno;
	if (!q)
		return -ENOMEM;
	pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
	for (;;) {
		uint64_t i = pos & (XQ_SLOTS - 1);
		int64_t dif;

		s = &q->s[i];
		dif = (int64_t)(atomic_load_explicit(&s->tag, memory_order_acquire) + i - pos);
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
		} else if (dif < 0) {
			return -EAGAIN; /* the reader has not taken this slot's previous lap */
		} else {
			pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
		}
	}
	s->len = (uint32_t)encode(s->p, id, lang, kind, line, name, name_len, file, file_len);
	s->gen = gen;
	atomic_store_explicit(&s->tag, pos + 1 - (pos & (XQ_SLOTS - 1)), memory_order_release);
	return 0;
}

/* send - one record of the queue; 0, or -EAGAIN (not sent: a control record waits, or no room). */
static int send(const uint8_t *p, size_t len, bool from_timer)
{
	struct iovec v = { .iov_base = (void *)p, .iov_len = len };

	if (from_timer) {
		if (trk_sock_lock_room_ctl(len + 1 + WIRE_VARINT_MAX) == -EAGAIN)
			return -EAGAIN;
	} else {
		trk_sock_lock_room(len + 1 + WIRE_VARINT_MAX);
	}
	trk_sock_send_locked(WIRE_REC_XFRAME, &v, 1);
	pthread_mutex_unlock(&trk_g.sock_lock);
	return 0;
}

void trk_xf_drain(bool from_timer)
{
	struct xq *q = atomic_load_explicit(&xq_map, memory_order_acquire);

	if (!q)
		return;
	pthread_mutex_lock(&drain_lock);
	for (;;) {
		uint64_t pos = q->head, i = pos & (XQ_SLOTS - 1);
		struct xq_slot *s = &q->s[i];
		uint32_t len, gen;

		if (atomic_load_explicit(&s->tag, memory_order_acquire) + i != pos + 1)
			break; /* empty, or its writer is still writing: the next tick */
		len = s->len < XQ_PAYLOAD ? s->len : XQ_PAYLOAD;
		gen = s->gen;
		memcpy(drain_buf, s->p, len);
		if (gen == atomic_load_explicit(&trk_g.sess_gen, memory_order_acquire) &&
		    send(drain_buf, len, from_timer) == -EAGAIN)
			break; /* stays queued */
		atomic_store_explicit(&s->tag, pos + XQ_SLOTS - i, memory_order_release);
		q->head = pos + 1;
	}
	pthread_mutex_unlock(&drain_lock);
}

/*
 * The versioned names a producer outside the library looks up (track.h;
 * listed in preload/exports.map and inject/exports.map).
 */
__attribute__((visibility("default"), alias("trk_xframe_define"))) int
heaptap_xframe_define_v1(uint64_t id, unsigned lang, unsigned kind, uint32_t line, const char *name,
			 size_t name_len, const char *file, size_t file_len);
__attribute__((visibility("default"), alias("trk_xframe_set_producer"))) int
heaptap_xframe_set_producer_v1(trk_xframe_fn fn, void *arg);
__attribute__((visibility("default"), alias("trk_xframe_session"))) uint32_t
heaptap_xframe_session_v1(void);
