/* tests/sample/check_sample_snap.c - snapshot sums of a sampled session calibrated to the exact site counts */
/* SPDX-License-Identifier: MIT */
/*
 * A crafted stream (tests/unit/check_interpret_wire.c) goes through itp_run
 * over a socketpair with opt.snapshot set; the callback sees the final view:
 *   - two stacks end at site A (exact: 10000 calls, 131072 bytes); their
 *     samples stand for 4 x 65536 bytes and 16384 objects, so every value of
 *     both is scaled by 1/2 (bytes) and 10000/16384 (objects): the site's
 *     alloc sums equal its exact counts, in use follows the samples;
 *   - site B (exact 3 calls, 4096 bytes) got no sample: a trace of its own
 *     with those exact values and nothing in use;
 *   - a trace of unweighted allocations (full tracing) is left as it is;
 *   - with no output path (snapshots only) no file is written and the view
 *     is the same.
 * Names (interpret/snapsym.c): a stream whose module is this test program
 * itself, at its real load bias, names two addresses of snap_site_one and
 * snap_site_two, the second sent only after the first snapshots: every
 * snapshot names what it holds, and the session looks each address up
 * once (two in all, however many snapshots there were).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "tests/lib/check_stream.h"
#include "interpret/interpret.h"

#define IP_A 0x401234u
#define IP_B 0x405678u
#define IP_MAIN 0x400100u
#define IP_OTHER 0x400200u
#define IP_FULL 0x407000u


/* What the last snapshot showed, by (leaf ip, parent's ip). */
struct seen {
	int views;
	struct row {
		uint64_t leaf, parent;
		int64_t inuse_b, inuse_o;
		uint64_t alloc_b, alloc_o;
	} row[16];
	size_t nrow;
};

static void on_snap(const struct itp_snapshot *s, void *arg)
{
	struct seen *v = arg;

	v->views++;
	ck_assert_ptr_null(s->frames); /* no_symbols */
	v->nrow = 0;
	for (size_t t = 1; t < s->ntraces && v->nrow < 16; t++) {
		const struct itp_snap_trace *tr = &s->traces[t];
		struct row *r;

		if (!tr->alloc_bytes && !tr->inuse_bytes)
			continue;
		r = &v->row[v->nrow++];
		ck_assert_uint_lt(tr->ip, s->nips);
		r->leaf = s->ips[tr->ip];
		r->parent = tr->parent && s->traces[tr->parent].ip < s->nips
				    ? s->ips[s->traces[tr->parent].ip]
				    : 0;
		r->inuse_b = tr->inuse_bytes;
		r->inuse_o = tr->inuse_objects;
		r->alloc_b = tr->alloc_bytes;
		r->alloc_o = tr->alloc_objects;
	}
}

/* snapshots of the names case: per view, the outermost function named for each ip */
struct named {
	int views, one_named, two_named, two_seen;
	int nulls; /* views without frames */
};

__attribute__((noinline)) void snap_site_one(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}

__attribute__((noinline)) void snap_site_two(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}

static uint64_t ip_one(void)
{
	return (uint64_t)(uintptr_t)&snap_site_one + 1;
}

static uint64_t ip_two(void)
{
	return (uint64_t)(uintptr_t)&snap_site_two + 1;
}

static void on_named(const struct itp_snapshot *s, void *arg)
{
	struct named *v = arg;
	int one = 0, two = 0, seen2 = 0;

	v->views++;
	if (!s->frames) {
		v->nulls++;
		return;
	}
	for (size_t i = 0; i < s->nips; i++) {
		const struct itp_snap_frames *f = &s->frames[i];
		const char *fn = f->n ? f->v[f->n - 1].function : NULL;

		if (s->ips[i] == ip_one())
			one = fn && !strcmp(fn, "snap_site_one");
		if (s->ips[i] == ip_two()) {
			seen2 = 1;
			two = fn && !strcmp(fn, "snap_site_two");
		}
	}
	v->one_named += one;
	v->two_seen += seen2;
	v->two_named += two;
}

static const struct row *find(const struct seen *v, uint64_t leaf, uint64_t parent)
{
	for (size_t i = 0; i < v->nrow; i++)
		if (v->row[i].leaf == leaf && v->row[i].parent == parent)
			return &v->row[i];
	return NULL;
}

static void stream(struct sbuf *s)
{
	static const char cmd[] = "prog";
	struct chunkb c;
	const uint64_t sites[] = { IP_A, 10000, 131072, IP_B, 3, 4096 };

	sb_header(s, 4242, WIRE_F_ATTACHED, "/usr/bin/prog", cmd, sizeof(cmd));
	ck_begin(&c, 4242, 0);
	ck_node(&c, 0, 1, 0, IP_MAIN);
	ck_node(&c, 1, 2, 1, IP_A);	/* main -> A */
	ck_node(&c, 2, 3, 0, IP_OTHER);
	ck_node(&c, 3, 4, 3, IP_A);	/* other -> A */
	ck_node(&c, 4, 5, 1, IP_FULL);	/* main -> full (unweighted) */
	ck_alloc_w(&c, 5, 16, 2, 0x7f0000001000ull, 65536);
	ck_alloc_w(&c, 6, 16, 4, 0x7f0000002000ull, 65536);
	ck_alloc_w(&c, 7, 16, 4, 0x7f0000003000ull, 65536);
	ck_alloc_w(&c, 8, 16, 4, 0x7f0000004000ull, 65536);
	ck_free(&c, 9, 0x7f0000001000ull);
	ck_free(&c, 10, 0x7f0000002000ull);
	ck_alloc(&c, 11, WIRE_KIND_MALLOC, 100, 5, 0x7f0000005000ull);
	ck_end(s, &c);
	sb_sites(s, 2, sites);
	sb_end(s, 12, WIRE_END_STOP);
}

static int run(const char *output, struct seen *v)
{
	struct ck_feed f = { 0 };
	struct sbuf s = { 0 };
	struct itp_options opt = { 0 };
	struct itp_result res;
	int rc;

	stream(&s);
	ck_feed_add(&f, &s, 0);
	opt.output = output;
	opt.no_symbols = 1;
	opt.snapshot = on_snap;
	opt.snapshot_arg = v;
	opt.snapshot_ns = 3600ull * 1000000000u; /* only the final one */
	rc = ck_feed_run(&f, &opt, &res);
	sb_free(&s);
	ck_assert_msg(rc == 0, "itp_run: %d %s", rc, res.detail);
	ck_assert_uint_eq(res.site_calls, 10003);
	return rc;
}

static void check_view(const struct seen *v)
{
	const struct row *a1 = find(v, IP_A, IP_MAIN), *a2 = find(v, IP_A, IP_OTHER);
	const struct row *b = find(v, IP_B, 0), *full = find(v, IP_FULL, IP_MAIN);

	ck_assert_int_ge(v->views, 1);
	ck_assert_ptr_nonnull(a1);
	ck_assert_ptr_nonnull(a2);
	/* bytes: 65536 x 1/2 per sample; objects: 4096 x 10000/16384 = 2500 */
	ck_assert_uint_eq(a1->alloc_b, 32768);
	ck_assert_uint_eq(a2->alloc_b, 98304);
	ck_assert_uint_eq(a1->alloc_b + a2->alloc_b, 131072);
	ck_assert_uint_eq(a1->alloc_o, 2500);
	ck_assert_uint_eq(a2->alloc_o, 7500);
	ck_assert_int_eq(a1->inuse_b, 0);
	ck_assert_int_eq(a2->inuse_b, 65536);
	ck_assert_int_eq(a2->inuse_o, 5000);
	/* the site without a sample: its exact counts, alone */
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(b->alloc_b, 4096);
	ck_assert_uint_eq(b->alloc_o, 3);
	ck_assert_int_eq(b->inuse_b, 0);
	/* full tracing: exact already */
	ck_assert_ptr_nonnull(full);
	ck_assert_uint_eq(full->alloc_b, 100);
	ck_assert_int_eq(full->inuse_b, 100);
	ck_assert_uint_eq(full->alloc_o, 1);
}

START_TEST(calibrated_with_recording)
{
	struct seen v = { 0 };
	char path[sizeof(ck_tmpdir) + 32];

	snprintf(path, sizeof(path), "%s/rec.htap", ck_tmpdir);
	run(path, &v);
	check_view(&v);
	ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

START_TEST(calibrated_without_recording)
{
	struct seen v = { 0 };
	char cwd[256];
	DIR *d;
	struct dirent *e;
	int files = 0;

	/* whatever a default name would be, it would land here */
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(ck_tmpdir), 0);
	run(NULL, &v);
	ck_assert_int_eq(chdir(cwd), 0);
	check_view(&v);
	d = opendir(ck_tmpdir);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			files++;
	closedir(d);
	ck_assert_int_eq(files, 0);
}
END_TEST

/* the main program's load bias and PT_LOAD triples (vaddr, memsz, flags) */
struct self_mod {
	uint64_t base, segs[3 * 16];
	size_t nseg;
};

static int first_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_mod *m = arg;

	(void)size;
	m->base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum && m->nseg < 16; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		m->segs[3 * m->nseg] = ph->p_vaddr;
		m->segs[3 * m->nseg + 1] = ph->p_memsz;
		m->segs[3 * m->nseg + 2] = ph->p_flags;
		m->nseg++;
	}
	return 1; /* the first one is the main program */
}

/*
 * self_parts - the names cases' stream in three parts: the header, this
 * program as its module and an allocation at snap_site_one; then one ->
 * snap_site_two and an allocation there; then the end.
 */
static void self_parts(struct sbuf part[3])
{
	static const char cmd[] = "self";
	struct self_mod m = { 0 };
	struct chunkb c;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	dl_iterate_phdr(first_module, &m);
	ck_assert_uint_gt(m.nseg, 0);
	memset(part, 0, 3 * sizeof(*part));
	sb_header(&part[0], 4242, WIRE_F_ATTACHED, exe, cmd, sizeof(cmd));
	ck_begin(&c, 4242, 0);
	ck_module(&c, 0, m.base, m.nseg, m.segs, NULL, 0, exe);
	ck_node(&c, 1, 1, 0, ip_one());
	ck_alloc(&c, 2, WIRE_KIND_MALLOC, 100, 1, 0x7f0000001000ull);
	ck_end(&part[0], &c);
	ck_begin(&c, 4242, 3);
	ck_node(&c, 3, 2, 1, ip_two()); /* one -> two: comes after the first snapshots */
	ck_alloc(&c, 4, WIRE_KIND_MALLOC, 200, 2, 0x7f0000002000ull);
	ck_end(&part[1], &c);
	sb_end(&part[2], 5, WIRE_END_STOP);
}

/* run_paced - the parts with 400 ms between them (the snapshot clock runs in between), freed */
static int run_paced(struct sbuf part[3], const struct itp_options *opt, struct itp_result *res)
{
	struct ck_feed f = { 0 };
	int rc;

	for (int i = 0; i < 3; i++)
		ck_feed_add(&f, &part[i], i ? 400 : 0);
	rc = ck_feed_run(&f, opt, res);
	for (int i = 0; i < 3; i++)
		sb_free(&part[i]);
	return rc;
}

START_TEST(names_once_per_session)
{
	struct named v = { 0 };
	struct itp_options opt = { 0 };
	struct itp_result res;
	struct sbuf part[3];
	int rc;

	self_parts(part);
	opt.snapshot = on_named;
	opt.snapshot_arg = &v;
	opt.snapshot_ns = 100ull * 1000000u;
	rc = run_paced(part, &opt, &res);
	ck_assert_msg(rc == 0, "itp_run: %d %s", rc, res.detail);
	/* a snapshot before the second node came and the last one; a loaded machine may
	 * take fewer than one per pause */
	ck_assert_int_ge(v.views, 2);
	ck_assert_int_eq(v.nulls, 0);
	ck_assert_int_eq(v.one_named, v.views);
	ck_assert_int_ge(v.two_seen, 1);
	ck_assert_int_lt(v.two_seen, v.views);
	ck_assert_int_eq(v.two_named, v.two_seen);
	/* each address looked up once in the session */
	ck_assert_uint_eq(res.snap_ips, 2);
	ck_assert_uint_eq(res.snap_named, 2);
	ck_assert_uint_gt(res.snap_sym_bytes, 0);
}
END_TEST

/*
 * Once a stop is asked no periodic snapshot cuts the end of the session:
 * the last one holds the library's last burst (its samples and the growth
 * of its site counts), not the empty stretch before its end record.
 */
START_TEST(last_snapshot_holds_the_end)
{
	static const char cmd[] = "prog";
	const uint64_t sites1[] = { IP_A, 1000, 131072 }, sites2[] = { IP_A, 2000, 262144 };
	struct seen v = { 0 };
	struct itp_options opt = { 0 };
	struct itp_result res;
	struct ck_feed f = { 0 };
	struct sbuf part[3] = { { 0 } };
	volatile sig_atomic_t stop = 0;
	struct chunkb c;
	int rc;

	sb_header(&part[0], 4242, WIRE_F_ATTACHED, "/usr/bin/prog", cmd, sizeof(cmd));
	ck_begin(&c, 4242, 0);
	ck_node(&c, 0, 1, 0, IP_MAIN);
	ck_node(&c, 1, 2, 1, IP_A);
	ck_alloc_w(&c, 2, 16, 2, 0x7f0000001000ull, 65536);
	ck_free(&c, 3, 0x7f0000001000ull);
	ck_end(&part[0], &c);
	sb_sites(&part[0], 1, sites1);
	ck_begin(&c, 4242, 4);
	ck_alloc_w(&c, 4, 16, 2, 0x7f0000002000ull, 65536);
	ck_free(&c, 5, 0x7f0000002000ull);
	ck_end(&part[1], &c);
	sb_sites(&part[1], 1, sites2);
	sb_end(&part[2], 6, WIRE_END_STOP);
	ck_feed_add(&f, &part[0], 0);
	ck_feed_add(&f, NULL, 400)->raise = &stop; /* periodic snapshots, then heaptap's SIGINT */
	ck_feed_add(&f, &part[1], 50);  /* the library's last samples and site counts */
	ck_feed_add(&f, &part[2], 400); /* its end record late: a loaded machine */
	opt.no_symbols = 1;
	opt.snapshot = on_snap;
	opt.snapshot_arg = &v;
	opt.snapshot_ns = 100ull * 1000000u;
	opt.stop = &stop;
	rc = ck_feed_run(&f, &opt, &res);
	for (int i = 0; i < 3; i++)
		sb_free(&part[i]);
	ck_assert_msg(rc == 0, "itp_run: %d %s", rc, res.detail);
	ck_assert_int_ge(v.views, 2);
	/* the last view: what the site's counts grew by in the last burst */
	ck_assert_uint_eq(v.nrow, 1);
	ck_assert_uint_eq(v.row[0].leaf, IP_A);
	ck_assert_uint_eq(v.row[0].alloc_b, 262144);
	ck_assert_uint_eq(v.row[0].alloc_o, 2000);
}
END_TEST

/* snapshot_early: per view, the unnamed count, its time, and which of the two sites are named */
struct early {
	int views;
	struct early_view {
		size_t unnamed;
		uint64_t elapsed;
		int one_seen, one_named, two_seen, two_named;
	} v[16];
};

static void on_early(const struct itp_snapshot *s, void *arg)
{
	struct early *e = arg;
	struct early_view *w;

	if (e->views >= 16)
		return;
	w = &e->v[e->views++];
	memset(w, 0, sizeof(*w));
	w->unnamed = s->unnamed;
	w->elapsed = s->elapsed_ns;
	for (size_t i = 0; s->frames && i < s->nips; i++) {
		const struct itp_snap_frames *f = &s->frames[i];
		const char *fn = f->n ? f->v[f->n - 1].function : NULL;

		if (s->ips[i] == ip_one()) {
			w->one_seen = 1;
			w->one_named = fn && !strcmp(fn, "snap_site_one");
		}
		if (s->ips[i] == ip_two()) {
			w->two_seen = 1;
			w->two_named = fn && !strcmp(fn, "snap_site_two");
		}
	}
}

/*
 * snapshot_early and snapshot_first_ns (heaptap top): the first snapshot
 * comes at once, not after snapshot_ns (an hour here: without
 * snapshot_first_ns only the last one, at the end, would come); a snapshot
 * holding an address never named comes first with it unnamed (its count in
 * unnamed, its frames empty), then at once again with its name.
 */
START_TEST(early_figures_then_names)
{
	struct early e = { 0 };
	struct itp_options opt = { 0 };
	struct itp_result res;
	struct sbuf part[3];
	int rc, early = 0;

	self_parts(part);
	opt.snapshot = on_early;
	opt.snapshot_arg = &e;
	opt.snapshot_ns = 3600ull * 1000000000u;
	opt.snapshot_first_ns = 1000000u;
	opt.snapshot_early = 1;
	rc = run_paced(part, &opt, &res);
	ck_assert_msg(rc == 0, "itp_run: %d %s", rc, res.detail);
	/* the first snapshot (early and named) and the last one (at least the named) */
	ck_assert_int_ge(e.views, 3);
	ck_assert_int_eq(e.v[0].unnamed, 1); /* site one, new */
	ck_assert(e.v[0].one_seen && !e.v[0].one_named);
	for (int i = 0; i < e.views; i++) {
		if (!e.v[i].unnamed) {
			/* a named view: everything in it has its name */
			ck_assert(!e.v[i].one_seen || e.v[i].one_named);
			ck_assert(!e.v[i].two_seen || e.v[i].two_named);
			continue;
		}
		/* an early view: the same snapshot follows, named */
		early++;
		ck_assert_int_lt(i + 1, e.views);
		ck_assert_int_eq(e.v[i + 1].unnamed, 0);
		ck_assert_uint_eq(e.v[i + 1].elapsed, e.v[i].elapsed);
		ck_assert_int_eq(e.v[i + 1].one_seen, e.v[i].one_seen);
		ck_assert_int_eq(e.v[i + 1].two_seen, e.v[i].two_seen);
	}
	/* each address is new in one snapshot only: one early view each at most */
	ck_assert_int_ge(early, 1);
	ck_assert_int_le(early, 2);
	ck_assert_int_eq(e.v[e.views - 1].two_named, 1);
	ck_assert_uint_eq(res.snap_ips, 2);
}
END_TEST

START_TEST(no_output_needs_snapshots)
{
	struct itp_options opt = { 0 };
	struct itp_result res;

	ck_assert_int_eq(itp_run(-1, &opt, &res), -ITP_E_OUTPUT);
	ck_assert_ptr_nonnull(strstr(res.detail, "no output"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sample_snap");
	TCase *tc = tcase_create("calibration");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
	tcase_add_test(tc, calibrated_with_recording);
	tcase_add_test(tc, calibrated_without_recording);
	tcase_add_test(tc, no_output_needs_snapshots);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, names_once_per_session);
	tcase_add_test(tc, early_figures_then_names);
	tcase_add_test(tc, last_snapshot_holds_the_end);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
