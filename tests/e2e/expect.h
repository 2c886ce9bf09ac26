/* tests/e2e/expect.h - bookkeeping for e2e targets: what the report must say */
/* SPDX-License-Identifier: MIT */
/*
 * A target program notes every allocation and free it makes through
 * ex_alloc() / ex_free() and prints what a correct report must show with
 * ex_print(), as lines check.py reads:
 *
 *   site NAME calls=N bytes=N leaked=N temporary=N peak=N [file=F line=N]
 *        [caller=NAME caller_line=N]
 *   kind malloc calls=N bytes=N
 *   total calls=N bytes=N leaked=N temporary=N peak=N
 *   absent NAME
 *
 * Definitions (the same as docs/report.md):
 *  - an allocation is a call that returned memory (a failed call is none);
 *    realloc(p, n) with p != NULL is a free of p and an allocation of n bytes
 *    by realloc; realloc(NULL, n) is an allocation; realloc(p, 0) that
 *    returns NULL is a free only; bytes are the requested sizes;
 *  - temporary: freed before its thread allocated anything else (the free
 *    of the thread's most recent allocation, none in between);
 *  - peak: bytes of the site live at the moment the whole heap was largest
 *    (the first time it reached that size);
 *  - leaked: bytes never freed.
 * Output goes through write(2) from a stack buffer so that printing adds no
 * allocation (stdio would malloc a buffer).
 *
 * Single-threaded use only; threads.c counts on its own. Header-only: each
 * target is one translation unit (C or C++).
 */
#ifndef HEAPTAP_E2E_EXPECT_H
#define HEAPTAP_E2E_EXPECT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum ex_kind {
	EX_MALLOC = 1,
	EX_CALLOC,
	EX_REALLOC,
	EX_REALLOCARRAY,
	EX_POSIX_MEMALIGN,
	EX_ALIGNED_ALLOC,
	EX_MEMALIGN,
	EX_VALLOC,
	EX_PVALLOC,
	EX_KIND_MAX = EX_PVALLOC,
};

/* in enum ex_kind order (no designators: C++ targets include this too) */
static const char *const ex_kind_names[EX_KIND_MAX + 1] = {
	NULL,	      "malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
	"aligned_alloc", "memalign", "valloc",  "pvalloc",
};

struct ex_site {
	const char *name;     /* the function the allocation call is in */
	const char *file;     /* source file (basename), NULL: do not check */
	int line;	      /* line of the allocation call, 0: do not check */
	const char *caller;   /* the function that called name, NULL: do not check */
	int caller_line;      /* line of that call */
	uint64_t calls, bytes, live, peak, temporary;
	int registered;
};

/* EX_SITE("name"): an initializer for a struct ex_site (C and C++ alike) */
#define EX_SITE(name) { name, NULL, 0, NULL, 0, 0, 0, 0, 0, 0, 0 }

#define EX_MAX_SITES 64

static struct {
	struct ex_site *sites[EX_MAX_SITES];
	int nsites;
	uint64_t kcalls[EX_KIND_MAX + 1], kbytes[EX_KIND_MAX + 1];
	uint64_t calls, bytes, live, peak, temporary;
	void *last; /* the most recent allocation, NULL once freed */
} ex;

static void ex_register(struct ex_site *s)
{
	if (s->registered || ex.nsites == EX_MAX_SITES)
		return;
	s->registered = 1;
	ex.sites[ex.nsites++] = s;
}

/* ex_site_at - register s with the line of its allocation call. */
static inline void ex_site_at(struct ex_site *s, const char *file, int line)
{
	s->file = file;
	s->line = line;
	ex_register(s);
}

/* ex_alloc - p (n bytes, of kind) came from site s; NULL p (failure) counts nothing. */
static inline void ex_alloc(struct ex_site *s, enum ex_kind kind, void *p, size_t n)
{
	if (!p)
		return;
	ex_register(s);
	s->calls++;
	s->bytes += n;
	s->live += n;
	ex.kcalls[kind]++;
	ex.kbytes[kind] += n;
	ex.calls++;
	ex.bytes += n;
	ex.live += n;
	ex.last = p;
	if (ex.live > ex.peak) {
		ex.peak = ex.live;
		/* the heap's new high: every site's share is its live bytes now */
		for (int i = 0; i < ex.nsites; i++)
			ex.sites[i]->peak = ex.sites[i]->live;
	}
}

/* ex_free - p (n bytes, allocated by site s) is about to be freed. */
static inline void ex_free(struct ex_site *s, void *p, size_t n)
{
	if (!p)
		return;
	s->live -= n;
	ex.live -= n;
	if (p == ex.last) {
		s->temporary++;
		ex.temporary++;
		ex.last = NULL;
	}
}

static inline void ex_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline void ex_printf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	for (int off = 0; off < n;) {
		ssize_t w = write(1, buf + off, (size_t)(n - off));

		if (w <= 0)
			return;
		off += (int)w;
	}
}

/* ex_print - print every expectation line (see the top of this file). */
static inline void ex_print(void)
{
	for (int i = 0; i < ex.nsites; i++) {
		const struct ex_site *s = ex.sites[i];

		ex_printf("site %s calls=%llu bytes=%llu leaked=%llu temporary=%llu peak=%llu", s->name,
			  (unsigned long long)s->calls, (unsigned long long)s->bytes,
			  (unsigned long long)s->live, (unsigned long long)s->temporary,
			  (unsigned long long)s->peak);
		if (s->file && s->line)
			ex_printf(" file=%s line=%d", s->file, s->line);
		if (s->caller && s->caller_line)
			ex_printf(" caller=%s caller_line=%d", s->caller, s->caller_line);
		ex_printf("\n");
	}
	for (int k = 1; k <= EX_KIND_MAX; k++)
		ex_printf("kind %s calls=%llu bytes=%llu\n", ex_kind_names[k],
			  (unsigned long long)ex.kcalls[k], (unsigned long long)ex.kbytes[k]);
	ex_printf("total calls=%llu bytes=%llu leaked=%llu temporary=%llu peak=%llu\n",
		  (unsigned long long)ex.calls, (unsigned long long)ex.bytes,
		  (unsigned long long)ex.live, (unsigned long long)ex.temporary,
		  (unsigned long long)ex.peak);
}

#endif /* HEAPTAP_E2E_EXPECT_H */
