/* tests/unit/check_elf.c - elf/ on real loaded modules, compared with readelf -rW */
/* SPDX-License-Identifier: MIT */
/*
 * The fixture libraries (tests/data/elf/README) and libc are loaded, found
 * through dl_iterate_phdr and walked; the slots must be exactly the
 * JUMP_SLOT / GLOB_DAT / 64-bit relocations `readelf -rW` lists for the
 * wanted names. The crafted-image and file-view suites live in
 * check_elf_crafted.c and check_elf_file.c.
 */
#define _GNU_SOURCE
#include "tests/lib/check_fixture.h"
#include "elf/elfr.h"
#include "elf/internal.h"

#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

Suite *elfr_crafted_suite(void);
Suite *elfr_file_suite(void);

static const char *const wanted[] = {
    "malloc",	     "free",	 "calloc", "realloc", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "reallocarray",
};
#define NWANTED (sizeof(wanted) / sizeof(wanted[0]))

#if defined(__x86_64__)
#define T_JUMP "R_X86_64_JUMP_SLOT"
#define T_GLOB "R_X86_64_GLOB_DAT"
#define T_ABS "R_X86_64_64"
#elif defined(__aarch64__)
#define T_JUMP "R_AARCH64_JUMP_SLOT"
#define T_GLOB "R_AARCH64_GLOB_DAT"
#define T_ABS "R_AARCH64_ABS64"
#endif

struct expect {
	uintptr_t off;
	int kind;
	char name[256];
};

#define MAXSLOTS 512

static int cmp_expect(const void *a, const void *b)
{
	const struct expect *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int want_index(const char *name)
{
	for (size_t i = 0; i < NWANTED; i++)
		if (strcmp(name, wanted[i]) == 0)
			return (int)i;
	return -1;
}

/* Patchable relocations of wanted names, as readelf lists them; sorted by offset. */
static size_t readelf_slots(const char *path, struct expect *out, size_t cap)
{
	char cmd[4200], line[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -rW '%s'", path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof(line), p)) {
		uintptr_t off, info, val;
		char type[64], name[256], *at;
		int kind;

		if (sscanf(line, "%" SCNxPTR " %" SCNxPTR " %63s %" SCNxPTR " %255s", &off, &info,
			   type, &val, name) != 5)
			continue;
		if (strcmp(type, T_JUMP) == 0)
			kind = ELFR_SLOT_JUMP;
		else if (strcmp(type, T_GLOB) == 0)
			kind = ELFR_SLOT_GLOB_DAT;
		else if (strcmp(type, T_ABS) == 0)
			kind = ELFR_SLOT_ABS;
		else
			continue;
		at = strchr(name, '@');
		if (at)
			*at = 0;
		if (want_index(name) < 0)
			continue;
		ck_assert_uint_lt(n, cap);
		out[n].off = off;
		out[n].kind = kind;
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		n++;
	}
	ck_assert_int_eq(pclose(p), 0);
	qsort(out, n, sizeof(out[0]), cmp_expect);
	return n;
}

struct find {
	const char *needle; /* full path, or a substring when exact is false */
	bool exact;
	bool found;
	char path[4096];
	struct elfr_mod m;
};

static int find_cb(struct dl_phdr_info *dl, size_t size, void *data)
{
	struct find *f = data;
	const char *name = dl->dlpi_name ? dl->dlpi_name : "";

	(void)size;
	if (f->exact ? strcmp(name, f->needle) != 0 : !strstr(name, f->needle))
		return 0;
	snprintf(f->path, sizeof(f->path), "%s", name);
	ck_assert_int_eq(elfr_mod_init(&f->m, f->path, dl->dlpi_addr, dl->dlpi_phdr, dl->dlpi_phnum,
				       elfr_read_self, NULL),
			 ELFR_OK);
	f->found = true;
	return 1;
}

static void find_module(struct find *f, const char *needle, bool exact)
{
	memset(f, 0, sizeof(*f));
	f->needle = needle;
	f->exact = exact;
	dl_iterate_phdr(find_cb, f);
	ck_assert_msg(f->found, "module %s not loaded", needle);
	f->m.name = f->path;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct elfr_slot *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Walk m and compare with readelf on path; returns the slot count. */
static size_t compare_with_readelf(const struct elfr_mod *m, const char *path,
				   struct elfr_slot *slots, struct elfr_info *info)
{
	static struct expect exp[MAXSLOTS];
	enum elfr_reason r;
	size_t n;

	static struct elfr_slot by_name[MAXSLOTS];
	struct elfr_info info2;

	r = elfr_find_slots(m, wanted, NWANTED, slots, MAXSLOTS, info);
	ck_assert_msg(r == ELFR_OK, "%s: %s", path, elfr_strerror(r));
	/* The by-name fallback agrees with the hash-table method. */
	r = elfr__find_slots(m, wanted, NWANTED, by_name, MAXSLOTS, &info2, true);
	ck_assert_msg(r == ELFR_OK, "%s: %s", path, elfr_strerror(r));
	ck_assert_uint_eq(info2.nslots, info->nslots);
	ck_assert_mem_eq(by_name, slots, info->nslots * sizeof(slots[0]));
	n = readelf_slots(path, exp, MAXSLOTS);
	ck_assert_uint_eq(info->nslots, n);
	ck_assert_uint_gt(n, 0);
	qsort(slots, n, sizeof(slots[0]), cmp_slot);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(slots[i].addr - m->bias, exp[i].off);
		ck_assert_str_eq(wanted[slots[i].want], exp[i].name);
		ck_assert_int_eq(slots[i].kind, exp[i].kind);
	}
	return n;
}

static void *load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	ck_assert_msg(h != NULL, "dlopen %s: %s", path, dlerror());
	return h;
}

static size_t count_kind(const struct elfr_slot *s, size_t n, int kind)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += s[i].kind == kind;
	return c;
}

/* Load the fixture at path, walk it, compare with readelf; returns the slot count. */
static size_t check_fixture(const char *path, struct elfr_slot *slots, struct elfr_info *info,
			    struct find *f)
{
	void *h = load(path);
	size_t n;

	find_module(f, path, true);
	n = compare_with_readelf(&f->m, path, slots, info);
	ck_assert(info->dptr_relocated); /* glibc relocates d_ptr values */
	/* The data pointers to malloc and free are absolute relocations. */
	ck_assert_uint_ge(count_kind(slots, n, ELFR_SLOT_ABS), 2);
	(void)h; /* stays loaded: its memory was walked, later tests use it */
	return n;
}

START_TEST(test_fixture_plt)
{
	static struct elfr_slot slots[MAXSLOTS];
	struct elfr_info info;
	struct find f;
	size_t n = check_fixture(ELFR_FX_PLT, slots, &info, &f);

	ck_assert_uint_ge(count_kind(slots, n, ELFR_SLOT_JUMP), NWANTED);
	ck_assert_int_eq(info.hash_kind, ELFR_HASH_GNU);
	/* Partial RELRO: the lazily bound PLT slots stay writable. */
	for (size_t i = 0; i < n; i++)
		if (slots[i].kind == ELFR_SLOT_JUMP)
			ck_assert_int_eq(slots[i].relro, 0);
	ck_assert_uint_gt(f.m.relro_end, f.m.relro_start);
}
END_TEST

START_TEST(test_fixture_noplt)
{
	static struct elfr_slot slots[MAXSLOTS];
	void *(*real_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "malloc");
	struct elfr_info info;
	struct find f;
	size_t n = check_fixture(ELFR_FX_NOPLT, slots, &info, &f), seen = 0;

	ck_assert_uint_eq(count_kind(slots, n, ELFR_SLOT_JUMP), 0);
	ck_assert_uint_ge(count_kind(slots, n, ELFR_SLOT_GLOB_DAT), NWANTED);
	/* GLOB_DAT slots are bound at load time: each malloc slot holds malloc. */
	for (size_t i = 0; i < n; i++) {
		if (slots[i].kind != ELFR_SLOT_GLOB_DAT || strcmp(wanted[slots[i].want], "malloc"))
			continue;
		ck_assert_ptr_eq(*(void **)slots[i].addr, (void *)real_malloc);
		seen++;
	}
	ck_assert_uint_eq(seen, 1);
}
END_TEST

START_TEST(test_fixture_relro)
{
	static struct elfr_slot slots[MAXSLOTS];
	struct elfr_info info;
	struct find f;
	size_t n = check_fixture(ELFR_FX_RELRO, slots, &info, &f);

	ck_assert_uint_ge(count_kind(slots, n, ELFR_SLOT_JUMP), NWANTED);
	/* Full RELRO: every GOT slot is read-only after relocation. */
	for (size_t i = 0; i < n; i++) {
		if (slots[i].kind == ELFR_SLOT_ABS)
			continue;
		ck_assert_int_eq(slots[i].relro, 1);
		ck_assert(slots[i].addr >= f.m.relro_start && slots[i].addr < f.m.relro_end);
	}
}
END_TEST

START_TEST(test_fixture_sysv)
{
	static struct elfr_slot slots[MAXSLOTS];
	struct elfr_info info;
	struct find f;

	check_fixture(ELFR_FX_SYSV, slots, &info, &f);
	ck_assert_int_eq(info.hash_kind, ELFR_HASH_SYSV);
	ck_assert_uint_gt(info.nsyms, NWANTED);
}
END_TEST

START_TEST(test_fixture_gnu)
{
	static struct elfr_slot slots[MAXSLOTS];
	struct elfr_info info, info_sysv;
	struct find f;

	check_fixture(ELFR_FX_GNU, slots, &info, &f);
	ck_assert_int_eq(info.hash_kind, ELFR_HASH_GNU);
	/* Same source, same symbols: both hash tables give the same count. */
	check_fixture(ELFR_FX_SYSV, slots, &info_sysv, &f);
	ck_assert_uint_eq(info.nsyms, info_sysv.nsyms);
}
END_TEST

START_TEST(test_libc)
{
	static struct elfr_slot slots[MAXSLOTS];
	struct elfr_info info;
	struct find f;

	find_module(&f, "libc.so.6", false);
	compare_with_readelf(&f.m, f.path, slots, &info);
	ck_assert(info.dptr_relocated);
	ck_assert_uint_gt(info.nsyms, 1000);
}
END_TEST

/* The same fixture laid out from its file into a buffer: raw d_ptr values, same slots. */
START_TEST(test_image_of_file)
{
	static struct elfr_slot live[MAXSLOTS], img[MAXSLOTS];
	const uintptr_t base = (uintptr_t)0x7f1234560000ull;
	struct elfr_info li, ii;
	struct elfr_buf buf;
	struct elfr_mod m;
	struct find f;
	unsigned char *image;
	size_t flen, ilen;
	char *file;
	FILE *fp;

	load(ELFR_FX_PLT);
	find_module(&f, ELFR_FX_PLT, true);
	compare_with_readelf(&f.m, ELFR_FX_PLT, live, &li);

	fp = fopen(ELFR_FX_PLT, "rb");
	ck_assert_ptr_nonnull(fp);
	fseek(fp, 0, SEEK_END);
	flen = (size_t)ftell(fp);
	rewind(fp);
	file = malloc(flen);
	ck_assert_uint_eq(fread(file, 1, flen, fp), flen);
	fclose(fp);
	ck_assert_int_eq(elfr_layout(file, flen, 1 << 24, &image, &ilen), ELFR_OK);
	buf.data = image;
	buf.len = ilen;
	buf.base = base;
	ck_assert_int_eq(elfr_mod_from_image(&m, "image", &buf), ELFR_OK);
	ck_assert_int_eq(elfr_find_slots(&m, wanted, NWANTED, img, MAXSLOTS, &ii), ELFR_OK);
	ck_assert(!ii.dptr_relocated);
	ck_assert_uint_eq(ii.nslots, li.nslots);
	ck_assert_uint_eq(ii.nsyms, li.nsyms);
	qsort(img, ii.nslots, sizeof(img[0]), cmp_slot);
	for (size_t i = 0; i < ii.nslots; i++) {
		ck_assert_uint_eq(img[i].addr - base, live[i].addr - f.m.bias);
		ck_assert_int_eq(img[i].want, live[i].want);
		ck_assert_int_eq(img[i].relro, live[i].relro);
	}
	free(image);
	free(file);
}
END_TEST

/* The vDSO: d_ptr values are not relocated, no relocations, symbols callable. */
START_TEST(test_vdso)
{
	static struct elfr_slot slots[8];
	int (*gettime)(clockid_t, struct timespec *);
	struct elfr_info info;
	struct timespec ts = {0, 0};
	uintptr_t v = 0;
	struct find f;

	find_module(&f, "linux-vdso", false);
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, slots, 8, &info), ELFR_OK);
	ck_assert_uint_eq(info.nslots, 0);
	ck_assert(!info.has_relocs);
	ck_assert_int_eq(elfr_mod_symbol(&f.m, "__vdso_clock_gettime", &v), ELFR_OK);
	ck_assert_uint_ne(v, 0);
	gettime = (int (*)(clockid_t, struct timespec *))v;
	ck_assert_int_eq(gettime(CLOCK_MONOTONIC, &ts), 0);
	ck_assert(ts.tv_sec > 0 || ts.tv_nsec > 0);
	ck_assert_int_eq(elfr_mod_symbol(&f.m, "no_such_symbol", &v), ELFR_E_NO_SYMBOL);
}
END_TEST

/* Symbol lookup in a loaded glibc module agrees with dlsym. */
START_TEST(test_mod_symbol_libc)
{
	void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	uintptr_t v = 0;
	struct find f;

	ck_assert_ptr_nonnull(h);
	find_module(&f, "libc.so.6", false);
	ck_assert_int_eq(elfr_mod_symbol(&f.m, "dlopen", &v), ELFR_OK);
	ck_assert_ptr_eq((void *)v, dlsym(h, "dlopen"));
	ck_assert_int_eq(elfr_mod_symbol(&f.m, "malloc", &v), ELFR_OK);
	ck_assert_ptr_eq((void *)v, dlsym(h, "malloc"));
	dlclose(h);
}
END_TEST

struct tally {
	size_t modules, ok, fixture_slots;
	const char *fixture;
};

static int tally_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		    const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	struct tally *t = arg;

	(void)slots;
	t->modules++;
	ck_assert_msg(why == ELFR_OK, "module '%s': %s", m->name, elfr_strerror(why));
	t->ok++;
	ck_assert_uint_eq(nslots, info->nslots);
	if (strcmp(m->name, t->fixture) == 0)
		t->fixture_slots = nslots;
	return 0;
}

static int stop_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		   const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	(void)m, (void)why, (void)info, (void)slots, (void)nslots;
	++*(int *)arg;
	return 42;
}

START_TEST(test_walk_self)
{
	static struct elfr_slot slots[MAXSLOTS];
	struct tally t = {.fixture = ELFR_FX_RELRO};
	struct elfr_info info;
	struct find f;
	int calls = 0;

	load(ELFR_FX_RELRO);
	find_module(&f, ELFR_FX_RELRO, true);
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, slots, MAXSLOTS, &info), ELFR_OK);
	ck_assert_int_eq(elfr_walk_self(wanted, NWANTED, slots, MAXSLOTS, tally_cb, &t), 0);
	ck_assert_uint_ge(t.modules, 4); /* main, vdso, libc, ld.so, fixture, ... */
	ck_assert_uint_eq(t.ok, t.modules);
	ck_assert_uint_eq(t.fixture_slots, info.nslots);
	ck_assert_int_eq(elfr_walk_self(wanted, NWANTED, slots, MAXSLOTS, stop_cb, &calls), 42);
	ck_assert_int_eq(calls, 1);
}
END_TEST

/* Too small an output array: the first cap slots, the full count, ELFR_E_NO_ROOM. */
START_TEST(test_no_room_live)
{
	struct elfr_slot slots[2];
	struct elfr_info info;
	struct find f;

	find_module(&f, "libc.so.6", false);
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, slots, 2, &info), ELFR_E_NO_ROOM);
	ck_assert_uint_gt(info.nslots, 2);
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, NULL, 0, &info), ELFR_E_NO_ROOM);
}
END_TEST

/* A reader over another process's memory, as heaptap will walk a target. */
static int read_remote(void *ctx, uintptr_t addr, void *dst, size_t len)
{
	struct iovec local = {dst, len}, remote = {(void *)addr, len};
	pid_t pid = *(pid_t *)ctx;

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

/*
 * A forked child has the same layout, so the own program headers and bias
 * describe its modules; walked through process_vm_readv the slots are the
 * same. Once the child is gone, every read fails and the walk says so.
 */
START_TEST(test_remote_reader)
{
	static struct elfr_slot local[MAXSLOTS], remote[MAXSLOTS];
	struct elfr_info li, ri;
	struct find f;
	int pipefd[2], status;
	char c;
	pid_t pid;

	load(ELFR_FX_NOPLT);
	find_module(&f, ELFR_FX_NOPLT, true);
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, local, MAXSLOTS, &li), ELFR_OK);
	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pipefd[1]);
		(void)!read(pipefd[0], &c, 1);
		_exit(0);
	}
	close(pipefd[0]);
	f.m.read = read_remote;
	f.m.read_ctx = &pid;
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, remote, MAXSLOTS, &ri), ELFR_OK);
	ck_assert_uint_eq(ri.nslots, li.nslots);
	ck_assert_mem_eq(remote, local, li.nslots * sizeof(local[0]));
	close(pipefd[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(elfr_find_slots(&f.m, wanted, NWANTED, remote, MAXSLOTS, &ri),
			 ELFR_E_READ);
}
END_TEST

static Suite *live_suite(void)
{
	Suite *s = suite_create("elf-live");
	TCase *tc = tcase_create("live");

	tcase_add_test(tc, test_fixture_plt);
	tcase_add_test(tc, test_fixture_noplt);
	tcase_add_test(tc, test_fixture_relro);
	tcase_add_test(tc, test_fixture_sysv);
	tcase_add_test(tc, test_fixture_gnu);
	tcase_add_test(tc, test_libc);
	tcase_add_test(tc, test_image_of_file);
	tcase_add_test(tc, test_vdso);
	tcase_add_test(tc, test_mod_symbol_libc);
	tcase_add_test(tc, test_walk_self);
	tcase_add_test(tc, test_no_room_live);
	tcase_add_test(tc, test_remote_reader);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(live_suite());

	srunner_add_suite(sr, elfr_crafted_suite());
	srunner_add_suite(sr, elfr_file_suite());
	return ck_run(sr);
}
