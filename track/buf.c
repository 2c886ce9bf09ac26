/* track/buf.c - per-thread event buffers: creation, flushing, recycling */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. Each thread that calls a hook gets one struct
 * trk_thr (mmap'd, never unmapped), pushed once onto the global list that
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
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "track/internal.h"

__thread struct trk_thr *trk_tls_thr __attribute__((tls_model("initial-exec")));
__thread int trk_tls_guard __attribute__((tls_model("initial-exec")));

#define FRAMES_SLOTS (TRK_DEPTH_MAX + 32)

uint32_t trk_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static struct trk_thr *thr_alloc(void)
{
	struct trk_thr *t, *head;
	size_t size = sizeof(*t) + FRAMES_SLOTS * sizeof(uintptr_t);
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
	head = atomic_load(&trk_g.threads);
	do {
		t->next_all = head;
	} while (!atomic_compare_exchange_weak(&trk_g.threads, &head, t));
	return t;
}

static void bind(struct trk_thr *t, uint32_t tid)
{
	trk_thr_lock(t);
	t->tid = tid;
	t->len = 0;
	t->next_free = NULL;
	atomic_store(&t->exiting, 0);
	atomic_store(&t->in_use, 1);
	trk_thr_unlock(t);
}

struct trk_thr *trk_thr_new(uint32_t tid)
{
	struct trk_thr *t = thr_alloc();

	if (t)
		bind(t, tid);
	return t;
}

struct trk_thr *trk_thr_get(void)
{
	struct trk_thr *t = trk_tls_thr;

	if (likely(t != NULL))
		return t;
	t = trk_thr_new(trk_gettid());
	if (!t)
		return NULL;
	trk_tls_thr = t;
	/*
	 * May calloc for keys past the first 32; the caller holds the guard,
	 * so that allocation passes through unrecorded.
	 */
	if (trk_g.key_ok)
		pthread_setspecific(trk_g.key, t);
	return t;
}

void trk_thr_flush_locked(struct trk_thr *t)
{
	uint8_t hdr[2 * WIRE_VARINT_MAX];
	struct iovec v[2];
	size_t hl = 0;

	if (t->len == 0)
		return;
	hl += wire_put_varint(hdr + hl, t->tid);
	hl += wire_put_varint(hdr + hl, t->first_seq);
	v[0].iov_base = hdr;
	v[0].iov_len = hl;
	v[1].iov_base = t->data;
	v[1].iov_len = t->len;
	pthread_mutex_lock(&trk_g.sock_lock);
	if (trk_sock_send_locked(WIRE_REC_CHUNK, v, 2) < 0)
		atomic_fetch_add(&trk_g.dropped, 1);
	pthread_mutex_unlock(&trk_g.sock_lock);
	t->len = 0;
}

void trk_thr_flush_all(void)
{
	struct trk_thr *t;

	for (t = atomic_load(&trk_g.threads); t; t = t->next_all) {
		trk_thr_lock(t);
		trk_thr_flush_locked(t);
		trk_thr_unlock(t);
	}
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

void trk_thr_flush_idle(void)
{
	struct trk_thr *t;

	for (t = atomic_load(&trk_g.threads); t; t = t->next_all) {
		bool dead;

		if (!atomic_load_explicit(&t->in_use, memory_order_relaxed))
			continue;
		if (!trk_thr_trylock(t))
			continue; /* its owner is appending right now */
		trk_thr_flush_locked(t);
		dead = atomic_load(&t->exiting) && tid_gone(t->tid);
		trk_thr_unlock(t);
		if (dead)
			recycle(t);
	}
}

static void key_dtor(void *v)
{
	struct trk_thr *t = v;
	int saved = trk_tls_guard;

	trk_tls_guard = 1;
	trk_thr_lock(t);
	trk_thr_flush_locked(t);
	trk_thr_unlock(t);
	atomic_store(&t->exiting, 1);
	trk_tls_guard = saved;
}

int trk_thr_key_init(void)
{
	int ret = pthread_key_create(&trk_g.key, key_dtor);

	if (ret)
		return -ret;
	trk_g.key_ok = 1;
	return 0;
}
