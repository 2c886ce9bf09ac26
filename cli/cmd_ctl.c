/* cli/cmd_ctl.c - heaptap ctl: change a running attach session (sampling rate, full tracing) */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap ctl PID sample BYTES|off
 *
 * The heaptap attach that holds PID's session listens on the session's
 * control socket (detach_ctl.c, shared with `heaptap detach`); this command
 * sends it "sample N" and prints its answer. The holder forwards the rate
 * to the library as WIRE_CTL_SAMPLE on the event socket (ctl_sample.c);
 * the library's timer thread applies it within one tick (10 ms): threads
 * draw their next sample distance with the new mean at their next
 * allocation, "off" records every allocation again (docs/track.md
 * "Sampling"). Nothing is re-attached.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "interpret/interpret.h"

void cli_usage_ctl(FILE *f)
{
	fputs("usage: heaptap ctl PID sample BYTES|off\n"
	      "\n"
	      "Change the heaptap attach session on process PID while it runs, without\n"
	      "attaching again:\n"
	      "  sample BYTES   sample one allocation per BYTES allocated on average\n"
	      "                 (e.g. 512K, 1M; suffixes K, M, G)\n"
	      "  sample off     record every allocation (full tracing)\n"
	      "\n"
	      "Exit status: 0 the session took it; 1 no session on PID, or it refused;\n"
	      "2 bad usage. See heaptap-ctl(1).\n",
	      f);
}

int cli_cmd_ctl(int argc, char **argv)
{
	struct cli_ctl_holder h;
	char line[64], reply[256], who[256], b[32];
	uint64_t rate, got;
	char err[128];
	pid_t pid;
	int ret;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		cli_usage_ctl(stdout);
		return CLI_EXIT_OK;
	}
	if (argc != 4 || strcmp(argv[2], "sample")) {
		cli_msg("ctl: expected PID sample BYTES|off (see heaptap ctl --help)");
		return CLI_EXIT_USAGE;
	}
	if (cli_parse_pid(argv[1], &pid, err, sizeof(err)) < 0) {
		cli_msg("ctl: %s (see heaptap ctl --help)", err);
		return CLI_EXIT_USAGE;
	}
	if (cli_ctl_parse_rate(argv[3], &rate) < 0) {
		cli_msg("ctl: sample '%s': not off or a byte count from 1 to 1G (suffixes K, M, G)",
			argv[3]);
		return CLI_EXIT_USAGE;
	}
	snprintf(line, sizeof(line), "sample %" PRIu64 "\n", rate);
	ret = cli_ctl_request(pid, line, reply, sizeof(reply), &h);
	if (ret == -ENOENT || ret == -ESRCH) {
		cli_msg("ctl %d: no heaptap attach session on it", (int)pid);
		return CLI_EXIT_FAIL;
	}
	if (ret == -EPERM) {
		cli_ctl_describe(&h, who, sizeof(who));
		cli_msg("ctl %d: its session name is %s; nothing was changed", (int)pid, who);
		return CLI_EXIT_FAIL;
	}
	if (ret < 0) {
		cli_ctl_describe(&h, who, sizeof(who));
		cli_msg("ctl %d: %s holds the session but did not answer: %s", (int)pid, who,
			strerror(-ret));
		return CLI_EXIT_FAIL;
	}
	if (sscanf(reply, "sample ok %" SCNu64, &got) == 1 && got == rate) {
		if (rate)
			cli_msg("ctl %d: sampling one allocation per %s bytes on average", (int)pid,
				cli_format_bytes(rate, b, sizeof(b)));
		else
			cli_msg("ctl %d: recording every allocation (full tracing)", (int)pid);
		return CLI_EXIT_OK;
	}
	if (!strncmp(reply, "sample error ", 13)) {
		cli_msg("ctl %d: the session refused: %.200s", (int)pid, reply + 13);
		return CLI_EXIT_FAIL;
	}
	cli_msg("ctl %d: unexpected answer from the session (an older heaptap?): %.100s", (int)pid, reply);
	return CLI_EXIT_FAIL;
}
