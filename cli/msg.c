/* cli/msg.c - one-line messages on stderr */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"

void cli_msg(const char *fmt, ...)
{
	char buf[2048];
	int saved = errno;
	int n, m;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "heaptap: ");
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2; /* cut: the line still ends */
	buf[n++] = '\n';
	/* One write so that lines of several processes do not interleave. */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nothing sensible left to report it on */
	}
	errno = saved;
}
