/* track/buf.c - per-thread event buffers: creation, flushing, recycling */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. Each thread that calls a hook gets one struct
 * trk_thr (see internal.h for the owner/flusher handshake) (mmap'd, never unmapped), pushed once onto the global list that
 * the timer thread walks. A pthread key destructor flushes the buffer when
 * the thread exits and marks it "exiting"; the thread may still free memory
 * after that (later TLS destructors, glibc's own clean-up), so the buffer
 * keeps its owner until the timer sees the tid gone, and only then goes to
 * the free list for a new thread.
 *
 *   chunk record:  u8 WIRE_REC_CHUNK | varint len | varint tid |
 *                  varint first_seq | events (t->data[0 .. t->len))
 */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/sample_internal.h"
#include "track/unwind_internal.h"

/* trk_tls_thr and trk_tls_guard live in sample.c's trk_smp_tls (internal.h) */

#define FRAMES_SLOTS (TRK_DEPTH_MAX + 32)
#define END_NAP_NS 200000ull	  /* the end's wait for an appending owner looks this often */
#define END_ALIVE_NS 100000000ull /* and meanwhile sends a TICK this often */

uint32_t trk_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static struct trk_thr *thr_alloc(void)
{
	struct trk_thr *t, *head;
	size_t size = sizeof(*t) + 2 * FRAMES_SLOTS * sizeof(uintptr_t) +
		      2 * FRAMES_SLOTS * sizeof(uint32_t);
	void *m;

	pthread_mutex_lock(&trk_g.free_lock);
	t = trk_g.free_list;
	if (t)
		trk_g.free_list = t->next_free;
	pthread_mutex_unlock(&trk_g.free_lock);
	if (t)
		return t;

	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	t = m;
	t->frames = (uintptr_t *)(t + 1);
	t->prev = t->frames + FRAMES_SLOTS;
	t->nodes = (uint32_t *)(t->prev + FRAMES_SLOTS);
	t->prev_nodes = t->nodes + FRAMES_SLOTS;
	head = atomic_load(&trk_g.threads);
	do {
		t->next_all = head;
	} while (!atomic_compare_exchange_weak(&trk_g.threads, &head, t));
	return t;
}

/* bind - give a fresh or recycled buffer (not in use: no flusher touches it) an owner. */
static void bind(struct trk_thr *t, uint32_t tid)
{
	t->tid = tid;
	t->len = 0;
	t->nev = 0;
	t->next_free = NULL;
	t->prev_n = 0;
	t->skip = 0;
	t->seen = atomic_load(&t->pub);
	atomic_store(&t->flush_req, 0);
	atomic_store(&t->exiting, 0);
	atomic_store(&t->in_use, 1);
}

struct trk_thr *trk_thr_new(uint32_t tid)
{
	struct trk_thr *t = thr_alloc();

	if (t)
		bind(t, tid);
	return t;
}

struct trk_thr *trk_thr_get_slow(void)
{
	int e = errno; /* kept for the hooks that do not save it (free) */
	struct trk_thr *t = trk_thr_new(trk_gettid());

	if (!t) {
		errno = e;
		return NULL;
	}
	trk_tls_thr = t;
	trk_unwind_thread_init(t);
	/*
	 * May calloc for keys past the first 32; the caller holds the guard,
	 * so that allocation passes through unrecorded.
	 */
	if (trk_g.key_ok)
		pthread_setspecific(trk_g.key, t);
	errno = e;
	return t;
}

/*
 * flush_chunk - send t's events as one chunk (owner or claim holder). ctl:
 * the timer's idle flush, which gives way to a control record from heaptap
 * instead of waiting for room (false: nothing sent, the events stay).
 */
static bool flush_chunk(struct trk_thr *t, bool ctl)
{
	uint8_t hdr[2 * WIRE_VARINT_MAX];
	struct iovec v[2];
	size_t hl = 0;
	int e = errno; /* a hook flushing a full buffer: the free hook does not save errno */

	if (t->len == 0)
		return true;
	hl += wire_put_varint(hdr + hl, t->tid);
	hl += wire_put_varint(hdr + hl, t->first_seq);
	v[0].iov_base = hdr;
	v[0].iov_len = hl;
	v[1].iov_base = t->data;
	v[1].iov_len = t->len;
	/* a full socket is waited for without the lock */
	if (!ctl)
		trk_sock_lock_room(hl + t->len + 1 + WIRE_VARINT_MAX);
	else if (trk_sock_lock_room_ctl(hl + t->len + 1 + WIRE_VARINT_MAX) == -EAGAIN)
		return false;
	/* events of an ended session never go into a later session's stream */
	if (t->gen == atomic_load_explicit(&trk_g.sess_gen, memory_order_relaxed) &&
	    trk_sock_send_locked(WIRE_REC_CHUNK, v, 2) < 0)
		atomic_fetch_add(&trk_g.dropped, t->nev);
	pthread_mutex_unlock(&trk_g.sock_lock);
	t->len = 0;
	t->nev = 0;
	errno = e;
	return true;
}

void trk_thr_flush_locked(struct trk_thr *t)
{
	flush_chunk(t, false);
}

void trk_thr_wait_flusher(struct trk_thr *t)
{
	unsigned spins = 0;

	while (atomic_load_explicit(&t->claim, memory_order_acquire)) {
		if (++spins > 100)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

/* claim - flusher (flush_lock held): take t unless its owner is appending. */
static bool claim(struct trk_thr *t)
{
	atomic_store_explicit(&t->claim, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&t->busy, memory_order_acquire)) {
		atomic_store_explicit(&t->claim, 0, memory_order_release);
		return false;
	}
	return true;
}

static void unclaim(struct trk_thr *t)
{
	atomic_store_explicit(&t->claim, 0, memory_order_release);
}

static void flush_one(struct trk_thr *t)
{
	unsigned spins = 0;

	/* the owner may be waiting for heaptap to read: do not burn the CPU heaptap needs */
	while (!claim(t)) {
		if (++spins > 100)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
	trk_thr_flush_locked(t);
	unclaim(t);
}

void trk_thr_flush_one(struct trk_thr *t)
{
	pthread_mutex_lock(&trk_g.flush_lock);
	flush_one(t);
	pthread_mutex_unlock(&trk_g.flush_lock);
}

/*
 * wait_owner - the session's end (flush_lock held): claim t once its owner
 * is out of its append. On a loaded machine the owner can be preempted
 * there for seconds, or wait for room in the socket. So after a short spin
 * this sleeps (a yield loop kept the CPU the owner needed from it, and from
 * heaptap), and sends a TICK every END_ALIVE_NS meanwhile: heaptap takes a
 * library that sends nothing for seconds after its STOP for a dead one.
 */
static void wait_owner(struct trk_thr *t)
{
	struct timespec nap = { 0, END_NAP_NS };
	uint64_t alive = 0, now;
	unsigned spins = 0;

	while (!claim(t)) {
		if (++spins <= 100) {
			__builtin_ia32_pause();
			continue;
		}
		nanosleep(&nap, NULL);
		now = util_mono_ns();
		if (!alive) {
			alive = now + END_ALIVE_NS;
		} else if (now >= alive) {
			trk_send_tick(false);
			alive = util_mono_ns() + END_ALIVE_NS;
		}
	}
}

void trk_thr_flush_all(void)
{
	struct trk_thr *t;

	pthread_mutex_lock(&trk_g.flush_lock);
	for (t = atomic_load(&trk_g.threads); t; t = t->next_all) {
		if (!atomic_load(&t->in_use))
			continue;
		wait_owner(t);
		trk_thr_flush_locked(t);
		unclaim(t);
	}
	pthread_mutex_unlock(&trk_g.flush_lock);
}

/* tid_gone - whether the thread tid of this process has exited. */
static bool tid_gone(uint32_t tid)
{
	return syscall(SYS_tgkill, getpid(), (pid_t)tid, 0) < 0 && errno == ESRCH;
}

static void recycle(struct trk_thr *t)
{
	atomic_store(&t->in_use, 0);
	pthread_mutex_lock(&trk_g.free_lock);
	t->next_free = trk_g.free_list;
	trk_g.free_list = t;
	pthread_mutex_unlock(&trk_g.free_lock);
}

/*
 * trk_thr_flush_idle - a buffer that got events since the last tick has a
 * running owner: it is asked (flush_req) and flushes at its next event,
 * without waiting on us. One that got none is flushed here, unless its
 * owner is appending right now; so an idle thread's events wait at most
 * two ticks.
 */
void trk_thr_flush_idle(void)
{
	struct trk_thr *t;

	pthread_mutex_lock(&trk_g.flush_lock);
	for (t = atomic_load(&trk_g.threads); t; t = t->next_all) {
		uint64_t pub;
		bool dead;

		if (!atomic_load_explicit(&t->in_use, memory_order_acquire))
			continue;
		pub = atomic_load_explicit(&t->pub, memory_order_relaxed);
		if (pub != t->seen) {
			t->seen = pub;
			atomic_store_explicit(&t->flush_req, 1, memory_order_relaxed);
			continue;
		}
		if (!claim(t))
			continue;
		if (!flush_chunk(t, true)) {
			/* heaptap sent a control record: the timer reads it first */
			unclaim(t);
			break;
		}
		dead = atomic_load(&t->exiting) && tid_gone(t->tid);
		unclaim(t);
		if (dead)
			recycle(t);
	}
	pthread_mutex_unlock(&trk_g.flush_lock);
}

static void key_dtor(void *v)
{
	struct trk_thr *t = v;
	int saved = trk_tls_guard;

	trk_tls_guard = 1;
	trk_thr_enter(t);
	trk_thr_flush_locked(t);
	trk_thr_exit(t);
	atomic_store(&t->exiting, 1);
	trk_tls_guard = saved;
}

int trk_thr_key_init(void)
{
	int ret;

	if (trk_g.key_ok)
		return 0; /* one key per process, kept across sessions */
	ret = pthread_key_create(&trk_g.key, key_dtor);
	if (ret)
		return -ret;
	trk_g.key_ok = 1;
	return 0;
}
