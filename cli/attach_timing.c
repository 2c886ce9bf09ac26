/* cli/attach_timing.c - heaptap attach -v: how long each phase of the attach took */
/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>

#include "cli/attach_int.h"
#include "track/wire.h"

static double ms_since(uint64_t t0, uint64_t t1)
{
	return (double)(t1 - t0) / 1e6;
}

/* cli_attach_print_startup - attach -v: the library's start-up (WIRE_REC_START). */
void cli_attach_print_startup(pid_t pid, const struct itp_start *s, uint64_t t0)
{
	const uint64_t *f = s->f;
	char defer[400] = "", call[80] = "";
	uint64_t c = f[WIRE_START_CALL_MONO_NS];

	if (!s->have) {
		cli_msg("attach %d: the library sent no start-up timings (an older library, or the "
			"session ended before its first patch pass)", (int)pid);
		return;
	}
	if (f[WIRE_START_DEFERRED])
		snprintf(defer, sizeof(defer), " (RELRO still writable %llu, a slot's page not in "
			 "/proc/self/maps %llu, a slot not relocated %llu; first: %s)",
			 (unsigned long long)f[WIRE_START_DEF_RELRO],
			 (unsigned long long)f[WIRE_START_DEF_UNMAPPED],
			 (unsigned long long)f[WIRE_START_DEF_UNRELOC], s->deferred);
	/* the target's monotonic clock is ours unless it lives in a time namespace */
	if (c >= t0 && c - t0 < 3600ull * 1000000000ull)
		snprintf(call, sizeof(call), "; the start call came %.2f ms after the command started",
			 (double)(c - t0) / 1e6);
	cli_msg("attach %d: library start-up, ms after its start call: connected %.2f, sampling "
		"rate %s %.2f, session started %.2f, waited %.2f for heaptap to read, first pass "
		"done %.2f (took %.3f, %llu pass%s, %llu modules, %llu words patched); %llu modules "
		"deferred%s%s", (int)pid, (double)f[WIRE_START_CONNECT_NS] / 1e6,
		f[WIRE_START_RATE_GOT] ? "came" : "waited out", (double)f[WIRE_START_RATE_NS] / 1e6,
		(double)f[WIRE_START_SESSION_NS] / 1e6, (double)f[WIRE_START_DRAIN_NS] / 1e6,
		(double)f[WIRE_START_PASS_DONE_NS] / 1e6, (double)f[WIRE_START_PASS_NS] / 1e6,
		(unsigned long long)f[WIRE_START_PASSES], f[WIRE_START_PASSES] == 1 ? "" : "es",
		(unsigned long long)f[WIRE_START_MODULES], (unsigned long long)f[WIRE_START_PATCHED],
		(unsigned long long)f[WIRE_START_DEFERRED], defer, call);
}

/* cli_attach_print_phases - the phases of the attach and the hold of the seized thread. */
void cli_attach_print_phases(pid_t pid, const uint64_t t[6], const struct att_stats *ast)
{
	/* the session thread accepts while the main thread reads the loader's outcome */
	cli_msg("attach %d: preflight and session directory %.2f ms, prepare %.2f ms, seize "
		"%.2f ms, inject and release %.2f ms, library connected at %.2f ms (accepted "
		"on heaptap's session thread); %.2f ms in all", (int)pid, ms_since(t[0], t[1]),
		ms_since(t[1], t[2]), ms_since(t[2], t[3]), ms_since(t[3], t[4]),
		ms_since(t[0], t[5]), ms_since(t[0], t[5] > t[4] ? t[5] : t[4]));
	cli_msg("attach %d: thread %d (%s %ld) stopped %.3f ms: stop %.3f ms, stack check "
		"%.3f ms, %u calls %.3f ms; %u of %u threads were candidates, %u rejected",
		(int)pid, (int)ast->tid, ast->syscall < 0 ? "user code" : "syscall",
		ast->syscall, (double)ast->pause_ns / 1e6, (double)ast->stop_ns / 1e6,
		(double)ast->unwind_ns / 1e6, ast->calls, (double)ast->call_ns / 1e6,
		ast->candidates, ast->threads, ast->rejected);
	if (ast->resumed[0])
		cli_msg("attach %d: thread %d was in %s", (int)pid, (int)ast->tid, ast->resumed);
	if (ast->hold_sched_ok)
		cli_msg("attach %d: the hold: %u stops, heaptap waited %.3f ms for them and worked "
			"%.3f ms (%s); the thread ran %.3f ms and waited %.3f ms for a CPU, heaptap "
			"ran %.3f ms and was off a CPU %.3f ms while working", (int)pid, ast->hold_stops,
			(double)ast->hold_wait_ns / 1e6,
			(double)(ast->pause_ns - ast->hold_wait_ns) / 1e6,
			ast->hold_boost == 2 ? "SCHED_FIFO" : ast->hold_boost == 1 ? "nice raised"
									: "priority as it was",
			(double)ast->hold_thr_run_ns / 1e6, (double)ast->hold_thr_wait_ns / 1e6,
			(double)ast->hold_own_run_ns / 1e6, (double)ast->hold_own_wait_ns / 1e6);
}
