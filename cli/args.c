/* cli/args.c - what the commands' option parsers share */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"

void cli_getopt_reset(void)
{
	optind = 0; /* full reset (GNU), so a parser can run more than once */
	opterr = 0; /* the callers word the messages (cli_getopt_error) */
}

int cli_getopt_error(int c, char **argv, char *err, size_t errlen)
{
	if (c == ':')
		snprintf(err, errlen, "option '%s' needs an argument", argv[optind - 1]);
	else if (optopt)
		snprintf(err, errlen, "unknown option '-%c'", optopt);
	else
		snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
	return -EINVAL;
}

int cli_parse_pid(const char *s, pid_t *out, char *err, size_t errlen)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX) {
		snprintf(err, errlen, "'%s' is not a process id", s);
		return -EINVAL;
	}
	*out = (pid_t)v;
	return 0;
}

int cli_parse_pid_operand(int argc, char **argv, int first, pid_t *out, char *err, size_t errlen)
{
	if (first >= argc) {
		snprintf(err, errlen, "no process id given");
		return -EINVAL;
	}
	if (first + 1 < argc) {
		snprintf(err, errlen, "one process id only ('%s' is extra)", argv[first + 1]);
		return -EINVAL;
	}
	return cli_parse_pid(argv[first], out, err, errlen);
}

int cli_parse_output(const char *s, const char **out, char *err, size_t errlen)
{
	if (!*s) {
		snprintf(err, errlen, "-o needs a file name");
		return -EINVAL;
	}
	*out = s;
	return 0;
}

int cli_parse_seconds(const char *opt, const char *s, double min, double max, double *out, char *err,
		      size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < min || v <= 0 || v > max) {
		if (min > 0)
			snprintf(err, errlen, "%s '%s': not a number of seconds from %g", opt, s, min);
		else
			snprintf(err, errlen, "%s '%s': not a number of seconds above 0", opt, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}
