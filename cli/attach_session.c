/* cli/attach_session.c - the session directory and socket of heaptap attach, inside the target's /tmp */
/* SPDX-License-Identifier: MIT */
/*
 * docs/design.md "Leave no file behind": a private 0700 directory reachable from the target's
 * mount namespace, owned by the target's user, holding the listening
 * socket, removed on every path.
 *
 * The directory is always made in the target's own /tmp, reached through
 * /proc/PID/root/tmp: that is the target's /tmp whether or not it shares
 * our mount namespace or root, so the path the target is given is simply
 * "/tmp/heaptap-XXXXXX/sock". Everything after the first lookup goes
 * through directory descriptors (mkdirat, fchownat, unlinkat, and bind via
 * /proc/self/fd/N/sock), so:
 *   - an absolute symlink inside the target's tree is never followed into
 *     ours (O_NOFOLLOW on every component we open ourselves), and
 *   - the directory is still removed if the target exits (or its pid is
 *     reused) during the session: our descriptors keep it reachable.
 * When the target's /tmp is missing or read-only, its /dev/shm is tried.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach/attach.h"
#include "cli/cli.h"
#include "util/procids.h"

#define POLL_MS 50
#define NAME_TRIES 100

/*
 * Make heaptap-XXXXXX under parent_fd: 0700 and ours (checked through the
 * descriptor: in a parent the target's user owns, the name may have been
 * swapped), flock'ed while we live (attach/sweep.c). Returns its fd
 * (O_RDONLY) or -errno.
 */
static int make_dir(int parent_fd, char *name, size_t len)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[6];
	int i, k, fd, e;

	for (i = 0; i < NAME_TRIES; i++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			for (k = 0; k < 6; k++)
				rnd[k] = (unsigned char)((unsigned long)ts.tv_nsec >> (k * 5) ^ (unsigned)getpid() ^ (unsigned)i);
		}
		snprintf(name, len, "heaptap-");
		for (k = 0; k < 6; k++)
			name[8 + k] = alphabet[rnd[k] % (sizeof(alphabet) - 1)];
		name[14] = '\0';
		if (mkdirat(parent_fd, name, 0700) < 0) {
			if (errno == EEXIST)
				continue;
			return -errno;
		}
		fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		e = fd < 0 ? -errno : att_dir_is_mine(fd);
		if (e == 0 && (fchmod(fd, 0700) < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0))
			e = -errno;
		if (e < 0) {
			if (fd >= 0)
				close(fd);
			return e;	/* a name swapped under us is not ours to remove */
		}
		return fd;
	}
	return -EEXIST;
}

/* The entry name under dirfd is still the file st describes (not swapped). */
static bool still(int dirfd, const char *name, const struct stat *st)
{
	struct stat now;

	return fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st->st_dev &&
	       now.st_ino == st->st_ino;
}

/*
 * The socket we bound, 0600 and the target's: through an O_PATH descriptor
 * of it (a path is never walked again), while the directory is still ours
 * and 0700, so nobody else can have put anything there.
 */
static int own_socket(struct cli_attach_dir *d, uid_t uid, gid_t gid)
{
	char self[64];

	d->sock_fd = openat(d->dir_fd, "sock", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (d->sock_fd < 0)
		return -errno;
	if (fstat(d->sock_fd, &d->sock_st) < 0)
		return -errno;
	if (!S_ISSOCK(d->sock_st.st_mode))
		return -EEXIST;
	/* chmod of the inode our descriptor holds (the umask may have taken bits away) */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", d->sock_fd);
	if (chmod(self, 0600) < 0)
		return -errno;
	if (fchownat(d->sock_fd, "", uid, gid, AT_EMPTY_PATH) < 0 && !(errno == EPERM && getuid() == uid))
		return -errno;
	return 0;
}

/*
 * Hand the directory to the target's user (through its descriptor), then
 * check that neither its name nor its socket's was swapped meanwhile: the
 * target's user may do anything in it from now on, and its path is what
 * the target is told. A swap is refused, naming whose it is.
 */
static int hand_over(struct cli_attach_dir *d, uid_t uid, gid_t gid)
{
	struct stat now;
	bool dir;

	if (fchown(d->dir_fd, uid, gid) < 0 && !(errno == EPERM && getuid() == uid))
		return -errno;
	att_hang_env(ATT_HANG_SESSION_OWNED);
	dir = !still(d->parent_fd, d->name, &d->dir_st);
	if (!dir && still(d->dir_fd, "sock", &d->sock_st))
		return 0;
	if (fstatat(dir ? d->parent_fd : d->dir_fd, dir ? d->name : "sock", &now, AT_SYMLINK_NOFOLLOW) < 0)
		snprintf(d->why, sizeof(d->why), "the session %s was removed", dir ? "directory" : "socket");
	else
		snprintf(d->why, sizeof(d->why), "the session %s was replaced by a %s of uid %ld before the "
			 "process was told its path: not trusted",
			 dir ? "directory" : "socket", S_ISLNK(now.st_mode) ? "symlink" : "file",
			 (long)now.st_uid);
	return -EEXIST;
}

/* Create the directory and the socket below parent_fd; fills d. */
static int open_in(struct cli_attach_dir *d, int parent_fd, const char *where, uid_t uid, gid_t gid)
{
	struct sockaddr_un addr;
	char bindpath[64];
	int n, ret;

	d->dir_fd = make_dir(parent_fd, d->name, sizeof(d->name));
	if (d->dir_fd < 0) {
		ret = d->dir_fd;
		d->dir_fd = -1;
		return ret;
	}
	d->parent_fd = parent_fd;
	if (fstat(d->dir_fd, &d->dir_st) < 0) {
		ret = -errno;
		goto out_rmdir;
	}
	n = snprintf(d->target_sock, sizeof(d->target_sock), "/%s/%s/sock", where, d->name);
	if (n < 0 || (size_t)n >= sizeof(d->target_sock)) {
		ret = -ENAMETOOLONG;
		goto out_rmdir;
	}
	/* bind through our descriptor: the directory we made, not a path walked again */
	snprintf(bindpath, sizeof(bindpath), "/proc/self/fd/%d/sock", d->dir_fd);
	d->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->listen_fd < 0) {
		ret = -errno;
		goto out_rmdir;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, bindpath, strlen(bindpath) + 1);
	if (bind(d->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		ret = -errno;
		goto out_close;
	}
	d->bound = 1;
	ret = own_socket(d, uid, gid);
	if (ret < 0)
		goto out_unlink;
	att_hang_env(ATT_HANG_SESSION_BOUND);
	if (listen(d->listen_fd, 4) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	ret = hand_over(d, uid, gid);
	if (ret < 0)
		goto out_unlink;
	return 0;

out_unlink:
	if (d->sock_fd >= 0 && still(d->dir_fd, "sock", &d->sock_st))
		unlinkat(d->dir_fd, "sock", 0);
	d->bound = 0;
out_close:
	close(d->listen_fd);
	d->listen_fd = -1;
out_rmdir:
	if (d->sock_fd >= 0)
		close(d->sock_fd);
	d->sock_fd = -1;
	if (still(parent_fd, d->name, &d->dir_st))
		unlinkat(parent_fd, d->name, AT_REMOVEDIR);
	close(d->dir_fd);
	d->dir_fd = -1;
	d->name[0] = '\0';
	d->target_sock[0] = '\0';
	d->parent_fd = -1;
	return ret;
}

int cli_attach_dir_open(struct cli_attach_dir *d, pid_t pid)
{
	static const char *const where[] = { "tmp", "dev/shm" };
	struct util_ids ids;
	char procdir[32];
	uid_t uid;
	gid_t gid;
	int ret, first = 0;
	size_t i;

	snprintf(procdir, sizeof(procdir), "/proc/%d", (int)pid);
	memset(d, 0, sizeof(*d));
	d->parent_fd = d->dir_fd = d->listen_fd = d->sock_fd = -1;
	/* the ids it creates files with: the filesystem ones */
	ret = util_ids_read(pid, &ids);
	if (ret < 0)
		return ret;
	uid = ids.uid[UTIL_ID_FS];
	gid = ids.gid[UTIL_ID_FS];
	/* what a killed heaptap left there (attach/sweep.c) */
	att_sweep(procdir, uid);
	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		int pfd = att_open_root_dir(procdir, where[i]);

		if (pfd >= 0) {
			ret = open_in(d, pfd, where[i], uid, gid);
			if (ret == 0) {
				snprintf(d->where, sizeof(d->where), "/%s", where[i]);
				return 0;
			}
			close(pfd);
		} else {
			ret = pfd;
		}
		if (!first)
			first = ret; /* the /tmp error is the one worth telling */
		if ((ret != -EROFS && ret != -ENOENT && ret != -ENOTDIR && ret != -EACCES) || d->why[0])
			break;
	}
	return first;
}

int cli_attach_dir_accept(struct cli_attach_dir *d, pid_t pid, unsigned timeout_ms, int *conn)
{
	struct timespec t0, t;
	long waited;

	*conn = -1;
	if (d->listen_fd < 0)
		return -EBADF;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = d->listen_fd, .events = POLLIN };
		int r = poll(&pfd, 1, POLL_MS);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0) {
			struct ucred cred;
			socklen_t clen = sizeof(cred);
			int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd < 0) {
				if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
					return -errno;
			} else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
				   cred.pid == pid) {
				*conn = fd;
				return 0;
			} else {
				/* someone else of the target's user found the socket */
				close(fd);
			}
		}
		if (d->cancel)
			return -ECANCELED;
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return -ESRCH;
		clock_gettime(CLOCK_MONOTONIC, &t);
		waited = (t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L;
		if (waited >= (long)timeout_ms)
			return -ETIMEDOUT;
	}
}

void cli_attach_dir_close(struct cli_attach_dir *d)
{
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		d->listen_fd = -1;
	}
	/* only what is still ours: a name the target's user swapped is left alone */
	if (d->dir_fd >= 0) {
		if (d->bound && d->sock_fd >= 0 && still(d->dir_fd, "sock", &d->sock_st))
			unlinkat(d->dir_fd, "sock", 0);
		d->bound = 0;
	}
	if (d->sock_fd >= 0) {
		close(d->sock_fd);
		d->sock_fd = -1;
	}
	if (d->parent_fd >= 0) {
		if (d->name[0] && d->dir_fd >= 0 && still(d->parent_fd, d->name, &d->dir_st))
			unlinkat(d->parent_fd, d->name, AT_REMOVEDIR);
		close(d->parent_fd);
		d->parent_fd = -1;
	}
	if (d->dir_fd >= 0) {
		close(d->dir_fd);
		d->dir_fd = -1;
	}
	d->name[0] = '\0';
}
