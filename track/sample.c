/* track/sample.c - sampling mode: Poisson sampling by bytes, the sampled-pointer set, exact site counts */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target (hooks of any thread, the timer thread, trk_start /
 * trk_end). Never prints, never allocates through the hooked allocator
 * (mmap only), keeps errno.
 *
 * Sampling by bytes, as jemalloc and tcmalloc do it
 * -------------------------------------------------
 * With a mean of R bytes, each thread draws the bytes until its next sample
 * from an exponential distribution of mean R (xorshift64* per thread, seeded
 * per thread). An allocation of s bytes takes s from it; the one that
 * reaches zero is sampled and a new distance is drawn. Sample points then
 * form a Poisson process over the allocated bytes, so an allocation of s
 * bytes is sampled with probability p = 1 - exp(-s/R), independent of what
 * came before, and it is sent with the weight s / p (the bytes it stands
 * for; weight / s allocations): the unbiased estimate jemalloc's and
 * tcmalloc's profiles use. Only sampled allocations are unwound and sent
 * (WIRE_EV_ALLOC_W).
 *
 * The hot path
 * ------------
 * Every allocation and free of the program passes the hooks, so the usual
 * case is inlined there (internal.h) and kept to a few loads and stores:
 *
 *   malloc(n) --> trk_smp_fast(n): sampling, thread set up, left > n?
 *                   |yes                              |no: full path,
 *                   v                                 v    trk_smp_alloc
 *                 real malloc; left -= n;           (first use, new rate,
 *                 site[h(ra)] += 2^40 + n            a sample, a flush)
 *
 * no errno save, no clock, no lock instruction, no call besides the real
 * function; the site's home slot of a direct-mapped per-thread table holds
 * it in the usual case (probing, the "other" slot and flushes are out of
 * line). The hot path touches one global cache line (trk_smp: generation,
 * filter switch, real functions), the thread's TLS block and its slot.
 *
 * Frees of sampled pointers only
 * ------------------------------
 *   free(p) --> bits[h(p)] == 0 ?  --yes--> not sampled: nothing sent (one load)
 *                     | no (maybe)
 *                     v
 *               lock; p in set? --> remove, FREE sent; else nothing sent
 *
 * The set holds the live sampled pointers (open addressing, linear probing,
 * deletion by backward shift, under a spin lock: it changes only at samples
 * and at their frees, a few thousand times a second at 512K). In front of it
 * sits a counting filter, 64 Ki one-byte counters indexed by a hash of the
 * pointer, changed under the lock, and a bitmap of the same index (8 KiB,
 * stays in L1) whose bit is set while the counter is non-zero, read without
 * a lock: the bit is set before the sampled allocation returns to the
 * program, so any free of that pointer (which the program orders after the
 * allocation) sees it. An unsampled free costs a multiply and one load; a
 * false "maybe" (about live samples / 65536 of the frees) costs the lock
 * and a probe.
 *
 * When exact frees cannot be promised the filter is switched off
 * (trk_smp.filter = 0) and every free is sent, as in full tracing: after the
 * set filled up (SET_MAX live samples), and after sampling was switched on
 * in a session that had been tracing fully (the blocks allocated then must
 * be seen freed; nobody knows which of them are still live). The
 * interpreter ignores frees of pointers it does not know.
 *
 * Exact counts per call site
 * --------------------------
 * While sampling, every allocation also adds 1 and its size to a per-thread
 * table keyed by its return address (no unwind): 1024 slots of 16 bytes,
 * direct-mapped by a multiplicative hash, 8 probes on a collision, then an
 * "other" slot, so the totals stay exact. A slot's counts are packed in one
 * word (calls << 40 | bytes, internal.h), so the hot path adds once; before
 * either field could overflow (calls 2^23, bytes 2^39) the slow path moves
 * the word into the slot's wide counters (count_add), inside the thread's
 * sequence lock (fseq odd), which readers retry on (trk_smp_site_read).
 * Only the owner writes its table (relaxed atomic stores, no lock
 * instruction); the timer thread reads every slot and sends what changed
 * since its last look as WIRE_REC_SITES about once a second and once more
 * before END.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/sample_internal.h"
#include "util/hash.h"

/* gen never 0: a new thread's key is 0; a line of its own (read by every hook) */
struct trk_smp_global trk_smp TRK_HIDDEN __attribute__((aligned(64))) = { .gen = 1 };
__thread struct trk_smp_tls trk_smp_tls __attribute__((tls_model("initial-exec")));
_Atomic uint64_t trk_smp_bits[1u << (TRK_SMP_FILTER_BITS - 6)];

#define FILTER_SIZE (1u << TRK_SMP_FILTER_BITS)
#define SET_BITS 17
#define SET_CAP (1u << SET_BITS)	/* at most 1 MiB of pointers */
#define SET_MIN (1u << 12)		/* to begin with: 32 KiB, grown by doubling */
#define SET_MAX (SET_CAP / 4 * 3)
#define SITE_PROBES 8

/*
 * The sampled-pointer set and its filter. The set begins with SET_MIN slots
 * and doubles (rehashed under the lock) whenever it is 3/4 full, up to
 * SET_CAP: a fresh mapping is never written at start (a memset of 1 MiB at
 * every start faulted in 256 pages, 0.6 ms of the target's start-up), and a
 * program with few live samples touches a few pages. The filter is mapped
 * once and cleared by the next session only if it was used.
 */
static struct {
	atomic_flag lock;
	uintptr_t *slot;		/* cap pointers, 0 = empty */
	size_t cap;			/* a power of two, SET_MIN .. SET_CAP */
	_Atomic uint8_t *filter;	/* FILTER_SIZE counters, 255 = stuck (never lowered);
					   trk_smp_bits mirrors counter != 0 */
	size_t n;
	bool used;			/* anything inserted since the last reset */
} pset = { .lock = ATOMIC_FLAG_INIT };

/* Every thread's sampling state, for the timer (pushed once, never removed). */
_Atomic(struct trk_smp_thr *) trk_smp_threads;

static inline size_t set_at(uintptr_t p)
{
	return (size_t)(util_fmix64(p) & (pset.cap - 1));
}

static void *map_zero(size_t len)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

/*
 * set_lock - the set's spin lock. Held for a probe or two, but its holder
 * may be preempted (more threads than cores): after a short spin the
 * waiter yields instead of burning its time slice.
 */
static void set_lock(void)
{
	unsigned n = 0;

	while (atomic_flag_test_and_set_explicit(&pset.lock, memory_order_acquire)) {
		if (++n < 100) {
			__builtin_ia32_pause();
		} else {
			sched_yield();
			n = 0;
		}
	}
}

/* filter_raise / filter_lower - a counter of the filter and its bit (lock held). */
static void filter_raise(uintptr_t p)
{
	uint32_t f = trk_smp_filter_at(p);
	uint8_t v = atomic_load_explicit(&pset.filter[f], memory_order_relaxed);

	if (v == 255)
		return;
	atomic_store_explicit(&pset.filter[f], v + 1, memory_order_relaxed);
	if (!v) {
		_Atomic uint64_t *w = &trk_smp_bits[f >> 6];

		/* only lock holders write the bitmap: a plain read-modify-write */
		atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) |
					     (1ull << (f & 63)),
				      memory_order_relaxed);
	}
}

static void filter_lower(uintptr_t p)
{
	uint32_t f = trk_smp_filter_at(p);
	uint8_t v = atomic_load_explicit(&pset.filter[f], memory_order_relaxed);

	if (!v || v == 255)
		return;
	atomic_store_explicit(&pset.filter[f], v - 1, memory_order_relaxed);
	if (v == 1) {
		_Atomic uint64_t *w = &trk_smp_bits[f >> 6];

		atomic_store_explicit(w, atomic_load_explicit(w, memory_order_relaxed) &
					     ~(1ull << (f & 63)),
				      memory_order_relaxed);
	}
}

static void set_unlock(void)
{
	atomic_flag_clear_explicit(&pset.lock, memory_order_release);
}

/* set_grow - double the set (lock held): a new mapping, every member rehashed; 0 or -ENOMEM. */
static int set_grow(void)
{
	uintptr_t *old = pset.slot;
	size_t old_cap = pset.cap, i, j;

	pset.slot = map_zero(2 * old_cap * sizeof(*pset.slot));
	if (!pset.slot) {
		pset.slot = old;
		return -ENOMEM;
	}
	pset.cap = 2 * old_cap;
	for (i = 0; i < old_cap; i++) {
		if (!old[i])
			continue;
		for (j = set_at(old[i]); pset.slot[j]; j = (j + 1) & (pset.cap - 1))
			;
		pset.slot[j] = old[i];
	}
	munmap(old, old_cap * sizeof(*old));
	return 0;
}

/* set_insert - add p (lock held); 0, or -ENOSPC when the set is full (or cannot grow). */
static int set_insert(uintptr_t p)
{
	size_t i;

	if (pset.n >= SET_MAX)
		return -ENOSPC;
	if (pset.n >= pset.cap / 4 * 3 && set_grow() < 0)
		return -ENOSPC;
	pset.used = true;
	for (i = set_at(p); pset.slot[i]; i = (i + 1) & (pset.cap - 1))
		if (pset.slot[i] == p)
			return 0; /* already there (a block the program leaked into reuse) */
	pset.slot[i] = p;
	pset.n++;
	filter_raise(p);
	return 0;
}

/* set_take - remove p (lock held); whether it was there. Backward-shift deletion. */
static bool set_take(uintptr_t p)
{
	size_t i, j, home;

	for (i = set_at(p);; i = (i + 1) & (pset.cap - 1)) {
		if (!pset.slot[i])
			return false;
		if (pset.slot[i] == p)
			break;
	}
	/* shift later members of the probe run back over the hole */
	for (j = (i + 1) & (pset.cap - 1); pset.slot[j]; j = (j + 1) & (pset.cap - 1)) {
		home = set_at(pset.slot[j]);
		/* the entry at j may move to i when i lies cyclically in [home, j) */
		if (((j - home) & (pset.cap - 1)) >= ((j - i) & (pset.cap - 1))) {
			pset.slot[i] = pset.slot[j];
			i = j;
		}
	}
	pset.slot[i] = 0;
	pset.n--;
	filter_lower(p);
	return true;
}

void trk_smp_set_stats(size_t *n, size_t *cap)
{
	set_lock();
	*n = pset.n;
	*cap = pset.slot ? pset.cap : 0;
	set_unlock();
}

bool trk_smp_free_take(const void *ptr)
{
	bool found;

	set_lock();
	found = set_take((uintptr_t)ptr);
	set_unlock();
	return found;
}

void trk_smp_keep(const void *ptr)
{
	int ret;

	if (!atomic_load_explicit(&trk_smp.filter, memory_order_relaxed))
		return;
	set_lock();
	ret = set_insert((uintptr_t)ptr);
	set_unlock();
	if (ret < 0)
		atomic_store(&trk_smp.filter, 0); /* full: every free is sent from now on */
}

/* ---- per-thread state ------------------------------------------------------ */

static inline uint64_t rng_next(struct trk_smp_thr *s)
{
	uint64_t x = s->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* draw - bytes until the next sample: exponential with mean rate, at least 1. */
static int64_t draw(struct trk_smp_thr *s, uint64_t rate)
{
	/* u uniform in (0, 1]: 53 random bits, never 0 */
	double u = (double)((rng_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double d = -log(u) * (double)rate;

	if (d < 1)
		return 1;
	if (d > (double)INT64_MAX / 2)
		return INT64_MAX / 2;
	return (int64_t)d;
}

static void seed_thread(struct trk_smp_thr *s, uint32_t tid)
{
	uint64_t seed = trk_smp.seed;

	/* a fixed seed gives the main thread (tid == pid) the same sequence in every run */
	if (!seed)
		seed = util_mono_ns() ^ (uintptr_t)s;
	s->rng = util_fmix64(seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(uint32_t)(tid - (uint32_t)trk_g.pid));
	if (!s->rng)
		s->rng = 0x853c49e6748fea9bULL;
}

static struct trk_smp_thr *thr_new(struct trk_thr *t)
{
	struct trk_smp_thr *s = map_zero(sizeof(*s)), *head;

	if (!s)
		return NULL;
	head = atomic_load(&trk_smp_threads);
	do
		s->next = head;
	while (!atomic_compare_exchange_weak(&trk_smp_threads, &head, s));
	t->smp = s;
	return s;
}

/*
 * count_add - one call of size bytes for slot i (owner only): the packed
 * add of the hot path when it fits, else a flush: the packed counts and
 * this call go into the wide counters, inside fseq odd, so a reader never
 * sees the sum's parts moved halfway (trk_smp_site_read).
 */
static void count_add(struct trk_smp_thr *s, size_t i, size_t size)
{
	struct trk_smp_site *e = &s->site[i];
	struct trk_smp_wide *d = &s->wide[i];
	uint64_t p = atomic_load_explicit(&e->packed, memory_order_relaxed), w;
	uint32_t q;

	if ((uint64_t)size < ((uint64_t)1 << 39)) {
		w = p + (TRK_SMP_CALL_ONE + size);
		if (!(w & TRK_SMP_GUARD)) {
			atomic_store_explicit(&e->packed, w, memory_order_relaxed);
			return;
		}
	}
	q = atomic_load_explicit(&s->fseq, memory_order_relaxed);
	atomic_store_explicit(&s->fseq, q + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&d->calls,
			      atomic_load_explicit(&d->calls, memory_order_relaxed) + (p >> 40) + 1,
			      memory_order_relaxed);
	atomic_store_explicit(&d->bytes,
			      atomic_load_explicit(&d->bytes, memory_order_relaxed) +
				      (p & TRK_SMP_BYTES_MASK) + size,
			      memory_order_relaxed);
	atomic_store_explicit(&e->packed, 0, memory_order_relaxed);
	atomic_store_explicit(&s->fseq, q + 2, memory_order_release);
}

void trk_smp_site_read(struct trk_smp_thr *s, size_t i, uint64_t *calls, uint64_t *bytes)
{
	uint32_t q;
	uint64_t p, c, b;

	for (;;) {
		q = atomic_load_explicit(&s->fseq, memory_order_acquire);
		p = atomic_load_explicit(&s->site[i].packed, memory_order_relaxed);
		c = atomic_load_explicit(&s->wide[i].calls, memory_order_relaxed);
		b = atomic_load_explicit(&s->wide[i].bytes, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (!(q & 1) && atomic_load_explicit(&s->fseq, memory_order_relaxed) == q)
			break;
		__builtin_ia32_pause();
	}
	*calls = c + (p >> 40);
	*bytes = b + (p & TRK_SMP_BYTES_MASK);
}

/* count_site - exact calls and bytes of the call site ra (owner only): probe, insert, "other". */
static void count_site(struct trk_smp_thr *s, uintptr_t ra, size_t size)
{
	size_t i = trk_smp_site_at(ra), k;

	for (k = 0; k < SITE_PROBES; k++) {
		size_t j = (i + k) & (TRK_SMP_SITES - 1);
		uintptr_t cur = atomic_load_explicit(&s->site[j].ra, memory_order_relaxed);

		if (cur == ra) {
			count_add(s, j, size);
			return;
		}
		if (!cur) {
			atomic_store_explicit(&s->site[j].ra, ra, memory_order_release);
			count_add(s, j, size);
			return;
		}
	}
	count_add(s, TRK_SMP_SITES, size); /* "other" */
}

/*
 * set_left - a new distance d to the next sample: at most TRK_SMP_LEFT_MAX
 * in the thread's left (so the hot path's sizes fit the packed count), the
 * rest kept in s->rest and taken when left runs out.
 */
static void set_left(struct trk_smp_tls *l, struct trk_smp_thr *s, int64_t d)
{
	if (d > TRK_SMP_LEFT_MAX) {
		l->left = TRK_SMP_LEFT_MAX;
		s->rest = (uint64_t)(d - TRK_SMP_LEFT_MAX);
	} else {
		l->left = d;
		s->rest = 0;
	}
}

uint64_t trk_smp_alloc(struct trk_thr *t, const void *p, size_t size, const void *ra)
{
	struct trk_smp_tls *l = &trk_smp_tls;
	struct trk_smp_thr *s = t->smp;
	uint64_t gen;
	double w;

	if (unlikely(atomic_load_explicit(&trk_tl_on, memory_order_relaxed))) {
		/* no timer thread: the hooks' slow path does its work (timer.c) */
		trk_tl_poll(t);
		if (atomic_load_explicit(&trk_g.state, memory_order_relaxed) != TRK_ON)
			return 0; /* a STOP ended the session: nothing more is sent */
	}
	gen = atomic_load_explicit(&trk_smp.gen, memory_order_acquire);
	if (unlikely(!s)) {
		s = thr_new(t);
		if (!s) {
			atomic_fetch_add(&trk_g.dropped, 1);
			return 0;
		}
		s->seed_gen = trk_smp.seed_gen;
		seed_thread(s, t->tid);
	}
	count_site(s, (uintptr_t)ra, size);
	if (unlikely(l->k.gen != (uint32_t)gen || l->s != s)) {
		/* a new rate (or session, or thread): a new distance with its mean */
		l->k.gen = 0; /* the fast path stays off until it is drawn, and with rate 0 */
		l->s = s;
		if (s->seed_gen != trk_smp.seed_gen) {
			s->seed_gen = trk_smp.seed_gen;
			seed_thread(s, t->tid);
		}
		s->rate = atomic_load_explicit(&trk_smp.rate, memory_order_relaxed);
		if (!s->rate)
			return 0;
		set_left(l, s, draw(s, s->rate));
		/*
		 * the fast path does not look at the state: its key is set only
		 * while the session records. trk_smp_stop bumps gen after the
		 * state left ON, so if gen (acquire) is still the one read above
		 * and the state was ON, a later bump makes the key stale.
		 */
		if (atomic_load_explicit(&trk_g.state, memory_order_acquire) == TRK_ON)
			l->k.gen = (uint32_t)gen;
	}
	if (likely((uint64_t)l->left > size)) {
		l->left -= (int64_t)size;
		return 0;
	}
	if (unlikely(s->rest) && (uint64_t)l->left + s->rest > size) {
		/* the distance was longer than left holds: not a sample yet */
		set_left(l, s, (int64_t)((uint64_t)l->left + s->rest - size));
		return 0;
	}
	set_left(l, s, draw(s, s->rate));
	/* weight = size / P(sampled), P = 1 - exp(-size/rate) */
	w = (double)size / -expm1(-(double)size / (double)s->rate);
	if (p)
		trk_smp_keep(p);
	return w < (double)size ? size : w >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)(w + 0.5);
}

/* ---- rate changes ------------------------------------------------------------ */

void trk_smp_set_rate(uint64_t rate, uint64_t seed)
{
	uint64_t old = atomic_load(&trk_smp.rate);

	if (seed && seed != trk_smp.seed) {
		/* the same seed again (the timer reading the start's record) changes nothing */
		trk_smp.seed = seed;
		trk_smp.seed_gen++; /* read by the hooks after gen (below) changed */
		if (rate == old)
			atomic_fetch_add_explicit(&trk_smp.gen, 1, memory_order_release);
	}
	if (rate == old)
		return; /* e.g. the start's rate read again by the timer */
	if (rate && !pset.slot) {
		/* the set could not be mapped (trk_smp_start): sample, but send every free */
		atomic_store(&trk_smp.filter, 0);
	} else if (rate && !old && atomic_load(&trk_g.state) == TRK_ON) {
		/* blocks allocated while tracing fully may be freed later: send every free */
		atomic_store(&trk_smp.filter, 0);
	} else if (!rate) {
		atomic_store(&trk_smp.filter, 0);
	}
	atomic_store(&trk_smp.rate, rate);
	atomic_fetch_add_explicit(&trk_smp.gen, 1, memory_order_release);
}

int trk_smp_ctl(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	uint64_t rate, seed = 0;

	if (wire_get_varint(&p, end, &rate) < 0)
		return -EINVAL;
	if (p < end && wire_get_varint(&p, end, &seed) < 0)
		return -EINVAL;
	trk_smp_set_rate(rate, seed);
	return 0;
}

/*
 * peek_start_rate - heaptap sends WIRE_CTL_SAMPLE right after it accepted
 * the connection; if it arrives within wait_ms, start with it (the timer
 * reads the same record again later, which then changes nothing). Only
 * inject/ waits (in its own thread, before any GOT slot points at the
 * hooks, so the target does not wait); preload/ is given the rate in
 * HEAPTAP_SAMPLE and never gets here.
 */
static void peek_start_rate(int fd, unsigned wait_ms)
{
	uint8_t b[2 * (2 + 2 * WIRE_VARINT_MAX)];
	const uint8_t *p = b + 1, *end;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t len, mask;
	ssize_t n;

	if (poll(&pfd, 1, wait_ms > INT32_MAX ? INT32_MAX : (int)wait_ms) <= 0 ||
	    !(pfd.revents & POLLIN))
		return;
	n = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	if (n < 2 || b[0] != WIRE_CTL_SAMPLE)
		return;
	end = b + n;
	if (wire_get_varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
		return;
	trk_smp_ctl(p, (size_t)len);
	/* heaptap sends its WIRE_CTL_XFRAMES in the same write: in force before any hook records */
	p += len;
	if (end - p < 2 || *p++ != WIRE_CTL_XFRAMES || wire_get_varint(&p, end, &len) < 0 ||
	    len > (uint64_t)(end - p) || wire_get_varint(&p, p + len, &mask) < 0)
		return;
	atomic_store_explicit(&trk_xf_off, (uint32_t)mask, memory_order_relaxed);
}

void trk_smp_start(int fd, const struct trk_config *cfg)
{
	/*
	 * the hot paths jump to these (their one global line): set before the
	 * filter and any key can be (both after the gen bump below, release)
	 */
	trk_smp.malloc = trk_g.real.malloc;
	trk_smp.free = trk_g.real.free;
	trk_smp.calloc = trk_g.real.calloc;
	trk_smp.realloc = trk_g.real.realloc;
	/* a new session starts fully tracing with an empty set, unless asked otherwise (below) */
	atomic_store(&trk_smp.rate, 0);
	atomic_store(&trk_smp.filter, 0);
	trk_smp.seed = 0;
	atomic_fetch_add(&trk_smp.gen, 1);
	set_lock();
	if (!pset.filter)
		pset.filter = map_zero(FILTER_SIZE); /* fresh: zero, untouched */
	if (pset.slot && pset.used) {
		/* an earlier session's set: a fresh small one (its pages are not written) */
		munmap(pset.slot, pset.cap * sizeof(*pset.slot));
		pset.slot = NULL;
	}
	if (!pset.slot && pset.filter) {
		pset.slot = map_zero(SET_MIN * sizeof(*pset.slot));
		pset.cap = SET_MIN;
	}
	if (pset.used) {
		memset((void *)pset.filter, 0, FILTER_SIZE);
		memset((void *)trk_smp_bits, 0, sizeof(trk_smp_bits));
		pset.used = false;
	}
	pset.n = 0;
	set_unlock();
	if (pset.slot)
		atomic_store(&trk_smp.filter, 1);
	trk_smp_sites_reset(); /* counts of earlier sessions are not this one's */
	if (cfg->sample_given)
		trk_smp_set_rate(cfg->sample_rate, cfg->sample_seed);
	else
		peek_start_rate(fd, cfg->sample_wait_ms);
	if (!atomic_load(&trk_smp.rate))
		atomic_store(&trk_smp.filter, 0);
}

void trk_smp_stop(void)
{
	/* the hot paths check neither state nor guard: their key and the filter go stale here */
	atomic_store(&trk_smp.filter, 0);
	atomic_fetch_add(&trk_smp.gen, 1);
}
