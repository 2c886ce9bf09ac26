/* tests/e2e/known.c - every allocation function, each from its own function, exact numbers */
/* SPDX-License-Identifier: MIT */
/*
 * Target of known.test. Each k_* function makes its allocations from one
 * call site; main calls them in a fixed order, so every number a report
 * shows for these sites (calls, bytes, peak, leaked, temporary), and the
 * per-function table, is known exactly. expect.h computes the numbers as
 * the program runs and prints them; the program itself uses no stdio
 * buffer, so apart from what the loader, libc or the preloaded library
 * allocate on their own, these are all the allocations of the process.
 *
 * Notable cases: realloc(NULL, n) is an allocation; realloc(p, 0) is a free
 * only (glibc returns NULL); failed calls (k_fail) allocate nothing and do
 * not end the "temporary" window of the previous allocation; free(NULL) is
 * nothing; the last free in k_release is temporary because nothing was
 * allocated after that block (k_fail's calls failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "expect.h"

#define NOINLINE __attribute__((noinline))
/* AT(site, call): note the line of the allocation call, then make it (one line). */
#define AT(s, call) (ex_site_at(&(s), __FILE__, __LINE__), (call))
/* CALL(site, call): note main's line calling the site's function, then call it. */
#define CALL(s, call) ((s).caller = "main", (s).caller_line = __LINE__, (call))

static struct ex_site s_leak = EX_SITE("k_malloc_leak");
static struct ex_site s_temp = EX_SITE("k_malloc_temp");
static struct ex_site s_kept = EX_SITE("k_malloc_kept");
static struct ex_site s_calloc = EX_SITE("k_calloc");
static struct ex_site s_grow = EX_SITE("k_realloc_grow");
static struct ex_site s_rarr = EX_SITE("k_reallocarray_step");
static struct ex_site s_spacer = EX_SITE("k_spacer");
static struct ex_site s_zsrc = EX_SITE("k_zero_src");
static struct ex_site s_zero = EX_SITE("k_realloc_zero");
static struct ex_site s_pmem = EX_SITE("k_posix_memalign");
static struct ex_site s_aligned = EX_SITE("k_aligned_alloc");
static struct ex_site s_memalign = EX_SITE("k_memalign");
static struct ex_site s_valloc = EX_SITE("k_valloc");
static struct ex_site s_pvalloc = EX_SITE("k_pvalloc");

static void *kept[4];
static void *memaligned[2];
static void *pvalloced;

/* sizes read through a volatile so the compiler cannot fold or warn on them */
static volatile size_t huge = SIZE_MAX / 2;

static NOINLINE void k_malloc_leak(void)
{
	for (int i = 0; i < 10; i++) {
		void *p = AT(s_leak, malloc(100));

		ex_alloc(&s_leak, EX_MALLOC, p, 100);
	}
}

static NOINLINE void k_malloc_temp(void)
{
	for (int i = 0; i < 5; i++) {
		void *p = AT(s_temp, malloc(64));

		ex_alloc(&s_temp, EX_MALLOC, p, 64);
		ex_free(&s_temp, p, 64);
		free(p);
	}
}

static NOINLINE void k_malloc_kept(void)
{
	for (int i = 0; i < 4; i++) {
		kept[i] = AT(s_kept, malloc(1000));
		ex_alloc(&s_kept, EX_MALLOC, kept[i], 1000);
	}
}

static NOINLINE void k_calloc(void)
{
	for (int i = 0; i < 3; i++) {
		void *p = AT(s_calloc, calloc(7, 24));

		ex_alloc(&s_calloc, EX_CALLOC, p, 7 * 24);
	}
}

/* realloc(NULL, 16), then grows to 32, 64, 128: each old block was the last allocation */
static NOINLINE void k_realloc_grow(void)
{
	void *p = NULL;
	size_t old = 0;

	for (size_t n = 16; n <= 128; n *= 2) {
		void *q;

		ex_free(&s_grow, p, old);
		q = AT(s_grow, realloc(p, n));
		if (!q)
			abort();
		ex_alloc(&s_grow, EX_REALLOC, q, n);
		p = q;
		old = n;
	}
}

static NOINLINE void k_spacer(void)
{
	void *p = AT(s_spacer, malloc(8));

	ex_alloc(&s_spacer, EX_MALLOC, p, 8);
}

/* reallocarray(*p, 10 * i, 12); main calls k_spacer between steps, so no step is temporary */
static NOINLINE void k_reallocarray_step(void **p, size_t i)
{
	void *q;

	ex_free(&s_rarr, *p, *p ? 10 * (i - 1) * 12 : 0);
	q = AT(s_rarr, reallocarray(*p, 10 * i, 12));
	if (!q)
		abort();
	ex_alloc(&s_rarr, EX_REALLOCARRAY, q, 10 * i * 12);
	*p = q;
}

static NOINLINE void *k_zero_src(void)
{
	void *p = AT(s_zsrc, malloc(200));

	ex_alloc(&s_zsrc, EX_MALLOC, p, 200);
	return p;
}

/* realloc(p, 0): glibc frees p and returns NULL, which is a free and no allocation */
static NOINLINE int k_realloc_zero(void *p)
{
	void *q;

	ex_free(&s_zsrc, p, 200);
	q = AT(s_zero, realloc(p, 0));
	/* should glibc ever return a block here, it is an allocation of 0 bytes */
	ex_alloc(&s_zero, EX_REALLOC, q, 0);
	return q != NULL;
}

static NOINLINE void k_posix_memalign(void)
{
	for (int i = 0; i < 2; i++) {
		void *p = NULL;
		int err = AT(s_pmem, posix_memalign(&p, 64, 100));

		if (err)
			abort();
		ex_alloc(&s_pmem, EX_POSIX_MEMALIGN, p, 100);
	}
}

static NOINLINE void k_aligned_alloc(void)
{
	void *p = AT(s_aligned, aligned_alloc(256, 512));

	ex_alloc(&s_aligned, EX_ALIGNED_ALLOC, p, 512);
}

static NOINLINE void k_memalign(void)
{
	for (int i = 0; i < 2; i++) {
		memaligned[i] = AT(s_memalign, memalign(128, 300));
		ex_alloc(&s_memalign, EX_MEMALIGN, memaligned[i], 300);
	}
}

static NOINLINE void k_valloc(void)
{
	void *p = AT(s_valloc, valloc(5000));

	ex_alloc(&s_valloc, EX_VALLOC, p, 5000);
}

/* a multiple of the page size, so the requested and the rounded size agree */
static NOINLINE void k_pvalloc(void)
{
	size_t n = 2 * (size_t)sysconf(_SC_PAGESIZE);

	pvalloced = AT(s_pvalloc, pvalloc(n));
	ex_alloc(&s_pvalloc, EX_PVALLOC, pvalloced, n);
}

/* calls that fail: none of them is an allocation */
static NOINLINE int k_fail(void)
{
	void *p = NULL;
	int got = 0;

	got += malloc(huge) != NULL;
	got += calloc(huge, 4) != NULL;
	got += realloc(NULL, huge) != NULL;
	got += reallocarray(NULL, huge, 3) != NULL;
	got += posix_memalign(&p, 3, 16) == 0; /* alignment not a power of two: EINVAL */
	got += memalign(64, huge) != NULL;
	return got;
}

static NOINLINE void k_release(void)
{
	size_t pv = 2 * (size_t)sysconf(_SC_PAGESIZE);

	for (int i = 0; i < 4; i++) {
		ex_free(&s_kept, kept[i], 1000);
		free(kept[i]);
	}
	ex_free(&s_memalign, memaligned[0], 300);
	free(memaligned[0]);
	free(NULL);
	ex_free(&s_pvalloc, pvalloced, pv);
	free(pvalloced);
}

int main(void)
{
	void *ra = NULL;
	void *z;

	CALL(s_leak, k_malloc_leak());
	CALL(s_temp, k_malloc_temp());
	CALL(s_kept, k_malloc_kept());
	CALL(s_calloc, k_calloc());
	CALL(s_grow, k_realloc_grow());
	for (size_t i = 1; i <= 3; i++) {
		k_reallocarray_step(&ra, i);
		k_spacer();
	}
	z = CALL(s_zsrc, k_zero_src());
	k_spacer();
	if (CALL(s_zero, k_realloc_zero(z)))
		ex_printf("note realloc(p, 0) returned a block\n");
	else
		ex_printf("absent k_realloc_zero\n");
	CALL(s_pmem, k_posix_memalign());
	CALL(s_aligned, k_aligned_alloc());
	CALL(s_memalign, k_memalign());
	CALL(s_valloc, k_valloc());
	CALL(s_pvalloc, k_pvalloc());
	if (k_fail())
		ex_printf("note a call meant to fail succeeded\n");
	ex_printf("absent k_fail\n");
	k_release();
	ex_print();
	return 0;
}
