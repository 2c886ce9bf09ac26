/* tests/unit/check_modindex.c - hostile module streams, the memory budget and a second stop (unit.modindex) */
/* SPDX-License-Identifier: MIT */
/*
 * What a target can send to make heaptap slow or big, through the real
 * itp_run on a socketpair: a flood of MODULE_DELs of unknown bases among
 * 20,000 modules and a module with a range of half the address space, then
 * 50,000 ips to resolve; the session must end within 5 s of the stop.
 * Live pointers past --max-memory: the session ends as a stop does (the
 * library is told to stop, its END still read), the tables stay within the
 * budget, the recording is readable and says it was cut short. A second
 * stop ends at once. The module index itself: the module loaded at an
 * ip's sequence number, a library unloaded and another loaded at its
 * address, the newest one as a fallback, ranges that overlap. And the
 * symbolizer child: it names a function of this program, and when it
 * crashes the frame stays an address with one reason.
 */
#define _GNU_SOURCE
#include <check.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_stream.h"
#include "interpret/internal.h"
#include "interpret/module_internal.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

#define CHUNK_EVENTS 20000 /* a chunk stays far below WIRE_MAX_RECORD */

struct feeder {
	int fd;
	const struct sbuf *s;
	int hold;		/* after STOP: no END, wait for release (a library that hangs) */
	volatile int got_stop;
	volatile int release;
	volatile sig_atomic_t *stop2; /* with hold: set to 2 a moment after STOP came */
	double t_stop2;		/* when */
};

/* the stream, then END once STOP came (as the library does), then EOF */
static double now_s(void);

static void *feed(void *arg)
{
	struct feeder *f = arg;
	uint8_t msg[2];

	ck_send_all(f->fd, f->s->p, f->s->len);
	if (read(f->fd, msg, 2) == 2 && msg[0] == WIRE_CTL_STOP && f->hold) {
		f->got_stop = 1;
		usleep(300000);
		f->t_stop2 = now_s();
		*f->stop2 = 2;
		while (!f->release)
			usleep(1000);
	} else if (msg[0] == WIRE_CTL_STOP) {
		struct sbuf e = {0};

		f->got_stop = 1;
		sb_end(&e, 0, WIRE_END_STOP);
		ck_send_all(f->fd, e.p, e.len);
		sb_free(&e);
	}
	shutdown(f->fd, SHUT_WR);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char outpath[160];
static int nrun;

/* itp_run of s with opt (output set here); *secs gets its time */
static int run_feed(const struct sbuf *s, struct itp_options *opt, struct itp_result *res,
		    struct feeder *f, double *secs)
{
	pthread_t th;
	int sv[2], rc;
	double t0;

	snprintf(outpath, sizeof(outpath), "%s/rec%d.htap", ck_tmpdir, nrun++);
	opt->output = outpath;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f->fd = sv[1];
	f->s = s;
	ck_assert_int_eq(pthread_create(&th, NULL, feed, f), 0);
	t0 = now_s();
	rc = itp_run(sv[0], opt, res);
	*secs = now_s() - t0;
	f->release = 1;
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	ck_assert_int_eq(rc, -res->err);
	return rc;
}

/* the recording opens and its end_reason is want */
static void check_recording(const char *want)
{
	struct rec_reader *r;
	const char *v;
	int err = 0;

	r = rec_open(outpath, &err);
	ck_assert_msg(r != NULL, "recording unreadable: %s", rec_strerror(err));
	v = rec_meta(r, "end_reason");
	ck_assert_msg(v && !strcmp(v, want), "end_reason %s, expected %s", v ? v : "(none)", want);
	rec_close(r);
}

/* a builder that starts a new chunk every CHUNK_EVENTS events */
struct stream {
	struct sbuf b;
	struct chunkb c;
	uint64_t seq;
	size_t in_chunk;
};

static void st_begin(struct stream *s)
{
	memset(s, 0, sizeof(*s));
	sb_header(&s->b, 4242, WIRE_F_ATTACHED, "/bin/hostile", "hostile", 7);
	ck_begin(&s->c, 1, 0);
}

static uint64_t st_next(struct stream *s)
{
	if (s->in_chunk == CHUNK_EVENTS) {
		ck_end(&s->b, &s->c);
		ck_begin(&s->c, 1, s->seq);
		s->in_chunk = 0;
	}
	s->in_chunk++;
	return s->seq++;
}

static void st_end(struct stream *s)
{
	ck_end(&s->b, &s->c);
}

/* a stream of one node and n malloc(32)s of blocks that all stay live */
static void st_allocs(struct stream *s, size_t n)
{
	st_begin(s);
	ck_node(&s->c, st_next(s), 1, 0, 0x401000);
	for (size_t i = 0; i < n; i++)
		ck_alloc(&s->c, st_next(s), WIRE_KIND_MALLOC, 32, 1, 0x100000000ull + i * 32);
	st_end(s);
}

START_TEST(test_del_flood_and_huge_range)
{
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	volatile sig_atomic_t stop = 1; /* asked before anything came: the stream is all there is */
	struct stream s;
	uint64_t seg[3] = {0, 0x1000, 5}, huge[3] = {0, (uint64_t)1 << 62, 5};
	size_t i, dels = 0;
	double secs;

	st_begin(&s);
	for (i = 0; i < 20000; i++) {
		uint64_t seq = st_next(&s);

		ck_module(&s.c, seq, 0x10000000ull + i * 0x10000, 1, seg, NULL, 0, "/nonexistent/m.so");
	}
	/* a range from 64 KiB to 2^62: before, every lookup above it walked every module */
	ck_module(&s.c, st_next(&s), 0x10000, 1, huge, NULL, 0, "/nonexistent/huge.so");
	/* 3 MB of MODULE_DEL for bases no module has: before, each one scanned all modules */
	while (s.b.len < ((size_t)3 << 20)) {
		ck_module_del(&s.c, st_next(&s), 0x7f0000000000ull + dels * 0x1000);
		dels++;
	}
	for (i = 0; i < 50000; i++)
		ck_node(&s.c, st_next(&s), i + 1, 0, 0x10000000ull + (i % 20000) * 0x10000 + 0x10 + i);
	st_end(&s);

	opt.stop = &stop;
	opt.no_symbols = 1; /* modules are still resolved for every ip */
	run_feed(&s.b, &opt, &res, &f, &secs);
	ck_assert_msg(secs < 5.0, "the session ended %.1f s after the stop (at most 5 s)", secs);
	ck_assert_int_eq(res.err, ITP_OK);
	ck_assert(f.got_stop);
	ck_assert_uint_eq(res.warn.unknown_module_dels, dels);
	ck_assert_uint_eq(res.ips, 50000);
	check_recording("stop");
	sb_free(&s.b);
}
END_TEST

START_TEST(test_budget_ends_the_session)
{
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	struct stream s;
	uint64_t tables;
	double secs;

	/* 1.5 M blocks live at once: 64 bytes each in the pointer table, past a 64 MiB budget */
	st_allocs(&s, 1500000);
	opt.max_memory = (uint64_t)64 << 20;
	opt.no_symbols = 1;
	run_feed(&s.b, &opt, &res, &f, &secs);
	ck_assert_msg(res.err == ITP_E_BUDGET, "err %d (%s)", res.err, res.detail);
	ck_assert_msg(strstr(res.detail, "budget") != NULL, "detail: %s", res.detail);
	itp_budget(&opt, &tables, NULL, NULL);
	ck_assert_msg(res.peak_table_bytes <= tables, "tables held %llu bytes, budget %llu",
		      (unsigned long long)res.peak_table_bytes, (unsigned long long)tables);
	ck_assert_msg(res.peak_table_bytes > tables / 4, "tables held only %llu bytes",
		      (unsigned long long)res.peak_table_bytes);
	/* the library was told to stop and its END was still read: the process is restored */
	ck_assert(f.got_stop);
	ck_assert_int_eq(res.end_reason, WIRE_END_STOP);
	ck_assert_uint_gt(res.final.alloc_calls, 100000);
	ck_assert_uint_lt(res.final.alloc_calls, 1500000);
	check_recording("truncated");
	sb_free(&s.b);
}
END_TEST

START_TEST(test_second_stop)
{
	struct itp_options opt = {0};
	struct itp_result res;
	struct feeder f = {0};
	volatile sig_atomic_t stop = 1;
	struct stream s;
	double secs;

	st_allocs(&s, 1000);
	opt.stop = &stop;
	opt.stop_timeout_ms = 60000; /* the library never answers: only the second stop ends it */
	f.hold = 1;
	f.stop2 = &stop;
	run_feed(&s.b, &opt, &res, &f, &secs);
	ck_assert_int_eq(res.err, ITP_E_STOPPED);
	ck_assert(f.got_stop);
	/*
	 * ITP_E_STOPPED says the second stop ended it; the time only has to be
	 * far from the 60-s stop timeout (not a speed check: ASan on a shared
	 * machine took 1.8 s).
	 */
	secs = now_s() - f.t_stop2;
	ck_assert_msg(secs < 30.0, "the session ended %.1f s after the second stop", secs);
	check_recording("truncated");
	sb_free(&s.b);
}
END_TEST

/* the main program's load bias and PT_LOAD segments */
struct self_map {
	uint64_t base;
	uint64_t seg[3 * 16];
	size_t nseg;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_map *m = arg;
	int i;

	(void)size;
	m->base = info->dlpi_addr;
	for (i = 0; i < info->dlpi_phnum && m->nseg < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		m->seg[3 * m->nseg] = ph->p_vaddr;
		m->seg[3 * m->nseg + 1] = ph->p_memsz;
		m->seg[3 * m->nseg + 2] = ph->p_flags;
		m->nseg++;
	}
	return 1; /* the first entry is the program */
}

__attribute__((noinline)) void *modindex_named_fn(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/* itp_run with the symbolizer child on one ip of this program; the name of its frame, "" = none */
static const char *child_symbolizes(struct itp_result *res, char *name, size_t len)
{
	struct itp_options opt = {0};
	struct feeder f = {0};
	volatile sig_atomic_t stop = 1;
	struct self_map self = {0};
	struct rec_reader *r;
	const struct rec_ip *ips;
	char exe[512];
	struct stream s;
	ssize_t n;
	size_t nips;
	double secs;
	int err = 0;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	dl_iterate_phdr(find_self, &self);
	ck_assert_uint_gt(self.nseg, 0);
	st_begin(&s);
	ck_module(&s.c, st_next(&s), self.base, self.nseg, self.seg, NULL, 0, exe);
	ck_node(&s.c, st_next(&s), 1, 0, (uint64_t)(uintptr_t)modindex_named_fn + 4);
	st_end(&s);
	opt.stop = &stop;
	opt.sym_child = 1; /* pid 0: the stream's path is opened, by the child */
	run_feed(&s.b, &opt, res, &f, &secs);
	sb_free(&s.b);
	r = rec_open(outpath, &err);
	ck_assert_msg(r != NULL, "recording unreadable: %s", rec_strerror(err));
	ips = rec_ips(r, &nips);
	ck_assert_uint_eq(nips, 1);
	ck_assert_uint_ne(ips[0].module, REC_NONE);
	snprintf(name, len, "%s",
		 ips[0].frame == REC_NONE ? "" : rec_string(r, rec_frames(r, &nips)[ips[0].frame].function));
	rec_close(r);
	return name;
}

START_TEST(test_symbolizer_child)
{
	struct itp_result res;
	char name[128];

	unsetenv("HEAPTAP_FAULT");
	ck_assert_str_eq(child_symbolizes(&res, name, sizeof(name)), "modindex_named_fn");
	ck_assert_str_eq(res.sym_error, "");
	/* a crash of the child: the frame stays an address, one reason, the recording is written */
	setenv("HEAPTAP_FAULT", "symbolizer", 1);
	ck_assert_str_eq(child_symbolizes(&res, name, sizeof(name)), "");
	unsetenv("HEAPTAP_FAULT");
	ck_assert_msg(strstr(res.sym_error, "signal 11") != NULL, "sym_error: %s", res.sym_error);
	ck_assert_uint_eq(res.sym_left, 1);
	ck_assert_int_eq(res.err, ITP_OK);
	/*
	 * a child that works 3 s before its first chain, past the idle limit
	 * these faults set (1 s) as a starved one would: it is working, not
	 * hanging, so its names come
	 */
	setenv("HEAPTAP_FAULT", "symbolizer-busy", 1);
	ck_assert_str_eq(child_symbolizes(&res, name, sizeof(name)), "modindex_named_fn");
	unsetenv("HEAPTAP_FAULT");
	ck_assert_str_eq(res.sym_error, "");
	/* one that hangs (no CPU, no chain) is killed after the limit */
	setenv("HEAPTAP_FAULT", "symbolizer-hang", 1);
	ck_assert_str_eq(child_symbolizes(&res, name, sizeof(name)), "");
	unsetenv("HEAPTAP_FAULT");
	ck_assert_msg(strstr(res.sym_error, "stopped answering") != NULL, "sym_error: %s", res.sym_error);
	ck_assert_uint_eq(res.sym_left, 1);
}
END_TEST

static struct itp_module *mod(uint64_t base, uint64_t size, uint64_t add, uint64_t del)
{
	struct itp_module *m = calloc(1, sizeof(*m));

	ck_assert_ptr_nonnull(m);
	m->path = strdup("/m");
	m->seg = calloc(1, sizeof(*m->seg));
	ck_assert_ptr_nonnull(m->seg);
	m->seg[0] = (struct itp_seg){.vaddr = 0, .memsz = size, .flags = 5};
	m->nseg = 1;
	m->base = base;
	m->lo = base;
	m->hi = base + size;
	m->seq_add = add;
	m->seq_del = del;
	return m;
}

START_TEST(test_index_lookups)
{
	struct itp_modules t = {0};
	struct itp_modindex x;
	struct itp_modq q[7];
	long want[7] = {0, 1, 2, 1, 3, -1, 4};
	size_t i;

	/* 0: A at 0x1000 for seq [0, 10); 1: B there from 10 on; 2: C elsewhere */
	ck_assert_int_eq(itp_modules_add(&t, mod(0x1000, 0x1000, 0, UINT64_MAX)), 0);
	ck_assert_int_eq(itp_modules_del(&t, 0x1000, 10), 0);
	ck_assert_int_eq(itp_modules_del(&t, 0x1000, 11), -ENOENT); /* none loaded there now */
	ck_assert_int_eq(itp_modules_add(&t, mod(0x1000, 0x1000, 10, UINT64_MAX)), 0);
	ck_assert_int_eq(itp_modules_add(&t, mod(0x9000, 0x100, 3, UINT64_MAX)), 0);
	/* 3: D covers B's range and more, loaded later: overlapping hostile ranges */
	ck_assert_int_eq(itp_modules_add(&t, mod(0x800, 0x10000, 20, UINT64_MAX)), 0);
	/* 4: E, announced after its ip was seen: the newest module covering it */
	ck_assert_int_eq(itp_modules_add(&t, mod(0x100000, 0x1000, 50, UINT64_MAX)), 0);
	q[0] = (struct itp_modq){.ip = 0x1800, .seq = 5, .idx = 0};	  /* A */
	q[1] = (struct itp_modq){.ip = 0x1800, .seq = 12, .idx = 1};	  /* B */
	q[2] = (struct itp_modq){.ip = 0x9010, .seq = 4, .idx = 2};	  /* C */
	q[3] = (struct itp_modq){.ip = 0x1fff, .seq = 10, .idx = 3};	  /* B */
	q[4] = (struct itp_modq){.ip = 0x1800, .seq = 25, .idx = 4};	  /* D, newest */
	q[5] = (struct itp_modq){.ip = 0x200000, .seq = 25, .idx = 5};	  /* none */
	q[6] = (struct itp_modq){.ip = 0x100010, .seq = 40, .idx = 6};	  /* E (fallback) */
	ck_assert_int_eq(itp_modindex_build(&x, &t), 0);
	ck_assert_int_eq(itp_modindex_resolve(&x, &t, q, 7, NULL), 0);
	for (i = 0; i < 7; i++)
		ck_assert_msg(q[i].mod == want[q[i].idx], "query %u: module %ld, expected %ld",
			      q[i].idx, q[i].mod, want[q[i].idx]);
	itp_modindex_free(&x);
	itp_modules_free(&t);
}
END_TEST

int main(void)
{
	TCase *tc;
	Suite *s = ck_tmpdir_suite("modindex", "hostile", &tc);

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_index_lookups);
	tcase_add_test(tc, test_del_flood_and_huge_range);
	tcase_add_test(tc, test_budget_ends_the_session);
	tcase_add_test(tc, test_second_stop);
	tcase_add_test(tc, test_symbolizer_child);
	return ck_run_suite(s);
}
