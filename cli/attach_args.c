/* cli/attach_args.c - heaptap attach: usage text and argument parsing */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "track/wire.h"

#define DURATION_MAX 31536000 /* one year */

void cli_usage_attach(FILE *f)
{
	fputs("usage: heaptap attach [-o FILE] [--duration SECS] [--sample BYTES] [-v] PID\n"
	      "\n"
	      "Load heaptap's tracking library into the running process PID and record its\n"
	      "allocations until Ctrl+C, SIGTERM, SIGHUP or the duration ends the session.\n"
	      "Then the library puts back every GOT slot it changed and goes inert; PID keeps\n"
	      "running. One thread of PID is stopped for well under a millisecond.\n"
	      "\n"
	      "options:\n"
	      "  -o, --output FILE     write the recording to FILE (never overwritten); default\n"
	      "                        heaptap.COMM.PID.htap in the working directory\n"
	      "  -d, --duration SECS   detach after SECS seconds (decimals allowed)\n"
	      "      --sample BYTES    sample one allocation per BYTES allocated on average\n"
	      "                        (e.g. 512K): production cost, stacks are estimates,\n"
	      "                        totals stay exact; \"heaptap ctl PID sample\" changes it\n"
	      "      --snapshot-every SECS --format pprof --out DIR\n"
	      "                        write a pprof heap profile (in use now, allocated since\n"
	      "                        the previous one) into DIR every SECS seconds\n"
	      "      --max-memory BYTES\n"
	      "                        memory for the session's tables (default a quarter of\n"
	      "                        the RAM); reaching it ends the session like Ctrl+C\n"
	      "      --debuginfod      let symbolization ask the DEBUGINFOD_URLS servers\n"
	      "      --no-python-frames\n"
	      "                        native stacks only, no Python frames in a CPython\n"
	      "      --no-java-frames\n"
	      "                        native stacks only, no Java frames in a HotSpot JVM\n"
	      "                        (heaptap's JVMTI agent is not loaded)\n"
	      "  -v, --verbose         say how long each attach step took and which thread\n"
	      "                        was stopped\n"
	      "  -h, --help            show this help\n"
	      "\n"
	      "Exit status: 0 recorded; 1 an error; 2 bad usage; 10-63 the process could not\n"
	      "be attached (see heaptap-attach(1)).\n",
	      f);
}

int cli_attach_parse(int argc, char **argv, struct cli_attach_args *a, char *err, size_t errlen)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "sample", required_argument, NULL, 'S' },
		{ "snapshot-every", required_argument, NULL, 'E' },
		{ "format", required_argument, NULL, 'F' },
		{ "out", required_argument, NULL, 'O' },
		{ "max-memory", required_argument, NULL, 'M' },
		{ "debuginfod", no_argument, NULL, 'D' },
		{ "no-python-frames", no_argument, NULL, 'P' },
		{ "no-java-frames", no_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof(*a));
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, ":o:d:hv", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_output(optarg, &a->output, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'd':
			if (cli_parse_seconds("--duration", optarg, 0, DURATION_MAX, &a->duration, err,
					      errlen) < 0)
				return -EINVAL;
			break;
		case 'h':
			a->help = 1;
			return 0;
		case 'v':
			a->verbose = 1;
			break;
		case 'S':
			if (cli_parse_sample(optarg, &a->sample, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'E':
			if (cli_parse_seconds("--snapshot-every", optarg, 0.1, DURATION_MAX,
					      &a->snapshot_every, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'F':
			if (strcmp(optarg, "pprof")) {
				snprintf(err, errlen, "--format '%s': snapshots are written as pprof only",
					 optarg);
				return -EINVAL;
			}
			a->format_pprof = 1;
			break;
		case 'M':
			if (cli_parse_max_memory(optarg, &a->max_memory, err, errlen) < 0)
				return -EINVAL;
			break;
		case 'D':
			a->debuginfod = 1;
			break;
		case 'P':
			a->langs_off |= 1u << WIRE_LANG_PYTHON;
			break;
		case 'J':
			a->langs_off |= 1u << WIRE_LANG_JAVA;
			break;
		case 'O':
			if (!*optarg) {
				snprintf(err, errlen, "--out needs a directory");
				return -EINVAL;
			}
			a->out_dir = optarg;
			break;
		default: /* ':' (missing argument) or '?' */
			return cli_getopt_error(c, argv, err, errlen);
		}
	}
	/* a missing PID is said first, before the pairing of the options */
	if (optind < argc &&
	    ((a->snapshot_every > 0) != (a->out_dir != NULL) || (a->format_pprof && !a->out_dir))) {
		snprintf(err, errlen, "--snapshot-every SECS and --out DIR go together");
		return -EINVAL;
	}
	return cli_parse_pid_operand(argc, argv, optind, &a->pid, err, errlen);
}

