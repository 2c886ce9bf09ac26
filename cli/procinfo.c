/* cli/procinfo.c - small facts the commands need before they start: comm, output directory */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

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
	char path[64];
	const char *base;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, (int)len, f)) {
			buf[strcspn(buf, "\n")] = '\0';
			fclose(f);
			if (*buf)
				return;
		} else {
			fclose(f);
		}
	}
	base = fallback ? strrchr(fallback, '/') : NULL;
	base = base ? base + 1 : fallback;
	snprintf(buf, len, "%.15s", base && *base ? base : "prog"); /* the kernel keeps 15 characters */
}
