/* cli/sym_args.c - the symbolization and budget options: --max-memory, --debuginfod, the child's user */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "interpret/interpret.h"

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

/* the effective uid and gid of pid (/proc/PID/status); 0 or -errno */
static int target_ids(pid_t pid, uint32_t *uid, uint32_t *gid)
{
	char path[64], line[256];
	unsigned r, e;
	int have = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && have != 3) {
		if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
			*uid = e;
			have |= 1;
		} else if (sscanf(line, "Gid: %u %u", &r, &e) == 2) {
			*gid = e;
			have |= 2;
		}
	}
	fclose(f);
	return have == 3 ? 0 : -EINVAL;
}

int cli_sym_options(struct itp_options *opt, pid_t pid, uint64_t max_memory, int debuginfod)
{
	uint32_t uid = 0, gid = 0;
	int rc;

	opt->pid = (int)pid;
	opt->max_memory = max_memory;
	opt->debuginfod = debuginfod;
	opt->sym_child = 1;
	if (geteuid() != 0)
		return 0;
	/* root reading another user's files: the child becomes that user */
	rc = target_ids(pid, &uid, &gid);
	if (rc < 0)
		return rc;
	if (uid != 0) {
		opt->sym_drop = 1;
		opt->sym_uid = uid;
		opt->sym_gid = gid;
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
