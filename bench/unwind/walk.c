/* bench/unwind/walk.c - ns a frame of the stack capture inside the target, on deep's stacks */
/* SPDX-License-Identifier: MIT */
/*
 * unwind_bench [-n WALKS] [-r ROUNDS]: calls the probe at the end of
 * bench/workloads/deep.c's stacks (rec.c: 14 to 28 frames of -O2 code
 * without frame pointers, plus this program's and libc's) WALKS times
 * (default 1,000,000) per mode, the modes in turn, ROUNDS times (default
 * 7), and prints per mode the median thread CPU a probe, the frames a
 * walk gave, and the ns a frame over the recursion alone (mode none):
 *
 *   none       the recursion and the probe call, nothing captured
 *   none-fp    the same, rec.c built with frame pointers
 *   fp         a frame-pointer chain walk over that copy (the floor a CFI
 *              walk is compared with; ns a frame over none-fp)
 *   libunwind  unw_backtrace (trk_capture_libunwind, the walker's fallback)
 *   cfi-bare   the walker's step alone (the same rules, cached the same
 *              way, the same bounds checks) with nothing kept for the next
 *              walk: what the chain of dependent loads costs
 *   walk       trk_walk, the hooks' CFI walker (rules cached per thread,
 *              the walk kept for the next one)
 *   trace      what a hook does for a stack it did not see at its call site
 *              just before: trk_walk_repeat, trk_walk, trk_tree_trace
 *              (whole-stack cache, tree) and trk_walk_note
 *
 * Single-threaded, no session (events are not encoded, nothing is sent):
 * the capture alone. Thread CPU time, so a busy machine inflates it less
 * than wall time, but the modes share the caches with whatever else runs:
 * compare modes of one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/tree_internal.h"
#include "track/unwind_internal.h"

int uw_nofp_run(unsigned long first, unsigned long n);
int uw_fp_run(unsigned long first, unsigned long n);

void (*uw_probe)(void);

enum { M_NONE, M_NONE_FP, M_FP, M_LIBUNWIND, M_BARE, M_WALK, M_TRACE, M_N };
static const char *const mode_name[M_N] = {"none",     "none-fp", "fp",	  "libunwind",
					   "cfi-bare", "walk",	  "trace"};

static struct trk_thr *thr;
static int mode;
static unsigned long frames;

/* fp_walk - return addresses along the rbp chain, within the thread's stack. */
static size_t fp_walk(uintptr_t *out, const uintptr_t *fp, uintptr_t hi)
{
	size_t n = 0;

	while (n < TRK_DEPTH_MAX && (uintptr_t)fp < hi - 16 && !((uintptr_t)fp & 7)) {
		const uintptr_t *next = (const uintptr_t *)fp[0];

		if (fp[1] < 4096)
			break;
		out[n++] = fp[1] - 1;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

/* The rule cache of cfi-bare: as trk_thr.rules, direct-mapped by pc. */
static struct trk_rule bare_rules[TRK_RULES];

/* bare_walk - trk_walk's step, nothing kept, no take-over, no cut marker; 0 where it gives up. */
static size_t bare_walk(uintptr_t *out, uintptr_t ra, const uintptr_t *fp, uintptr_t hi)
{
	uintptr_t sp = (uintptr_t)(fp + 2), rbp = fp[0];
	size_t n = 0;

	while (n < TRK_DEPTH_MAX) {
		uintptr_t pc = ra - 1, cfa, slot;
		struct trk_rule *r = &bare_rules[(pc ^ (pc >> 12)) & (TRK_RULES - 1)];

		if (r->pc != pc || !r->valid) {
			trk_cfi_rule(pc, r);
			r->pc = pc;
			r->valid = 1;
		}
		out[n++] = pc;
		if (r->cfa_reg != TRK_CFA_RSP && r->cfa_reg != TRK_CFA_RBP)
			return 0;
		if (r->ra_off == 0)
			return n;
		cfa = (r->cfa_reg == TRK_CFA_RSP ? sp : rbp) + (uintptr_t)(intptr_t)r->cfa_off;
		slot = cfa + (uintptr_t)(intptr_t)r->ra_off;
		if (cfa <= sp || cfa > hi || slot < sp || slot > hi - 8 || (slot & 7))
			return 0;
		ra = *(const uintptr_t *)slot;
		if (r->rbp_off) {
			slot = cfa + (uintptr_t)(intptr_t)r->rbp_off;
			if (slot < sp || slot > hi - 8 || (slot & 7))
				return 0;
			rbp = *(const uintptr_t *)slot;
		}
		sp = cfa;
		if (ra < 4096)
			return ra == 0 ? n : 0;
	}
	return n;
}

static __attribute__((noinline)) void probe(void)
{
	const uintptr_t *fp = __builtin_frame_address(0);
	uint32_t gen, leaf;
	size_t n = 0;

	switch (mode) {
	case M_FP:
		n = fp_walk(thr->frames, (const uintptr_t *)fp[0], thr->stack_hi);
		break;
	case M_LIBUNWIND:
		n = trk_capture_libunwind(thr->frames, (const void *)fp[1]);
		break;
	case M_BARE:
		n = bare_walk(thr->frames, fp[1], fp, thr->stack_hi);
		break;
	case M_WALK:
		n = trk_walk(thr, thr->frames, fp[1], fp);
		break;
	case M_TRACE:
		gen = atomic_load(&trk_g.sess_gen);
		if (trk_walk_repeat(thr, fp[1], fp, gen))
			break;
		n = trk_walk(thr, thr->frames, fp[1], fp);
		leaf = trk_tree_trace(thr, n, &gen);
		trk_walk_note(thr, leaf, gen);
		break;
	default:
		break;
	}
	frames += n;
	__asm__ volatile("" ::: "memory");
}

/* run_at - one call site for the warm-up and the measured probes: the same stacks */
static __attribute__((noinline)) void run_at(int (*run)(unsigned long, unsigned long),
					     unsigned long first, unsigned long n)
{
	run(first, n);
	__asm__ volatile("" ::: "memory");
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	unsigned long walks = 1000000, rounds = 7;
	double *ns[M_N], med[M_N], fpw[M_N] = {0};
	int opt;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n') {
			walks = strtoul(optarg, NULL, 10);
		} else if (opt == 'r') {
			rounds = strtoul(optarg, NULL, 10);
		} else {
			fprintf(stderr, "usage: unwind_bench [-n WALKS] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (!walks || !rounds || walks > (1ul << 32) || rounds > 1000) {
		fprintf(stderr, "unwind_bench: -n wants 1..2^32 probes, -r 1..1000 rounds\n");
		return 2;
	}
	if (trk_mod_init() != 0) {
		fprintf(stderr, "unwind_bench: trk_mod_init failed\n");
		return 1;
	}
	trk_g.ended = 1; /* no session: nothing is sent */
	trk_g.depth = TRK_DEPTH_MAX;
	trk_unwind_init(0);
	thr = trk_thr_get();
	if (!thr || !thr->stack_hi) {
		fprintf(stderr, "unwind_bench: no thread buffer or stack bounds\n");
		return 1;
	}
	uw_probe = probe;
	for (int m = 0; m < M_N; m++) {
		ns[m] = calloc(rounds, sizeof(double));
		if (!ns[m])
			return 1;
	}
	for (unsigned long r = 0; r < rounds; r++) {
		for (mode = 0; mode < M_N; mode++) {
			int (*run)(unsigned long, unsigned long) =
			    mode == M_FP || mode == M_NONE_FP ? uw_fp_run : uw_nofp_run;
			double t0;

			run_at(run, 0, walks / 10); /* warm: rules, tree, caches */
			frames = 0;
			t0 = thread_cpu();
			run_at(run, walks / 10, walks);
			ns[mode][r] = (thread_cpu() - t0) * 1e9 / (double)walks;
			fpw[mode] = (double)frames / (double)walks;
		}
	}
	for (int m = 0; m < M_N; m++) {
		qsort(ns[m], rounds, sizeof(double), cmp_double);
		med[m] = ns[m][rounds / 2];
	}
	printf("%-10s %10s %8s %12s   (median of %lu rounds of %lu probes)\n", "mode", "ns/probe",
	       "frames", "ns/frame", rounds, walks);
	for (int m = 0; m < M_N; m++) {
		double floor = med[m == M_FP ? M_NONE_FP : M_NONE];

		if (fpw[m] == 0)
			printf("%-10s %10.1f %8.1f %12s\n", mode_name[m], med[m], fpw[m], "-");
		else
			printf("%-10s %10.1f %8.1f %12.2f\n", mode_name[m], med[m], fpw[m],
			       (med[m] - floor) / fpw[m]);
		free(ns[m]);
	}
	return 0;
}
