/* cli/procinfo.c - small facts the commands need before they start: comm, output directory */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/procread.h"

int cli_check_output_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
	} else if (slash == path) {
		snprintf(dir, sizeof(dir), "/");
	} else {
		if ((size_t)(slash - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, (size_t)(slash - path));
		dir[slash - path] = '\0';
	}
	if (access(dir, W_OK | X_OK) < 0)
		return -errno;
	return 0;
}

void cli_read_comm(pid_t pid, const char *fallback, char *buf, size_t len)
{
	const char *base;
	int err = util_proc_read(pid, "comm", buf, len, NULL);

	if (!err || err == -EFBIG) {
		buf[strcspn(buf, "\n")] = '\0';
		if (*buf)
			return;
	}
	base = fallback ? strrchr(fallback, '/') : NULL;
	base = base ? base + 1 : fallback;
	snprintf(buf, len, "%.15s", base && *base ? base : "prog"); /* the kernel keeps 15 characters */
}
