/* tests/unit/check_interpret_harness.h - the interpret/ suites' harness: a thread feeds a stream to itp_run */
/* SPDX-License-Identifier: MIT */
/*
 * Header-only (static inline), as tests/lib/ is: each suite gets its own
 * copy, bound to its own ck_tmpdir.
 *
 *   run_feed(s, opt, res, f)  s through itp_run with opt (output filled in);
 *                             f (may be NULL) sets the feeder's options
 *   run(s, res)               the same with default options
 *   run_refused(s, res, err, what)
 *                             run(s, res) must fail with -err and a detail
 *                             that names what (a hostile stream)
 *   open_rec()                the recording of the last run (fails the test
 *                             if it cannot be opened)
 *   open_kept(n, end)         open_rec() holding n events (what came before
 *                             the fault), its end_reason end (NULL: any)
 *   events(r, &n)             all events of r, malloc'd
 *   header(s)                 a stream header: pid 4242, /usr/bin/prog -x arg
 *   now_s(), cpu_s()          monotonic and process CPU seconds (benchmarks)
 */
#ifndef HEAPTAP_CHECK_INTERPRET_HARNESS_H
#define HEAPTAP_CHECK_INTERPRET_HARNESS_H

#include <check.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_stream.h"

#include "check_interpret_wire.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

char *itp_demangle(const char *name); /* interpret/demangle.cc */

/* How the feeder thread writes a stream into its end of the socketpair. */
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

#define P1 0x7f0000001000ull
#define P2 0x7f0000002000ull
#define P3 0x7f0000003000ull
#define P4 0x7f0000004000ull

static inline void *feed(void *arg)
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
			ck_send_all(f->fd, f->s->p + off, n);
			off += n;
			if (x % 16 == 0)
				usleep(200); /* the reader catches up: records cut at a read's end */
		}
		split = f->s->len;
	} else {
		ck_send_all(f->fd, f->s->p, split);
	}
	if (split < f->s->len) {
		usleep(20000);
		ck_send_all(f->fd, f->s->p + split, f->s->len - split);
	}
	if (f->wait_stop) {
		uint8_t msg[2];

		if (read(f->fd, msg, 2) == 2 && msg[0] == WIRE_CTL_STOP && msg[1] == 0) {
			struct sbuf e = {0};

			f->got_stop = 1;
			sb_end(&e, 0, WIRE_END_STOP);
			ck_send_all(f->fd, e.p, e.len);
			sb_free(&e);
		}
	}
	while (f->never_end && !f->release)
		usleep(1000);
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

static char outpath[160]; /* the recording the last run wrote: ck_tmpdir (128) and a file name */
static int nrun;

static inline int run_feed(const struct sbuf *s, struct itp_options *opt, struct itp_result *res,
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

static inline int run(const struct sbuf *s, struct itp_result *res)
{
	struct itp_options opt = {0};

	return run_feed(s, &opt, res, NULL);
}

static inline struct rec_reader *open_rec(void)
{
	int err = 0;
	struct rec_reader *r = rec_open(outpath, &err);

	ck_assert_msg(r, "rec_open %s: %s", outpath, rec_strerror(err));
	return r;
}

static inline void run_refused(const struct sbuf *s, struct itp_result *res, int err,
			       const char *what)
{
	ck_assert_int_eq(run(s, res), -err);
	ck_assert_msg(strstr(res->detail, what) != NULL, "detail '%s' lacks '%s'", res->detail, what);
}

static inline struct rec_reader *open_kept(uint64_t n, const char *end_reason)
{
	struct rec_reader *r = open_rec();

	ck_assert_uint_eq(rec_nevents(r), n);
	if (end_reason)
		ck_assert_str_eq(rec_meta(r, "end_reason"), end_reason);
	return r;
}

static inline struct rec_event *events(struct rec_reader *r, size_t *n)
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

static inline void header(struct sbuf *s)
{
	static const char cmd[] = "prog\0-x\0arg";

	sb_header(s, 4242, 0, "/usr/bin/prog", cmd, sizeof(cmd));
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of this process: wall time means little on a busy machine */
static inline double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
