/* cli/sym_args.c - the symbolization and budget options: --max-memory, --debuginfod, the child's user */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "interpret/interpret.h"
#include "util/procids.h"

int cli_parse_max_memory(const char *s, uint64_t *out, char *err, size_t errlen)
{
	uint64_t v;

	if (cli_parse_bytes(s, &v) < 0 || v < CLI_MAX_MEMORY_MIN) {
		snprintf(err, errlen,
			 "--max-memory '%s': not a byte count of at least 64M (suffixes K, M, G)", s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int cli_sym_options(struct itp_options *opt, pid_t pid, uint64_t max_memory, int debuginfod)
{
	struct util_ids ids;
	int rc;

	opt->pid = (int)pid;
	opt->max_memory = max_memory;
	opt->debuginfod = debuginfod;
	opt->sym_child = 1;
	if (geteuid() != 0)
		return 0;
	/* root reading another user's files: the child becomes that user */
	rc = util_ids_read(pid, &ids);
	if (rc < 0)
		return rc;
	if (ids.uid[UTIL_ID_EFFECTIVE] != 0) {
		opt->sym_drop = 1;
		opt->sym_uid = ids.uid[UTIL_ID_EFFECTIVE];
		opt->sym_gid = ids.gid[UTIL_ID_EFFECTIVE];
	}
	return 0;
}

void cli_sym_summary(const char *cmd, const struct itp_result *res)
{
	/* sym_error is heaptap's own text (symchild.c), not the target's */
	if (!res->sym_error[0])
		return;
	cli_msg("%s: warning: %s; %llu addresses were left without names", cmd, res->sym_error,
		(unsigned long long)res->sym_left);
}
