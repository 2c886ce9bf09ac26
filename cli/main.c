/* cli/main.c - heaptap: the command table and dispatch */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap COMMAND [OPTIONS] ...; a new command (attach, detach) is one file
 * cmd_<name>.c and one line in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "heaptap_revision.h" /* HEAPTAP_GIT_REVISION, dist/revision.cmake */

#ifndef HEAPTAP_VERSION
#define HEAPTAP_VERSION "unknown"
#endif

static const struct cli_command commands[] = {
	{ "record", "run a program and record its allocations", cli_cmd_record, cli_usage_record },
	{ "attach", "record a running process, then detach and leave it running", cli_cmd_attach,
	  cli_usage_attach },
	{ "detach", "end the heaptap session on a process, or make a left library inert",
	  cli_cmd_detach, cli_usage_detach },
	{ "report", "print the summary and top call sites of a recording", cli_cmd_report,
	  cli_usage_report },
	{ "ctl", "change a running attach session: sampling rate, or full tracing", cli_cmd_ctl,
	  cli_usage_ctl },
	{ "top", "watch a live process's heap on a full-screen view", cli_cmd_top, cli_usage_top },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fputs("usage: heaptap COMMAND [OPTIONS] [ARGS...]\n"
	      "       heaptap --help | --version\n"
	      "\n"
	      "heaptap is a heap-memory profiler: it records every allocation of a program\n"
	      "with its call stack and reports where the memory goes.\n"
	      "\n"
	      "commands:\n",
	      f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "Run \"heaptap COMMAND --help\" for the options of a command; see heaptap(1).\n",
	      f);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		/* "heaptap help COMMAND" is "heaptap COMMAND --help" */
		if (argc > 2 && !strcmp(argv[1], "help")) {
			for (i = 0; i < NCOMMANDS; i++) {
				if (!strcmp(argv[2], commands[i].name)) {
					commands[i].usage(stdout);
					return CLI_EXIT_OK;
				}
			}
			cli_msg("unknown command '%s' (see heaptap --help)", argv[2]);
			return CLI_EXIT_USAGE;
		}
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		/* "" when built outside a git work tree (a tarball) */
		if (HEAPTAP_GIT_REVISION[0])
			printf("heaptap %s (git %s)\n", HEAPTAP_VERSION, HEAPTAP_GIT_REVISION);
		else
			printf("heaptap %s (git revision unknown: not built from a git work tree)\n",
			       HEAPTAP_VERSION);
		return CLI_EXIT_OK;
	}
	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		cli_msg("unknown option '%s' (see heaptap --help)", argv[1]);
	else
		cli_msg("unknown command '%s' (see heaptap --help)", argv[1]);
	return CLI_EXIT_USAGE;
}
