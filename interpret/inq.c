/* interpret/inq.c - the input queue: a reader thread drains the socket into bounded memory */
/* SPDX-License-Identifier: MIT */
/*
 * Why a thread. The target's allocating threads wait for room in the
 * socket whenever heaptap does not read (docs/stream.md, "Reading"). The
 * interpreter's work comes in lumps: a recording chunk is encoded and
 * compressed in one go (several ms), tables grow by doubling, and right
 * after the library patches the GOT the stream jumps from nothing to
 * hundreds of MB/s. A single thread that reads and then interprets leaves
 * the socket full during every lump, and the target's threads wait that
 * long. Here one thread does nothing but read the socket into memory and
 * the interpreter takes bytes from that memory.
 *
 * Why a bound. The library ends a session by itself when heaptap takes no
 * byte for 10 s (track/sock.c): a heaptap that is stopped, hung, or whose
 * interpreter no longer gets anywhere must not hold the target's threads
 * forever. A reader that always read would hide a dead interpreter from
 * that rule, and its memory would grow with the target's whole stream. So
 * the queue holds at most `limit` bytes of blocks; when it is full the
 * reader stops reading, the socket fills, and the target is slowed to the
 * interpreter's pace (back-pressure, in steps of one block), or stopped
 * by its own rule if the interpreter never takes anything again. And the
 * reader also stops when the interpreter has taken nothing for
 * ITP_INQ_STALL_MS while bytes wait for it, so a slow stream does not
 * postpone that rule by the time it takes to fill the queue. Neither holds
 * once a stop was asked (itp_inq_stopping): the library then sends what
 * its buffers held and its end, and those must not wait for an
 * interpreter that is behind (or gets no CPU), else the library's rule
 * ends the session without END; the queue may then hold twice the limit.
 *
 *   socket --read--> [blk][blk][blk]...[tail blk being filled]   <= limit bytes of blocks
 *                      ^ head: the interpreter parses it in place (itp_inq_peek,
 *                        itp_inq_consume) or copies from it (itp_inq_take)
 *
 * Blocks are ITP_INQ_BLOCK bytes. The reader fills the tail block until
 * less than ITP_INQ_MIN_READ is free in it, then appends a new one, so a
 * trickle of small records does not take a block each (the memory bound
 * counts blocks, not bytes). The reader writes only above the tail's
 * published length and publishes it under the lock; the interpreter reads
 * only below it and recycles only blocks that are not the tail, so parsing
 * in place happens outside the lock. The reader reuses the tail from its
 * start only once all of it was consumed, and nothing peeked is used after
 * its consume.
 *
 * Waking. The interpreter waits in poll() on an eventfd (so a signal
 * still interrupts it, as it interrupted its poll on the socket before);
 * the reader writes the eventfd only when the interpreter said it waits.
 * The reader waits for room on a condition variable, and for the socket
 * in poll() together with a second eventfd that itp_inq_stop writes.
 * The reader thread blocks every signal: they stay with the interpreter's
 * thread, whose stop flag they set.
 *
 * Reuse. A block the interpreter emptied goes on a spare list (last in,
 * first out: the block reused next is the one still in the cache), not
 * back to malloc. A block is 128 KiB, at glibc's mmap threshold, so each
 * free and malloc was an munmap in the interpreter's thread and 32 page
 * faults (zeroed pages) in the reader's; on the bench service's stream
 * the queue refills all the time and that was about a tenth of heaptap's
 * CPU. Blocks are allocated only when the queue is longer than it ever
 * was, so memory stays within the limit (queued + spare <= the most
 * blocks ever queued). The spares beyond SPARE_BLOCKS go back to malloc
 * when the interpreter waited ITP_INQ_IDLE_MS or longer for input in vain
 * (an idle stream: itp_run waits 250 ms at a time), so a burst does not
 * keep its memory for the whole session.
 *
 * Without a thread (pthread_create failed) itp_inq_take reads the socket
 * itself, one block at a time: the old behaviour.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interpret/inq_internal.h"
#include "util/clock.h"

#define SPARE_BLOCKS 4 /* spare blocks kept when the stream is idle */
#define READER_NICE 10 /* the reader thread's nice value below the process's, when allowed */

struct blk {
	struct blk *next;
	size_t roff; /* the interpreter took [0, roff) */
	size_t wlen; /* the reader published [0, wlen) */
	uint8_t data[];
};

struct itp_inq {
	int fd;
	size_t limit;  /* bytes of blocks at most */
	size_t block;  /* bytes of data a block holds */
	pthread_mutex_t lock;
	pthread_cond_t room; /* the interpreter freed a block, or quit */
	struct blk *head, *tail, *spare;
	size_t nblocks, nspare;
	size_t pending;	 /* bytes published and not taken */
	int eof;	 /* the reader saw EOF (or ECONNRESET) */
	int err;	 /* the reader's read failed: errno */
	int quit;	 /* itp_inq_stop asked the reader to end */
	int waiting;	 /* the interpreter sleeps on data_efd */
	int data_efd;	 /* reader -> interpreter: bytes (or the end) arrived */
	int quit_efd;	 /* itp_inq_stop -> reader, wakes its poll on the socket */
	int threaded;	 /* the reader thread runs */
	pthread_t thr;
	uint64_t full_since; /* the reader waits for room since then (0: it does not) */
	uint64_t last_take_ns; /* the interpreter's last take of some bytes */
	int catch_up;	       /* the reader was held back and has not emptied the socket since */
	uint64_t stall_ns;     /* no take for this long with bytes waiting: stop reading */
	int stopping;	       /* itp_inq_stopping: the limit doubled, no stall rule */
	uint64_t progress_ns;  /* the reader's last read of some bytes, or the end of a wait for room */
	struct itp_input st;
};

static void efd_post(int efd)
{
	uint64_t one = 1;
	ssize_t w;

	do
		w = write(efd, &one, sizeof(one));
	while (w < 0 && errno == EINTR);
}

static void efd_clear(int efd)
{
	uint64_t v;

	(void)!read(efd, &v, sizeof(v));
}

/* A block to read into (lock held): the spare list, else malloc; NULL when out of memory. */
static struct blk *new_block_locked(struct itp_inq *q)
{
	struct blk *b = q->spare;

	if (b) {
		q->spare = b->next;
		q->nspare--;
	} else {
		b = malloc(sizeof(*b) + q->block);
		if (!b)
			return NULL;
		q->st.block_allocs++;
	}
	b->next = NULL;
	b->roff = b->wlen = 0;
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	q->nblocks++;
	if (q->nblocks * q->block > q->st.peak_bytes)
		q->st.peak_bytes = q->nblocks * q->block;
	return b;
}

/*
 * stuck_locked - the interpreter took nothing for stall_ns although bytes
 * wait for it: it is stuck (or stopped by a debugger), so stop reading as
 * if the queue were full. Otherwise a slow stream would keep the reader
 * going for up to limit bytes before the library's 10-s rule could start.
 */
static int stuck_locked(struct itp_inq *q, uint64_t now)
{
	return !q->stopping && q->pending && now - q->last_take_ns >= q->stall_ns;
}

/* the bytes of blocks the queue may hold: twice the limit once a stop was asked */
static size_t limit_locked(const struct itp_inq *q)
{
	return q->stopping ? 2 * q->limit : q->limit;
}

/*
 * The tail block to read into, with at least ITP_INQ_MIN_READ free, waiting
 * (lock held) while the queue is full or the interpreter stuck (*waited =
 * 1). NULL: quit, or out of memory (*oom).
 */
static struct blk *room_locked(struct itp_inq *q, int *oom, int *waited)
{
	struct blk *b = NULL;

	*oom = 0;
	*waited = 0;
	while (!q->quit) {
		/* all taken: the interpreter never reuses the tail, we may (it is not being read) */
		if (q->tail && q->tail->roff == q->tail->wlen)
			q->tail->roff = q->tail->wlen = 0;
		if (!stuck_locked(q, util_mono_ns())) {
			if (q->tail && q->block - q->tail->wlen >= ITP_INQ_MIN_READ) {
				b = q->tail;
				break;
			}
			if ((q->nblocks + 1) * q->block <= limit_locked(q) || !q->nblocks) {
				b = new_block_locked(q);
				*oom = !b;
				break;
			}
		}
		/* full: the socket fills now and the target waits for the interpreter */
		if (!q->full_since) {
			q->full_since = util_mono_ns();
			q->st.full_waits++;
		}
		pthread_cond_wait(&q->room, &q->lock);
	}
	if (q->full_since) {
		uint64_t w = util_mono_ns() - q->full_since;

		*waited = 1;
		q->progress_ns = util_mono_ns();
		q->st.full_ns += w;
		if (w > q->st.full_max_ns)
			q->st.full_max_ns = w;
		q->full_since = 0;
	}
	return b;
}

/*
 * One read into b above its published length; publishes it. Lock not held.
 * held: the queue was full just before. From then until a read empties the
 * socket, its backlog is back-pressure by design, not the reader's
 * lateness, and stays out of peak_socket. 1 = go on, 0 = ended.
 */
static int read_once(struct itp_inq *q, struct blk *b, int wait, int held)
{
	struct pollfd pfd[2] = {{.fd = q->fd, .events = POLLIN}, {.fd = q->quit_efd, .events = POLLIN}};
	ssize_t n;
	int left = 0, e = 0;

	if (wait) {
		int r = poll(pfd, 2, -1);

		if (r < 0 && errno != EINTR)
			e = errno;
		else if (r <= 0 || (pfd[1].revents & POLLIN))
			return 1; /* EINTR, or quit: the caller looks at q->quit */
	}
	if (!e) {
		n = read(q->fd, b->data + b->wlen, q->block - b->wlen);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return 1;
		if (n < 0 && errno == ECONNRESET) /* the target died: same as EOF */
			n = 0;
		if (n < 0)
			e = errno;
		else if (n > 0 && ioctl(q->fd, FIONREAD, &left) < 0)
			left = 0;
		pthread_mutex_lock(&q->lock);
		if (n > 0) {
			q->progress_ns = util_mono_ns();
			b->wlen += (size_t)n;
			q->pending += (size_t)n;
			q->st.bytes += (uint64_t)n;
			q->st.reads++;
			if (q->pending > q->st.peak_pending)
				q->st.peak_pending = q->pending;
			if (held)
				q->catch_up = 1;
			if (!left)
				q->catch_up = 0;
			if (!q->catch_up && (uint64_t)left > q->st.peak_socket)
				q->st.peak_socket = (uint64_t)left;
		} else if (n == 0) {
			q->eof = 1;
		}
	} else {
		pthread_mutex_lock(&q->lock);
	}
	if (e)
		q->err = e;
	if (q->waiting) {
		q->waiting = 0;
		efd_post(q->data_efd);
	}
	n = !q->eof && !q->err;
	pthread_mutex_unlock(&q->lock);
	return (int)n;
}

static void *reader_main(void *arg)
{
	struct itp_inq *q = arg;
	int nice_now;

	/*
	 * Run before the busy threads when data comes: this thread needs
	 * microseconds of CPU per read, and every millisecond it waits for a
	 * CPU is a millisecond the socket fills (2 MiB last 10 ms at the
	 * rates of bench/attach/run). Only with CAP_SYS_NICE (root); without
	 * it the call fails and the thread keeps the process's nice value.
	 */
	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
	if (!errno)
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
				  nice_now - READER_NICE < -20 ? -20 : nice_now - READER_NICE);
	for (;;) {
		struct blk *b;
		int oom, go, held;

		pthread_mutex_lock(&q->lock);
		b = room_locked(q, &oom, &held);
		if (oom) {
			q->err = ENOMEM;
			if (q->waiting) {
				q->waiting = 0;
				efd_post(q->data_efd);
			}
		}
		pthread_mutex_unlock(&q->lock);
		if (!b)
			break;
		go = read_once(q, b, 1, held);
		if (!go)
			break;
	}
	return NULL;
}

int itp_inq_start(struct itp_inq **out, int fd, size_t limit)
{
	struct itp_inq *q = calloc(1, sizeof(*q));
	sigset_t all, old;
	int ret = -ENOMEM;

	*out = NULL;
	if (!q)
		return -ENOMEM;
	q->fd = fd;
	q->block = ITP_INQ_BLOCK;
	q->limit = limit ? limit : ITP_INQ_LIMIT;
	q->stall_ns = (uint64_t)ITP_INQ_STALL_MS * 1000000ull;
	q->last_take_ns = q->progress_ns = util_mono_ns();
	if (q->limit < 2 * q->block)
		q->limit = 2 * q->block;
	q->data_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	q->quit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->data_efd < 0 || q->quit_efd < 0) {
		ret = -errno;
		goto out_close;
	}
	if (pthread_mutex_init(&q->lock, NULL))
		goto out_close;
	if (pthread_cond_init(&q->room, NULL))
		goto out_mutex;
	/* the reader takes no signal: the stop flag's handler runs in our thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	q->threaded = pthread_create(&q->thr, NULL, reader_main, q) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*out = q;
	return 0;

out_mutex:
	pthread_mutex_destroy(&q->lock);
out_close:
	if (q->data_efd >= 0)
		close(q->data_efd);
	if (q->quit_efd >= 0)
		close(q->quit_efd);
	free(q);
	return ret;
}

/* Without the thread: read one block's worth ourselves, waiting at most timeout_ms. */
static int read_inline(struct itp_inq *q, int timeout_ms)
{
	struct pollfd pfd = {.fd = q->fd, .events = POLLIN};
	struct blk *b;
	int oom, r, held;

	r = poll(&pfd, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? -EINTR : -errno;
	if (!r)
		return -EAGAIN;
	pthread_mutex_lock(&q->lock);
	b = room_locked(q, &oom, &held); /* never waits: nothing is queued when we get here */
	if (oom)
		q->err = ENOMEM;
	pthread_mutex_unlock(&q->lock);
	if (b)
		read_once(q, b, 0, held);
	return 0;
}

/* The emptied head block goes on the spare list (lock held). */
static void recycle_head_locked(struct itp_inq *q)
{
	struct blk *b = q->head;

	q->head = b->next;
	q->nblocks--;
	b->next = q->spare;
	q->spare = b;
	q->nspare++;
}

/* n bytes were taken, freed says a block was recycled (lock held): wake a reader waiting for room. */
static void took_locked(struct itp_inq *q, size_t n, int freed)
{
	q->pending -= n;
	if (n)
		q->last_take_ns = util_mono_ns();
	if (freed || (n && q->full_since))
		pthread_cond_signal(&q->room);
}

/* n bytes of the head block were taken (lock held): recycle it when emptied. */
static void taken_locked(struct itp_inq *q, size_t n)
{
	struct blk *b = q->head;
	int freed = 0;

	b->roff += n;
	if (b->roff == b->wlen && b != q->tail) {
		recycle_head_locked(q);
		freed = 1;
	}
	took_locked(q, n, freed);
}

/* Copy up to cap pending bytes (lock held), recycling emptied blocks. */
static size_t copy_locked(struct itp_inq *q, uint8_t *dst, size_t cap)
{
	size_t got = 0;
	int freed = 0;

	while (got < cap && q->head) {
		struct blk *b = q->head;
		size_t k = b->wlen - b->roff;

		if (k > cap - got)
			k = cap - got;
		memcpy(dst + got, b->data + b->roff, k);
		b->roff += k;
		got += k;
		if (b->roff < b->wlen || b == q->tail)
			break; /* more in it, or the reader still fills it */
		recycle_head_locked(q);
		freed = 1;
	}
	took_locked(q, got, freed);
	return got;
}

/*
 * The interpreter waited ITP_INQ_IDLE_MS or more and nothing came: give the
 * spares beyond SPARE_BLOCKS back (freed outside the lock).
 */
static void trim_spares(struct itp_inq *q)
{
	struct blk *b, *rest = NULL;
	size_t i;

	pthread_mutex_lock(&q->lock);
	if (q->nspare > SPARE_BLOCKS) {
		/* keep the first SPARE_BLOCKS (the most recently used) */
		for (b = q->spare, i = 1; i < SPARE_BLOCKS; i++)
			b = b->next;
		rest = b->next;
		b->next = NULL;
		q->nspare = SPARE_BLOCKS;
	}
	pthread_mutex_unlock(&q->lock);
	while ((b = rest)) {
		rest = b->next;
		free(b);
	}
}

/*
 * Nothing pending (lock held, released here): EOF, the read error, or wait
 * for bytes (reading them ourselves without the thread). 1 = look again,
 * else the value for the caller (0 at EOF, -errno).
 */
static int wait_unlock(struct itp_inq *q, int timeout_ms)
{
	struct pollfd pfd = {.fd = q->data_efd, .events = POLLIN};
	int r;

	if (q->err) {
		r = q->err;
		pthread_mutex_unlock(&q->lock);
		return -r;
	}
	if (q->eof) {
		pthread_mutex_unlock(&q->lock);
		return 0;
	}
	if (!q->threaded) {
		pthread_mutex_unlock(&q->lock);
		r = read_inline(q, timeout_ms);
		return r < 0 ? r : 1;
	}
	q->waiting = 1;
	pthread_mutex_unlock(&q->lock);
	r = poll(&pfd, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? -EINTR : -errno;
	if (!r) {
		if (timeout_ms >= ITP_INQ_IDLE_MS)
			trim_spares(q);
		return -EAGAIN;
	}
	efd_clear(q->data_efd);
	return 1;
}

int itp_inq_peek(struct itp_inq *q, const uint8_t **p, size_t *len, size_t have, int timeout_ms)
{
	for (;;) {
		struct blk *b;
		int r;

		pthread_mutex_lock(&q->lock);
		/* a block emptied while it was the tail, then the reader started another */
		while ((b = q->head) && b->roff == b->wlen && b != q->tail)
			taken_locked(q, 0);
		if (b && b->wlen - b->roff > have) {
			/* the reader only appends above wlen, and reuses nothing we did not consume */
			*p = b->data + b->roff;
			*len = b->wlen - b->roff;
			pthread_mutex_unlock(&q->lock);
			return 1;
		}
		if (have && b) {
			/*
			 * Nothing more yet: no wait with bytes pending, which the
			 * stall rule would take for a stuck interpreter.
			 */
			*p = b->data + b->roff;
			*len = have;
			pthread_mutex_unlock(&q->lock);
			return 2;
		}
		r = wait_unlock(q, timeout_ms);
		if (r != 1)
			return r;
	}
}

void itp_inq_consume(struct itp_inq *q, size_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&q->lock);
	taken_locked(q, n);
	pthread_mutex_unlock(&q->lock);
}

ssize_t itp_inq_take(struct itp_inq *q, void *dst, size_t cap, int timeout_ms)
{
	for (;;) {
		size_t got;
		int r;

		pthread_mutex_lock(&q->lock);
		/*
		 * The copy runs under the lock: it is a memcpy of at most the
		 * caller's buffer, and the reader only needs the lock to
		 * publish a read.
		 */
		got = cap ? copy_locked(q, dst, cap) : 0;
		if (got || !cap) {
			pthread_mutex_unlock(&q->lock);
			return (ssize_t)got;
		}
		r = wait_unlock(q, timeout_ms);
		if (r != 1)
			return r;
	}
}

uint64_t itp_inq_full_ns(struct itp_inq *q)
{
	uint64_t ns;

	pthread_mutex_lock(&q->lock);
	ns = q->st.full_ns + (q->full_since ? util_mono_ns() - q->full_since : 0);
	pthread_mutex_unlock(&q->lock);
	return ns;
}

void itp_inq_set_stall(struct itp_inq *q, unsigned ms)
{
	pthread_mutex_lock(&q->lock);
	q->stall_ns = (uint64_t)ms * 1000000ull;
	pthread_cond_signal(&q->room);
	pthread_mutex_unlock(&q->lock);
}

void itp_inq_stopping(struct itp_inq *q)
{
	pthread_mutex_lock(&q->lock);
	q->stopping = 1;
	pthread_cond_signal(&q->room);
	pthread_mutex_unlock(&q->lock);
}

uint64_t itp_inq_progress_ns(struct itp_inq *q, uint64_t now)
{
	uint64_t t;
	int unread = 0;

	pthread_mutex_lock(&q->lock);
	t = q->full_since ? now : q->progress_ns;
	pthread_mutex_unlock(&q->lock);
	/* bytes the reader has not taken yet (it waits for a CPU): the sender is not silent */
	if (t != now && ioctl(q->fd, FIONREAD, &unread) == 0 && unread > 0)
		t = now;
	return t;
}

int itp_inq_ended(struct itp_inq *q)
{
	int ended;

	pthread_mutex_lock(&q->lock);
	ended = q->eof || q->err;
	pthread_mutex_unlock(&q->lock);
	return ended;
}

void itp_inq_stop(struct itp_inq *q, struct itp_input *st)
{
	struct blk *b;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->quit = 1;
	pthread_cond_signal(&q->room);
	pthread_mutex_unlock(&q->lock);
	efd_post(q->quit_efd);
	if (q->threaded)
		pthread_join(q->thr, NULL);
	if (q->full_since) {
		q->st.full_ns += util_mono_ns() - q->full_since;
		q->full_since = 0;
	}
	if (st)
		*st = q->st;
	while ((b = q->head)) {
		q->head = b->next;
		free(b);
	}
	while ((b = q->spare)) {
		q->spare = b->next;
		free(b);
	}
	pthread_cond_destroy(&q->room);
	pthread_mutex_destroy(&q->lock);
	close(q->data_efd);
	close(q->quit_efd);
	free(q);
}
