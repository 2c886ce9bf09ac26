/* util/procids.h - the user and group ids of a process, from /proc/PID/status */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_UTIL_PROCIDS_H
#define HEAPTAP_UTIL_PROCIDS_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/procread.h"

/*
 * The one reader of the Uid: and Gid: lines of a status file, for every
 * folder (attach/, cli/, jvm/, interpret/: interpret/ does not link
 * attach/, hence here). The file belongs to the target, whose comm is
 * part of it: it is read as hostile input. At most UTIL_IDS_READ bytes
 * are read (the two lines come within the first few hundred: Name,
 * Umask, State, Tgid, Ngid, Pid, PPid, TracerPid, Uid, Gid; the Groups
 * line after them may be long), and a line is taken only whole and only
 * as the kernel writes it: "Uid:" at the start of a line, four decimal
 * numbers below 2^32 - 1 (that is (uid_t)-1, never an id) separated by
 * tabs or spaces, then the newline. Each of the two lines exactly once.
 */

/* Which of the four ids: the order of the kernel's lines. */
enum util_id_which { UTIL_ID_REAL, UTIL_ID_EFFECTIVE, UTIL_ID_SAVED, UTIL_ID_FS, UTIL_ID_N };

struct util_ids {
	uid_t uid[UTIL_ID_N];
	gid_t gid[UTIL_ID_N];
};

#define UTIL_IDS_READ 4096

/* one "Key:" line's four numbers at p (just after the colon) up to its newline; 0 or -EINVAL */
static inline int util_ids_line(const char *p, const char *end, uint32_t out[UTIL_ID_N])
{
	for (int i = 0; i < UTIL_ID_N; i++) {
		uint64_t v = 0;
		const char *d;

		if (p == end || (*p != '\t' && *p != ' '))
			return -EINVAL;
		while (p < end && (*p == '\t' || *p == ' '))
			p++;
		for (d = p; p < end && *p >= '0' && *p <= '9'; p++) {
			v = v * 10 + (uint64_t)(*p - '0');
			if (v >= UINT32_MAX)
				return -EINVAL; /* (uid_t)-1 or past 32 bits */
		}
		if (p == d)
			return -EINVAL;
		out[i] = (uint32_t)v;
	}
	while (p < end && (*p == '\t' || *p == ' '))
		p++;
	return p < end && *p == '\n' ? 0 : -EINVAL;
}

/*
 * util_ids_parse - the four uids and gids of the status text [text, text +
 * len). 0, or -EINVAL when a line is missing, repeated, cut (no newline
 * before len) or not of the kernel's form; *ids is then left alone.
 */
static inline int util_ids_parse(const char *text, size_t len, struct util_ids *ids)
{
	const char *p = text, *end = text + len;
	uint32_t v[2][UTIL_ID_N];
	int have = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		int k = -1;

		if ((size_t)(end - p) > 4 && !memcmp(p, "Uid:", 4))
			k = 0;
		else if ((size_t)(end - p) > 4 && !memcmp(p, "Gid:", 4))
			k = 1;
		if (k >= 0) {
			if ((have & (1 << k)) || !nl || util_ids_line(p + 4, nl + 1, v[k]) < 0)
				return -EINVAL;
			have |= 1 << k;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (have != 3)
		return -EINVAL;
	for (int i = 0; i < UTIL_ID_N; i++) {
		ids->uid[i] = (uid_t)v[0][i];
		ids->gid[i] = (gid_t)v[1][i];
	}
	return 0;
}

/*
 * util_ids_read_file - the ids in status file path: its first UTIL_IDS_READ
 * bytes through util_ids_parse. 0, -errno of open or read, or -EINVAL
 * (see util_ids_parse).
 */
static inline int util_ids_read_file(const char *path, struct util_ids *ids)
{
	char buf[UTIL_IDS_READ + 1];
	size_t len;
	int err = util_read_file(path, buf, sizeof(buf), &len);

	return err && err != -EFBIG ? err : util_ids_parse(buf, len, ids);
}

/* util_ids_read - the ids of process pid (/proc/PID/status; -ENOENT: no such process). */
static inline int util_ids_read(pid_t pid, struct util_ids *ids)
{
	char path[40];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return util_ids_read_file(path, ids);
}

#endif /* HEAPTAP_UTIL_PROCIDS_H */
