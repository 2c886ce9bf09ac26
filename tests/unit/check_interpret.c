/* tests/unit/check_interpret.c - Check suite for interpret/: crafted streams in, recordings out */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a stream with check_interpret_wire.c, writes it into one
 * end of a socketpair from a thread, runs itp_run on the other end, then
 * opens the recording with rec_open and asserts on its tables and events.
 *
 * `check_interpret --write-seeds DIR` writes the fuzz seed corpus instead
 * (tests/data/stream/, see its README).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "check_interpret_wire.h"
#include "interpret/internal.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

char *itp_demangle(const char *name); /* interpret/demangle.cc */

/* ---- harness ------------------------------------------------------- */

struct feeder {
	int fd;
	const struct sbuf *s;
	size_t split;  /* write this many bytes, pause, then the rest */
	int wait_stop; /* after writing, wait for WIRE_CTL_STOP, then send END */
	int never_end; /* after writing, keep the socket open until told */
	size_t pieces; /* write in pieces of 1 .. pieces bytes, pausing now and then */
	volatile int got_stop;
	volatile int release;
};

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void *feed(void *arg)
{
	struct feeder *f = arg;
	size_t split = f->split && f->split < f->s->len ? f->split : f->s->len;

	if (f->pieces) {
		uint32_t x = 2463534242u;
		size_t off = 0;

		while (off < f->s->len) {
			size_t n;

			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			n = 1 + x % f->pieces;
			if (n > f->s->len - off)
				n = f->s->len - off;
			write_all(f->fd, f->s->p + off, n);
			off += n;
			if (x % 16 == 0)
				usleep(200); /* the reader catches up: records cut at a read's end */
		}
		split = f->s->len;
	} else {
		write_all(f->fd, f->s->p, split);
	}
	if (split < f->s->len) {
		usleep(20000);
		write_all(f->fd, f->s->p + split, f->s->len - split);
	}
	if (f->wait_stop) {
		uint8_t msg[2];

		if (read(f->fd, msg, 2) == 2 && msg[0] == WIRE_CTL_STOP && msg[1] == 0) {
			struct sbuf e = {0};

			f->got_stop = 1;
			sb_end(&e, 0, WIRE_END_STOP);
			write_all(f->fd, e.p, e.len);
			sb_free(&e);
		}
	}
	while (f->never_end && !f->release)
		usleep(1000);
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

static char outpath[160]; /* ck_tmpdir (128) and a file name */
static int nrun;

/* run s through itp_run with opt (output filled in); f may set feeder options */
static int run_feed(const struct sbuf *s, struct itp_options *opt, struct itp_result *res,
		    struct feeder *f)
{
	struct feeder local = {0};
	pthread_t th;
	int sv[2], rc;

	if (!f)
		f = &local;
	snprintf(outpath, sizeof(outpath), "%s/rec%d.htap", ck_tmpdir, nrun++);
	opt->output = outpath;
	opt->no_symbols = 1;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f->fd = sv[1];
	f->s = s;
	ck_assert_int_eq(pthread_create(&th, NULL, feed, f), 0);
	rc = itp_run(sv[0], opt, res);
	f->release = 1;
	close(sv[0]); /* a feeder still writing gets EPIPE */
	pthread_join(th, NULL);
	close(sv[1]);
	ck_assert_int_eq(rc, -res->err);
	return rc;
}

static int run(const struct sbuf *s, struct itp_result *res)
{
	struct itp_options opt = {0};

	return run_feed(s, &opt, res, NULL);
}

static struct rec_reader *open_rec(void)
{
	int err = 0;
	struct rec_reader *r = rec_open(outpath, &err);

	ck_assert_msg(r, "rec_open %s: %s", outpath, rec_strerror(err));
	return r;
}

/* all events of r, malloc'd */
static struct rec_event *events(struct rec_reader *r, size_t *n)
{
	size_t nchunks = rec_nevent_chunks(r), i, total = 0;
	struct rec_event *all = NULL;

	for (i = 0; i < nchunks; i++) {
		struct rec_event *ev = NULL;
		size_t k = 0;
		uint64_t first = 0;

		ck_assert_int_eq(rec_event_chunk(r, i, &ev, &k, &first), 0);
		ck_assert_uint_eq(first, total);
		all = realloc(all, (total + k + 1) * sizeof(*all));
		memcpy(all + total, ev, k * sizeof(*ev));
		total += k;
		free(ev);
	}
	ck_assert_uint_eq(total, rec_nevents(r));
	*n = total;
	return all;
}

static void header(struct sbuf *s)
{
	static const char cmd[] = "prog\0-x\0arg";

	sb_header(s, 4242, 0, "/usr/bin/prog", cmd, sizeof(cmd));
}

#define P1 0x7f0000001000ull
#define P2 0x7f0000002000ull
#define P3 0x7f0000003000ull
#define P4 0x7f0000004000ull

/* ---- tests --------------------------------------------------------- */

START_TEST(test_basic)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_trace *tr;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n;

	header(&s);
	ck_begin(&c, 100, 0);
	ck_node(&c, 0, 5, 0, 0x401000);
	ck_node(&c, 1, 9, 5, 0x402000);
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 24, 9, P1);
	ck_alloc(&c, 3, WIRE_KIND_CALLOC, 100, 5, P2);
	ck_free(&c, 4, P2);
	ck_end(&s, &c);
	sb_tick(&s, 5000000, 1 << 20, 5);
	sb_end(&s, 5, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_str_eq(res.detail, "");
	ck_assert_uint_eq(res.pid, 4242);
	ck_assert_str_eq(res.exe, "/usr/bin/prog");
	ck_assert_int_eq(res.end_reason, WIRE_END_EXIT);
	ck_assert_uint_eq(res.final.alloc_calls, 2);
	ck_assert_uint_eq(res.final.free_calls, 1);
	ck_assert_uint_eq(res.final.heap_bytes, 24);
	ck_assert_uint_eq(res.final.peak_bytes, 124);
	ck_assert_uint_eq(res.final.traces, 2);
	ck_assert_uint_eq(res.final.rss_bytes, 1 << 20);
	ck_assert_uint_eq(res.slots_restored, 3);

	r = open_rec();
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_str_eq(rec_meta(r, "exe"), "/usr/bin/prog");
	ck_assert_str_eq(rec_meta(r, "command"), "prog -x arg");
	ck_assert_str_eq(rec_meta(r, "pid"), "4242");
	ck_assert_str_eq(rec_meta(r, "attached"), "0");
	ck_assert_str_eq(rec_meta(r, "end_reason"), "exit");
	ck_assert_str_eq(rec_meta(r, "unknown_frees"), "0");
	ck_assert_str_eq(rec_meta(r, "peak_rss"), "1048576");
	ck_assert_str_eq(rec_meta(r, "duration_ns"), "5000000");
	ck_assert_ptr_nonnull(rec_meta(r, "heaptap_version"));
	tr = rec_traces(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(tr[1].parent, 0);
	ck_assert_uint_eq(tr[2].parent, 1);
	ck_assert_uint_eq(rec_ips(r, &n)[tr[2].ip].ip, 0x402000);
	ck_assert_uint_eq(n, 2);
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ai[0].size, 24);
	ck_assert_uint_eq(ai[0].trace, 2);
	ck_assert_uint_eq(ai[0].kind, WIRE_KIND_MALLOC);
	ck_assert_uint_eq(ai[1].size, 100);
	ck_assert_uint_eq(ai[1].trace, 1);
	ck_assert_uint_eq(ai[1].kind, WIRE_KIND_CALLOC);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ev[0].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[0].info, 0);
	ck_assert_uint_eq(ev[1].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ev[1].info, 1);
	ck_assert_uint_eq(ev[2].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(ev[2].info, 1);
	ck_assert_uint_eq(rec_ticks(r, &n)[0].event_index, 3);
	ck_assert_uint_eq(n, 1);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/*
 * Thread 1 frees P1 (seq 2), thread 2's malloc then returns P1 (seq 3); the
 * chunk of thread 2 is sent first. Applied in arrival order, the free would
 * hit the new block; in seq order both blocks pair up.
 */
START_TEST(test_reorder_across_chunks)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n;

	header(&s);
	ck_begin(&c, 2, 3);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 32, 0, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 16, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 48, 0, P2);
	ck_free(&c, 2, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 4);
	ck_free(&c, 4, P1);
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.reused_ptrs, 0);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.final.heap_bytes, 48);

	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 3);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(ai[ev[0].info].size, 16);
	ck_assert_uint_eq(ai[ev[1].info].size, 48);
	ck_assert_uint_eq(ev[2].op, REC_EV_FREE);
	ck_assert_uint_eq(ai[ev[2].info].size, 16);
	ck_assert_uint_eq(ev[3].op, REC_EV_ALLOC);
	ck_assert_uint_eq(ai[ev[3].info].size, 32);
	ck_assert_uint_eq(ev[4].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(ai[ev[4].info].size, 32);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/*
 * Pointers as zigzag distances (WIRE_EV_ALLOC_D / FREE_D): each chunk counts
 * from 0, absolute ALLOC/FREE between them leave the base alone, distances
 * go both ways and wrap, and a chunk parked for later (seq order) decodes
 * the same. Wrong pointers would show as unknown frees and a wrong heap.
 */
START_TEST(test_ptr_delta)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n;

	header(&s);
	/* thread 2's chunk first: parked until seq 4 */
	ck_begin(&c, 2, 4);
	ck_alloc_d(&c, 4, WIRE_KIND_MALLOC, 32, 0, P1);		  /* P1 reused after thread 1's free */
	ck_free(&c, 5, P4);					  /* absolute: base stays P1 */
	ck_alloc_d(&c, 6, WIRE_KIND_MALLOC, 64, 0, 0x10);	  /* far down */
	ck_alloc_d(&c, 7, WIRE_KIND_MALLOC, 128, 0, UINT64_MAX); /* far up */
	ck_free_d(&c, 8, 0x10);					  /* wraps */
	ck_free_d(&c, 9, UINT64_MAX);
	ck_end(&s, &c);
	ck_begin(&c, 1, 0);
	ck_alloc_d(&c, 0, WIRE_KIND_MALLOC, 16, 0, P1);
	ck_alloc_d(&c, 1, WIRE_KIND_MALLOC, 48, 0, P2);
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 0, P4);
	ck_free_d(&c, 3, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 10);
	ck_free_d(&c, 10, P1); /* a new chunk: from 0 again */
	ck_end(&s, &c);
	sb_end(&s, 11, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_str_eq(res.detail, "");
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.reused_ptrs, 0);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.final.alloc_calls, 6);
	ck_assert_uint_eq(res.final.free_calls, 5);
	ck_assert_uint_eq(res.final.heap_bytes, 48);

	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 11);
	ck_assert_uint_eq(ev[3].op, REC_EV_FREE);
	ck_assert_uint_eq(ai[ev[3].info].size, 16);
	ck_assert_uint_eq(ai[ev[4].info].size, 32);
	ck_assert_uint_eq(ai[ev[5].info].size, 8);
	ck_assert_uint_eq(ai[ev[8].info].size, 64);
	ck_assert_uint_eq(ai[ev[9].info].size, 128);
	ck_assert_uint_eq(ai[ev[10].info].size, 32);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* many threads, chunks sent in reverse: every event still in seq order */
START_TEST(test_reorder_many)
{
	enum { T = 8, PER = 50 };
	struct sbuf s = {0};
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	struct rec_event *ev;
	size_t n, i;
	int t, k;

	header(&s);
	/* thread t owns seqs t, t+T, t+2T, ...: seq q allocates size q+1 */
	for (t = T - 1; t >= 0; t--) {
		for (k = PER / 10 - 1; k >= 0; k--) {
			struct chunkb c;
			int j;

			ck_begin(&c, 1000 + t, (uint64_t)(k * 10 * T + t));
			for (j = 0; j < 10; j++) {
				uint64_t q = (uint64_t)((k * 10 + j) * T + t);

				ck_alloc(&c, q, WIRE_KIND_MALLOC, q + 1, 0, 0x10000 + q * 16);
			}
			ck_end(&s, &c);
		}
	}
	sb_end(&s, T * PER, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.final.alloc_calls, T * PER);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.warn.skipped_seqs, 0);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ev = events(r, &n);
	ck_assert_uint_eq(n, T * PER);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(ai[ev[i].info].size, i + 1);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_temporary)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t n;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_free(&c, 1, P1); /* temporary */
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 8, 0, P3);
	ck_free(&c, 4, P2); /* not: P3 came between */
	ck_alloc(&c, 5, WIRE_KIND_MALLOC, 8, 0, P4);
	ck_end(&s, &c);
	ck_begin(&c, 2, 6);
	ck_alloc(&c, 6, WIRE_KIND_MALLOC, 8, 0, P1); /* another thread's alloc */
	ck_free(&c, 7, P4);			     /* temporary: thread 1 did nothing since */
	ck_end(&s, &c);
	sb_end(&s, 8, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	ev = events(r, &n);
	ck_assert_uint_eq(n, 8);
	ck_assert_uint_eq(ev[1].op, REC_EV_FREE_TEMP);
	ck_assert_uint_eq(ev[4].op, REC_EV_FREE);
	ck_assert_uint_eq(ev[7].op, REC_EV_FREE_TEMP);
	/* equal (size, trace, kind): one allocinfo for all */
	rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 1);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_frees)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	size_t n;

	sb_header(&s, 7, WIRE_F_ATTACHED, "/bin/x", "x", 1);
	ck_begin(&c, 1, 0);
	ck_free(&c, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_free(&c, 2, P3);
	ck_free(&c, 3, P2);
	ck_free(&c, 4, P2); /* double free */
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_STOP);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_frees, 3);
	ck_assert_uint_eq(res.final.free_calls, 4);
	r = open_rec();
	ck_assert_str_eq(rec_meta(r, "unknown_frees"), "3");
	ck_assert_str_eq(rec_meta(r, "attached"), "1");
	ck_assert_str_eq(rec_meta(r, "end_reason"), "stop");
	ck_assert_uint_eq(rec_nevents(r), 2);
	rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 1);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_dedup_allocinfos)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;
	size_t n, i;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 1, 0, 0x1000);
	ck_node(&c, 1, 2, 0, 0x2000);
	for (i = 0; i < 300; i++) /* 3 sizes x 2 traces x 2 kinds, repeated */
		ck_alloc(&c, 2 + i, i % 4 < 2 ? WIRE_KIND_MALLOC : WIRE_KIND_REALLOC, 8 << (i % 3),
			 1 + i % 2, 0x100000 + i * 16);
	ck_end(&s, &c);
	sb_end(&s, 302, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 12);
	for (i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ck_assert(ai[i].size != ai[j].size || ai[i].trace != ai[j].trace ||
				  ai[i].kind != ai[j].kind);
	ck_assert_uint_eq(rec_nevents(r), 300);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_weighted)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	struct rec_event *ev;
	size_t n;

	sb_header(&s, 1, WIRE_F_SAMPLED, "/bin/x", "", 0);
	ck_begin(&c, 1, 0);
	ck_alloc_w(&c, 0, 16, 0, P1, 4096);
	ck_alloc_w(&c, 1, 8000, 0, P2, 8000);
	ck_free(&c, 2, P1);
	ck_end(&s, &c);
	sb_end(&s, 3, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.final.peak_bytes, 12096);
	ck_assert_uint_eq(res.final.heap_bytes, 8000);
	r = open_rec();
	ck_assert_str_eq(rec_meta(r, "sampled"), "1");
	ck_assert_str_eq(rec_meta(r, "command"), "");
	ev = events(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ev[0].weight, 4096);
	ck_assert_uint_eq(ev[1].weight, 8000);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_parent_and_trace)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_trace *tr;
	const struct rec_allocinfo *ai;
	size_t n;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_node(&c, 0, 10, 77, 0x1000); /* parent never sent */
	ck_node(&c, 1, 11, 10, 0x2000);
	ck_node(&c, 2, 11, 10, 0x3000);		      /* index sent twice */
	ck_node(&c, 3, 0, 0, 0x3000);		      /* index 0 */
	ck_alloc(&c, 4, WIRE_KIND_MALLOC, 1, 99, P1); /* unknown trace */
	ck_alloc(&c, 5, WIRE_KIND_MALLOC, 2, 11, P2);
	ck_alloc(&c, 6, 200, 2, 11, P3); /* no such kind: stored as 0 */
	ck_end(&s, &c);
	sb_end(&s, 7, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.bad_kinds, 1);
	ck_assert_uint_eq(res.warn.unknown_parents, 1);
	ck_assert_uint_eq(res.warn.unknown_traces, 1);
	ck_assert_uint_eq(res.warn.bad_nodes, 2);
	r = open_rec();
	tr = rec_traces(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(tr[1].parent, 0);
	ck_assert_uint_eq(tr[2].parent, 1);
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(ai[0].trace, 0);
	ck_assert_uint_eq(ai[1].trace, 2);
	ck_assert_uint_eq(ai[2].kind, 0);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* without a final tick, the duration comes from the clock (start_mono_ns) */
START_TEST(test_duration_by_clock)
{
	struct sbuf s = {0};
	struct itp_result res;
	struct timespec ts;
	uint64_t start;
	struct rec_reader *r;
	size_t n;

	header(&s);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	start = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - 2000000000ull;
	memcpy(s.p + offsetof(struct wire_header, start_mono_ns), &start, 8);
	sb_tick(&s, 1000, 4096, 0);
	sb_end(&s, 0, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_ge(res.final.elapsed_ns, 2000000000ull);
	ck_assert_uint_lt(res.final.elapsed_ns, 60000000000ull);
	r = open_rec();
	ck_assert_uint_ge(strtoull(rec_meta(r, "duration_ns"), NULL, 10), 2000000000ull);
	ck_assert_uint_eq(rec_ticks(r, &n)[0].time_ns, 1000);
	ck_assert_uint_eq(n, 1);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* raw node indices: dense ones and arbitrary 64-bit ones mixed */
START_TEST(test_sparse_node_indices)
{
	static const uint64_t raw[] = {1, 2, 1ull << 40, UINT64_MAX, 3, 200000, 70000};
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_trace *tr;
	const struct rec_allocinfo *ai;
	size_t n, i, k = sizeof(raw) / sizeof(raw[0]);

	header(&s);
	ck_begin(&c, 1, 0);
	for (i = 0; i < k; i++)
		ck_node(&c, i, raw[i], i ? raw[i - 1] : 0, 0x1000 + i);
	for (i = 0; i < k; i++)
		ck_alloc(&c, k + i, WIRE_KIND_MALLOC, i + 1, raw[i], 0x100000 + i * 16);
	ck_end(&s, &c);
	sb_end(&s, 2 * k, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_parents, 0);
	ck_assert_uint_eq(res.warn.unknown_traces, 0);
	r = open_rec();
	tr = rec_traces(r, &n);
	ck_assert_uint_eq(n, k + 1);
	for (i = 1; i <= k; i++)
		ck_assert_uint_eq(tr[i].parent, i - 1);
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, k);
	for (i = 0; i < k; i++)
		ck_assert_uint_eq(ai[i].trace, i + 1);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_bad_magic)
{
	struct sbuf s = {0};
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	s.p[0] = 'X';
	sb_end(&s, 0, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), -ITP_E_HEADER);
	ck_assert_int_eq(res.err, ITP_E_HEADER);
	ck_assert_ptr_nonnull(strstr(res.detail, "magic"));
	r = open_rec();
	ck_assert_uint_eq(rec_nevents(r), 0);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_bad_version)
{
	struct sbuf s = {0};
	struct itp_result res;

	header(&s);
	s.p[8] = 2;
	ck_assert_int_eq(run(&s, &res), -ITP_E_HEADER);
	ck_assert_ptr_nonnull(strstr(res.detail, "version 2"));
	sb_free(&s);
}
END_TEST

START_TEST(test_header_len_too_big)
{
	struct sbuf s = {0};
	struct itp_result res;
	uint32_t big = WIRE_MAX_HEADER + 1;

	header(&s);
	memcpy(s.p + 12, &big, 4);
	ck_assert_int_eq(run(&s, &res), -ITP_E_HEADER);
	ck_assert_ptr_nonnull(strstr(res.detail, "header length"));
	rec_close(open_rec());
	sb_free(&s);
}
END_TEST

START_TEST(test_header_exe_past_end)
{
	struct sbuf s = {0};
	struct itp_result res;

	header(&s);
	s.p[WIRE_HDR_FIXED] = 120; /* exe_len beyond header_len */
	ck_assert_int_eq(run(&s, &res), -ITP_E_HEADER);
	ck_assert_ptr_nonnull(strstr(res.detail, "exe length"));
	sb_free(&s);
}
END_TEST

START_TEST(test_empty_stream)
{
	struct sbuf s = {0};
	struct itp_result res;

	sb_u8(&s, 'H');
	ck_assert_int_eq(run(&s, &res), -ITP_E_HEADER);
	ck_assert_ptr_nonnull(strstr(res.detail, "before its header"));
	rec_close(open_rec());
	sb_free(&s);
}
END_TEST

START_TEST(test_record_too_long)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	sb_u8(&s, WIRE_REC_CHUNK);
	sb_var(&s, WIRE_MAX_RECORD + 1);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "record of 1048577 bytes"));
	r = open_rec();
	ck_assert_uint_eq(rec_nevents(r), 1);
	ck_assert_str_eq(rec_meta(r, "end_reason"), "corrupt");
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_truncated_varint)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 9, 0, P2);
	sb_u8(&c.b, WIRE_EV_FREE);
	sb_u8(&c.b, 1);
	sb_u8(&c.b, 0x80); /* ptr varint cut by the end of the record */
	ck_end(&s, &c);
	sb_end(&s, 3, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "thread 1"));
	r = open_rec();
	ck_assert_uint_eq(rec_nevents(r), 2); /* the events before the fault */
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_overlong_length_varint)
{
	struct sbuf s = {0};
	struct itp_result res;
	int i;

	header(&s);
	sb_u8(&s, WIRE_REC_CHUNK);
	for (i = 0; i < 11; i++)
		sb_u8(&s, 0xff);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "varint"));
	sb_free(&s);
}
END_TEST

/* a ptr varint of 10 bytes whose last byte overflows 64 bits, then more bytes */
START_TEST(test_overflowing_varint)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	int i;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_free(&c, 0, UINT64_MAX); /* the largest valid one: no warning but unknown */
	sb_u8(&c.b, WIRE_EV_FREE);
	sb_u8(&c.b, 1);
	for (i = 0; i < 9; i++)
		sb_u8(&c.b, 0xff);
	sb_u8(&c.b, 0x02);
	for (i = 0; i < 12; i++)
		sb_u8(&c.b, WIRE_EV_NOP);
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_uint_eq(res.warn.unknown_frees, 1);
	sb_free(&s);
}
END_TEST

/*
 * Numbers at every varint length (1 to 10 bytes, each side of each 7-bit
 * boundary), padded (non-canonical) encodings of 3, 8 and 10 bytes, and
 * pointers whose varints end right at the end of the record: the parser's
 * word-at-a-time path (numbers of up to 8 bytes with 8 bytes left) and its
 * byte loop must give the same numbers.
 */
START_TEST(test_varint_boundaries)
{
	static const uint8_t pad[3][10] = {
	    {0x85, 0x80, 0x00},
	    {0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	    {0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	};
	static const size_t padlen[3] = {3, 8, 10};
	uint64_t sizes[24], seq = 0;
	size_t ns = 0, n, i;
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_allocinfo *ai;

	sizes[ns++] = 0;
	for (i = 1; i <= 9; i++) {
		sizes[ns++] = (1ull << (7 * i)) - 1;
		sizes[ns++] = 1ull << (7 * i);
	}
	sizes[ns++] = UINT64_MAX - 1;
	sizes[ns++] = UINT64_MAX;
	header(&s);
	ck_begin(&c, 1, 0);
	for (i = 0; i < ns; i++)
		ck_alloc(&c, seq++, WIRE_KIND_MALLOC, sizes[i], 0, sizes[i] ^ 0x5a);
	for (i = 0; i < 3; i++) {
		/* size 5 padded, then a pointer of that length's class */
		sb_u8(&c.b, WIRE_EV_ALLOC);
		sb_var(&c.b, 1);
		c.seq = seq++;
		sb_u8(&c.b, WIRE_KIND_MALLOC);
		sb_bytes(&c.b, pad[i], padlen[i]);
		sb_var(&c.b, 0);
		sb_var(&c.b, 0x10 + 0x10 * i);
	}
	for (i = 0; i < 3; i++)
		ck_free(&c, seq++, 0x10 + 0x10 * i);
	for (i = 0; i < ns; i++) /* the last pointers end at the record's end */
		ck_free(&c, seq++, sizes[i] ^ 0x5a);
	ck_end(&s, &c);
	sb_end(&s, seq, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_str_eq(res.detail, "");
	ck_assert_uint_eq(res.final.alloc_calls, ns + 3);
	ck_assert_uint_eq(res.final.free_calls, ns + 3);
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.reused_ptrs, 0);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ck_assert_uint_eq(n, ns + 1);
	for (i = 0; i < ns; i++)
		ck_assert_uint_eq(ai[i].size, sizes[i]);
	ck_assert_uint_eq(ai[ns].size, 5);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/*
 * The live-pointer table against a plain array: pointers that all share
 * one home slot (long runs), page-strided and random ones, inserts that
 * grow the table, replacements, and removals in random order (backward
 * shift must keep every other entry reachable and leave no stale one).
 */
START_TEST(test_ptrmap_churn)
{
	enum { N = 6000 };
	static uint64_t keys[N];
	static int live[N];
	struct itp_ptrmap m = {0};
	struct itp_ptr e, out;
	uint64_t rnd = 88172645463325252ull;
	size_t i, k, n = 0, nlive = 0;
	int replaced;

	/* 1000 keys whose home is slot 0 of the first (256-slot) table */
	for (uint64_t p = 16; n < 1000; p += 16)
		if ((((p * 0x9e3779b97f4a7c15ULL) >> 20) & 255) == 0)
			keys[n++] = p;
	for (i = 0; i < 2000; i++)
		keys[n++] = 0x7f0000000000ull + i * 4096;
	while (n < N) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		keys[n++] = (rnd | 1) & ~(1ull << 63); /* random, nonzero, distinct from the above */
	}
	for (int round = 0; round < 4; round++) {
		for (i = 0; i < N; i++) {
			rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
			k = rnd % N;
			if (rnd >> 63 && live[k]) {
				ck_assert_int_eq(itp_ptrmap_take(&m, keys[k], &out), 1);
				ck_assert_uint_eq(out.ptr, keys[k]);
				ck_assert_uint_eq(out.alloc_no, k * 7 + (uint64_t)live[k]);
				ck_assert_uint_eq(out.info, (uint32_t)k);
				live[k] = 0;
				nlive--;
			} else {
				e = (struct itp_ptr){.ptr = keys[k], .bytes = k, .info = (uint32_t)k,
						     .alloc_no = k * 7 + (uint64_t)(round + 1)};
				ck_assert_int_eq(itp_ptrmap_put(&m, &e, &replaced), 0);
				ck_assert_int_eq(replaced, live[k] != 0);
				nlive += !live[k];
				live[k] = round + 1;
			}
		}
		ck_assert_uint_eq(m.n, nlive);
		for (k = 0; k < N; k++) {
			int found = itp_ptrmap_take(&m, keys[k], &out);

			ck_assert_int_eq(found, live[k] != 0);
			if (found) {
				ck_assert_uint_eq(out.bytes, k);
				ck_assert_uint_eq(out.alloc_no, k * 7 + (uint64_t)live[k]);
				/* put it back for the next round */
				ck_assert_int_eq(itp_ptrmap_put(&m, &out, &replaced), 0);
				ck_assert_int_eq(replaced, 0);
			}
		}
	}
	ck_assert_int_eq(itp_ptrmap_take(&m, 0, &out), 0);
	itp_ptrmap_free(&m);
}
END_TEST

/* allocation infos: equal triples share an index, any differing field makes a new one */
START_TEST(test_infos_dedup_many)
{
	struct itp_infos t = {0};
	uint32_t idx;
	int created;
	size_t n = 0;

	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		for (uint64_t size = 0; size < 40; size++)
			for (uint32_t trace = 0; trace < 50; trace++)
				for (uint32_t kind = 0; kind < 3; kind++) {
					ck_assert_int_eq(itp_infos_find(&t, size << 40 | size, trace,
									kind, &idx, &created),
							 0);
					ck_assert_int_eq(created, pass == 0);
					ck_assert_uint_eq(idx, n);
					n++;
				}
	}
	ck_assert_uint_eq(t.n, n);
	itp_infos_free(&t);
}
END_TEST

START_TEST(test_unknown_op)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_nop(&c, 0);
	sb_u8(&c.b, 99);
	sb_u8(&c.b, 1);
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "unknown event op 99"));
	sb_free(&s);
}
END_TEST

START_TEST(test_seq_repeated)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_nop(&c, 0);
	ck_nop(&c, 0);
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "repeated"));
	sb_free(&s);
}
END_TEST

START_TEST(test_truncated_stream)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	ck_begin(&c, 1, 1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_end(&s, &c);
	s.len -= 3; /* cut inside the second chunk */
	ck_assert_int_eq(run(&s, &res), -ITP_E_TRUNCATED);
	ck_assert_ptr_nonnull(strstr(res.detail, "inside a record"));
	r = open_rec();
	ck_assert_uint_eq(rec_nevents(r), 1);
	ck_assert_str_eq(rec_meta(r, "end_reason"), "truncated");
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_no_end_record)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_TRUNCATED);
	ck_assert_ptr_nonnull(strstr(res.detail, "without an end record"));
	ck_assert_uint_eq(res.final.alloc_calls, 1);
	sb_free(&s);
}
END_TEST

/* seq 2 never arrives: at the end the gap is skipped, nothing is lost */
START_TEST(test_gap_at_end)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 8, 0, P3);
	ck_end(&s, &c);
	sb_tick(&s, 10, 4096, 4);
	sb_end(&s, 5, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.skipped_seqs, 2); /* seq 2 and seq 4 */
	r = open_rec();
	ck_assert_uint_eq(rec_nevents(r), 3);
	ck_assert_str_eq(rec_meta(r, "skipped_seqs"), "2");
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* a small reorder window: a missing seq is given up on, later ones flow */
START_TEST(test_reorder_limit)
{
	struct sbuf s = {0};
	struct itp_options opt = {.reorder_limit = 4096};
	struct itp_result res;
	struct rec_reader *r;
	struct rec_event *ev;
	const struct rec_allocinfo *ai;
	size_t n, i;
	int k;

	header(&s);
	/* seq 0 is missing; 40 chunks of 10 events each follow */
	for (k = 0; k < 40; k++) {
		struct chunkb c;
		int j;

		ck_begin(&c, 1, (uint64_t)(1 + k * 10));
		for (j = 0; j < 10; j++) {
			uint64_t q = (uint64_t)(1 + k * 10 + j);

			ck_alloc(&c, q, WIRE_KIND_MALLOC, q, 0, 0x10000 + q * 16);
		}
		ck_end(&s, &c);
	}
	{
		struct chunkb c;

		ck_begin(&c, 2, 0); /* the missing event, far too late */
		ck_alloc(&c, 0, WIRE_KIND_MALLOC, 1000, 0, P1);
		ck_end(&s, &c);
	}
	sb_end(&s, 401, WIRE_END_EXIT);
	ck_assert_int_eq(run_feed(&s, &opt, &res, NULL), 0);
	ck_assert_uint_eq(res.warn.gap_skips, 1);
	ck_assert_uint_eq(res.warn.skipped_seqs, 1);
	ck_assert_uint_eq(res.warn.late_events, 1);
	r = open_rec();
	ai = rec_allocinfos(r, &n);
	ev = events(r, &n);
	ck_assert_uint_eq(n, 401);
	for (i = 0; i < 400; i++)
		ck_assert_uint_eq(ai[ev[i].info].size, i + 1);
	ck_assert_uint_eq(ai[ev[400].info].size, 1000);
	free(ev);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* a tick says "every event below seq 3 happened before me": it waits for them */
START_TEST(test_tick_order)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_tick *tk;
	size_t n;

	header(&s);
	sb_tick(&s, 100, 1000, 0);
	ck_begin(&c, 2, 1);
	ck_alloc(&c, 1, WIRE_KIND_MALLOC, 8, 0, P2);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 8, 0, P3);
	ck_end(&s, &c);
	sb_tick(&s, 200, 2000, 3);
	sb_tick(&s, 300, 3000, 4);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 8, 0, P4);
	ck_end(&s, &c);
	sb_end(&s, 4, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	r = open_rec();
	tk = rec_ticks(r, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(tk[0].event_index, 0);
	ck_assert_uint_eq(tk[1].event_index, 3);
	ck_assert_uint_eq(tk[1].rss, 2000);
	ck_assert_uint_eq(tk[2].event_index, 4);
	ck_assert_uint_eq(tk[2].time_ns, 300);
	ck_assert_str_eq(rec_meta(r, "peak_rss"), "3000");
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* records cut across reads: the parser must wait for the rest */
START_TEST(test_split_reads)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	size_t splits[] = {3, WIRE_HDR_FIXED + 1, 0}, i;

	header(&s);
	ck_begin(&c, 1, 0);
	for (i = 0; i < 1000; i++)
		ck_alloc(&c, i, WIRE_KIND_MALLOC, i, 0, 0x1000 + i * 16);
	ck_end(&s, &c);
	sb_end(&s, 1000, WIRE_END_EXIT);
	splits[2] = s.len - 5;
	for (i = 0; i < 3; i++) {
		memset(&f, 0, sizeof(f));
		f.split = splits[i];
		ck_assert_int_eq(run_feed(&s, &opt, &res, &f), 0);
		ck_assert_uint_eq(res.final.alloc_calls, 1000);
	}
	sb_free(&s);
}
END_TEST

/*
 * Records of all sizes (one event to more than two of the input queue's
 * blocks), from two threads whose numbers interleave (so chunks are applied
 * in place, parked and drained), written in random pieces: the interpreter
 * parses in the queue's blocks and copies only records cut by a block's end
 * or a read's (run.c in_place). A lost, doubled or misplaced byte shows as a
 * wrong count or an unknown free.
 */
START_TEST(test_records_across_blocks)
{
	static const size_t sizes[] = {1, 4000, 30000, 7, 700, 40000, 2, 4000, 12345, 1};
	struct sbuf s = {0};
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	uint64_t seq = 0, allocs = 0;
	size_t k, i;

	header(&s);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct chunkb a, b;

		/* thread 1 takes the even numbers of this round, thread 2 the odd ones */
		ck_begin(&a, 1, seq);
		ck_begin(&b, 2, seq + 1);
		for (i = 0; i < sizes[k]; i++) {
			uint64_t s0 = seq + 4 * i, pa = 0x10000000 + 16 * allocs, pb = 0x20000000 + 16 * allocs;

			ck_alloc(&a, s0, WIRE_KIND_MALLOC, 16 + i % 100, 0, pa);
			ck_alloc(&b, s0 + 1, WIRE_KIND_MALLOC, 32, 0, pb);
			ck_free(&a, s0 + 2, pa);
			ck_free(&b, s0 + 3, pb);
			allocs++;
		}
		seq += 4 * sizes[k];
		if (k % 2) {
			ck_end(&s, &b);
			ck_end(&s, &a);
		} else {
			ck_end(&s, &a);
			ck_end(&s, &b);
		}
	}
	sb_end(&s, seq, WIRE_END_EXIT);
	ck_assert_uint_gt(s.len, 3 * ITP_INQ_BLOCK);
	f.pieces = 40000;
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), 0);
	ck_assert_uint_eq(res.final.alloc_calls, 2 * allocs);
	ck_assert_uint_eq(res.final.free_calls, 2 * allocs);
	ck_assert_uint_eq(res.warn.unknown_frees, 0);
	ck_assert_uint_eq(res.warn.late_events, 0);
	ck_assert_uint_eq(res.warn.skipped_seqs, 0);
	ck_assert_uint_eq(res.final.heap_bytes, 0);
	sb_free(&s);
}
END_TEST

START_TEST(test_unknown_record_and_log)
{
	struct sbuf s = {0}, p = {0};
	struct itp_result res;
	struct rec_reader *r;

	header(&s);
	sb_bytes(&p, "\x07xyz", 4);
	sb_record(&s, 200, &p);
	sb_free(&p);
	sb_u8(&p, WIRE_LOG_ERROR);
	sb_bytes(&p, "gave up\n", 8);
	sb_record(&s, WIRE_REC_LOG, &p);
	sb_end(&s, 0, WIRE_END_ERROR);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_records, 1);
	r = open_rec();
	ck_assert_str_eq(rec_meta(r, "library_error"), "gave up?");
	ck_assert_str_eq(rec_meta(r, "end_reason"), "error");
	rec_close(r);
	sb_free(&p);
	sb_free(&s);
}
END_TEST

START_TEST(test_stop)
{
	struct sbuf s = {0};
	struct chunkb c;
	volatile sig_atomic_t stop = 1;
	struct itp_options opt = {.stop = &stop};
	struct itp_result res;
	struct feeder f = {.wait_stop = 1};

	header(&s);
	ck_begin(&c, 1, 0);
	ck_alloc(&c, 0, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_end(&s, &c);
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), 0);
	ck_assert_int_eq(f.got_stop, 1);
	ck_assert_int_eq(res.end_reason, WIRE_END_STOP);
	ck_assert_uint_eq(res.final.alloc_calls, 1);
	sb_free(&s);
}
END_TEST

START_TEST(test_stop_timeout)
{
	struct sbuf s = {0};
	volatile sig_atomic_t stop = 1;
	struct itp_options opt = {.stop = &stop, .stop_timeout_ms = 300};
	struct itp_result res;
	struct feeder f = {.never_end = 1};

	header(&s);
	ck_assert_int_eq(run_feed(&s, &opt, &res, &f), -ITP_E_TRUNCATED);
	ck_assert_ptr_nonnull(strstr(res.detail, "300 ms"));
	rec_close(open_rec());
	sb_free(&s);
}
END_TEST

static void count_status(const struct itp_status *st, void *arg)
{
	(void)st;
	(*(int *)arg)++;
}

START_TEST(test_status_while_idle)
{
	struct sbuf s = {0};
	struct itp_options opt = {.status = count_status, .stop_timeout_ms = 700};
	volatile sig_atomic_t stop = 1;
	struct itp_result res;
	struct feeder f = {.never_end = 1};
	int calls = 0;

	opt.status_arg = &calls;
	opt.stop = &stop;
	header(&s);
	run_feed(&s, &opt, &res, &f);
	ck_assert_int_ge(calls, 2);
	sb_free(&s);
}
END_TEST

START_TEST(test_output_exists)
{
	struct sbuf s = {0};
	struct itp_options opt = {.no_symbols = 1};
	struct itp_result res;
	FILE *fp;

	snprintf(outpath, sizeof(outpath), "%s/exists.htap", ck_tmpdir);
	fp = fopen(outpath, "w");
	ck_assert_ptr_nonnull(fp);
	fclose(fp);
	opt.output = outpath;
	ck_assert_int_eq(itp_run(-1, &opt, &res), -ITP_E_OUTPUT);
	ck_assert_int_eq(res.rec_error, REC_E_EXISTS);
	ck_assert_str_ne(itp_strerror(ITP_E_OUTPUT), "unknown error");
	ck_assert_str_eq(itp_strerror(1000), "unknown error");
	sb_free(&s);
}
END_TEST

START_TEST(test_demangle)
{
	char *d = itp_demangle("_ZN3foo3barEv");

	ck_assert_str_eq(d, "foo::bar()");
	free(d);
	ck_assert_ptr_null(itp_demangle("main"));
	ck_assert_ptr_null(itp_demangle("_Zbroken"));
}
END_TEST

/* ---- symbolization against this very binary ---------------------------- */

__attribute__((noinline)) uintptr_t itp_test_grab_ra(void)
{
	return (uintptr_t)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) uintptr_t itp_test_inner(void)
{
	return itp_test_grab_ra() - 1; /* LINE_INNER */
}

__attribute__((noinline)) uintptr_t itp_test_outer(void)
{
	uintptr_t ip = itp_test_inner(); /* LINE_OUTER */

	__asm__ volatile("" ::: "memory");
	return ip;
}

struct self_mod {
	uintptr_t addr;
	uint64_t base;
	uint64_t segs[3 * 16];
	size_t nseg;
	char path[4096];
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_mod *m = arg;
	size_t i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && m->addr >= info->dlpi_addr + ph->p_vaddr &&
		    m->addr < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
			break;
	}
	if (i == info->dlpi_phnum)
		return 0;
	m->base = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum && m->nseg < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		m->segs[m->nseg * 3] = ph->p_vaddr;
		m->segs[m->nseg * 3 + 1] = ph->p_memsz;
		m->segs[m->nseg * 3 + 2] = ph->p_flags;
		m->nseg++;
	}
	if (info->dlpi_name[0])
		snprintf(m->path, sizeof(m->path), "%s", info->dlpi_name);
	else if (readlink("/proc/self/exe", m->path, sizeof(m->path) - 1) < 0)
		m->path[0] = 0;
	return 1;
}

static int line_of(const char *marker)
{
	char path[4096], buf[512];
	int line = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s", __FILE__);
	fp = fopen(path, "r");
	if (!fp)
		return -1;
	while (fgets(buf, sizeof(buf), fp)) {
		line++;
		if (strstr(buf, marker) && !strstr(buf, "line_of"))
			break;
	}
	fclose(fp);
	return line;
}

START_TEST(test_symbolize_self)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_options opt = {0};
	struct itp_result res;
	struct rec_reader *r;
	struct self_mod m = {0};
	const struct rec_ip *ips;
	const struct rec_frame *fr;
	const struct rec_module *mods;
	uintptr_t ip = itp_test_outer();
	uintptr_t fn = (uintptr_t)&itp_test_grab_ra;
	size_t n, k;
	uint32_t f;

	m.addr = ip;
	ck_assert_int_eq(dl_iterate_phdr(find_self, &m), 1);
	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, 0xdead0000, 1, (uint64_t[]){0, 0x1000, 5}, NULL, 0, "[vdso]");
	ck_module(&c, 1, m.base, m.nseg, m.segs, NULL, 0, m.path);
	ck_node(&c, 2, 1, 0, fn);
	ck_node(&c, 3, 2, 1, ip);
	ck_node(&c, 4, 3, 2, 0xdead0010); /* in [vdso]: no file */
	ck_node(&c, 5, 4, 3, 0x10);	  /* in no module */
	ck_end(&s, &c);
	sb_end(&s, 6, WIRE_END_EXIT);
	/* run by hand: run_feed would force no_symbols */
	{
		pthread_t th;
		struct feeder fd = {0};
		int sv[2];

		snprintf(outpath, sizeof(outpath), "%s/sym.htap", ck_tmpdir);
		opt.output = outpath;
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		fd.fd = sv[1];
		fd.s = &s;
		pthread_create(&th, NULL, feed, &fd);
		ck_assert_int_eq(itp_run(sv[0], &opt, &res), 0);
		close(sv[0]);
		pthread_join(th, NULL);
		close(sv[1]);
	}
	ck_assert_uint_eq(res.ips, 4);
	r = open_rec();
	mods = rec_modules(r, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(mods[1].path, m.path);
	ck_assert_uint_eq(mods[1].base, m.base);
	ips = rec_ips(r, &n);
	ck_assert_uint_eq(n, 4);
	fr = rec_frames(r, &k);

	/* ip 0: itp_test_grab_ra's entry, a plain function */
	ck_assert_uint_eq(ips[0].module, 1);
	ck_assert_uint_ne(ips[0].frame, REC_NONE);
	ck_assert_str_eq(rec_string(r, fr[ips[0].frame].function), "itp_test_grab_ra");
	ck_assert_uint_eq(fr[ips[0].frame].outer, REC_NONE);

	/* ip 1: inside itp_test_inner inlined into itp_test_outer */
	ck_assert_uint_eq(ips[1].module, 1);
	f = ips[1].frame;
	ck_assert_uint_ne(f, REC_NONE);
	ck_assert_str_eq(rec_string(r, fr[f].function), "itp_test_inner");
	ck_assert_ptr_nonnull(strstr(rec_string(r, fr[f].file), "check_interpret.c"));
	ck_assert_int_eq(fr[f].line, line_of("LINE_INNER"));
	f = fr[f].outer;
	ck_assert_uint_ne(f, REC_NONE);
	ck_assert_str_eq(rec_string(r, fr[f].function), "itp_test_outer");
	ck_assert_int_eq(fr[f].line, line_of("LINE_OUTER"));
	ck_assert_uint_eq(fr[f].outer, REC_NONE);

	/* ip 2: [vdso] has a module but no symbols; ip 3: no module at all */
	ck_assert_uint_eq(ips[2].module, 0);
	ck_assert_uint_eq(ips[2].frame, REC_NONE);
	ck_assert_uint_eq(ips[3].module, REC_NONE);
	ck_assert_uint_eq(ips[3].frame, REC_NONE);
	ck_assert_uint_eq(res.warn.unsymbolized_ips, 2);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/*
 * The same binary reached through a sysroot (attach mode uses /proc/PID/root)
 * is symbolized; announced with another build-id than its file has, it is not.
 */
START_TEST(test_symbolize_sysroot_and_build_id)
{
	static const uint8_t wrong_id[20] = {1, 2, 3};
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_options opt = {.sysroot = "/proc/self/root"};
	struct itp_result res;
	struct rec_reader *r;
	struct self_mod m = {0};
	const struct rec_ip *ips;
	const struct rec_frame *fr;
	struct feeder fd = {0};
	pthread_t th;
	size_t n;
	int sv[2];

	m.addr = (uintptr_t)&itp_test_grab_ra;
	ck_assert_int_eq(dl_iterate_phdr(find_self, &m), 1);
	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, m.base, m.nseg, m.segs, NULL, 0, m.path);
	ck_node(&c, 1, 1, 0, m.addr);
	ck_module_del(&c, 2, m.base);
	ck_module(&c, 3, m.base, m.nseg, m.segs, wrong_id, sizeof(wrong_id), m.path);
	ck_node(&c, 4, 2, 0, m.addr + 1);
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_EXIT);
	snprintf(outpath, sizeof(outpath), "%s/sysroot.htap", ck_tmpdir);
	opt.output = outpath;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd.fd = sv[1];
	fd.s = &s;
	pthread_create(&th, NULL, feed, &fd);
	ck_assert_int_eq(itp_run(sv[0], &opt, &res), 0);
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	ck_assert_uint_eq(res.warn.build_id_mismatch, 1);
	r = open_rec();
	ips = rec_ips(r, &n);
	ck_assert_uint_eq(n, 2);
	fr = rec_frames(r, &n);
	ck_assert_uint_eq(ips[0].module, 0);
	ck_assert_uint_ne(ips[0].frame, REC_NONE);
	ck_assert_str_eq(rec_string(r, fr[ips[0].frame].function), "itp_test_grab_ra");
	ck_assert_uint_eq(ips[1].module, 1);
	ck_assert_uint_eq(ips[1].frame, REC_NONE);
	rec_close(r);
	sb_free(&s);
}
END_TEST

/* a module unloaded and another loaded at its address: the ip's seq decides */
START_TEST(test_module_reuse)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	struct rec_reader *r;
	const struct rec_ip *ips;
	const uint64_t seg[] = {0, 0x10000, 5};
	size_t n;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, 0x500000, 1, seg, (const uint8_t *)"\x01\x02", 2, "/nonexistent/a.so");
	ck_node(&c, 1, 1, 0, 0x500100);
	ck_module_del(&c, 2, 0x500000);
	ck_module(&c, 3, 0x500000, 1, seg, NULL, 0, "/nonexistent/b.so");
	ck_node(&c, 4, 2, 0, 0x500200);
	ck_module_del(&c, 5, 0x600000); /* never loaded */
	ck_end(&s, &c);
	sb_end(&s, 6, WIRE_END_EXIT);
	ck_assert_int_eq(run(&s, &res), 0);
	ck_assert_uint_eq(res.warn.unknown_module_dels, 1);
	r = open_rec();
	ips = rec_ips(r, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(ips[0].module, 0);
	ck_assert_uint_eq(ips[1].module, 1);
	ck_assert_str_eq(rec_modules(r, &n)[0].path, "/nonexistent/a.so");
	ck_assert_uint_eq(rec_modules(r, &n)[0].build_id_len, 2);
	rec_close(r);
	sb_free(&s);
}
END_TEST

START_TEST(test_bad_module)
{
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_result res;
	const uint64_t seg[] = {UINT64_MAX - 10, 0x10000, 5};

	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, 0x500000, 1, seg, NULL, 0, "/x.so");
	ck_end(&s, &c);
	ck_assert_int_eq(run(&s, &res), -ITP_E_CORRUPT);
	ck_assert_ptr_nonnull(strstr(res.detail, "wraps"));
	sb_free(&s);
}
END_TEST

/* ---- benchmarks (not run by ctest) ------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of this process: wall time means little on a busy machine */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * --bench EVENTS: a synthetic stream of 4 threads taking sequence numbers
 * in runs of 64, each buffering 4000 events per chunk (so chunks arrive out
 * of order as in a real session); each thread keeps 256 live blocks, so
 * allocations and frees alternate once warm; 1000 trace nodes.
 */
static void bench_gen(uint64_t nev, struct sbuf *out)
{
	enum { T = 4, RUN = 64, PER_CHUNK = 4000, LIVE = 256, NODES = 1000 };
	struct chunkb c[T];
	size_t cnt[T] = {0};
	uint64_t ring[T][LIVE], q;
	size_t head[T] = {0}, nlive[T] = {0};
	struct sbuf s = {0};
	int t;

	header(&s);
	ck_begin(&c[0], 1000, 0);
	for (q = 0; q < NODES; q++)
		ck_node(&c[0], q, q + 1, q ? (q * 7) % q + 1 : 0, 0x400000 + q * 16);
	ck_end(&s, &c[0]);
	for (t = 0; t < T; t++)
		ck_begin(&c[t], 1000 + t, NODES);
	for (q = NODES; q < NODES + nev; q++) {
		t = (int)((q / RUN) % T);
		if (nlive[t] == LIVE || (nlive[t] > LIVE / 2 && (q & 1))) {
			ck_free(&c[t], q, ring[t][head[t]]);
			head[t] = (head[t] + 1) % LIVE;
			nlive[t]--;
		} else {
			uint64_t ptr = 0x10000000ull * (t + 1) + (q << 4);

			ck_alloc(&c[t], q, WIRE_KIND_MALLOC, 16 + (q % 61) * 8, 1 + q % NODES, ptr);
			ring[t][(head[t] + nlive[t]) % LIVE] = ptr;
			nlive[t]++;
		}
		if (++cnt[t] == PER_CHUNK) {
			ck_end(&s, &c[t]);
			ck_begin(&c[t], 1000 + t, q + 1);
			cnt[t] = 0;
		}
	}
	for (t = 0; t < T; t++)
		ck_end(&s, &c[t]);
	sb_end(&s, NODES + nev, WIRE_END_EXIT);

	*out = s;
}

/* feed a stream to itp_run as fast as a socket takes it; print the rate */
static int bench_run(struct sbuf *s, uint64_t nev)
{
	struct itp_options opt = {.no_symbols = 1};
	struct itp_result res;
	struct feeder f = {0};
	pthread_t th;
	int sv[2], rc;
	double t0, t1, c0, c1;

	snprintf(outpath, sizeof(outpath), "/tmp/itp-bench.%d.htap", (int)getpid());
	opt.output = outpath;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	f.fd = sv[1];
	f.s = s;
	c0 = cpu_s();
	t0 = now_s();
	pthread_create(&th, NULL, feed, &f);
	rc = itp_run(sv[0], &opt, &res);
	t1 = now_s();
	c1 = cpu_s();
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	if (!nev)
		nev = res.final.alloc_calls + res.final.free_calls + res.final.traces;
	printf("stream %.1f MB, %llu events, itp_run %.3f s wall, %.3f s CPU (both threads): "
	       "%.1f M events/s, %.0f MB/s; rc %d %s; recording %.1f MB; late %llu skipped %llu\n",
	       (double)s->len / 1e6, (unsigned long long)nev, t1 - t0, c1 - c0,
	       (double)nev / (t1 - t0) / 1e6, (double)s->len / (t1 - t0) / 1e6, rc, res.detail,
	       (double)res.final.output_bytes / 1e6, (unsigned long long)res.warn.late_events,
	       (unsigned long long)res.warn.skipped_seqs);
	if (!getenv("ITP_BENCH_KEEP"))
		unlink(outpath);
	return rc ? 1 : 0;
}

/* --bench N: generate a stream of N events and run it; --bench-gen N FILE: only write it */
static int bench_stream(uint64_t nev, const char *file)
{
	struct sbuf s = {0};
	int rc = 0;

	bench_gen(nev, &s);
	if (file) {
		FILE *fp = fopen(file, "wb");

		if (!fp || fwrite(s.p, 1, s.len, fp) != s.len || fclose(fp)) {
			perror(file);
			rc = 1;
		}
	} else {
		rc = bench_run(&s, nev + 1000);
	}
	sb_free(&s);
	return rc;
}

/* --bench-run FILE: run a stream from a file (read into memory first) */
static int bench_file(const char *file)
{
	struct sbuf s = {0};
	char tmp[1 << 16];
	size_t n;
	FILE *fp = fopen(file, "rb");
	int rc;

	if (!fp) {
		perror(file);
		return 1;
	}
	while ((n = fread(tmp, 1, sizeof(tmp), fp)) > 0)
		sb_bytes(&s, tmp, n);
	fclose(fp);
	rc = bench_run(&s, 0);
	sb_free(&s);
	return rc;
}

struct sym_bench {
	const char *want; /* path substring */
	struct self_mod m;
};

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sym_bench *b = arg;

	(void)size;
	if (!strstr(info->dlpi_name, b->want))
		return 0;
	b->m.addr = info->dlpi_addr;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_LOAD) {
			b->m.addr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
			break;
		}
	}
	return find_self(info, size, &b->m);
}

/*
 * --bench-symbols N [LIB]: symbolize N distinct ips spread over the
 * executable segment of LIB (a substring of a loaded module's path,
 * default this program).
 */
static int bench_symbols(uint64_t nips, const char *lib)
{
	struct sym_bench b = {.want = lib ? lib : ""};
	struct sbuf s = {0};
	struct chunkb c;
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	pthread_t th;
	uint64_t lo = 0, hi = 0, q, step;
	size_t i;
	int sv[2], rc;
	double t0, t1, c0, c1;

	if (lib) {
		if (!dlopen(lib, RTLD_NOW | RTLD_GLOBAL) && !strchr(lib, '/'))
			fprintf(stderr, "dlopen %s: %s (looking among loaded modules)\n", lib,
				dlerror());
		dl_iterate_phdr(find_lib, &b);
	} else {
		b.m.addr = (uintptr_t)&itp_test_outer;
		dl_iterate_phdr(find_self, &b.m);
	}
	if (!b.m.nseg) {
		fprintf(stderr, "no module matching %s\n", b.want);
		return 1;
	}
	for (i = 0; i < b.m.nseg; i++) {
		if (b.m.segs[i * 3 + 2] & PF_X) {
			lo = b.m.base + b.m.segs[i * 3];
			hi = lo + b.m.segs[i * 3 + 1];
		}
	}
	step = (hi - lo) / nips ? (hi - lo) / nips : 1;
	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, b.m.base, b.m.nseg, b.m.segs, NULL, 0, b.m.path);
	for (q = 0; q < nips; q++) {
		if (q && q % 10000 == 0) { /* stay below WIRE_MAX_RECORD */
			ck_end(&s, &c);
			ck_begin(&c, 1, q + 1);
		}
		ck_node(&c, q + 1, q + 1, 0, lo + q * step + (q * 13) % step);
	}
	ck_end(&s, &c);
	sb_end(&s, nips + 1, WIRE_END_EXIT);
	snprintf(outpath, sizeof(outpath), "/tmp/itp-bench.%d.htap", (int)getpid());
	opt.output = outpath;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	f.fd = sv[1];
	f.s = &s;
	t0 = now_s();
	c0 = cpu_s();
	pthread_create(&th, NULL, feed, &f);
	rc = itp_run(sv[0], &opt, &res);
	t1 = now_s();
	c1 = cpu_s();
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	printf("%s: %llu ips, itp_run %.3f s wall %.3f s CPU, symbolization %.3f s wall "
	       "(%.1f us/ip), unsymbolized %llu; rc %d %s\n",
	       b.m.path, (unsigned long long)res.ips, t1 - t0, c1 - c0,
	       (double)res.symbolize_ns / 1e9,
	       (double)res.symbolize_ns / 1e3 / (double)(res.ips ? res.ips : 1),
	       (unsigned long long)res.warn.unsymbolized_ips, rc, res.detail);
	unlink(outpath);
	sb_free(&s);
	return rc ? 1 : 0;
}

/* ---- seeds for the fuzzer ------------------------------------------------ */

static void write_file(const char *dir, const char *name, const struct sbuf *s)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || fwrite(s->p, 1, s->len, fp) != s->len) {
		perror(path);
		exit(1);
	}
	fclose(fp);
}

static int write_seeds(const char *dir)
{
	const uint64_t seg[] = {0, 0x2000, 5, 0x2000, 0x1000, 6};
	struct sbuf s = {0};
	struct chunkb c;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, 0x400000, 2, seg, (const uint8_t *)"\xaa\xbb\xcc", 3, "/bin/true");
	ck_node(&c, 1, 1, 0, 0x400100);
	ck_node(&c, 2, 2, 1, 0x400200);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 16, 2, P1);
	ck_alloc_w(&c, 5, 32, 1, P2, 4096);
	ck_free(&c, 6, P1);
	ck_end(&s, &c);
	ck_begin(&c, 2, 4);
	ck_alloc(&c, 4, WIRE_KIND_CALLOC, 100, 1, P3);
	ck_nop(&c, 7);
	ck_free(&c, 8, P3);
	ck_module_del(&c, 9, 0x400000);
	ck_end(&s, &c);
	sb_tick(&s, 1000, 8192, 5);
	sb_end(&s, 10, WIRE_END_EXIT);
	write_file(dir, "two-threads", &s);
	sb_free(&s);

	header(&s);
	ck_begin(&c, 7, 0);
	ck_alloc(&c, 0, WIRE_KIND_REALLOC, 1, 0, P1);
	ck_end(&s, &c);
	write_file(dir, "no-end", &s);
	sb_free(&s);

	header(&s);
	ck_begin(&c, 3, 0);
	ck_alloc_d(&c, 0, WIRE_KIND_MALLOC, 24, 0, P2);
	ck_alloc_d(&c, 1, WIRE_KIND_MALLOC, 40, 0, P1);
	ck_free(&c, 2, P1);
	ck_alloc_d(&c, 3, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_free_d(&c, 4, P2);
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_EXIT);
	write_file(dir, "ptr-delta", &s);
	sb_free(&s);

	sb_header(&s, 1, WIRE_F_ATTACHED | WIRE_F_SAMPLED, "", "", 0);
	sb_u8(&s, WIRE_REC_LOG);
	sb_var(&s, 3);
	sb_bytes(&s, "\x01hi", 3);
	sb_end(&s, 0, WIRE_END_STOP);
	write_file(dir, "log-only", &s);
	sb_free(&s);
	return 0;
}

/* ---- suite ----------------------------------------------------------------- */

static Suite *interpret_suite(void)
{
	Suite *s = suite_create("interpret");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, test_basic);
	tcase_add_test(tc, test_reorder_across_chunks);
	tcase_add_test(tc, test_ptr_delta);
	tcase_add_test(tc, test_reorder_many);
	tcase_add_test(tc, test_temporary);
	tcase_add_test(tc, test_unknown_frees);
	tcase_add_test(tc, test_dedup_allocinfos);
	tcase_add_test(tc, test_weighted);
	tcase_add_test(tc, test_unknown_parent_and_trace);
	tcase_add_test(tc, test_duration_by_clock);
	tcase_add_test(tc, test_sparse_node_indices);
	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_bad_version);
	tcase_add_test(tc, test_header_len_too_big);
	tcase_add_test(tc, test_header_exe_past_end);
	tcase_add_test(tc, test_empty_stream);
	tcase_add_test(tc, test_record_too_long);
	tcase_add_test(tc, test_truncated_varint);
	tcase_add_test(tc, test_overlong_length_varint);
	tcase_add_test(tc, test_overflowing_varint);
	tcase_add_test(tc, test_varint_boundaries);
	tcase_add_test(tc, test_ptrmap_churn);
	tcase_add_test(tc, test_infos_dedup_many);
	tcase_add_test(tc, test_unknown_op);
	tcase_add_test(tc, test_seq_repeated);
	tcase_add_test(tc, test_truncated_stream);
	tcase_add_test(tc, test_no_end_record);
	tcase_add_test(tc, test_gap_at_end);
	tcase_add_test(tc, test_reorder_limit);
	tcase_add_test(tc, test_tick_order);
	tcase_add_test(tc, test_split_reads);
	tcase_add_test(tc, test_records_across_blocks);
	tcase_add_test(tc, test_unknown_record_and_log);
	tcase_add_test(tc, test_stop);
	tcase_add_test(tc, test_stop_timeout);
	tcase_add_test(tc, test_status_while_idle);
	tcase_add_test(tc, test_output_exists);
	tcase_add_test(tc, test_demangle);
	tcase_add_test(tc, test_module_reuse);
	tcase_add_test(tc, test_bad_module);
	tcase_add_test(tc, test_symbolize_self);
	tcase_add_test(tc, test_symbolize_sysroot_and_build_id);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
		return write_seeds(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--bench"))
		return bench_stream(strtoull(argv[2], NULL, 0), NULL);
	if (argc == 4 && !strcmp(argv[1], "--bench-gen"))
		return bench_stream(strtoull(argv[2], NULL, 0), argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--bench-run"))
		return bench_file(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "--bench-symbols"))
		return bench_symbols(strtoull(argv[2], NULL, 0), argc > 3 ? argv[3] : NULL);
	return ck_run_suite(interpret_suite());
}
