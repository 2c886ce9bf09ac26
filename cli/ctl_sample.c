/* cli/ctl_sample.c - a sampling rate asked of a running session: parsed, sent to the library */
/* SPDX-License-Identifier: MIT */
/*
 * Shared by the three places that change the rate: `heaptap ctl` parses
 * it (cmd_ctl.c), the holder of an attach session answers "sample N" on its
 * control socket (detach_ctl.c), and top's `s` key asks it directly
 * (top_loop.c). The rate goes to the library as WIRE_CTL_SAMPLE on the
 * event socket (itp_send_sample).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "interpret/interpret.h"

int cli_ctl_parse_rate(const char *s, uint64_t *rate)
{
	if (!strcmp(s, "off") || !strcmp(s, "full") || !strcmp(s, "0")) {
		*rate = 0;
		return 0;
	}
	if (cli_parse_bytes(s, rate) < 0 || *rate == 0 || *rate > CLI_SAMPLE_MAX)
		return -EINVAL;
	return 0;
}

const char *cli_ctl_sample_request(int conn, const char *arg, char *buf, size_t len)
{
	char a[32];
	uint64_t rate;
	size_t n = strcspn(arg, "\r\n");
	int ret;

	if (n >= sizeof(a)) {
		snprintf(buf, len, "sample error bad value\n");
		return buf;
	}
	memcpy(a, arg, n); /* arg may live in buf */
	a[n] = '\0';
	if (cli_ctl_parse_rate(a, &rate) < 0) {
		snprintf(buf, len, "sample error bad value '%.31s'\n", a);
		return buf;
	}
	if (conn < 0) {
		snprintf(buf, len, "sample error the library has not connected yet\n");
		return buf;
	}
	ret = itp_send_sample(conn, rate, 0);
	if (ret < 0)
		snprintf(buf, len, "sample error %.100s\n",
			 ret == -EAGAIN ? "the library does not read its socket" : strerror(-ret));
	else
		snprintf(buf, len, "sample ok %" PRIu64 "\n", rate);
	return buf;
}
