/* cli/outname.c - default output names: heaptap.COMM.PID[.N].EXT, never an existing file */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

#define MAX_ATTEMPTS 10000

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '+' || c == '-';
}

int cli_outname(const char *dir, const char *comm, uint32_t pid, const char *ext, unsigned attempt,
		char *buf, size_t len)
{
	char safe[64];
	size_t i;
	int n;

	if (!comm || !*comm)
		comm = "prog";
	for (i = 0; comm[i] && i < sizeof(safe) - 1; i++)
		safe[i] = name_char(comm[i]) ? comm[i] : '_';
	safe[i] = '\0';
	/* "." and ".." would make odd names like heaptap....1.htap; fine, but
	 * a leading dot of comm is kept as is: the name starts with "heaptap.". */
	if (attempt)
		n = snprintf(buf, len, "%s%sheaptap.%s.%u.%u.%s", dir ? dir : "", dir ? "/" : "", safe,
			     pid, attempt, ext);
	else
		n = snprintf(buf, len, "%s%sheaptap.%s.%u.%s", dir ? dir : "", dir ? "/" : "", safe,
			     pid, ext);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int cli_outname_free(const char *dir, const char *comm, uint32_t pid, const char *ext,
		     unsigned from, unsigned *attempt, char *buf, size_t len)
{
	unsigned a;

	for (a = from; a < from + MAX_ATTEMPTS; a++) {
		struct stat st;
		int ret = cli_outname(dir, comm, pid, ext, a, buf, len);

		if (ret < 0)
			return ret;
		/* lstat: a dangling symlink is a name taken too */
		if (lstat(buf, &st) == 0)
			continue;
		if (errno != ENOENT)
			return -errno;
		*attempt = a;
		return 0;
	}
	return -EEXIST;
}
