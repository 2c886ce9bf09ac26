/* cli/cmd_top.c - heaptap top: watch a live process's heap on a full-screen view */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap top PID attaches as `heaptap attach --sample 512K PID` does (the
 * same code: cli_attach_session, with a viewer), heaptap top -- PROG runs
 * PROG under the preload library (top_launch.c). Either way the session
 * thread runs the interpreter with a snapshot every second (top_model.c)
 * and the main thread runs the screen (top_loop.c, top_view.c) until q;
 * then the session ends as attach's does: the library restores its GOT
 * slots, the recording (-o) is finished, and the summary is printed.
 *
 * While the screen is up nothing else may write to the terminal: heaptap's
 * own messages (stderr) go to a memory file from the start and are written
 * out once the screen is gone, in order. The terminal is checked before
 * anything is touched: top refuses to run without one (stdin and stdout)
 * and points to attach.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <curses.h>
#include <term.h>
#include <unistd.h>

#include "cli/top.h"

void cli_usage_top(FILE *f)
{
	fputs("usage: heaptap top [--full | --sample BYTES] [-o FILE] PID\n"
	      "       heaptap top [--full | --sample BYTES] [-o FILE] [--log FILE] -- PROGRAM "
	      "[ARGS...]\n"
	      "\n"
	      "Watch the heap of a running process live on a full-screen view: heap now and\n"
	      "its peak, RSS, allocation rates, and a table of call sites refreshed every\n"
	      "second. q (or Ctrl+C) detaches: the process runs on, as after heaptap attach.\n"
	      "With -- PROGRAM, runs the program under heaptap and watches it.\n"
	      "\n"
	      "options:\n"
	      "      --sample BYTES sample one allocation per BYTES allocated (default 512K)\n"
	      "      --full         record every allocation (full tracing)\n"
	      "  -o, --output FILE  also write a recording of the session to FILE\n"
	      "      --log FILE     a launched program's stdout and stderr (default /dev/null)\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "keys: l a c t sort by not freed, bytes/s, calls/s, temporary/s; Up/Down select;\n"
	      "Enter shows the selected call site's stack; s switches between sampling and full\n"
	      "tracing; p pauses the display; q quits. Needs a terminal (heaptap attach records\n"
	      "without one). See heaptap-top(1).\n",
	      f);
}

int cli_top_parse(int argc, char **argv, struct cli_top_args *a, char *err, size_t errlen)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'}, {"sample", required_argument, NULL, 'S'},
	    {"full", no_argument, NULL, 'F'},	      {"log", required_argument, NULL, 'L'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	int c, full = 0, sample = 0;

	memset(a, 0, sizeof(*a));
	err[0] = '\0';
	a->sample = TOP_DEFAULT_SAMPLE;
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_output(optarg, &a->output, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'S':
			if (cli_parse_sample(optarg, &a->sample, err, errlen) < 0)
				return -EINVAL;
			sample = 1;
			break;
		case 'F':
			full = 1;
			break;
		case 'L':
			if (!*optarg) {
				snprintf(err, errlen, "--log needs a file name");
				return -EINVAL;
			}
			a->log = optarg;
			break;
		case 'h':
			a->help = 1;
			return 0;
		default:
			return cli_getopt_error(c, argv, err, errlen);
		}
	}
	if (full && sample) {
		snprintf(err, errlen, "--full and --sample exclude each other");
		return -EINVAL;
	}
	if (full)
		a->sample = 0;
	if (optind > 1 && !strcmp(argv[optind - 1], "--")) {
		if (optind >= argc) {
			snprintf(err, errlen, "no program after --");
			return -EINVAL;
		}
		a->argc = argc - optind;
		a->argv = argv + optind;
		return 0;
	}
	if (a->log) {
		snprintf(err, errlen, "--log is for a launched program (-- PROGRAM)");
		return -EINVAL;
	}
	return cli_parse_pid_operand(argc, argv, optind, &a->pid, err, errlen);
}

/*
 * stderr into a memory file while the screen may be up, then back: what
 * was said is written out in order once the terminal is ours again.
 */
struct held_err {
	int saved; /* the real stderr, -1 when not held */
	int mem;
};

static void hold_stderr(struct held_err *h)
{
	h->saved = -1;
	h->mem = memfd_create("heaptap-top-messages", MFD_CLOEXEC);
	if (h->mem < 0)
		return;
	h->saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (h->saved < 0 || dup2(h->mem, STDERR_FILENO) < 0) {
		if (h->saved >= 0)
			close(h->saved);
		close(h->mem);
		h->saved = h->mem = -1;
	}
}

static void release_stderr(struct held_err *h)
{
	char buf[8192];
	off_t off = 0;
	ssize_t n;

	if (h->saved < 0)
		return;
	dup2(h->saved, STDERR_FILENO);
	close(h->saved);
	h->saved = -1;
	while ((n = pread(h->mem, buf, sizeof(buf), off)) > 0) {
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
		off += n;
	}
	close(h->mem);
	h->mem = -1;
}

struct top_ctx {
	struct top_model m;
	struct held_err err;
	const struct cli_top_args *a;
	char comm[64];
};

/* cli_live.run: the screen on the main thread, then the terminal is stderr's again */
static void run_screen(void *arg, volatile sig_atomic_t *stop)
{
	struct top_ctx *t = arg;
	struct top_view_args v = {.m = &t->m,
				  .stop = stop,
				  .comm = t->comm,
				  .what = t->a->pid ? "attached" : "launched",
				  .output = t->a->output};

	top_view_run(&v);
	release_stderr(&t->err);
}

int cli_cmd_top(int argc, char **argv)
{
	struct cli_top_args a;
	struct top_ctx *t;
	struct cli_live live;
	char err[256];
	int code, terr = 0;

	if (cli_top_parse(argc, argv, &a, err, sizeof(err)) < 0) {
		cli_msg("top: %s (see heaptap top --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (a.help) {
		cli_usage_top(stdout);
		return CLI_EXIT_OK;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		cli_msg(
		    "top: needs a terminal (its %s is not one); heaptap attach records without one",
		    isatty(STDIN_FILENO) ? "output" : "input");
		return CLI_EXIT_FAIL;
	}
	if (setupterm(NULL, STDOUT_FILENO, &terr) != OK) {
		cli_msg("top: cannot use the terminal (TERM=%s): %s",
			getenv("TERM") ? getenv("TERM") : "",
			terr == 0 ? "unknown type" : "no terminfo database");
		return CLI_EXIT_FAIL;
	}
	del_curterm(cur_term); /* only checked: the screen opens its own */
	t = calloc(1, sizeof(*t));
	if (!t) {
		cli_msg("top: %s", strerror(ENOMEM));
		return CLI_EXIT_FAIL;
	}
	t->a = &a;
	top_model_init(&t->m, a.pid, a.sample);
	if (a.pid)
		cli_read_comm(a.pid, NULL, t->comm, sizeof(t->comm));
	else
		cli_read_comm(0, a.argv[0], t->comm, sizeof(t->comm));
	live = (struct cli_live){
	    .options = top_model_options, .ended = top_model_ended, .run = run_screen, .arg = t};
	hold_stderr(&t->err);
	if (a.pid) {
		struct cli_attach_args aa;

		memset(&aa, 0, sizeof(aa));
		aa.output = a.output;
		aa.sample = a.sample;
		aa.pid = a.pid;
		code = cli_attach_session(&aa, &live);
	} else {
		code = top_launch(&a, &live, &t->m);
	}
	release_stderr(&t->err); /* when the screen never came up */
	top_model_destroy(&t->m);
	free(t);
	return code;
}
