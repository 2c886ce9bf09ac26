/* tests/e2e/threads.c - 8 threads allocate at once and free each other's blocks */
/* SPDX-License-Identifier: MIT */
/*
 * Target of threads.test. NTHREADS threads start together (a barrier); each
 * allocates PER_THREAD blocks from t_alloc_shared and hands every one to the
 * next thread through that thread's queue, and frees the blocks the
 * previous thread hands to it: every block of t_alloc_shared is freed by a
 * thread other than the one that allocated it, while other threads
 * allocate, so freed addresses are handed out again at once. Each thread
 * also leaks LEAKS blocks from t_alloc_leak.
 *
 * Exact, whatever the interleaving: t_alloc_shared has NTHREADS * PER_THREAD
 * calls, their bytes, and nothing leaked; t_alloc_leak has NTHREADS * LEAKS
 * calls and leaks all of its bytes. Temporary and peak depend on the
 * interleaving and are not printed.
 *
 * "threads churn" (threads--churn.test) instead starts CHURN_ROUNDS rounds
 * of CHURN_THREADS short-lived threads; each makes CHURN_ALLOCS allocations
 * from t_churn, frees all but one and exits at once, so what a thread
 * buffered must reach the recording when it ends, not at a later tick.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expect.h"

#define NTHREADS 8
#define PER_THREAD 20000
#define LEAKS 3
#define QCAP 256

/* a bounded queue of pointers, one per receiving thread */
struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void *slot[QCAP];
	unsigned head, tail; /* head - tail = items */
};

static struct queue queues[NTHREADS];
static pthread_barrier_t start;

static size_t shared_size(int t, int i)
{
	return 16 + (size_t)t * 8 + (size_t)(i % 7) * 24;
}

static size_t leak_size(int t, int i)
{
	return 100 * (size_t)(t + 1) + (size_t)i;
}

static void push(struct queue *q, void *p)
{
	pthread_mutex_lock(&q->lock);
	while (q->head - q->tail == QCAP)
		pthread_cond_wait(&q->cond, &q->lock);
	q->slot[q->head++ % QCAP] = p;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

/* pop one pointer if there is one (wait for it when wait is set) */
static void *pop(struct queue *q, int wait)
{
	void *p = NULL;

	pthread_mutex_lock(&q->lock);
	while (wait && q->head == q->tail)
		pthread_cond_wait(&q->cond, &q->lock);
	if (q->head != q->tail) {
		p = q->slot[q->tail++ % QCAP];
		pthread_cond_broadcast(&q->cond);
	}
	pthread_mutex_unlock(&q->lock);
	return p;
}

static __attribute__((noinline)) void *t_alloc_shared(size_t n)
{
	return malloc(n);
}

static __attribute__((noinline)) void *t_alloc_leak(size_t n)
{
	return malloc(n);
}

#define CHURN_ROUNDS 64
#define CHURN_THREADS 4
#define CHURN_ALLOCS 50

static size_t churn_size(int id, int i)
{
	return 24 + (size_t)id % 13 + (size_t)i * 4;
}

static __attribute__((noinline)) void *t_churn(size_t n)
{
	return malloc(n);
}

/* CHURN_ALLOCS allocations, all freed but the last, then end the thread */
static void *churn_worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	void *keep[CHURN_ALLOCS];

	for (int i = 0; i < CHURN_ALLOCS; i++)
		if (!(keep[i] = t_churn(churn_size(id, i))))
			abort();
	for (int i = 0; i < CHURN_ALLOCS - 1; i++)
		free(keep[i]);
	return NULL;
}

static int churn(void)
{
	unsigned long long calls = 0, bytes = 0, leaked = 0;

	for (int r = 0; r < CHURN_ROUNDS; r++) {
		pthread_t tid[CHURN_THREADS];

		for (int t = 0; t < CHURN_THREADS; t++)
			if (pthread_create(&tid[t], NULL, churn_worker,
					   (void *)(intptr_t)(r * CHURN_THREADS + t)))
				return 2;
		for (int t = 0; t < CHURN_THREADS; t++)
			pthread_join(tid[t], NULL);
	}
	for (int id = 0; id < CHURN_ROUNDS * CHURN_THREADS; id++) {
		for (int i = 0; i < CHURN_ALLOCS; i++) {
			calls++;
			bytes += churn_size(id, i);
		}
		leaked += churn_size(id, CHURN_ALLOCS - 1);
	}
	ex_printf("site t_churn calls=%llu bytes=%llu leaked=%llu\n", calls, bytes, leaked);
	ex_printf("total calls=%llu bytes=%llu leaked=%llu\n", calls, bytes, leaked);
	ex_printf("kind malloc calls=%llu bytes=%llu\n", calls, bytes);
	return 0;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	struct queue *out = &queues[(t + 1) % NTHREADS];
	struct queue *in = &queues[t];
	int freed = 0;
	volatile char *sink;

	pthread_barrier_wait(&start);
	for (int i = 0; i < LEAKS; i++) {
		sink = t_alloc_leak(leak_size(t, i));
		if (!sink)
			abort();
	}
	for (int i = 0; i < PER_THREAD; i++) {
		char *p = t_alloc_shared(shared_size(t, i));
		void *q;

		if (!p)
			abort();
		p[0] = (char)i;
		push(out, p);
		q = pop(in, 0);
		if (q) {
			free(q);
			freed++;
		}
	}
	while (freed < PER_THREAD) {
		free(pop(in, 1));
		freed++;
	}
	(void)sink;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[NTHREADS];
	unsigned long long calls = 0, bytes = 0, lcalls = 0, lbytes = 0;

	if (argc == 2 && !strcmp(argv[1], "churn"))
		return churn();

	pthread_barrier_init(&start, NULL, NTHREADS);
	for (int t = 0; t < NTHREADS; t++) {
		pthread_mutex_init(&queues[t].lock, NULL);
		pthread_cond_init(&queues[t].cond, NULL);
	}
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t))
			return 2;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(tid[t], NULL);

	for (int t = 0; t < NTHREADS; t++) {
		for (int i = 0; i < PER_THREAD; i++) {
			calls++;
			bytes += shared_size(t, i);
		}
		for (int i = 0; i < LEAKS; i++) {
			lcalls++;
			lbytes += leak_size(t, i);
		}
	}
	ex_printf("site t_alloc_shared calls=%llu bytes=%llu leaked=0\n", calls, bytes);
	ex_printf("site t_alloc_leak calls=%llu bytes=%llu leaked=%llu\n", lcalls, lbytes, lbytes);
	/* additive totals: exact, plus whatever libc allocated for the threads */
	ex_printf("total calls=%llu bytes=%llu leaked=%llu\n", calls + lcalls, bytes + lbytes, lbytes);
	ex_printf("kind malloc calls=%llu bytes=%llu\n", calls + lcalls, bytes + lbytes);
	return 0;
}
