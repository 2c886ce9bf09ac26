/* bench/elf/probe.c - LD_PRELOAD probe: walk every module of a running program (e.g. a JVM) from
 * its own thread */
/* SPDX-License-Identifier: MIT */
/*
 * usage: HEAPTAP_ELF_PROBE_DELAY=3 LD_PRELOAD=libelfr_probe.so java Sleep.java
 * The constructor starts a thread that sleeps for the delay (default 3 s,
 * so the program has loaded its libraries), then walks the process like
 * inject/ will at attach time (elfr_walk_self, from a thread of its own, no
 * allocation), 20 times, and writes one line to stderr: modules, slots,
 * first and best walk. A bench tool, not part of heaptap.
 */
#define _GNU_SOURCE
#include "elf/elfr.h"
#include "util/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CAP 1024
#define REPS 20

static const char *const names[] = {
    "malloc",	     "free",	 "calloc", "realloc", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "reallocarray",
};

static struct elfr_slot slots[CAP];

struct tally {
	unsigned modules, failed, nslots;
};

static int tally_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		    const struct elfr_info *info, const struct elfr_slot *s, size_t n)
{
	struct tally *t = arg;

	(void)m, (void)info, (void)s;
	t->modules++;
	t->nslots += (unsigned)n;
	t->failed += why != ELFR_OK && why != ELFR_E_NO_DYNAMIC;
	return 0;
}

static double now_us(void)
{
	return (double)util_mono_ns() / 1e3;
}

static void *probe(void *arg)
{
	double first = 0, best = 1e30;
	struct tally t = {0};
	char line[256];
	int len;

	(void)arg;
	for (int r = 0; r < REPS; r++) {
		double a = now_us(), b;

		t = (struct tally){0};
		elfr_walk_self(names, sizeof(names) / sizeof(names[0]), slots, CAP, tally_cb, &t);
		b = now_us() - a;
		if (r == 0)
			first = b;
		if (b < best)
			best = b;
	}
	len = snprintf(
	    line, sizeof(line),
	    "elf probe: %u modules (%u failed), %u slots; first walk %.0f us, best %.0f us "
	    "(%.1f us per module)\n",
	    t.modules, t.failed, t.nslots, first, best, best / (t.modules ? t.modules : 1));
	(void)!write(2, line, (size_t)len);
	return NULL;
}

static void *delayed(void *arg)
{
	const char *d = getenv("HEAPTAP_ELF_PROBE_DELAY");

	sleep(d ? (unsigned)atoi(d) : 3);
	return probe(arg);
}

__attribute__((constructor)) static void probe_start(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, delayed, NULL) == 0)
		pthread_detach(th);
}
