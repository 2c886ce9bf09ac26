/* cli/msg.c - one-line messages on stderr */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "report/report.h"

void cli_msg(const char *fmt, ...)
{
	char raw[2048], buf[2048];
	int saved = errno;
	int n, m;
	va_list ap;

	va_start(ap, fmt);
	m = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	if ((size_t)m >= sizeof(raw))
		m = sizeof(raw) - 1; /* cut: the line still ends */
	/*
	 * Messages carry what the target, a peer or another user chose (comm,
	 * paths, dlerror text, a control socket's reply): escaped as a whole,
	 * so no byte of theirs reaches the terminal as a control.
	 */
	n = snprintf(buf, sizeof(buf), "heaptap: ");
	n += (int)rpt_escape(buf + n, sizeof(buf) - (size_t)n - 1, raw, (size_t)m);
	buf[n++] = '\n';
	/* One write so that lines of several processes do not interleave. */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nothing sensible left to report it on */
	}
	errno = saved;
}
