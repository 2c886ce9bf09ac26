/* attach/procfs.c - read and parse /proc files: status, stat, syscall, maps, ELF header */
/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/internal.h"
#include "util/procread.h"

ssize_t att_read_file(const char *path, char *buf, size_t cap)
{
	size_t len;
	int err = util_read_file(path, buf, cap, &len);

	return err && err != -EFBIG ? err : (ssize_t)len;
}

const char *att_status_field(const char *status, const char *key)
{
	size_t klen = strlen(key);
	const char *p = status;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
			p += klen + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

int att_parse_stat(const char *text, char *state, unsigned long *flags, pid_t *ppid)
{
	const char *p = strrchr(text, ')');
	long pp;
	int pgrp, session, tty, tpgid;
	char st;

	/* comm may hold ')' and spaces: fields start after the last ')' */
	if (!p)
		return -EINVAL;
	if (sscanf(p + 1, " %c %ld %d %d %d %d %lu", &st, &pp, &pgrp, &session, &tty, &tpgid,
		   flags) != 7)
		return -EINVAL;
	*state = st;
	if (ppid)
		*ppid = (pid_t)pp;
	return 0;
}

int att_parse_syscall(const char *text, long *sysno, unsigned long args[6], bool *running)
{
	char *end;
	long nr;
	unsigned i;
	const char *p = text;

	memset(args, 0, 6 * sizeof(args[0]));
	*running = false;
	if (strncmp(text, "running", 7) == 0) {
		*running = true;
		*sysno = -1;
		return 0;
	}
	errno = 0;
	nr = strtol(p, &end, 10);
	if (end == p || errno)
		return -EINVAL;
	*sysno = nr;
	if (nr < 0)
		return 0;	/* "-1 sp pc": blocked, but not in a syscall */
	p = end;
	for (i = 0; i < 6; i++) {
		args[i] = strtoul(p, &end, 16);
		if (end == p)
			return -EINVAL;
		p = end;
	}
	return 0;
}

/*
 * kernel.yama.ptrace_scope (Documentation/admin-guide/LSM/Yama.rst):
 * 0 classic, 1 descendants only (or a PR_SET_PTRACER exception we cannot
 * see), 2 CAP_SYS_PTRACE only, 3 no attach at all.
 */
enum att_reason att_yama_check(int scope, bool descendant, bool cap_sys_ptrace)
{
	switch (scope) {
	case 0:
		return ATT_OK;
	case 1:
		return descendant || cap_sys_ptrace ? ATT_OK : ATT_E_YAMA;
	case 2:
		return cap_sys_ptrace ? ATT_OK : ATT_E_YAMA;
	default:
		return ATT_E_YAMA;
	}
}

bool att_have_cap_ptrace(void)
{
	char buf[4096];
	const char *v;
	unsigned long long caps;

	if (att_read_file("/proc/self/status", buf, sizeof(buf)) < 0)
		return geteuid() == 0;
	v = att_status_field(buf, "CapEff");
	if (!v || sscanf(v, "%llx", &caps) != 1)
		return geteuid() == 0;
	return (caps >> 19) & 1;	/* CAP_SYS_PTRACE */
}

void att_maps_free(struct att_maps *m)
{
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

static int maps_push(struct att_maps *m, const struct att_map *e)
{
	struct att_map *v;
	size_t cap;

	if (m->n == m->cap) {
		cap = m->cap ? m->cap * 2 : 64;
		v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = *e;
	return 0;
}

int att_maps_read(pid_t pid, struct att_maps *m)
{
	char dir[32];

	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	return att_maps_read_at(dir, m);
}

static bool task_live(pid_t pid, pid_t tid)
{
	char path[96], buf[1024], state;
	unsigned long flags;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (att_read_file(path, buf, sizeof(buf)) < 0 || att_parse_stat(buf, &state, &flags, NULL))
		return false;
	return state != 'Z' && state != 'X' && state != 'x';
}

pid_t att_live_task(pid_t pid)
{
	char path[64];
	struct dirent *de;
	pid_t tid, found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		tid = (pid_t)atoi(de->d_name);
		if (tid > 0 && tid != pid && task_live(pid, tid))
			found = tid;
	}
	closedir(d);
	return found;
}

bool att_process_alive(pid_t pid)
{
	return task_live(pid, pid) || att_live_task(pid) != 0;
}

int att_maps_read_at(const char *dir, struct att_maps *m)
{
	char path[96], line[PATH_MAX + 256];
	struct att_map e;
	FILE *f;
	int ret = 0, pos;
	unsigned long long start, end, off, ino;
	char *p, *nl;

	m->v = NULL;
	m->n = m->cap = 0;
	snprintf(path, sizeof(path), "%s/maps", dir);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		memset(&e, 0, sizeof(e));
		pos = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %*s %llu %n", &start, &end, e.perms, &off, &ino,
			   &pos) < 5 || pos == 0)
			continue;
		e.start = start;
		e.end = end;
		e.offset = off;
		p = line + pos;
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		snprintf(e.path, sizeof(e.path), "%s", p);
		ret = maps_push(m, &e);
		if (ret)
			break;
	}
	if (!ret && ferror(f))
		ret = -EIO;
	fclose(f);
	if (ret)
		att_maps_free(m);
	return ret;
}

const struct att_map *att_maps_find(const struct att_maps *m, uint64_t addr)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return &m->v[i];
	return NULL;
}

const struct att_map *att_maps_module(const struct att_maps *m, const char *prefix)
{
	size_t i, plen = strlen(prefix);
	const char *base;

	for (i = 0; i < m->n; i++) {
		if (m->v[i].path[0] != '/' || m->v[i].offset != 0)
			continue;
		base = strrchr(m->v[i].path, '/') + 1;
		if (strncmp(base, prefix, plen) == 0)
			return &m->v[i];
	}
	return NULL;
}
