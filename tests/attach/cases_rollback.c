/* tests/attach/cases_rollback.c - failing calls, HEAPTAP_FAULT steps and mount namespaces */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/attach/harness.h"

/* Calls that crash, hang, fail, or name missing things: the victim runs on unharmed. */
int case_bad_call(const char *which)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why, want;
	const char *sym = "heaptap_test_start", *lib = lib_path, *needle = NULL;
	char junk[128];
	int fd;

	snprintf(junk, sizeof(junk), "/tmp/heaptap-att-junk-%d.so", (int)getpid());
	if (strcmp(which, "crash") == 0) {
		sym = "heaptap_test_crash";
		want = ATT_E_CALL_FAULT;
	} else if (strcmp(which, "hang") == 0) {
		sym = "heaptap_test_hang";
		want = ATT_E_CALL_TIMEOUT;
	} else if (strcmp(which, "startfail") == 0) {
		sym = "heaptap_test_fail";
		want = ATT_E_START;
	} else if (strcmp(which, "dlsym") == 0) {
		sym = "no_such_function";
		want = ATT_E_DLSYM;
		needle = "undefined symbol";
	} else {
		fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "not an ELF file at all\n", 23) != 23)
			return 1;
		close(fd);
		lib = junk;
		want = ATT_E_DLOPEN;
		needle = junk;
	}
	if (victim_start(&v))
		return 1;
	usleep(200000);
	ctx = att_new(v.pid);
	att_set_timeouts(ctx, 0, 300);
	if (loader_mode && strcmp(which, "hang") == 0) {
		/* the loader thread hangs in the start function; nothing is stopped meanwhile */
		want = ATT_E_LOAD_TIMEOUT;
		loader_wait_ms = 300;
	}
	why = att_preflight(ctx);
	if (!why)
		why = att_seize(ctx);
	if (!why)
		why = inject_release(ctx, lib, sym, out_file, &res);
	report_reason(which, ctx, why);
	check(why == want, "%s: reason is \"%s\"", which, att_strerror(want));
	if (needle)
		check(strstr(att_detail(ctx), needle) != NULL, "the target's dlerror() text is reported");
	att_get_stats(ctx, &st);
	print_stats(&v, ctx);
	if (loader_mode && strcmp(which, "hang") == 0)
		/* the stuck loader thread still owns its pages, the trampoline's included */
		check(st.scratch && maps_has_addr(v.pid, st.scratch + 8192),
		      "the hung loader's pages stay with it");
	else
		check(st.scratch && !maps_has_addr(v.pid, st.scratch), "scratch page unmapped again");
	check(tracer_pid(v.pid) == 0, "target not traced after release");
	att_free(ctx);
	unlink(junk);
	usleep(100000);
	victim_check(&v, "after the failed call");
	victim_stop(&v);
	return failed;
}

/* HEAPTAP_FAULT=<step>: that step fails; the victim must run on unharmed. */
int case_fault(const char *step)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;
	int loaded, started;

	if (victim_start(&v))
		return 1;
	usleep(200000);
	setenv("HEAPTAP_FAULT", step, 1);
	ctx = att_new(v.pid);
	unsetenv("HEAPTAP_FAULT");
	memset(&res, 0, sizeof(res));
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason(step, ctx, why);
	check(why == ATT_E_FAULT, "fault at step %s is reported", step);
	att_get_stats(ctx, &st);
	att_free(ctx);
	check(tracer_pid(v.pid) == 0, "target not traced after rollback");
	if (st.scratch)
		check(!maps_has_addr(v.pid, st.scratch), "scratch page unmapped");
	if (loader_mode && st.scratch) {
		/* no loader thread was made: its two pages went with the trampoline's */
		check(!maps_has_addr(v.pid, st.scratch + 4096) && !maps_has_addr(v.pid, st.scratch + 8192),
		      "the loader's code and data pages are unmapped too");
		check(loaders_alive(v.pid) == 0, "no heaptap-load thread was created");
	}
	loaded = maps_contains(v.pid, "libheaptap_attach_testlib");
	started = count_lines(out_file, "start ");
	if (!strcmp(step, "dlopen") || !strcmp(step, "dlsym") || !strcmp(step, "start"))
		check(loaded && !started, "library loaded (never unloaded) but not started");
	else
		check(!loaded && !started, "library neither loaded nor started");
	usleep(100000);
	victim_check(&v, "after rollback");
	/* and a clean attach still works afterwards */
	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	check(why == ATT_OK, "a later attach succeeds");
	check(count_lines(out_file, "count=1 ") == 1, "start ran once");
	att_free(ctx);
	usleep(50000);
	victim_check(&v, "after the later attach");
	victim_stop(&v);
	return failed;
}

/* Start the victim in a new mount namespace where the library's directory is hidden. */
static int spawn_hidden(struct victim *v)
{
	static char script[4096];
	char libdir[512], *slash;
	char *argv[] = { "/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
			 script, NULL };

	if (access("/usr/bin/unshare", X_OK) != 0)
		return -1;
	snprintf(libdir, sizeof(libdir), "%s", lib_path);
	slash = strrchr(libdir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	/*
	 * and a private /tmp, so parallel tests do not see each other's staging.
	 * A build tree under /tmp (a CI checkout) is bound back into the private
	 * /tmp through a bind of the old /tmp on /mnt, with the library's
	 * directory hidden again.
	 */
	if (!strncmp(victim_path, "/tmp/", 5)) {
		char top[512];
		size_t n = strcspn(victim_path + 5, "/");

		snprintf(top, sizeof(top), "/tmp/%.*s", (int)n, victim_path + 5);
		snprintf(script, sizeof(script),
			 "mount --bind /tmp /mnt && mount -t tmpfs heaptap-tmp /tmp && "
			 "mkdir -p '%s' && mount --bind '/mnt%s' '%s' && "
			 "mount -t tmpfs heaptap-hide '%s' || exit 97; exec '%s'",
			 top, top + 4, top, libdir, victim_path);
	} else {
		snprintf(script, sizeof(script),
			 "mount -t tmpfs heaptap-hide '%s' && mount -t tmpfs heaptap-tmp /tmp || exit 97; "
			 "exec '%s'", libdir, victim_path);
	}
	return spawn(v, argv);
}

/* Entries named heaptap-* in the target's /tmp. */
static int staged_dirs(pid_t pid)
{
	char cmd[128], line[256];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls -a /proc/%d/root/tmp", (int)pid);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "heaptap-", 8) && strncmp(line, "heaptap-att-", 12))
			n++;
	pclose(f);
	return n;
}

/* The library is hidden from the target by a mount: attach stages a copy. */
int case_namespace(const char *fault)
{
	struct victim v;
	struct att_inject_result res;
	struct att_ctx *ctx;
	enum att_reason why;
	char probe[600];
	struct stat sb;
	int before;

	char cwd[PATH_MAX];

	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	/* the start function writes there: visible from both namespaces */
	snprintf(out_file, sizeof(out_file), "%s/heaptap-att-test-%d.txt", cwd, (int)getpid());
	if (spawn_hidden(&v)) {
		printf("skip: cannot make a mount namespace here\n");
		return SKIP;
	}
	snprintf(probe, sizeof(probe), "/proc/%d/root%s", (int)v.pid, lib_path);
	check(stat(probe, &sb) != 0, "the library is not visible inside the target's namespace");
	before = staged_dirs(v.pid);
	if (fault)
		setenv("HEAPTAP_FAULT", fault, 1);
	ctx = att_new(v.pid);
	unsetenv("HEAPTAP_FAULT");
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason("namespace", ctx, why);
	if (fault) {
		check(why == ATT_E_FAULT, "fault at step %s is reported", fault);
		check(count_lines(out_file, "start ") == 0, "start function did not run");
		check(!maps_contains(v.pid, "heaptap_attach_testlib"), "library not loaded");
	} else {
		check(why == ATT_OK, "injection into another mount namespace succeeds");
		check(res.staged == 1, "the library was staged into the target's /tmp");
		check(count_lines(out_file, "count=1 ") == 1, "start function ran");
		check(maps_contains(v.pid, "/tmp/heaptap-"), "the staged copy is what got mapped");
		check(maps_contains(v.pid, "(deleted)"), "the staged copy was removed after dlopen");
	}
	att_free(ctx);
	check(staged_dirs(v.pid) == before, "no staging directory left in the target's /tmp");
	check(tracer_pid(v.pid) == 0, "not traced");
	victim_check(&v, "after staged injection");
	victim_stop(&v);
	return failed;
}


/* VmSize of pid in bytes, 0 if unreadable. */
static unsigned long long vm_size(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * loader-eagain: the target's pthread_create fails for real. Its address
 * space limit (prlimit RLIMIT_AS) is set to what it uses plus 1 MiB: the
 * three scratch pages fit, a thread stack does not, so pthread_create
 * returns EAGAIN. Nothing may be left: no thread, no page, no library.
 */
int case_eagain(void)
{
	struct victim v;
	struct att_inject_result res;
	struct att_stats st;
	struct att_ctx *ctx;
	struct rlimit old, lim;
	enum att_reason why;
	unsigned long long size;

	if (!loader_mode)
		return 2;
	if (victim_start(&v))
		return 1;
	usleep(200000);
	ctx = att_new(v.pid);
	/*
	 * the reader checks errno around its read: the failing pthread_create
	 * sets it (its stack's mmap), and the stub's slots must put it back
	 */
	att_prefer_thread(ctx, v.tid[R_READER]);
	why = seize_with_lib(ctx);
	if (why) {
		report_reason("seize", ctx, why);
		check(0, "seize for the EAGAIN case");
		att_free(ctx);
		victim_stop(&v);
		return failed;
	}
	/* the thread is stopped: limit the address space now, as tight as possible */
	size = vm_size(v.pid);
	if (prlimit(v.pid, RLIMIT_AS, NULL, &old) < 0 || !size) {
		printf("skip: prlimit on the victim: %s\n", strerror(errno));
		att_free(ctx);
		victim_stop(&v);
		return SKIP;
	}
	lim = old;
	lim.rlim_cur = size + (1u << 20);
	check(prlimit(v.pid, RLIMIT_AS, &lim, NULL) == 0, "RLIMIT_AS of the victim set to %llu KiB",
	      (unsigned long long)lim.rlim_cur / 1024);
	why = inject_release(ctx, lib_path, "heaptap_test_start", out_file, &res);
	prlimit(v.pid, RLIMIT_AS, &old, NULL);
	report_reason("pthread_create under RLIMIT_AS", ctx, why);
	check(why == ATT_E_THREAD_CREATE, "the reason is \"%s\"", att_strerror(ATT_E_THREAD_CREATE));
	check(att_errno(ctx) == EAGAIN, "errno is EAGAIN (%s)", strerror(att_errno(ctx)));
	att_get_stats(ctx, &st);
	check(st.scratch && !maps_has_addr(v.pid, st.scratch) &&
		      !maps_has_addr(v.pid, st.scratch + 4096) && !maps_has_addr(v.pid, st.scratch + 8192),
	      "all three scratch pages unmapped again");
	check(!maps_contains(v.pid, "libheaptap_attach_testlib"), "library not loaded");
	check(count_lines(out_file, "start ") == 0, "start function did not run");
	check(tracer_pid(v.pid) == 0, "target not traced after release");
	att_free(ctx);
	usleep(100000);
	victim_check(&v, "after the failed pthread_create");

	ctx = att_new(v.pid);
	why = attach_once(ctx, "heaptap_test_start", out_file, &res, 0);
	report_reason("again without the limit", ctx, why);
	check(why == ATT_OK && count_lines(out_file, "count=1 ") == 1,
	      "with the limit back, the attach succeeds");
	att_free(ctx);
	usleep(100000);
	victim_check(&v, "after the second attach");
	victim_stop(&v);
	return failed;
}
