/* tests/e2e/xframe.c - a foreign-frame producer in a real process, as the Java and Python ones work */
/* SPDX-License-Identifier: MIT */
/*
 * Target of xframe.test (under heaptap record and heaptap attach). It finds
 * heaptap's producer API in the loaded heaptap library (track/xframe_find.h:
 * the versioned exports, dlsym), registers a producer, and allocates
 * through
 *
 *   main -> middle -> leaf_alloc -> malloc(LEAF_SIZE)
 *
 * The producer splices two foreign frames into exactly those stacks,
 * between middle and main (middle notes its own return address in a
 * thread-local variable; the producer finds that ip among the walked ones):
 *
 *   leaf_alloc, middle, render_page [python], java.util.zip.Deflater.<init>
 *   [java, compiled C2, inlined], main, ...
 *
 * render_page is defined from the main thread, outside any hook; the Java
 * frame from inside the producer (inside the allocation hook), once per
 * session. plain_alloc's allocations (PLAIN_SIZE) get no foreign frames.
 * buf_alloc's (BUF_SIZE, as many as the first argument says, 2 without
 * one) get a foreign frame as their innermost frame, alloc_buffer
 * [python]: their call site is that frame (heaptap report --diff).
 *
 * Until the library records (attach: loaded, then its hooks patched in),
 * it probes: middle with a PROBE_SIZE block freed at once, until the
 * producer has run. It prints "ready pid=N" first, "expect ..." lines when
 * done, then waits for a line on stdin (or EOF) and exits.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "track/xframe_find.h"

#define NOINLINE __attribute__((noinline))
#define LEAF_SIZE 12345
#define LEAF_CALLS 10
#define PLAIN_SIZE 777
#define PLAIN_CALLS 3
#define PROBE_SIZE 4321
#define BUF_SIZE 999
#define BUF_MAX 16
#define ID_PY 5
#define ID_JAVA 9
#define ID_BUF 11

static struct heaptap_xframe_api api;
static __thread uintptr_t mark; /* middle's caller's call site while middle runs */
static __thread int innermost;	/* buf_alloc runs: a foreign frame at the innermost place */
static _Atomic int produced;	/* splices done */
static _Atomic uint32_t java_session; /* the session ID_JAVA was defined in */
static void *kept[LEAF_CALLS + PLAIN_CALLS + 1 + BUF_MAX];

static const char java_name[] = "java.util.zip.Deflater.<init>";
static const char java_file[] = "Deflater.java";

/* The producer: runs inside the allocation hook (no malloc, no lock, no stdio). */
static size_t producer(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	uintptr_t m = mark;
	uint32_t s;
	size_t k, i;

	(void)arg;
	if (innermost && n + 1 <= cap) {
		for (i = n; i > 0; i--)
			ips[i] = ips[i - 1];
		ips[0] = wire_xframe_ip(ID_BUF);
		return n + 1;
	}
	if (!m || n + 2 > cap)
		return n;
	for (k = 0; k < n && ips[k] != m; k++)
		;
	if (k == n)
		return n;
	for (i = n; i > k; i--)
		ips[i + 1] = ips[i - 1];
	ips[k] = wire_xframe_ip(ID_PY);
	ips[k + 1] = wire_xframe_ip(ID_JAVA);
	s = api.session();
	if (s && atomic_load(&java_session) != s &&
	    api.define(ID_JAVA, WIRE_LANG_JAVA, WIRE_XKIND_INLINED_C2, 216, java_name,
		       sizeof(java_name) - 1, java_file, sizeof(java_file) - 1) == 0)
		atomic_store(&java_session, s);
	atomic_fetch_add(&produced, 1);
	return n + 2;
}

static NOINLINE void *leaf_alloc(size_t size)
{
	void *p = malloc(size);

	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}

static NOINLINE void *middle(size_t size)
{
	void *p;

	mark = (uintptr_t)__builtin_return_address(0) - 1;
	p = leaf_alloc(size);
	mark = 0;
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static NOINLINE void *plain_alloc(size_t size)
{
	void *p = malloc(size);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static NOINLINE void *buf_alloc(size_t size)
{
	void *p;

	innermost = 1;
	p = malloc(size);
	innermost = 0;
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

int main(int argc, char **argv)
{
	static const char py_name[] = "render_page", py_file[] = "app/views.py";
	static const char buf_name[] = "alloc_buffer", buf_file[] = "lib/buf.py";
	int i, rc, nbuf = argc > 1 ? atoi(argv[1]) : 2;
	char line[64];

	if (nbuf < 0 || nbuf > BUF_MAX)
		nbuf = 2;
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	/* the library: there at once under record, after the attach's dlopen otherwise */
	for (i = 0; heaptap_xframe_find(&api) != 0 || !api.session(); i++) {
		if (i == 6000) {
			printf("error no heaptap library recording\n");
			return 1;
		}
		nap_ms(10);
	}
	rc = api.set_producer(producer, NULL);
	if (rc) {
		printf("error set_producer %d\n", rc);
		return 1;
	}
	rc = api.define(ID_PY, WIRE_LANG_PYTHON, 0, 142, py_name, sizeof(py_name) - 1, py_file,
			sizeof(py_file) - 1);
	if (!rc)
		rc = api.define(ID_BUF, WIRE_LANG_PYTHON, 0, 7, buf_name, sizeof(buf_name) - 1, buf_file,
				sizeof(buf_file) - 1);
	if (rc) {
		printf("error define %d\n", rc);
		return 1;
	}
	/* the hooks are in once an allocation reaches the producer */
	for (i = 0; !atomic_load(&produced); i++) {
		if (i == 6000) {
			printf("error the producer was never called\n");
			return 1;
		}
		free(middle(PROBE_SIZE));
		nap_ms(5);
	}
	for (i = 0; i < LEAF_CALLS; i++)
		kept[i] = middle(LEAF_SIZE);
	for (i = 0; i < PLAIN_CALLS; i++)
		kept[LEAF_CALLS + i] = plain_alloc(PLAIN_SIZE);
	for (i = 0; i < nbuf; i++)
		kept[LEAF_CALLS + PLAIN_CALLS + 1 + i] = buf_alloc(BUF_SIZE);
	api.set_producer(NULL, NULL);
	/* after the producer is gone, the same stack is native only again */
	kept[LEAF_CALLS + PLAIN_CALLS] = middle(PLAIN_SIZE + 1);
	printf("expect leaf size=%d calls=%d\n", LEAF_SIZE, LEAF_CALLS);
	printf("expect plain size=%d calls=%d\n", PLAIN_SIZE, PLAIN_CALLS);
	printf("expect after size=%d calls=1\n", PLAIN_SIZE + 1);
	printf("expect buf size=%d calls=%d\n", BUF_SIZE, nbuf);
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	return 0;
}
