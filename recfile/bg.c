/* recfile/bg.c - the writer's chunk thread: encode, compress and write chunks off the caller's thread */
/* SPDX-License-Identifier: MIT */
/*
 * A full section buffer is handed over as a job instead of being written
 * inline: a raw section's payload buffer changes owner (the writer starts a
 * new one), an event chunk's columns are swapped with the spare set the
 * thread gave back after its last event chunk. The thread takes the jobs in
 * the order they came, so the file is the same, byte for byte, as the
 * writer makes inline: the same encoder and the same compression context
 * see the same payloads in the same order.
 *
 * Sharing: the thread alone uses the compression contexts, the encoder's
 * scratch, the output buffer and the fd (until rec_bg_stop joins it); the
 * caller's thread alone uses everything else. w->written is atomic. An
 * error of the thread is kept in bg->err and becomes the writer's (w->err)
 * at the next hand-over or at the stop; the jobs after it are dropped.
 *
 * Memory: at most one event chunk waits or is being encoded while the
 * writer fills the next (a hand-over waits for the spare set), so the
 * columns take twice their inline size (9 bytes an event, 512 Ki events a
 * chunk); raw jobs are few (a chunk per MiB of a table, or the flush of a
 * second) and at most REC_BG_JOBS wait.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include "recfile/internal.h"

#define REC_BG_JOBS 16

struct rec_job {
	int sec;
	uint64_t first;
	uint32_t count;
	uint32_t ninfos;	/* events: infos known when the chunk was cut */
	struct rec_wbuf buf;	/* raw sections: the payload, owned */
	struct rec_evcols ev;	/* events: the columns */
};

struct rec_bg {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a job queued, a job done, the stop */
	struct rec_job q[REC_BG_JOBS];
	size_t head, n;	   /* queued, including the one being worked on */
	int stop;
	int err;	   /* the thread's first error, a negative enum rec_err */
	int have_spare;	   /* spare holds the columns no job uses */
	struct rec_evcols spare;
	struct rec_wbuf out; /* event chunk payloads */
};

static void cols_free(struct rec_evcols *ev)
{
	free(ev->info);
	free(ev->op);
	free(ev->age);
	free(ev->weights.p);
}

/* one job, on the thread; 0 or a negative enum rec_err */
static int run_job(struct rec_writer *w, struct rec_bg *bg, struct rec_job *j)
{
	int ret;

	if (j->sec != REC_SEC_EVENTS)
		return rec_write_chunk(w, j->sec, j->buf.p, j->buf.len, j->first, j->count);
	ret = rec_encode_events(w, &j->ev, j->count, j->ninfos, &bg->out);
	if (ret)
		return ret;
	return rec_write_chunk(w, j->sec, bg->out.p, bg->out.len, j->first, j->count);
}

static void *bg_main(void *arg)
{
	struct rec_writer *w = arg;
	struct rec_bg *bg = w->bg;
	struct rec_job *j;
	int ret;

	pthread_mutex_lock(&bg->mu);
	for (;;) {
		while (!bg->n && !bg->stop)
			pthread_cond_wait(&bg->cv, &bg->mu);
		if (!bg->n)
			break;
		j = &bg->q[bg->head];
		ret = bg->err;
		pthread_mutex_unlock(&bg->mu);
		if (!ret)
			ret = run_job(w, bg, j);
		free(j->buf.p);
		j->buf = (struct rec_wbuf){ 0 };
		pthread_mutex_lock(&bg->mu);
		if (ret && !bg->err)
			bg->err = ret;
		if (j->sec == REC_SEC_EVENTS) {
			bg->spare = j->ev;
			bg->spare.weights.len = 0;
			bg->have_spare = 1;
		}
		bg->head = (bg->head + 1) % REC_BG_JOBS;
		bg->n--;
		pthread_cond_broadcast(&bg->cv);
	}
	pthread_mutex_unlock(&bg->mu);
	return NULL;
}

int rec_bg_start(struct rec_writer *w)
{
	struct rec_bg *bg;
	sigset_t all, old;
	int e;

	if (w->bg || w->discard)
		return 0;
	bg = calloc(1, sizeof(*bg));
	if (!bg)
		return -REC_E_NOMEM;
	bg->have_spare = 1;
	pthread_mutex_init(&bg->mu, NULL);
	pthread_cond_init(&bg->cv, NULL);
	w->bg = bg;
	/* the caller's signals stay with the caller's threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&bg->thread, NULL, bg_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		w->bg = NULL;
		pthread_cond_destroy(&bg->cv);
		pthread_mutex_destroy(&bg->mu);
		free(bg);
		return -REC_E_NOMEM;
	}
	return 0;
}

/*
 * rec_bg_submit - hand section sec's full buffer b (events: w->ev, b's
 * count and first) to the thread; the caller then resets b as after a
 * write. Waits while the queue is full or the last event chunk is still
 * being encoded. 0, or the thread's error (the job is not queued).
 */
int rec_bg_submit(struct rec_writer *w, int sec, struct rec_wbuf *b)
{
	struct rec_bg *bg = w->bg;
	struct rec_job *j;
	int ret;

	pthread_mutex_lock(&bg->mu);
	while (!bg->err &&
	       (bg->n == REC_BG_JOBS || (sec == REC_SEC_EVENTS && !bg->have_spare)))
		pthread_cond_wait(&bg->cv, &bg->mu);
	ret = bg->err;
	if (ret)
		goto out_unlock;
	j = &bg->q[(bg->head + bg->n) % REC_BG_JOBS];
	*j = (struct rec_job){ .sec = sec, .first = b->first, .count = b->count };
	if (sec == REC_SEC_EVENTS) {
		j->ev = w->ev;
		j->ninfos = w->ninfos;
		w->ev = bg->spare;
		bg->spare = (struct rec_evcols){ 0 };
		bg->have_spare = 0;
	} else {
		j->buf = *b;
		b->p = NULL;
		b->cap = 0;
	}
	bg->n++;
	pthread_cond_broadcast(&bg->cv);
out_unlock:
	pthread_mutex_unlock(&bg->mu);
	return ret;
}

/*
 * rec_bg_stop - let the thread write what is queued, join it and free it;
 * its error, if any, becomes the writer's. 0, or that error. No-op without
 * a thread.
 */
int rec_bg_stop(struct rec_writer *w)
{
	struct rec_bg *bg = w->bg;
	int ret;

	if (!bg)
		return 0;
	pthread_mutex_lock(&bg->mu);
	bg->stop = 1;
	pthread_cond_broadcast(&bg->cv);
	pthread_mutex_unlock(&bg->mu);
	pthread_join(bg->thread, NULL);
	ret = bg->err;
	/* the thread ends only with the queue empty: every column set is back */
	cols_free(&bg->spare);
	free(bg->out.p);
	pthread_cond_destroy(&bg->cv);
	pthread_mutex_destroy(&bg->mu);
	free(bg);
	w->bg = NULL;
	if (ret && !w->err)
		w->err = -ret;
	return ret;
}

int rec_writer_thread(struct rec_writer *w)
{
	return w ? rec_bg_start(w) : -REC_E_RANGE;
}
