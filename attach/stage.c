/* attach/stage.c - make the library, and what it needs, visible inside the target's root */
/* SPDX-License-Identifier: MIT */
/*
 * dlopen runs in the target and resolves the path, and the library's
 * DT_NEEDED names, in the target's root and mount namespace. The library
 * is used as is when /proc/PID/root/<lib> is the same file (dev, inode) as
 * <lib> for us and every library it needs (att_deps_find) that is not part
 * of glibc is there too, under the path this host has it at, with the same
 * bytes. Otherwise the library and each dependency the target lacks are
 * copied into a fresh 0700 directory heaptap-XXXXXX, heaptap's while it
 * fills it and then handed to the target's user (through its descriptor),
 * in the target's /tmp or, when that is read-only or mounted noexec,
 * its /dev/shm; the library's DT_RPATH $ORIGIN (inject/CMakeLists.txt)
 * makes the target's loader take the copies from there. Everything is
 * removed once dlopen has mapped it (docs/design.md "Leave no file behind").
 *
 * glibc's own libraries (libm.so.6, ...) are never copied: they must match
 * the target's libc. The target must have them, which is checked here; the
 * GLIBC_* versions the copied libraries need from libc.so.6 are checked
 * against the target's libc, like the library's own (attach/inject.c).
 *
 * The directory is made and emptied through descriptors opened with
 * O_NOFOLLOW at every step below /proc/PID/root (as cli/attach_session.c
 * does), and every file of the target's tree is looked at through
 * rootfs.c: the target's tree is not ours, and an absolute symlink in it
 * would resolve in our root. Both descriptors stay open until att_unstage,
 * the directory flock'ed meanwhile: a heaptap killed before att_unstage
 * leaves it unlocked, and the next attach there removes it (att_sweep).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "attach/internal.h"
#include "elf/elfr.h"

/* Where the target's loader looks for glibc's libraries besides its libc's directory. */
static const char *const target_lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

/* Copy the host file from into dirfd/name (a new file, mode 0500, the target's ids). Returns 0 or -errno. */
static int copy_file(const char *from, int dirfd, const char *name, uid_t uid, gid_t gid)
{
	char buf[65536];
	ssize_t n, w, off;
	int in, out, ret = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0500);
	if (out < 0) {
		ret = -errno;
		goto out_in;
	}
	for (;;) {
		n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				ret = -errno;
			break;
		}
		for (off = 0; off < n; off += w) {
			w = write(out, buf + off, (size_t)(n - off));
			if (w < 0) {
				ret = -errno;
				goto out_out;
			}
		}
	}
	/* not root: the file stays ours, which a process of our own uid still reads */
	if (!ret && fchown(out, uid, gid) < 0 && !(errno == EPERM && getuid() == uid))
		ret = -errno;
out_out:
	if (close(out) < 0 && !ret)
		ret = -errno;
	if (ret)
		unlinkat(dirfd, name, 0);
out_in:
	close(in);
	return ret;
}

/*
 * Whether the host file host and the file at path in the process's root are
 * the same file or hold the same bytes. The process's side is opened with
 * att_root_open: a FIFO, a device or a symlink out of its root is "not the
 * same" (and then copied in), never opened.
 */
static bool same_content(const struct att_ctx *ctx, const char *host, const char *path)
{
	char ba[16384], bb[16384];
	struct stat sa, sb;
	bool same = false;
	ssize_t n, m;
	int fa, fb;

	fa = open(host, O_RDONLY | O_CLOEXEC);
	if (fa < 0)
		return false;
	fb = att_root_open(ctx->procdir, path, &sb);
	if (fb < 0)
		goto out_a;
	if (fstat(fa, &sa) < 0)
		goto out_b;
	if (sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino) {
		same = true;
		goto out_b;
	}
	if (sa.st_size != sb.st_size)
		goto out_b;
	for (;;) {
		n = read(fa, ba, sizeof(ba));
		if (n <= 0) {
			same = n == 0 && read(fb, bb, 1) == 0;
			break;
		}
		for (m = 0; m < n;) {
			ssize_t r = read(fb, bb + m, (size_t)(n - m));

			if (r <= 0)
				goto out_b;
			m += r;
		}
		if (memcmp(ba, bb, (size_t)n))
			break;
	}
out_b:
	close(fb);
out_a:
	close(fa);
	return same;
}

/* Whether the target's root has a regular file named name in dir (a path inside the target). */
static bool target_has(const struct att_ctx *ctx, const char *dir, size_t dlen, const char *name)
{
	char path[PATH_MAX + 128];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%.*s/%s", (int)dlen, dir, name) >= sizeof(path))
		return false;
	return att_root_stat(ctx->procdir, path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Every part of glibc the closure needs is in the target's root; else ATT_E_STAGE naming it. */
static enum att_reason check_libc_parts(struct att_ctx *ctx, const char *libname, const struct att_deps *d)
{
	const char *slash = strrchr(ctx->libc_path, '/');
	size_t i, k;

	if (!ctx->libc_path[0] || !slash)
		return ATT_OK;	/* no libc seen: dlopen says what is missing */
	for (i = 0; i < d->n; i++) {
		const char *n = d->v[i].name;
		bool found;

		/* the loader itself and libc are mapped in the process */
		if (!d->v[i].libc_part || !strcmp(n, "libc.so.6") || !strncmp(n, "ld-linux", 8))
			continue;
		found = target_has(ctx, ctx->libc_path, (size_t)(slash - ctx->libc_path), n);
		for (k = 0; !found && k < sizeof(target_lib_dirs) / sizeof(target_lib_dirs[0]); k++)
			found = target_has(ctx, target_lib_dirs[k], strlen(target_lib_dirs[k]), n);
		if (!found)
			return att_fail(ctx, ATT_E_STAGE, 0,
					"%s needs %s of the process's C library, which is not in the process's root "
					"(neither beside its libc.so.6 nor in /lib, /usr/lib and their "
					"x86_64-linux-gnu and 64 directories); a part of glibc is never copied in: "
					"it must be the process's own",
					libname, n);
	}
	return ATT_OK;
}

/* The GLIBC_* versions a copied dependency needs from libc.so.6, against the target's libc. */
static enum att_reason check_dep_versions(struct att_ctx *ctx, const struct att_deps *d, const bool *copy)
{
	char missing[64], newest[64];
	struct elfr_file *f;
	size_t i;

	if (!ctx->libc)
		return ATT_OK;	/* musl or no version sections: nothing to compare */
	for (i = 0; i < d->n; i++) {
		if (!copy[i] || elfr_file_open(d->v[i].host, &f) != ELFR_OK)
			continue;
		if (elfr_file_version_missing(f, "libc.so.6", ctx->libc, missing, sizeof(missing), newest,
					      sizeof(newest)) != ELFR_OK)
			missing[0] = '\0';
		elfr_file_close(f);
		if (missing[0])
			return att_fail(ctx, ATT_E_LIBC_VERSION, 0,
					"%s (which the library needs and the process's root lacks) needs %s, %s "
					"defines up to %s",
					d->v[i].host, missing, ctx->libc_path, newest[0] ? newest : "none");
	}
	return ATT_OK;
}

/*
 * Make heaptap-XXXXXX (0700, ours until filled) in the target's /tmp, else
 * its /dev/shm; a read-only or noexec mount is passed over (the loader
 * cannot map code from noexec). Fills ctx's stage fields and the
 * directory's path inside the target; why gets each place's reason
 * otherwise. Returns 0 or -1.
 */
static int make_stage_dir(struct att_ctx *ctx, char *tdir, size_t cap, char *why, size_t wcap)
{
	static const char *const places[] = { "tmp", "dev/shm" };
	char tmpl[64];
	struct statvfs sv;
	size_t i, used = 0;
	const char *r;
	int pfd, fd, e;

	why[0] = '\0';
	for (i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		r = NULL;
		pfd = att_open_root_dir(ctx->procdir, places[i]);
		if (pfd < 0) {
			r = strerror(-pfd);
		} else if (fstatvfs(pfd, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
			r = "read-only";
		} else if (fstatvfs(pfd, &sv) == 0 && (sv.f_flag & ST_NOEXEC)) {
			r = "mounted noexec";
		} else {
			snprintf(tmpl, sizeof(tmpl), "/proc/self/fd/%d/heaptap-XXXXXX", pfd);
			if (!mkdtemp(tmpl)) {
				r = strerror(errno);
			} else {
				const char *name = strrchr(tmpl, '/') + 1;

				/* ours and 0700 until filled (att_stage hands it
				 * over); locked while we live (sweep.c) */
				fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				e = errno;
				if (fd >= 0 && (att_dir_is_mine(fd) < 0 || fchmod(fd, 0700) < 0 ||
						flock(fd, LOCK_EX | LOCK_NB) < 0)) {
					e = errno;
					close(fd);
					fd = -1;
				}
				if (fd < 0) {
					unlinkat(pfd, name, AT_REMOVEDIR);
					r = strerror(e);
				} else {
					ctx->stage_fd = fd;
					ctx->stage_parent_fd = pfd;
					ctx->stage_fds = true;
					snprintf(ctx->stage_dir, sizeof(ctx->stage_dir), "%s/root/%s/%s",
						 ctx->procdir, places[i], name);
					snprintf(tdir, cap, "/%s/%s", places[i], name);
					return 0;
				}
			}
		}
		if (pfd >= 0)
			close(pfd);
		used += (size_t)snprintf(why + used, wcap - used, "%s/%s: %s", used ? "; " : "", places[i], r);
		if (used >= wcap)
			used = wcap - 1;
	}
	return -1;
}

/* "a, b, c" of the names to copy (the library's own base name first when it is copied for itself). */
static void name_list(char *buf, size_t cap, const char *libname, bool lib_too, const struct att_deps *d,
		      const bool *copy)
{
	size_t used = 0, i;

	buf[0] = '\0';
	if (lib_too)
		used = (size_t)snprintf(buf, cap, "%s", libname);
	for (i = 0; i < d->n && used < cap; i++)
		if (copy[i])
			used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", d->v[i].name);
}

enum att_reason att_stage(struct att_ctx *ctx, const char *lib, char *tpath, size_t cap, int *staged)
{
	char base_buf[PATH_MAX], tdir[64], why[256], names[512];
	bool copy[ATT_MAX_DEPS] = { false }, lib_visible, any = false;
	struct att_deps *d;
	struct stat ours, theirs;
	const char *libname;
	enum att_reason ret;
	size_t i;
	int r;

	*staged = 0;
	if (lib[0] != '/')
		return att_fail(ctx, ATT_E_STAGE, EINVAL, "library path %s is not absolute", lib);
	if (stat(lib, &ours) < 0)
		return att_fail(ctx, ATT_E_STAGE, errno, "%s", lib);
	snprintf(base_buf, sizeof(base_buf), "%s", lib);
	libname = basename(base_buf);
	d = calloc(1, sizeof(*d));
	if (!d)
		return att_fail(ctx, ATT_E_NOMEM, ENOMEM, "staging");
	/*
	 * Not ELF or unreadable: nothing to add; dlopen says what is wrong
	 * with it. More than ATT_MAX_DEPS names: the first ones are handled.
	 */
	r = att_deps_find(lib, d);
	if (r < 0 && r != -E2BIG)
		d->n = 0;
	ret = check_libc_parts(ctx, libname, d);
	if (ret)
		goto out;

	lib_visible = att_root_stat(ctx->procdir, lib, &theirs) == 0 && S_ISREG(theirs.st_mode) &&
		      theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
	for (i = 0; i < d->n; i++) {
		if (d->v[i].libc_part || !d->v[i].host[0])
			continue;	/* the process's own, or this host has none to give */
		copy[i] = !same_content(ctx, d->v[i].host, d->v[i].host);
		any |= copy[i];
	}
	if (lib_visible && !any) {
		ret = ATT_OK;
		if ((size_t)snprintf(tpath, cap, "%s", lib) >= cap)
			ret = att_fail(ctx, ATT_E_STAGE, ENAMETOOLONG, "%s", lib);
		goto out;
	}
	ret = check_dep_versions(ctx, d, copy);
	if (ret)
		goto out;

	if (make_stage_dir(ctx, tdir, sizeof(tdir), why, sizeof(why)) < 0) {
		name_list(names, sizeof(names), libname, !any, d, copy);
		if (any)
			ret = att_fail(ctx, ATT_E_STAGE, 0,
				       "the process's root lacks %s, which %s needs, and has no place to copy "
				       "them to (%s)", names, libname, why);
		else
			ret = att_fail(ctx, ATT_E_STAGE, 0,
				       "the process cannot see %s and has no place to copy it to (%s)", libname, why);
		goto out;
	}
	ret = ATT_E_STAGE;
	if ((size_t)snprintf(ctx->stage_file, sizeof(ctx->stage_file), "%s/%s", ctx->stage_dir, libname) >=
		    sizeof(ctx->stage_file) ||
	    (size_t)snprintf(tpath, cap, "%s/%s", tdir, libname) >= cap) {
		att_fail(ctx, ret, ENAMETOOLONG, "%s", lib);
		goto out_unstage;
	}
	r = copy_file(lib, ctx->stage_fd, libname, ctx->uid, ctx->gid);
	if (r) {
		att_fail(ctx, ret, -r, "copy %s to %s", lib, ctx->stage_dir);
		goto out_unstage;
	}
	for (i = 0; i < d->n; i++) {
		if (!copy[i])
			continue;
		r = copy_file(d->v[i].host, ctx->stage_fd, d->v[i].name, ctx->uid, ctx->gid);
		if (r) {
			att_fail(ctx, ret, -r, "copy %s to %s", d->v[i].host, ctx->stage_dir);
			goto out_unstage;
		}
	}
	/* filled: now the target's user may enter it (the loader runs as that user) */
	if (fchown(ctx->stage_fd, ctx->uid, ctx->gid) < 0 && !(errno == EPERM && getuid() == ctx->uid)) {
		att_fail(ctx, ret, errno, "hand %s over to uid %u", ctx->stage_dir, (unsigned)ctx->uid);
		goto out_unstage;
	}
	*staged = 1;
	if (att_fault(ctx, ATT_F_STAGE)) {
		ret = ATT_E_FAULT;
		goto out_unstage;
	}
	ret = ATT_OK;
	goto out;
out_unstage:
	*staged = 0;
	att_unstage(ctx);
out:
	free(d);
	return ret;
}

void att_unstage(struct att_ctx *ctx)
{
	struct stat a, b;
	struct dirent *de;
	const char *name;
	DIR *dir;
	int fd;

	if (ctx->stage_fds) {
		/*
		 * Empty the directory through its descriptor (whatever its
		 * path has become), then remove it from its parent if the
		 * name there is still that directory.
		 */
		fd = dup(ctx->stage_fd);
		dir = fd >= 0 ? fdopendir(fd) : NULL;
		if (!dir && fd >= 0)
			close(fd);
		while (dir && (de = readdir(dir))) {
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(ctx->stage_fd, de->d_name, 0);
		}
		if (dir)
			closedir(dir);
		name = strrchr(ctx->stage_dir, '/');
		if (name && fstat(ctx->stage_fd, &a) == 0 &&
		    fstatat(ctx->stage_parent_fd, name + 1, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			unlinkat(ctx->stage_parent_fd, name + 1, AT_REMOVEDIR);
		close(ctx->stage_fd);
		close(ctx->stage_parent_fd);
		ctx->stage_fds = false;
	}
	ctx->stage_file[0] = '\0';
	ctx->stage_dir[0] = '\0';
}
