/* attach/sweep.c - remove what a killed heaptap left in a target's /tmp and /dev/shm */
/* SPDX-License-Identifier: MIT */
/*
 * A heaptap that is SIGKILLed at the wrong instant leaves its session
 * directory (cli/attach_session.c) or its staging directory (stage.c) in
 * the target's /tmp or /dev/shm. Both are named heaptap-XXXXXX (six
 * letters or digits) and both are flock'ed by their heaptap for as long as
 * it uses them, so the next attach to a process of that file system
 * removes such a directory when:
 *   - it is a directory (not a symlink) owned by the target's user or by
 *     us (it is ours until handed over),
 *   - it is older than SWEEP_AGE_S (the lock is taken right after mkdir),
 *   - its lock is free: no live heaptap holds it, and nobody listens on a
 *     socket "sock" in it (a heaptap of a version without the lock),
 *   - it holds no directory: only its files are unlinked, through its
 *     descriptor, and it is removed from its parent only if the name still
 *     is that directory.
 * Nothing else in the directory is touched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach/internal.h"

#define SWEEP_AGE_S 2

static bool stale_name(const char *n)
{
	int i;

	if (strncmp(n, "heaptap-", 8) || strlen(n) != 14)
		return false;
	for (i = 8; i < 14; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') ||
		      (n[i] >= '0' && n[i] <= '9')))
			return false;
	return true;
}

/* Whether something listens on dfd/sock. */
static bool has_listener(int dfd)
{
	struct sockaddr_un a;
	struct stat st;
	bool live;
	int s;

	if (fstatat(dfd, "sock", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/sock", dfd);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return true; /* cannot tell: leave it */
	live = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EAGAIN ||
	       errno == EINPROGRESS;
	close(s);
	return live;
}

/* Empty dfd of its non-directory entries; false (nothing removed) when it holds a directory. */
static bool empty_dir(int dfd)
{
	struct dirent *de;
	struct stat st;
	bool ok = true;
	int pass, fd;
	DIR *d;

	for (pass = 0; pass < 2 && ok; pass++) {
		fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d) {
			if (fd >= 0)
				close(fd);
			return false;
		}
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (S_ISDIR(st.st_mode))
				ok = false;
			else if (pass == 1)
				unlinkat(dfd, de->d_name, 0);
		}
		closedir(d);
	}
	return ok;
}

static bool sweep_one(int pfd, const char *name, uid_t uid)
{
	struct stat a, b;
	bool removed = false;
	int dfd;

	if (fstatat(pfd, name, &a, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(a.st_mode) ||
	    (a.st_uid != uid && a.st_uid != geteuid()) || time(NULL) - a.st_ctime < SWEEP_AGE_S)
		return false;
	dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return false;
	if (fstat(dfd, &b) < 0 || b.st_dev != a.st_dev || b.st_ino != a.st_ino ||
	    flock(dfd, LOCK_EX | LOCK_NB) < 0 || has_listener(dfd) || !empty_dir(dfd))
		goto out_close;
	if (fstatat(pfd, name, &a, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		removed = unlinkat(pfd, name, AT_REMOVEDIR) == 0;
out_close:
	close(dfd);
	return removed;
}

int att_sweep(const char *procdir, uid_t uid)
{
	static const char *const places[] = {"tmp", "dev/shm"};
	struct dirent *de;
	size_t i;
	int pfd, fd, n = 0;
	DIR *d;

	for (i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		pfd = att_open_root_dir(procdir, places[i]);
		if (pfd < 0)
			continue;
		fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		d = fd >= 0 ? fdopendir(fd) : NULL;
		if (!d && fd >= 0)
			close(fd);
		while (d && (de = readdir(d)))
			if (stale_name(de->d_name))
				n += sweep_one(pfd, de->d_name, uid);
		if (d)
			closedir(d);
		close(pfd);
	}
	return n;
}
