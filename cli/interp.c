/* cli/interp.c - run the interpreter into the recording a command names or the first free default name */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

int cli_interpret(int conn, struct itp_options *opt, const char *opt_out, const char *cmd,
		  const char *comm, pid_t pid, char *out, size_t outlen, struct itp_result *res)
{
	struct cli_status status;
	unsigned attempt = 0;
	int ret;

	if (opt->snapshot && !opt_out) {
		/* snapshots only (attach --snapshot-every without -o): no recording, no name */
		out[0] = '\0';
		opt->output = NULL;
		memset(res, 0, sizeof(*res));
		cli_status_begin(&status, opt);
		ret = itp_run(conn, opt, res);
		cli_status_end(&status, opt, &res->final);
		return ret;
	}
	for (;;) {
		if (opt_out) {
			snprintf(out, outlen, "%s", opt_out);
		} else {
			ret = cli_outname_free(NULL, comm, (uint32_t)pid, CLI_EXT, attempt, &attempt,
					       out, outlen);
			if (ret < 0) {
				cli_msg("%s: choose an output name: %s", cmd, strerror(-ret));
				return CLI_NO_NAME;
			}
		}
		opt->output = out;
		memset(res, 0, sizeof(*res));
		cli_status_begin(&status, opt);
		ret = itp_run(conn, opt, res);
		/* no final line when the recording could not even be created */
		cli_status_end(&status, opt,
			       ret == -ITP_E_OUTPUT && !res->final.output_bytes ? NULL : &res->final);
		/* another process took the name between our check and the create */
		if (ret == -ITP_E_OUTPUT && res->rec_error == REC_E_EXISTS && !opt_out) {
			attempt++;
			continue;
		}
		return ret;
	}
}

void cli_input_stats(const char *cmd, const struct itp_input *in)
{
	cli_msg("%s: read %.1f MiB in %llu reads; left in the socket after a read at most %llu KiB "
		"(reader late); read ahead at most %.1f MiB (%.1f MiB of blocks); queue full "
		"%llu times, %.1f ms in all, longest %.1f ms",
		cmd, (double)in->bytes / 1048576.0, (unsigned long long)in->reads,
		(unsigned long long)(in->peak_socket >> 10), (double)in->peak_pending / 1048576.0,
		(double)in->peak_bytes / 1048576.0, (unsigned long long)in->full_waits,
		(double)in->full_ns / 1e6, (double)in->full_max_ns / 1e6);
}
