/* attach/rootfs.c - open files of the target's tree without trusting it */
/* SPDX-License-Identifier: MIT */
/*
 * Everything heaptap opens below /proc/PID/root, and every module it opens
 * through /proc/PID/map_files, goes through here. The target's user owns
 * much of that tree and may have put anything there:
 *   - an absolute symlink, which a plain open() of "/proc/PID/root/PATH"
 *     resolves against heaptap's root (the host's files): openat2 with
 *     RESOLVE_IN_ROOT resolves it inside the target's root instead, and
 *     RESOLVE_NO_MAGICLINKS refuses /proc/self/... style links in it;
 *   - a FIFO (open blocks until a writer comes), a device node (opening
 *     one as root may act on it), a huge file: the name is first opened
 *     O_PATH (no open of the file itself, never blocks), its type and size
 *     checked, and only a regular file within ATT_ROOT_MAX_SIZE is then
 *     opened for reading, through our own descriptor (the same inode).
 * Kernels before 5.6 have no openat2: the path is then opened as given,
 * O_PATH and O_NOFOLLOW on the last component (docs/security.md says what
 * that leaves).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/internal.h"
#include "elf/elfr.h"

static long openat2_call(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how;

	memset(&how, 0, sizeof(how));
	how.flags = flags;
	how.resolve = resolve;
	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* An O_PATH descriptor of path below procdir's root, resolved inside that root. */
static int root_path_fd(const char *procdir, const char *path, uint64_t extra_flags,
			uint64_t extra_resolve)
{
	char rootpath[96];
	int rfd, fd, e;

	snprintf(rootpath, sizeof(rootpath), "%s/root", procdir);
	rfd = open(rootpath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	fd = (int)openat2_call(rfd, path, O_PATH | O_CLOEXEC | extra_flags,
			       RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | extra_resolve);
	if (fd < 0 && errno == ENOSYS)
		fd = openat(rfd, path, O_PATH | O_CLOEXEC | O_NOFOLLOW | (int)extra_flags);
	e = errno;
	close(rfd);
	return fd < 0 ? -e : fd;
}

/* Open the regular file behind the O_PATH descriptor pfd for reading (closes pfd). */
static int reopen_regular(int pfd, struct stat *st)
{
	char self[64];
	struct stat b;
	int fd, e;

	if (fstat(pfd, st) < 0) {
		e = errno;
		close(pfd);
		return -e;
	}
	if (!S_ISREG(st->st_mode) || st->st_size > ATT_ROOT_MAX_SIZE) {
		close(pfd);
		return S_ISREG(st->st_mode) ? -EFBIG : -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self,
		  O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* our own descriptor: the inode checked */
	e = errno;
	close(pfd);
	if (fd < 0)
		return -e;
	if (fstat(fd, &b) < 0 || b.st_dev != st->st_dev || b.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int att_root_open(const char *procdir, const char *path, struct stat *st)
{
	struct stat ign;
	int pfd = root_path_fd(procdir, path, 0, 0);

	return pfd < 0 ? pfd : reopen_regular(pfd, st ? st : &ign);
}

int att_root_stat(const char *procdir, const char *path, struct stat *st)
{
	int pfd = root_path_fd(procdir, path, 0, 0), ret = 0;

	if (pfd < 0)
		return pfd;
	if (fstat(pfd, st) < 0)
		ret = -errno;
	close(pfd);
	return ret;
}

int att_open_root_dir(const char *procdir, const char *dir)
{
	int fd = root_path_fd(procdir, dir, O_DIRECTORY, RESOLVE_NO_SYMLINKS);

	return fd == -ELOOP ? -ENOTDIR : fd;
}

int att_open_regular(const char *path, struct stat *st)
{
	struct stat ign;
	int pfd = open(path, O_PATH | O_CLOEXEC);

	if (pfd < 0)
		return -errno;
	return reopen_regular(pfd, st ? st : &ign);
}

struct elfr_file *att_elf_open_fd(int fd)
{
	struct elfr_file *f = NULL;
	char self[64];
	int e;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (elfr_file_open(self, &f) != ELFR_OK)
		f = NULL;
	e = errno;
	close(fd);
	errno = e;
	return f;
}

int att_dir_is_mine(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	/* another user's directory put under the name we just made: not ours to fill */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EEXIST;
	return 0;
}
