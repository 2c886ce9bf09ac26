/* attach/preflight.c - may we attach to PID? answered from /proc, nothing stopped */
/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "attach/internal.h"
#include "util/procids.h"

#define PF_KTHREAD 0x00200000	/* include/linux/sched.h */
#define PROC_MAGIC 0x9fa0	/* PROC_SUPER_MAGIC, linux/magic.h */

static void read_comm(pid_t pid, char *buf, size_t cap)
{
	char path[96];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = att_read_file(path, buf, cap);
	if (n <= 0) {
		snprintf(buf, cap, "?");
		return;
	}
	if (buf[n - 1] == '\n')
		buf[n - 1] = '\0';
}

/* Is pid a descendant of ours (Yama scope 1)? */
static bool is_descendant(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long flags;
	pid_t ppid;
	char state;
	int depth;

	for (depth = 0; depth < 4096 && pid > 1; depth++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (att_read_file(path, buf, sizeof(buf)) < 0 ||
		    att_parse_stat(buf, &state, &flags, &ppid) < 0)
			return false;
		if (ppid == getpid())
			return true;
		pid = ppid;
	}
	return false;
}

/*
 * "; a set-group-ID program (gid 1000, effective 5)" (set-user-ID when the
 * uids differ) into buf, or "": why such a process is another user's or
 * non-dumpable (its loader also runs in secure mode, AT_SECURE).
 */
static const char *setid_note(unsigned long ur, unsigned long ue, unsigned long gr, unsigned long ge,
			      char *buf, size_t cap)
{
	buf[0] = '\0';
	if (ur != ue)
		snprintf(buf, cap, "; a set-user-ID program (uid %lu, effective %lu)", ur, ue);
	else if (gr != ge)
		snprintf(buf, cap, "; a set-group-ID program (gid %lu, effective %lu)", gr, ge);
	return buf;
}

static enum att_reason check_ids(struct att_ctx *ctx, const char *status, bool cap)
{
	struct util_ids ids;
	unsigned long r, e, s, gr, ge;
	char path[96], note[80];
	struct stat sb;
	uid_t me = geteuid();

	if (util_ids_parse(status, strlen(status), &ids) < 0)
		return att_fail(ctx, ATT_E_NO_PROCESS, 0,
				"no well-formed Uid and Gid lines in /proc/%d/status", (int)ctx->pid);
	r = ids.uid[UTIL_ID_REAL];
	e = ids.uid[UTIL_ID_EFFECTIVE];
	s = ids.uid[UTIL_ID_SAVED];
	gr = ids.gid[UTIL_ID_REAL];
	ge = ids.gid[UTIL_ID_EFFECTIVE];
	ctx->uid = (uid_t)e;
	ctx->gid = (gid_t)ge;
	if (cap)
		return ATT_OK;
	/* kernel ptrace_may_access(): our uid must equal all of the target's */
	if (r != me || e != me || s != me)
		return att_fail(ctx, ATT_E_OTHER_USER, EPERM, "process uid %lu, heaptap uid %lu%s", e,
				(unsigned long)me, setid_note(r, e, gr, ge, note, sizeof(note)));
	/*
	 * A non-dumpable process has its /proc/PID files owned by root
	 * (proc(5), /proc/pid; the directory itself keeps the real uid on
	 * this kernel, so look at a file): for a process of our uid that differs.
	 */
	snprintf(path, sizeof(path), "%s/status", ctx->procdir);
	if (stat(path, &sb) == 0 && sb.st_uid != ctx->uid)
		return att_fail(ctx, ATT_E_NOT_DUMPABLE, EPERM, "%s is owned by uid %lu%s", path,
				(unsigned long)sb.st_uid, setid_note(r, e, gr, ge, note, sizeof(note)));
	return ATT_OK;
}

static enum att_reason check_yama(struct att_ctx *ctx, bool cap)
{
	char buf[32];
	int scope;

	/* no file: Yama is not built into this kernel, nothing to check */
	if (att_read_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) < 0)
		return ATT_OK;
	scope = atoi(buf);
	if (att_yama_check(scope, scope == 1 && is_descendant(ctx->pid), cap) != ATT_OK)
		return att_fail(ctx, ATT_E_YAMA, EPERM, "ptrace_scope is %d%s", scope,
				scope == 1 ? " (descendants only)"
				: scope == 2 ? " (CAP_SYS_PTRACE only)" : " (no attach)");
	return ATT_OK;
}

static enum att_reason check_exe(struct att_ctx *ctx)
{
	char path[96], what[256];
	enum att_reason why;
	int err;

	snprintf(path, sizeof(path), "%s/exe", ctx->procdir);
	why = att_check_exe(path, what, sizeof(what), &err);
	if (why == ATT_E_EXE && err == ENOENT)
		return att_fail(ctx, ATT_E_ZOMBIE, err, "%s", what);	/* exe gone: exiting */
	if (why)
		return att_fail(ctx, why, err, "%s", what);
	return ATT_OK;
}

static enum att_reason check_maps(struct att_ctx *ctx)
{
	struct att_maps maps;
	bool libc, loader;
	int ret;

	ret = att_maps_read_at(ctx->procdir, &maps);
	if (ret)
		return att_fail(ctx, ret == -ENOENT || ret == -ESRCH ? ATT_E_NO_PROCESS : ATT_E_EXE,
				-ret, "read %s/maps", ctx->procdir);
	libc = att_maps_module(&maps, "libc.so") || att_maps_module(&maps, "libc-2.") ||
	       att_maps_module(&maps, "ld-musl");
	loader = att_maps_module(&maps, "ld-linux") || att_maps_module(&maps, "ld-musl") ||
		 att_maps_module(&maps, "ld64.so") || att_maps_module(&maps, "ld-2.");
	att_maps_free(&maps);
	if (libc)
		return ATT_OK;
	if (loader)
		return att_fail(ctx, ATT_E_TOO_EARLY, 0, "dynamic loader mapped, libc not yet");
	return att_fail(ctx, ATT_E_STATIC, 0, "no dynamic loader nor libc in %s/maps", ctx->procdir);
}

/*
 * check_procfs - inject/ finds the modules to patch in /proc/self/maps, so
 * the process's root must have procfs at /proc (a chroot or container
 * without it would load the library and patch nothing). The walk through
 * the /proc/PID/root magic link starts at the process's root in its own
 * mount namespace and crosses that namespace's mounts. Only a clear answer
 * refuses: another error (EACCES, ...) lets the attach go on.
 */
static enum att_reason check_procfs(struct att_ctx *ctx)
{
	char path[128];
	struct statfs sf;
	int fd, r;

	/* a /proc symlink of the process's must not lead to ours: resolved in its root */
	snprintf(path, sizeof(path), "%s/root/proc", ctx->procdir);
	fd = att_open_root_dir(ctx->procdir, "proc");
	if (fd < 0) {
		if (fd == -ENOENT || fd == -ENOTDIR)
			return att_fail(ctx, ATT_E_NO_PROCFS, -fd, "%s: %s", path, strerror(-fd));
		return ATT_OK;
	}
	r = fstatfs(fd, &sf);
	close(fd);
	if (r < 0)
		return ATT_OK;
	if ((unsigned long)sf.f_type != PROC_MAGIC)
		return att_fail(ctx, ATT_E_NO_PROCFS, 0, "%s is a filesystem of type %#lx, not procfs",
				path, (unsigned long)sf.f_type);
	return ATT_OK;
}

enum att_reason att_preflight(struct att_ctx *ctx)
{
	char path[96], status[8192], stat[1024], tracer[32];
	unsigned long flags;
	unsigned long long ign;
	const char *v;
	ssize_t n;
	pid_t tgid, tpid, live;
	char state;
	bool cap;
	enum att_reason why;

	ctx->preflight_ok = false;
	ctx->detail[0] = '\0';
	ctx->err = 0;
	if (ctx->pid <= 0)
		return att_fail(ctx, ATT_E_BAD_PID, 0, "pid %d", (int)ctx->pid);
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)ctx->pid);
	if (ctx->pid == getpid() || access(path, F_OK) == 0)
		return att_fail(ctx, ATT_E_SELF, 0, "pid %d is heaptap", (int)ctx->pid);

	snprintf(path, sizeof(path), "/proc/%d/status", (int)ctx->pid);
	n = att_read_file(path, status, sizeof(status));
	if (n < 0)
		return att_fail(ctx, ATT_E_NO_PROCESS, (int)-n, "%s", path);
	v = att_status_field(status, "Tgid");
	tgid = v ? (pid_t)atoi(v) : 0;
	if (tgid != ctx->pid)
		return att_fail(ctx, ATT_E_NOT_TGID, 0, "thread of process %d", (int)tgid);
	v = att_status_field(status, "Name");
	if (v)
		sscanf(v, "%31[^\n]", ctx->comm);

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)ctx->pid);
	n = att_read_file(path, stat, sizeof(stat));
	if (n < 0)
		return att_fail(ctx, ATT_E_NO_PROCESS, (int)-n, "%s", path);
	if (att_parse_stat(stat, &state, &flags, NULL) < 0)
		return att_fail(ctx, ATT_E_NO_PROCESS, 0, "cannot parse %s", path);
	if (flags & PF_KTHREAD)
		return att_fail(ctx, ATT_E_KERNEL_THREAD, 0, "%s", ctx->comm);
	snprintf(ctx->procdir, sizeof(ctx->procdir), "/proc/%d", (int)ctx->pid);
	if (state == 'Z' || state == 'X' || state == 'x') {
		/* a zombie leader whose other threads live on (main called pthread_exit) */
		live = att_live_task(ctx->pid);
		if (!live)
			return att_fail(ctx, ATT_E_ZOMBIE, 0, "state %c", state);
		snprintf(ctx->procdir, sizeof(ctx->procdir), "/proc/%d/task/%d", (int)ctx->pid,
			 (int)live);
		snprintf(path, sizeof(path), "%s/status", ctx->procdir);
		n = att_read_file(path, status, sizeof(status));
		if (n < 0)
			return att_fail(ctx, ATT_E_ZOMBIE, (int)-n, "%s", path);
		snprintf(path, sizeof(path), "%s/stat", ctx->procdir);
		n = att_read_file(path, stat, sizeof(stat));
		if (n < 0 || att_parse_stat(stat, &state, &flags, NULL) < 0)
			return att_fail(ctx, ATT_E_ZOMBIE, n < 0 ? (int)-n : 0, "%s", path);
	}

	v = att_status_field(status, "TracerPid");
	tpid = v ? (pid_t)atoi(v) : 0;
	if (tpid > 0) {
		read_comm(tpid, tracer, sizeof(tracer));
		return att_fail(ctx, ATT_E_TRACED, EPERM, "traced by %d (%s)", (int)tpid, tracer);
	}
	/* decided: refuse a stopped target rather than continue it; see docs/attach.md */
	if (state == 'T' || state == 't')
		return att_fail(ctx, ATT_E_STOPPED, 0, "state %c", state);

	cap = att_have_cap_ptrace();
	why = check_ids(ctx, status, cap);
	if (why)
		return why;
	why = check_yama(ctx, cap);
	if (why)
		return why;
	why = check_exe(ctx);
	if (why)
		return why;
	why = check_maps(ctx);
	if (why)
		return why;
	why = check_procfs(ctx);
	if (why)
		return why;
	v = att_status_field(status, "SigIgn");
	if (v && sscanf(v, "%llx", &ign) == 1 && (ign >> (SIGSEGV - 1)) & 1)
		return att_fail(ctx, ATT_E_SEGV_IGNORED, 0, "SigIgn %llx", ign);
	why = att_ident_take(ctx);
	if (why)
		return why;
	att_hang(ctx, ATT_H_PREFLIGHTED);
	ctx->preflight_ok = true;
	return ATT_OK;
}
