/* util/procread.h - a bounded read of a small file (a /proc file) into a buffer */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_UTIL_PROCREAD_H
#define HEAPTAP_UTIL_PROCREAD_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * The one reader of a small /proc file (stat, statm, status, comm,
 * schedstat, ...) into a caller's buffer, for every folder, the target's
 * side (track/) included: it allocates nothing, takes no lock and calls
 * only open, read and close. A /proc file of another process is hostile
 * input whose length that process decides in part (its comm, its command
 * line): at most cap - 1 bytes are read, whatever the file holds, and the
 * caller hears whether there was more.
 *
 * The file is opened O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY: no
 * descriptor leaks into a child, and a last path component that is a
 * symbolic link is refused (-ELOOP) rather than followed; /proc's own
 * files are never links. Reads that return less than asked, and EINTR,
 * are repeated until end of file or a full buffer.
 */

/*
 * util_read_file - the start of file path into buf[cap]: up to cap - 1
 * bytes, then a NUL after them, always (buf[0] = '\0' on an error). *len
 * (may be NULL): the bytes read, 0 on an error. Returns 0 when the whole
 * file was read; -EFBIG when it holds more than cap - 1 bytes (buf then
 * holds the first cap - 1 of them, NUL-terminated: a caller to whom a
 * prefix serves takes it); -EINVAL when cap is 0 (buf is not touched);
 * -errno of open or read (-ENOENT: no such file, or no such process).
 */
static inline int util_read_file(const char *path, char *buf, size_t cap, size_t *len)
{
	size_t got = 0;
	ssize_t n;
	char more;
	int fd, err = 0;

	if (len)
		*len = 0;
	if (cap == 0)
		return -EINVAL;
	buf[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	while (got < cap - 1) {
		n = read(fd, buf + got, cap - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	/* full: one byte more says whether the file went on */
	while (!err && got == cap - 1) {
		n = read(fd, &more, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		else if (n > 0)
			err = -EFBIG;
		break;
	}
	close(fd);
	if (err && err != -EFBIG)
		got = 0;
	buf[got] = '\0';
	if (len)
		*len = got;
	return err;
}

/*
 * util_proc_read - util_read_file of /proc/PID/NAME (NAME such as "stat",
 * "statm" or "task/TID/stat"); -ENAMETOOLONG when that path does not fit
 * 96 bytes. Not for the target's side, which names /proc/self paths
 * whole and calls util_read_file.
 */
static inline int util_proc_read(pid_t pid, const char *name, char *buf, size_t cap, size_t *len)
{
	char path[96];
	int n = snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);

	if (n < 0 || (size_t)n >= sizeof(path)) {
		if (len)
			*len = 0;
		if (cap)
			buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	return util_read_file(path, buf, cap, len);
}

#endif /* HEAPTAP_UTIL_PROCREAD_H */
