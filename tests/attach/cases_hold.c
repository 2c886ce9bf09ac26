/* tests/attach/cases_hold.c - heaptap's own priority while a thread is held, and the hold's figures */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/attach/harness.h"

#define OUR_NICE 5		/* set before the attach: the hold must put exactly this back */
#define OUR_SLACK 77777UL	/* our timer slack (ns), likewise */

/* nice of every thread of pid (from /proc/PID/task/TID/stat, field 19) added up; -1000 on error. */
static long nice_sum(pid_t pid)
{
	char path[320], buf[1024], *p;
	struct dirent *e;
	long sum = 0, nice;
	DIR *d;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1000;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;	/* a thread that just ended */
		p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (!p)
			continue;
		/* after "comm)": field 3 (state) ... field 19 (nice) */
		for (i = 3; i < 19 && p; i++)
			p = strchr(p + 1, ' ');
		if (!p || sscanf(p + 1, "%ld", &nice) != 1) {
			closedir(d);
			return -1000;
		}
		sum += nice;
	}
	closedir(d);
	return sum;
}

/*
 * During the hold heaptap's own thread runs at a raised priority (nice -20
 * as root) and a 1 ns timer slack; after the release both are what they
 * were (nice 5, slack 77777 ns here), the target's threads keep theirs,
 * and the hold's figures add up.
 */
int case_priority(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	struct victim v;
	long before, held_nice, held_slack;
	int policy;

	if (victim_start(&v))
		return 1;
	usleep(200000);
	if (setpriority(PRIO_PROCESS, (id_t)self, OUR_NICE) < 0 ||
	    prctl(PR_SET_TIMERSLACK, OUR_SLACK, 0, 0, 0) < 0) {
		check(0, "set our own nice %d and timer slack: %s", OUR_NICE, strerror(errno));
		victim_stop(&v);
		return 1;
	}
	before = nice_sum(v.pid);
	ctx = att_new(v.pid);
	why = seize_with_lib(ctx);
	/* a thread is held now */
	errno = 0;
	held_nice = getpriority(PRIO_PROCESS, (id_t)self);
	held_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (!why)
		why = inject_release(ctx, lib_path, "heaptap_test_start", out_file, &res);
	report_reason("priority", ctx, why);
	check(why == ATT_OK, "attach succeeded");
	att_get_stats(ctx, &st);
	print_stats(&v, ctx);
	printf("     hold: stops=%u wait_us=%.1f boost=%d thread run_us=%.1f wait_us=%.1f ours run_us=%.1f "
	       "off_us=%.1f; our nice while held %ld, slack %ld ns\n", st.hold_stops,
	       st.hold_wait_ns / 1e3, st.hold_boost, st.hold_thr_run_ns / 1e3, st.hold_thr_wait_ns / 1e3,
	       st.hold_own_run_ns / 1e3, st.hold_own_wait_ns / 1e3, held_nice, held_slack);
	if (geteuid() == 0) {
		check(held_nice == -20, "as root, our thread ran at nice -20 while the thread was held (%ld)",
		      held_nice);
		check(st.hold_boost == 1, "the stats say our nice was raised");
	} else {
		check(held_nice <= OUR_NICE, "our nice was not lowered while the thread was held (%ld)",
		      held_nice);
	}
	check(held_slack == 1, "our timer slack was 1 ns while the thread was held (%ld)", held_slack);
	errno = 0;
	check(getpriority(PRIO_PROCESS, (id_t)self) == OUR_NICE && errno == 0,
	      "our nice is back to %d after the release", OUR_NICE);
	policy = sched_getscheduler(self);
	check(policy == SCHED_OTHER, "our scheduling policy is SCHED_OTHER again (%d)", policy);
	check((unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == OUR_SLACK,
	      "our timer slack is back to %lu ns", OUR_SLACK);
	check(nice_sum(v.pid) == before && before != -1000, "the target's threads kept their nice");
	/* interrupt stop, then the fixed mmap and the stub (loader) or six calls: at least 3 */
	check(st.hold_stops >= 3, "at least 3 stops of the held thread counted (%u)", st.hold_stops);
	check(st.hold_wait_ns <= st.pause_ns, "time waiting for them is part of the hold");
	check(st.hold_sched_ok == 1, "the schedstat figures were read");
	check(st.hold_thr_run_ns > 0, "the held thread ran during the hold (it ran our calls)");
	check(st.hold_own_run_ns > 0 && st.hold_own_run_ns < st.pause_ns + 50000000u,
	      "our own CPU time during the hold is plausible");
	att_free(ctx);
	setpriority(PRIO_PROCESS, (id_t)self, 0);
	usleep(100000);
	victim_check(&v, "after the attach");
	victim_stop(&v);
	return failed;
}
