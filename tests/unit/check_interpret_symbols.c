/* tests/unit/check_interpret_symbols.c - interpret/ symbolization against this very binary, modules, demangling */
/* SPDX-License-Identifier: MIT */
/*
 * Each test builds a stream with check_interpret_wire.c, writes it into one
 * end of a socketpair from a thread, runs itp_run on the other end, then
 * opens the recording with rec_open and asserts on its tables and events
 * (check_interpret_harness.h).
 *
 * `check_interpret_symbols --bench-symbols N [LIB]` times the symbolization of
 * N distinct ips instead.
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
#include "check_interpret_harness.h"
#include "interpret/sym_internal.h"

/* ---- tests --------------------------------------------------------- */

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
	ck_assert_ptr_nonnull(strstr(rec_string(r, fr[f].file), "check_interpret_symbols.c"));
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

/* ---- benchmark (not run by ctest) ------------------------------------------- */

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

/* ---- suite ----------------------------------------------------------------- */

static Suite *interpret_symbols_suite(void)
{
	Suite *s = suite_create("interpret_symbols");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, ck_tmpdir_setup, ck_tmpdir_teardown);
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
	if (argc >= 3 && !strcmp(argv[1], "--bench-symbols"))
		return bench_symbols(strtoull(argv[2], NULL, 0), argc > 3 ? argv[3] : NULL);
	return ck_run_suite(interpret_symbols_suite());
}
