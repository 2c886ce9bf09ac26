/* tests/oldlibc/oldlibc_attach.c - drive attach/ once against a pid and print what came back */
/* SPDX-License-Identifier: MIT */
/*
 * oldlibc_attach PID LIB SYMBOL ARG
 *
 * The same sequence as `heaptap attach` (preflight, prepare, seize,
 * att_inject_start, release, att_inject_wait), with any library and start
 * function, so that a test library built for an old glibc can be loaded.
 * Prints one line of key=value pairs for oldlibc.sh to check:
 *   exit=<att_exit_code> threaded=<0|1> loader_tid=<tid> hijacked=<tid>
 *   handle=<0|1> detail=<att_detail text>
 * Exits 0 when the sequence ran (whatever its outcome), 1 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>

#include "attach/attach.h"

int main(int argc, char **argv)
{
	struct att_inject_result res = { 0 };
	struct att_stats st = { 0 };
	struct att_ctx *ctx;
	enum att_reason why;
	const char *step = "preflight";
	long pid;

	if (argc != 5 || (pid = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: oldlibc_attach PID LIB SYMBOL ARG\n");
		return 1;
	}
	ctx = att_new((pid_t)pid);
	if (!ctx) {
		perror("oldlibc_attach: att_new");
		return 1;
	}
	why = att_preflight(ctx);
	if (!why) {
		step = "prepare";
		why = att_prepare(ctx, argv[2]);
	}
	if (!why) {
		step = "seize";
		why = att_seize(ctx);
	}
	if (!why) {
		step = "inject";
		why = att_inject_start(ctx, argv[2], argv[3], argv[4]);
	}
	att_get_stats(ctx, &st);
	if (why == ATT_OK) {	/* as cli/cmd_attach.c */
		att_release(ctx);
		why = att_inject_wait(ctx, 10000, &res);
	}
	att_release(ctx);
	printf("step=%s exit=%d threaded=%d loader_tid=%d hijacked=%d handle=%d reason=%s detail=%s\n",
	       step, att_exit_code(why), res.threaded, (int)res.loader_tid, (int)st.tid,
	       res.handle != 0, att_strerror(why), att_detail(ctx));
	att_free(ctx);
	return 0;
}
