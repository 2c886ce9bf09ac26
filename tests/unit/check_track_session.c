/* tests/unit/check_track_session.c - unit.track's case "session": one session over a socketpair */
/* SPDX-License-Identifier: MIT */
/*
 * Part of unit.track (check_track.c): a real session inside the test
 * process, the hooks called directly, the stream decoded with
 * tests/lib/check_decode.h: the round trip, threads' sequence numbers, the
 * stop asked by heaptap, ticks and idle flushes, a fork child, modules,
 * the socket's fd taken over, the peer gone. The session helpers here
 * (check_track.h) serve check_track_twice.c too.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/check_decode.h"
#include "tests/lib/check_fixture.h"
#include "tests/lib/check_session.h"
#include "check_track.h"
#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/track.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"

/* ---- sessions over a socketpair ---------------------------------------------- */

/* test_realloc - libc's, but huge requests fail like an exhausted heap (also under ASan) */
static void *test_realloc(void *p, size_t n)
{
	if (n > (1ull << 40)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n);
}

const struct trk_real libc_real = {
	.malloc = malloc,
	.free = free,
	.calloc = calloc,
	.realloc = test_realloc,
	.reallocarray = reallocarray,
	.posix_memalign = posix_memalign,
	.aligned_alloc = aligned_alloc,
	.memalign = memalign,
	.valloc = valloc,
	.pvalloc = pvalloc,
};

_Atomic int before_end_calls;

/* fake_restore - what inject/ will do: put slots back, say how many. */
void fake_restore(void *arg, uint64_t *restored, uint64_t *left)
{
	ck_assert_ptr_eq(arg, &before_end_calls);
	atomic_fetch_add(&before_end_calls, 1);
	*restored = 5;
	*left = 1;
}

void session_start(struct ck_reader *r)
{
	struct trk_config cfg = { .before_end = fake_restore, .before_end_arg = &before_end_calls };

	cfg.fd = ck_reader_start(r);
	if (!trk_g.real.malloc)
		trk_set_real(&libc_real); /* once: hooks of other threads may be running */
	ck_assert_int_eq(trk_start(&cfg), 0);
	ck_assert_int_eq(trk_active(), 1);
}

/* session_finish - end (reason) or wait for the end, then decode everything. */
void session_finish(struct ck_reader *r, int reason, struct ck_dec *s)
{
	if (reason)
		trk_stop(reason);
	ck_reader_join(r);
	ck_assert_msg(ck_decode(r->buf, r->len, s) == 0, "malformed stream at byte %zu of %zu: %s",
		      s->error_at, r->len, s->error);
	free(r->buf);
}

/* check_order - numbers unique and gap-free, nodes before use, allocs/frees paired. */
void check_order(const struct ck_dec *s)
{
	struct ck_ev *v = ck_dec_by_seq(s);
	uint32_t max_node = atomic_load(&trk_g.next_node);
	uint8_t *known = calloc(max_node + 1, 1);

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(s->have_end, 1);
	ck_assert_uint_eq(s->end_total, s->nev);
	known[0] = 1;
	for (size_t i = 0; i < s->nev; i++) {
		ck_assert_uint_eq(v[i].seq, i); /* unique and without gaps */
		if (v[i].op == WIRE_EV_NODE) {
			ck_assert_uint_le(v[i].index, max_node);
			ck_assert_uint_eq(known[v[i].index], 0);
			ck_assert_uint_eq(known[v[i].parent], 1);
			known[v[i].index] = 1;
		} else if (v[i].op == WIRE_EV_ALLOC) {
			ck_assert_uint_le(v[i].trace, max_node);
			ck_assert_msg(known[v[i].trace], "alloc names node %lu before its NODE",
				      (unsigned long)v[i].trace);
		}
	}
	free(known);
	free(v);
}

void *volatile keep_ptr;

__attribute__((noinline)) void *call_site(size_t n)
{
	void *p = trk_malloc(n);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return p;
}

START_TEST(session_round_trip)
{
	struct ck_reader r;
	struct ck_dec s;
	void *a, *b, *c, *d, *e, *f, *g, *h, *big;
	void *pm = NULL;
	int saw_main = 0, saw_exe = 0, nop = 0, kinds[WIRE_KIND_MAX + 1] = { 0 };
	uintptr_t site_ip = 0;

	session_start(&r);
	a = call_site(100);
	b = trk_calloc(3, 7);
	c = trk_realloc(NULL, 50);
	c = trk_realloc(c, 5000);
	d = trk_reallocarray(NULL, 4, 8);
	ck_assert_int_eq(trk_posix_memalign(&pm, 64, 200), 0);
	e = trk_aligned_alloc(64, 128);
	f = trk_memalign(32, 64);
	g = trk_valloc(10);
	h = trk_pvalloc(10);
	/* a realloc that fails: the FREE number becomes a NOP, the block stays */
	errno = 0;
	big = trk_realloc(a, SIZE_MAX / 2);
	ck_assert_ptr_null(big);
	ck_assert_int_eq(errno, ENOMEM); /* errno as the real realloc left it */
	errno = 1234;
	trk_free(b);
	ck_assert_int_eq(errno, 1234); /* free preserves errno */
	trk_free(NULL);
	trk_free(c);
	trk_free(d);
	trk_free(pm);
	trk_free(e);
	trk_free(f);
	trk_free(g);
	trk_free(h);
	keep_ptr = a;
	session_finish(&r, WIRE_END_STOP, &s);
	ck_assert_int_eq(trk_active(), 0);
	/* after the end, hooks pass through */
	trk_free(a);

	ck_assert_uint_eq(s.pid, (uint32_t)getpid());
	ck_assert_uint_eq(s.end_reason, WIRE_END_STOP);
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	ck_assert_uint_eq(s.end_restored, 5);
	ck_assert_uint_eq(s.end_left, 1);
	ck_assert_uint_eq(s.end_dropped, 0);
	check_order(&s);
	for (size_t i = 0; i < s.nev; i++) {
		struct ck_ev *ev = &s.ev[i];

		if (ev->op == WIRE_EV_MODULE && strcmp(ev->path, s.exe) == 0)
			saw_exe = 1;
		if (ev->op == WIRE_EV_NOP)
			nop++;
		if (ev->op == WIRE_EV_ALLOC) {
			ck_assert_uint_le(ev->kind, WIRE_KIND_MAX);
			kinds[ev->kind]++;
			if (ev->ptr == (uintptr_t)a) {
				ck_assert_uint_eq(ev->size, 100);
				ck_assert_uint_eq(ev->kind, WIRE_KIND_MALLOC);
				site_ip = trk_node_at((uint32_t)ev->trace)->ip;
				saw_main = 1;
			}
		}
		if (ev->op == WIRE_EV_FREE)
			ck_assert_uint_ne(ev->ptr, 0);
	}
	ck_assert_int_eq(saw_exe, 1);
	ck_assert_int_eq(saw_main, 1);
	ck_assert_int_eq(nop, 1);
	/* the innermost frame is the call inside call_site, not a hook frame */
	ck_assert_uint_gt(site_ip, (uintptr_t)call_site);
	ck_assert_uint_lt(site_ip, (uintptr_t)call_site + 256);
	ck_assert_int_eq(kinds[WIRE_KIND_MALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_CALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_REALLOC], 2);
	ck_assert_int_eq(kinds[WIRE_KIND_REALLOCARRAY], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_POSIX_MEMALIGN], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_ALIGNED_ALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_MEMALIGN], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_VALLOC], 1);
	ck_assert_int_eq(kinds[WIRE_KIND_PVALLOC], 1);
	ck_dec_free(&s);
}
END_TEST

#define SEQ_THREADS 4
#define SEQ_ROUNDS 20000

static void *seq_main(void *arg)
{
	void *slots[16] = { 0 };

	(void)arg;
	for (int i = 0; i < SEQ_ROUNDS; i++) {
		int k = i & 15;

		trk_free(slots[k]);
		slots[k] = trk_malloc(16 + (size_t)(i & 63));
		if ((i & 255) == 0)
			usleep(100); /* idle moments: the timer flushes for us */
	}
	for (int k = 0; k < 16; k++)
		trk_free(slots[k]);
	return NULL;
}

START_TEST(session_threads_sequence)
{
	pthread_t th[SEQ_THREADS];
	struct ck_reader r;
	struct ck_dec s;
	struct ck_ev *v;
	size_t allocs = 0, frees = 0;

	session_start(&r);
	for (int i = 0; i < SEQ_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, seq_main, NULL), 0);
	for (int i = 0; i < SEQ_THREADS; i++)
		pthread_join(th[i], NULL);
	session_finish(&r, WIRE_END_EXIT, &s);
	check_order(&s);
	/*
	 * Addresses are reused across threads: in number order each pointer
	 * must alternate ALLOC, FREE, ALLOC, ... (a free numbered after the
	 * allocation that reuses its block would show up as a double alloc).
	 */
	v = ck_dec_by_seq(&s);
	for (size_t i = 0; i < s.nev; i++) {
		if (v[i].op == WIRE_EV_ALLOC) {
			allocs++;
			for (size_t j = i + 1; j < s.nev; j++) {
				if (v[j].op == WIRE_EV_ALLOC && v[j].ptr == v[i].ptr)
					ck_abort_msg("pointer %#lx allocated twice without a free",
						     (unsigned long)v[i].ptr);
				if (v[j].op == WIRE_EV_FREE && v[j].ptr == v[i].ptr)
					break;
			}
		} else if (v[i].op == WIRE_EV_FREE) {
			frees++;
		}
	}
	ck_assert_uint_eq(allocs, SEQ_THREADS * SEQ_ROUNDS);
	ck_assert_uint_eq(frees, SEQ_THREADS * SEQ_ROUNDS);
	ck_assert_uint_gt(s.nchunks, SEQ_THREADS);
	free(v);
	ck_dec_free(&s);
}
END_TEST

START_TEST(session_ctl_stop)
{
	struct ck_reader r;
	struct ck_dec s;
	const uint8_t stop[2] = { WIRE_CTL_STOP, 0 };
	void *p;

	session_start(&r);
	p = trk_malloc(10);
	trk_free(p);
	/* heaptap asks to stop: the timer thread ends the session itself */
	ck_assert_int_eq(write(r.fd, stop, sizeof(stop)), 2);
	session_finish(&r, 0, &s);
	ck_assert_int_eq(trk_active(), 0);
	ck_assert_uint_eq(s.end_reason, WIRE_END_STOP);
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	trk_stop(WIRE_END_EXIT); /* ending again changes nothing */
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	check_order(&s);
	p = trk_malloc(10); /* passes through */
	ck_assert_ptr_nonnull(p);
	trk_free(p);
	ck_dec_free(&s);
}
END_TEST

/*
 * The decoder itself (tests/lib/check_decode.h) on a real stream cut at
 * every byte, each cut in a buffer of its own size (ASan sees a read past
 * it): a cut at a record boundary decodes to a prefix of the events, without
 * END; any other cut fails with the offset of the cut record; exactly one
 * cut per record (at its start) decodes.
 */
START_TEST(session_decoder_refuses_cuts)
{
	struct ck_reader r;
	struct ck_dec all, s;
	size_t nrec = 0, whole = 0;
	void *p[8];

	session_start(&r);
	for (int i = 0; i < 8; i++)
		p[i] = call_site(16 + i);
	for (int i = 0; i < 8; i += 2)
		trk_free(p[i]);
	trk_stop(WIRE_END_STOP);
	ck_reader_join(&r);
	for (int i = 1; i < 8; i += 2)
		trk_free(p[i]); /* after the end: passed through */
	ck_assert_msg(ck_decode(r.buf, r.len, &all) == 0, "malformed stream at byte %zu: %s",
		      all.error_at, all.error);
	ck_assert_int_eq(all.have_end, 1);
	/* the records, counted with wire.h alone */
	for (const uint8_t *q = r.buf + ((const struct wire_header *)r.buf)->header_len,
			   *end = r.buf + r.len;
	     q < end; nrec++) {
		uint64_t rl;

		q++;
		ck_assert_int_eq(wire_get_varint(&q, end, &rl), 0);
		q += rl;
	}
	for (size_t cut = 0; cut < r.len; cut++) {
		uint8_t *b = malloc(cut ? cut : 1);

		ck_assert_ptr_nonnull(b);
		memcpy(b, r.buf, cut);
		if (ck_decode(b, cut, &s) == 0) {
			whole++;
			ck_assert_int_eq(s.have_end, 0);
			ck_assert_uint_le(s.nev, all.nev);
			for (size_t i = 0; i < s.nev; i++)
				ck_assert_uint_eq(s.ev[i].seq, all.ev[i].seq);
		} else {
			ck_assert_ptr_nonnull(s.error);
			ck_assert_uint_le(s.error_at, cut);
		}
		ck_dec_free(&s);
		free(b);
	}
	ck_assert_uint_eq(whole, nrec);
	ck_dec_free(&all);
	free(r.buf);
}
END_TEST

START_TEST(session_ticks_and_idle_flush)
{
	struct ck_reader r;
	struct ck_dec s;
	void *p;

	int found = 0;
	size_t ticks = 0;

	session_start(&r);
	p = trk_malloc(10);
	/*
	 * Stay idle: the timer must send ticks and flush our buffer without a
	 * flush of our own. Ticks come every 10 ms; allow a loaded machine 10 s.
	 */
	for (int tries = 0; tries < 500 && !(found && ticks >= 2); tries++) {
		struct ck_dec part = { 0 };

		usleep(20000);
		pthread_mutex_lock(&r.lock);
		if (r.len && ck_decode(r.buf, r.len, &part) == 0) {
			ticks = part.nticks;
			for (size_t i = 0; i < part.nev; i++)
				found |= part.ev[i].op == WIRE_EV_ALLOC &&
					 part.ev[i].ptr == (uintptr_t)p;
		}
		ck_dec_free(&part);
		pthread_mutex_unlock(&r.lock);
	}
	ck_assert_int_eq(found, 1);
	ck_assert_uint_ge(ticks, 2);
	trk_free(p);
	session_finish(&r, WIRE_END_EXIT, &s);
	check_order(&s);
	ck_dec_free(&s);
}
END_TEST

START_TEST(session_fork_child)
{
	struct ck_reader r;
	struct ck_dec s;
	pid_t pid;
	int st;

	session_start(&r);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *p;

		trk_after_fork_child();
		p = trk_malloc(77);
		trk_free(p);
		_exit(trk_active() ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_eq(trk_active(), 1); /* the parent goes on */
	trk_free(trk_malloc(33));
	session_finish(&r, WIRE_END_EXIT, &s);
	check_order(&s);
	for (size_t i = 0; i < s.nev; i++)
		ck_assert(!(s.ev[i].op == WIRE_EV_ALLOC && s.ev[i].size == 77));
	ck_dec_free(&s);
}
END_TEST

/* wait_ticks - let the timer run n more ticks (bounded: 10 s on a loaded machine). */
static void wait_ticks(struct ck_reader *r, size_t n)
{
	size_t start = (size_t)-1;

	for (int tries = 0; tries < 1000; tries++) {
		struct ck_dec part = { 0 };
		size_t ticks = 0;

		pthread_mutex_lock(&r->lock);
		if (r->len && ck_decode(r->buf, r->len, &part) == 0)
			ticks = part.nticks;
		ck_dec_free(&part);
		pthread_mutex_unlock(&r->lock);
		if (start == (size_t)-1)
			start = ticks;
		if (ticks >= start + n)
			return;
		usleep(10000);
	}
	ck_abort_msg("no ticks");
}

START_TEST(session_modules)
{
	struct ck_reader r;
	struct ck_dec s;
	uintptr_t zbase = 0;
	int vdso = 0, main_exe = 0, added = 0, removed = 0;
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	void *h;

	ck_assert_int_gt(sl, 0);
	self[sl] = '\0';
	/* the test must load it itself, so it must not be loaded yet */
	ck_assert_ptr_null(dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD));
	session_start(&r);
	/* a library loaded and unloaded later is announced by the timer's check */
	h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(h);
	wait_ticks(&r, 2);
	ck_assert_int_eq(dlclose(h), 0);
	wait_ticks(&r, 2);
	session_finish(&r, WIRE_END_STOP, &s);
	check_order(&s);
	for (size_t i = 0; i < s.nev; i++) {
		struct ck_ev *e = &s.ev[i];

		if (e->op == WIRE_EV_MODULE) {
			vdso |= strcmp(e->path, "[vdso]") == 0;
			main_exe |= strcmp(e->path, self) == 0;
			if (strstr(e->path, "libz.so") && !zbase) {
				zbase = e->base;
				added = 1;
			}
		}
		if (e->op == WIRE_EV_MODULE_DEL && zbase && e->base == zbase)
			removed = 1;
	}
	ck_assert_int_eq(main_exe, 1);
	ck_assert_int_eq(vdso, 1);
	ck_assert_int_eq(added, 1);
	ck_assert_int_eq(removed, 1);
	ck_dec_free(&s);
}
END_TEST

START_TEST(session_fd_taken_over)
{
	struct ck_reader r;
	int pfd[2], fd;
	char buf[16];
	ssize_t got;

	/*
	 * A daemonising program closes every fd and its own files get the
	 * numbers: the library must notice and write nothing into them.
	 */
	session_start(&r);
	fd = trk_g.fd;
	ck_assert_int_gt(fd, r.fd); /* moved up out of the way of small fds */
	/* a socket of its own, so a write would even succeed */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, pfd), 0);
	ck_assert_int_eq(dup2(pfd[1], fd), fd); /* our socket closed, the number reused */
	for (int i = 0; i < 20000 && trk_active(); i++)
		trk_free(trk_malloc(48));
	for (int i = 0; i < 300 && trk_active(); i++)
		usleep(10000); /* the timer's tick notices too */
	ck_assert_int_eq(trk_active(), 0);
	ck_assert_int_eq(fcntl(pfd[0], F_SETFL, O_NONBLOCK), 0);
	got = read(pfd[0], buf, sizeof(buf));
	ck_assert_int_eq(got, -1); /* nothing was written into the program's socket */
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_ne(fcntl(fd, F_GETFD), -1); /* and its fd was not closed */
	close(pfd[0]);
	close(pfd[1]);
	ck_reader_join(&r); /* our socket is gone: the reader saw EOF */
	free(r.buf);
}
END_TEST

START_TEST(session_peer_gone)
{
	struct trk_config cfg = { .before_end = fake_restore, .before_end_arg = &before_end_calls };
	int sv[2];
	void *p;

	/* heaptap vanished: no SIGPIPE, recording stops, hooks pass through */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	trk_set_real(&libc_real);
	cfg.fd = sv[0];
	ck_assert_int_eq(trk_start(&cfg), 0);
	close(sv[1]);
	for (int i = 0; i < 200000 && trk_active(); i++)
		trk_free(trk_malloc(64));
	ck_assert_int_eq(trk_active(), 0);
	p = trk_malloc(8);
	ck_assert_ptr_nonnull(p);
	trk_free(p);
	/* the restore (inject/) still runs once, from the timer thread */
	for (int i = 0; i < 1000 && !atomic_load(&before_end_calls); i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&before_end_calls), 1);
	/* once the timer has let go, another session may start; not on a non-socket */
	for (int i = 0; i < 1000 && atomic_load(&trk_g.started); i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
	cfg.fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(cfg.fd, 0);
	ck_assert_int_eq(trk_start(&cfg), -ENOTSOCK);
	ck_assert_int_eq(trk_active(), 0);
}
END_TEST

TCase *track_session_tcase(void)
{
	TCase *tc = tcase_create("session");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, session_round_trip);
	tcase_add_test(tc, session_threads_sequence);
	tcase_add_test(tc, session_ctl_stop);
	tcase_add_test(tc, session_ticks_and_idle_flush);
	tcase_add_test(tc, session_fork_child);
	tcase_add_test(tc, session_modules);
	tcase_add_test(tc, session_fd_taken_over);
	tcase_add_test(tc, session_peer_gone);
	tcase_add_test(tc, session_decoder_refuses_cuts);
	track_session_twice_add(tc); /* check_track_twice.c */
	return tc;
}
