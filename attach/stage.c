/* attach/stage.c - make the library visible inside the target's mount namespace */
/* SPDX-License-Identifier: MIT */
/*
 * dlopen runs in the target and resolves the path in the target's root and
 * mount namespace. If /proc/PID/root/<path> is the same file as <path> for
 * us, the path is used as is. Otherwise a copy goes into a fresh 0700
 * directory /tmp/heaptap-XXXXXX under the target's root (created through
 * /proc/PID/root), owned by the target's user, and is removed once dlopen
 * has mapped it (DESIGN.md rule 8).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/internal.h"

static int copy_file(const char *from, const char *to, uid_t uid, gid_t gid)
{
	char buf[65536];
	ssize_t n, w, off;
	int in, out, ret = 0;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0500);
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
	if (!ret && fchown(out, uid, gid) < 0)
		ret = -errno;
out_out:
	if (close(out) < 0 && !ret)
		ret = -errno;
	if (ret)
		unlink(to);
out_in:
	close(in);
	return ret;
}

enum att_reason att_stage(struct att_ctx *ctx, const char *lib, char *tpath, size_t cap, int *staged)
{
	char view[PATH_MAX + 128], dir[PATH_MAX], file[PATH_MAX], base_buf[PATH_MAX];
	struct stat ours, theirs;
	size_t rootlen;
	int ret;

	*staged = 0;
	if (lib[0] != '/')
		return att_fail(ctx, ATT_E_STAGE, EINVAL, "library path %s is not absolute", lib);
	if (stat(lib, &ours) < 0)
		return att_fail(ctx, ATT_E_STAGE, errno, "%s", lib);
	snprintf(view, sizeof(view), "%s/root%s", ctx->procdir, lib);
	if (stat(view, &theirs) == 0 && theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino) {
		if ((size_t)snprintf(tpath, cap, "%s", lib) >= cap)
			return att_fail(ctx, ATT_E_STAGE, ENAMETOOLONG, "%s", lib);
		return ATT_OK;
	}
	snprintf(dir, sizeof(dir), "%s/root/tmp/heaptap-XXXXXX", ctx->procdir);
	rootlen = strlen(dir) - strlen("/tmp/heaptap-XXXXXX");
	if (!mkdtemp(dir))
		return att_fail(ctx, ATT_E_STAGE, errno, "mkdtemp in the target's /tmp");
	snprintf(ctx->stage_dir, sizeof(ctx->stage_dir), "%s", dir);
	if (chmod(dir, 0700) < 0 || chown(dir, ctx->uid, ctx->gid) < 0) {
		ret = errno;
		att_unstage(ctx);
		return att_fail(ctx, ATT_E_STAGE, ret, "prepare %s", dir);
	}
	snprintf(base_buf, sizeof(base_buf), "%s", lib);
	if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir, basename(base_buf)) >= sizeof(file)) {
		att_unstage(ctx);
		return att_fail(ctx, ATT_E_STAGE, ENAMETOOLONG, "%s", lib);
	}
	ret = copy_file(lib, file, ctx->uid, ctx->gid);
	if (ret) {
		att_unstage(ctx);
		return att_fail(ctx, ATT_E_STAGE, -ret, "copy %s to %s", lib, file);
	}
	snprintf(ctx->stage_file, sizeof(ctx->stage_file), "%s", file);
	if ((size_t)snprintf(tpath, cap, "%s", file + rootlen) >= cap) {
		att_unstage(ctx);
		return att_fail(ctx, ATT_E_STAGE, ENAMETOOLONG, "%s", file);
	}
	*staged = 1;
	if (att_fault(ctx, "stage")) {
		att_unstage(ctx);
		return ATT_E_FAULT;
	}
	return ATT_OK;
}

void att_unstage(struct att_ctx *ctx)
{
	if (ctx->stage_file[0]) {
		unlink(ctx->stage_file);
		ctx->stage_file[0] = '\0';
	}
	if (ctx->stage_dir[0]) {
		rmdir(ctx->stage_dir);
		ctx->stage_dir[0] = '\0';
	}
}
