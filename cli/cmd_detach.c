/* cli/cmd_detach.c - heaptap detach: end the session on a process, or make a left library inert */
/* SPDX-License-Identifier: MIT */
/*
 * Three cases, tried in this order (docs/attach-command.md, "heaptap detach"):
 *
 *  1. A heaptap attach holds the session (its control socket answers,
 *     detach_ctl.c): ask it to detach, as SIGTERM would, and wait for its
 *     result: where the recording is, how many slots were restored.
 *  2. No heaptap holds it, but the library in the process still runs a
 *     session (a thread named INJ_THREAD_NAME exists: its heaptap lost the
 *     connection in a way the library did not notice, or someone else holds
 *     the socket): seize one thread with attach/ and remote-call
 *     heaptap_inject_detach, which only sets a flag; the library's own
 *     thread then restores every slot, sends END and ends. Wait for that
 *     thread to go.
 *  3. Nothing of ours runs there: one line, exit 1.
 *
 * The preflight is attach's (no such process, not permitted, ...); a
 * process that is traced or stopped is still handed to its holder (case 1:
 * the holder may be the tracer, mid-attach).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach/attach.h"
#include "cli/cli.h"
#include "elf/elfr.h"
#include "inject/inject.h"
#include "track/wire.h"
#include "util/procread.h"

#define DETACH_TIMEOUT_S 30 /* default wait for the holder's result */
#define GONE_MS 5000	    /* the library's thread ends within one poll tick (20 ms) */

struct detach_args {
	pid_t pid;
	double timeout;
	int help;
	int verbose;
};

void cli_usage_detach(FILE *f)
{
	fputs("usage: heaptap detach [--timeout SECS] [-v] PID\n"
	      "\n"
	      "End the heaptap session on process PID from another shell. When a heaptap\n"
	      "attach holds the session, it is asked to detach (as Ctrl+C would) and its\n"
	      "result is printed: where the recording is. When no heaptap holds it but\n"
	      "heaptap's library in PID still tracks, the library is told to put back every\n"
	      "GOT slot and go inert. PID keeps running in both cases.\n"
	      "\n"
	      "options:\n"
	      "  -t, --timeout SECS    wait at most SECS for the attaching heaptap to finish\n"
	      "                        (default 30)\n"
	      "  -v, --verbose         when heaptap's library had to be stopped directly: which\n"
	      "                        thread was stopped and for how long\n"
	      "  -h, --help            show this help\n"
	      "\n"
	      "Exit status: 0 the session ended; 1 no session, or it did not end in time;\n"
	      "2 bad usage; 10-63 the process could not be examined (see heaptap-attach(1)).\n",
	      f);
}

static int parse(int argc, char **argv, struct detach_args *a, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->timeout = DETACH_TIMEOUT_S;
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, ":t:hv", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (cli_parse_seconds("--timeout", optarg, 0, 86400, &a->timeout, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'h':
			a->help = 1;
			return 0;
		case 'v':
			a->verbose = 1;
			break;
		default:
			return cli_getopt_error(c, argv, err, errlen);
		}
	}
	return cli_parse_pid_operand(argc, argv, optind, &a->pid, err, errlen);
}

/* Threads of pid named INJ_THREAD_NAME (the library's and track's timer): a session is alive. */
static int lib_threads(pid_t pid)
{
	char path[96], comm[32];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int err;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "task/%.16s/comm", e->d_name);
		err = util_proc_read(pid, path, comm, sizeof(comm), NULL);
		if (err && err != -EFBIG) /* a kernel comm is 16 bytes at most */
			continue;
		comm[strcspn(comm, "\n")] = '\0';
		n += !strcmp(comm, INJ_THREAD_NAME);
	}
	closedir(d);
	return n;
}

/* Wait up to ms for the library's threads to end. 1 when they did. */
static int wait_lib_gone(pid_t pid, unsigned ms)
{
	struct timespec ts = { 0, 5000000 };
	unsigned waited;

	for (waited = 0; waited <= ms; waited += 5) {
		if (!lib_threads(pid))
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* Where the library is mapped in pid: its load address and a file to read its symbols from. */
struct lib_map {
	uintptr_t base;
	char file[PATH_MAX];   /* /proc/PID/map_files/START-END */
	char rooted[PATH_MAX]; /* PATH inside the process's root, "" when deleted */
	char procdir[32];      /* /proc/PID */
};

static int find_lib(pid_t pid, struct lib_map *m)
{
	char path[64], line[PATH_MAX + 256];
	int found = 0;
	FILE *f;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, off;
		char *p = strchr(line, '/'), *nl;
		int deleted;

		if (!p || sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) != 3 || off != 0)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		deleted = strlen(p) > 10 && !strcmp(p + strlen(p) - 10, " (deleted)");
		if (deleted)
			p[strlen(p) - 10] = '\0';
		if (strlen(p) < sizeof(INJ_LIB_NAME) ||
		    strcmp(p + strlen(p) - sizeof(INJ_LIB_NAME) + 1, INJ_LIB_NAME) ||
		    p[strlen(p) - sizeof(INJ_LIB_NAME)] != '/')
			continue;
		m->base = start;
		snprintf(m->file, sizeof(m->file), "/proc/%d/map_files/%lx-%lx", (int)pid, start, end);
		if (!deleted)
			snprintf(m->rooted, sizeof(m->rooted), "%s", p);
		snprintf(m->procdir, sizeof(m->procdir), "/proc/%d", (int)pid);
		found = 1;
	}
	fclose(f);
	return found;
}

/* Address of name in the library mapped in pid; 0 on failure. */
static uintptr_t lib_symbol(const struct lib_map *m, const char *name)
{
	uintptr_t addr = 0;
	int i, fd;

	/* the process's files, opened as attach/rootfs.c does: regular files inside its root only */
	for (i = 0; i < 2 && !addr; i++) {
		struct elfr_file *f;

		if (i == 1 && !m->rooted[0])
			break;
		fd = i == 0 ? att_open_regular(m->file, NULL) : att_root_open(m->procdir, m->rooted, NULL);
		if (fd < 0) {
			errno = -fd;
			continue;
		}
		f = att_elf_open_fd(fd);
		if (!f)
			continue;
		if (elfr_file_symbol(f, name, m->base, &addr) != ELFR_OK)
			addr = 0;
		elfr_file_close(f);
	}
	return addr;
}

/* Case 1 finished: print the holder's result. Returns the exit code. */
static int report_result(pid_t pid, const char *who, const struct cli_ctl_result *r)
{
	cli_msg("detach %d: %s ended its session", (int)pid, who);
	if (r->out[0])
		cli_msg("recorded %llu allocations to %s", (unsigned long long)r->allocs, r->out);
	if (r->end_reason == WIRE_END_STOP || r->end_reason == WIRE_END_ERROR) {
		if (r->left)
			cli_msg("restored %llu GOT slots in %d; %llu no longer held heaptap's hook "
				"and were left as they are",
				(unsigned long long)r->restored, (int)pid,
				(unsigned long long)r->left);
		else
			cli_msg("restored %llu GOT slots in %d", (unsigned long long)r->restored,
				(int)pid);
	} else if (r->end_reason != WIRE_END_EXIT && lib_threads(pid)) {
		cli_msg("detach %d: warning: it did not confirm that its GOT slots were restored",
			(int)pid);
	}
	if (r->out[0])
		cli_msg("run \"heaptap report %s\"", r->out);
	if (r->code != CLI_EXIT_OK)
		cli_msg("detach %d: the attaching heaptap ended with status %d (its own messages say "
			"why)", (int)pid, r->code);
	return r->code == CLI_EXIT_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* Case 2: make the library end its session from inside. Returns the exit code. */
static int stop_library(struct att_ctx *ctx, pid_t pid, int verbose)
{
	struct lib_map m;
	enum att_reason why;
	uintptr_t fn;
	uint64_t ret = 0;
	const char *sym = INJ_DETACH_SYMBOL;
	int tries;

	if (!find_lib(pid, &m)) {
		cli_msg("detach %d: a thread named %s runs there, but heaptap's library is not mapped; "
			"nothing was changed", (int)pid, INJ_THREAD_NAME);
		return CLI_EXIT_FAIL;
	}
	fn = lib_symbol(&m, sym);
	if (!fn) {
		/* a library of an older heaptap: its synchronous stop */
		sym = INJ_STOP_SYMBOL;
		fn = lib_symbol(&m, sym);
	}
	if (!fn) {
		cli_msg("detach %d: cannot read the symbols of its %s (%s): %s", (int)pid, INJ_LIB_NAME,
			m.file, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	for (tries = 0; tries < 3; tries++) {
		why = att_seize(ctx);
		if (why != ATT_OK) {
			const char *d = att_detail(ctx);

			cli_msg("detach %d: %s%s%s", (int)pid, att_strerror(why), d[0] ? ": " : "", d);
			return att_exit_code(why);
		}
		why = att_call(ctx, fn, NULL, 0, &ret);
		att_release(ctx);
		if (why != ATT_OK) {
			const char *d = att_detail(ctx);

			cli_msg("detach %d: calling %s: %s%s%s", (int)pid, sym, att_strerror(why),
				d[0] ? ": " : "", d);
			return att_exit_code(why);
		}
		if ((int)ret != -EAGAIN)
			break;
		/* heaptap_inject_stop of an older library while its session starts: again */
		struct timespec ts = { 0, 100000000 };

		nanosleep(&ts, NULL);
	}
	if (verbose) {
		struct att_stats st;

		att_get_stats(ctx, &st);
		cli_msg("detach %d: %s returned %d; thread %d (%s %ld) stopped %.3f ms: stop %.3f ms, "
			"stack check %.3f ms, %u calls %.3f ms", (int)pid, sym, (int)ret, (int)st.tid,
			st.syscall < 0 ? "user code" : "syscall", st.syscall,
			(double)st.pause_ns / 1e6, (double)st.stop_ns / 1e6,
			(double)st.unwind_ns / 1e6, st.calls, (double)st.call_ns / 1e6);
		if (st.resumed[0])
			cli_msg("detach %d: thread %d was in %s", (int)pid, (int)st.tid, st.resumed);
	}
	if ((int)ret == -ENOENT && !lib_threads(pid)) {
		cli_msg("detach %d: its heaptap session ended by itself meanwhile; the library is inert",
			(int)pid);
		return CLI_EXIT_OK;
	}
	if ((int)ret != 0) {
		cli_msg("detach %d: heaptap's library refused to stop: %s", (int)pid,
			strerror(-(int)ret));
		return CLI_EXIT_FAIL;
	}
	if (!wait_lib_gone(pid, GONE_MS)) {
		cli_msg("detach %d: heaptap's library was told to stop but its thread still runs after "
			"%u ms", (int)pid, GONE_MS);
		return CLI_EXIT_FAIL;
	}
	cli_msg("detach %d: no heaptap held its session; its library put back the GOT slots it "
		"had changed and is inert", (int)pid);
	return CLI_EXIT_OK;
}

int cli_cmd_detach(int argc, char **argv)
{
	struct detach_args a;
	struct cli_ctl_holder h;
	struct cli_ctl_result *r = NULL;
	struct att_ctx *ctx = NULL;
	enum att_reason why;
	char err[256], who[160];
	int ret, code = CLI_EXIT_FAIL;
	pid_t pid;

	err[0] = '\0';
	if (parse(argc, argv, &a, err, sizeof(err)) < 0) {
		cli_msg("detach: %s (see heaptap detach --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (a.help) {
		cli_usage_detach(stdout);
		return CLI_EXIT_OK;
	}
	pid = a.pid;
	ctx = att_new(pid);
	if (!ctx) {
		cli_msg("detach %d: %s", (int)pid, strerror(errno));
		return CLI_EXIT_FAIL;
	}
	why = att_preflight(ctx);
	if (why != ATT_OK && why != ATT_E_TRACED && why != ATT_E_STOPPED) {
		const char *d = att_detail(ctx);

		cli_msg("detach %d: %s%s%s", (int)pid, att_strerror(why), d[0] ? ": " : "", d);
		code = att_exit_code(why);
		goto out_free;
	}
	r = malloc(sizeof(*r));
	if (!r) {
		cli_msg("detach %d: %s", (int)pid, strerror(errno));
		goto out_free;
	}
	ret = cli_ctl_detach(pid, (unsigned)(a.timeout * 1000), &h, r);
	cli_ctl_describe(&h, who, sizeof(who));
	if (ret == 0) {
		code = report_result(pid, who, r);
		goto out_free;
	}
	if (ret == -ETIMEDOUT) {
		if (!h.answered)
			cli_msg("detach %d: %s holds its session but does not answer (stopped?); "
				"nothing was changed", (int)pid, who);
		else
			cli_msg("detach %d: %s was asked to detach but did not finish within %g s",
				(int)pid, who, a.timeout);
		goto out_free;
	}
	if (ret == -EPIPE) {
		/* killed mid-way: its library saw EOF and restores by itself */
		if (wait_lib_gone(pid, GONE_MS))
			cli_msg("detach %d: %s went away without a result (killed?); its library "
				"restored the GOT slots by itself and is inert", (int)pid, who);
		else
			cli_msg("detach %d: %s went away without a result (killed?) and the library "
				"still runs; run heaptap detach %d again", (int)pid, who, (int)pid);
		goto out_free;
	}
	if (ret == -EPERM) /* a squatter: as if nobody held it */
		cli_msg("detach %d: its session name is %s; looking for heaptap's library directly", (int)pid,
			who);
	else if (ret != -ENOENT) {
		cli_msg("detach %d: asking its heaptap: %s", (int)pid, strerror(-ret));
		goto out_free;
	}
	/* nobody holds the session */
	if (why != ATT_OK) {
		const char *d = att_detail(ctx);

		cli_msg("detach %d: %s%s%s", (int)pid, att_strerror(why), d[0] ? ": " : "", d);
		code = att_exit_code(why);
		goto out_free;
	}
	if (!lib_threads(pid)) {
		struct lib_map m;

		if (find_lib(pid, &m))
			cli_msg("detach %d: no heaptap session in it (heaptap's library is loaded but "
				"inert: nothing to restore)", (int)pid);
		else
			cli_msg("detach %d: no heaptap session in it", (int)pid);
		goto out_free;
	}
	code = stop_library(ctx, pid, a.verbose);

out_free:
	free(r);
	att_free(ctx);
	return code;
}
