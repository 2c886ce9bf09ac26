/* cli/java.c - heaptap attach in a HotSpot JVM: load the JVMTI agent, say when it cannot be done */
/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdio.h>

#include "cli/cli.h"
#include "inject/inject.h"
#include "jvm/jvm.h"
#include "util/clock.h"

void cli_java_frames(pid_t pid, int verbose, const volatile sig_atomic_t *stop)
{
	char lib[PATH_MAX], why[320];
	uint64_t t0 = util_mono_ns();
	enum jvm_kind kind;
	int ret;

	kind = jvm_hotspot_probe(pid, INJ_LIB_NAME, lib, sizeof(lib));
	if (kind == JVM_NONE)
		return;
	if (kind == JVM_OTHER) {
		cli_msg("attach %d: java frames: not a HotSpot JVM; native stacks only", (int)pid);
		return;
	}
	if (!lib[0]) {
		cli_msg("attach %d: java frames: heaptap's library is not at a path the JVM can load "
			"(it was copied into its root and removed); native stacks only", (int)pid);
		return;
	}
	ret = jvm_hotspot_load(pid, lib, stop, why, sizeof(why));
	if (ret < 0)
		cli_msg("attach %d: java frames: %s; native stacks only", (int)pid, why);
	else if (verbose)
		cli_msg("attach %d: java frames: heaptap's JVMTI agent runs in the JVM (loaded in %.1f ms)",
			(int)pid, (double)(util_mono_ns() - t0) / 1e6);
}
