/* cli/args.c - what the commands' option parsers share */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"

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
