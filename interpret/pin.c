/* interpret/pin.c - pin the files the target maps, while the session runs */
/* SPDX-License-Identifier: MIT */
/*
 * The module paths of the stream are the target's word (link_map->l_name,
 * which it can rewrite): opening them as root would read any file, hang on
 * a FIFO, open a device or unpack a gzip bomb. What the target maps is the
 * kernel's word. When a MODULE event is applied, the mapping that holds the
 * module's first segment is looked up in /proc/PID/maps and opened through
 * /proc/PID/map_files/START-END, which gives the mapped inode itself (no
 * path is resolved; the file may since have been deleted or replaced). The
 * fd is kept for the session and symbolization reads it.
 *
 * map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE). Without it
 * (heaptap run by the target's own user) the path /proc/PID/maps gives is
 * opened inside the target's root with O_PATH, and taken only if its device
 * and inode are the mapping's and it is a regular file; the fd is then
 * reopened for reading through /proc/self/fd.
 *
 * maps is read again when a module's address is not in the last read, at
 * most once per four times the last read took (a target can make maps
 * large and a stream can announce modules at made-up addresses); modules
 * put off are retried at the next read. Everything is bounded: ITP_MAX_PINS
 * files, modules of at most ITP_MAX_MODULE_FILE bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "interpret/internal.h"
#include "interpret/module_internal.h"

#define MAPS_MAX ((size_t)64 << 20) /* bytes of /proc/PID/maps read */
#define RETRY_MAX 1024

int itp_elf_fd_ok(int fd)
{
	static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
	uint8_t head[4];
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > ITP_MAX_MODULE_FILE)
		return -EFBIG;
	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head) ||
	    memcmp(head, magic, sizeof(head)))
		return -ENOEXEC;
	return 0;
}

int itp_reopen_regular(int pfd)
{
	char self[64];
	struct stat st;
	int fd;

	if (fstat(pfd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int itp_open_debug(int root_fd, const uint8_t *id, size_t len, const char *suffix)
{
	char rel[64 + 2 * ITP_MAX_BUILD_ID], host[sizeof(rel) + 16];
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	size_t i, n;
	int pfd, fd, rc;

	if (len < 2 || len > ITP_MAX_BUILD_ID)
		return -EINVAL;
	n = (size_t)snprintf(rel, sizeof(rel), "usr/lib/debug/.build-id/%02x/", id[0]);
	for (i = 1; i < len; i++)
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%02x", id[i]);
	snprintf(rel + n, sizeof(rel) - n, "%s", suffix);
	/* the host's debug directory is root's: its .build-id symlinks are followed */
	snprintf(host, sizeof(host), "/%s", rel);
	pfd = open(host, O_PATH | O_CLOEXEC);
	/* the target's root is the target's: resolved inside it, no magic links */
	if (pfd < 0 && root_fd >= 0)
		pfd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
	if (pfd < 0)
		return -errno;
	fd = itp_reopen_regular(pfd);
	close(pfd);
	if (fd < 0)
		return fd;
	rc = itp_elf_fd_ok(fd);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

static int add_path(struct itp_pins *p, const char *s, size_t n, uint32_t *off)
{
	if (n + 1 > p->paths_cap - p->paths_len) {
		size_t ncap = p->paths_cap ? p->paths_cap * 2 : 4096;
		char *np;

		while (ncap - p->paths_len < n + 1)
			ncap *= 2;
		np = realloc(p->paths, ncap);
		if (!np)
			return -ENOMEM;
		p->paths = np;
		p->paths_cap = ncap;
	}
	memcpy(p->paths + p->paths_len, s, n);
	p->paths[p->paths_len + n] = '\0';
	*off = (uint32_t)p->paths_len;
	p->paths_len += n + 1;
	return 0;
}

/* one line of maps: "start-end perms offset maj:min inode   path" */
static int parse_line(struct itp_pins *p, char *line)
{
	unsigned long long start, end, off, ino;
	unsigned maj, min;
	struct itp_maps_ent *e;
	int pos = 0;

	if (sscanf(line, "%llx-%llx %*4s %llx %x:%x %llu %n", &start, &end, &off, &maj, &min, &ino,
		   &pos) < 6 || !ino || end <= start)
		return 0;
	if (p->nmaps == p->cap_maps) {
		size_t ncap = p->cap_maps ? p->cap_maps * 2 : 256;
		struct itp_maps_ent *v = realloc(p->maps, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->maps = v;
		p->cap_maps = ncap;
	}
	e = &p->maps[p->nmaps];
	*e = (struct itp_maps_ent){.start = start, .end = end, .dev = makedev(maj, min), .ino = ino,
				   .path_off = UINT32_MAX};
	if (pos > 0 && line[pos] == '/' && add_path(p, line + pos, strlen(line + pos), &e->path_off))
		return -ENOMEM;
	p->nmaps++;
	return 0;
}

/* read /proc/PID/maps again (lines come sorted by address) */
static int read_maps(struct itp_ctx *c)
{
	struct itp_pins *p = &c->pins;
	char path[64], *line = NULL;
	size_t cap = 0, total = 0;
	ssize_t n;
	uint64_t t0 = util_mono_ns();
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)c->opt->pid);
	f = fopen(path, "re");
	p->read_at_ns = t0;
	if (!f)
		return -errno;
	p->nmaps = 0;
	p->paths_len = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		total += (size_t)n;
		if (total > MAPS_MAX)
			break;
		if (line[n - 1] == '\n')
			line[n - 1] = '\0';
		ret = parse_line(p, line);
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	p->read_ns = util_mono_ns() - t0;
	p->read_at_ns = util_mono_ns();
	return ret;
}

static const struct itp_maps_ent *find_map(const struct itp_pins *p, uint64_t a)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

/* the path maps names, inside the target's root, if it is still the mapped inode */
static int open_verified(struct itp_ctx *c, const struct itp_maps_ent *e)
{
	const char *path = c->pins.paths + e->path_off;
	char full[ITP_MAX_PATH + 64];
	struct stat st;
	int pfd, fd;

	if (e->path_off == UINT32_MAX)
		return -ENOENT;
	snprintf(full, sizeof(full), "/proc/%d/root%s", (int)c->opt->pid, path);
	pfd = open(full, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != e->dev ||
	    (uint64_t)st.st_ino != e->ino) {
		close(pfd);
		return -ESTALE;
	}
	fd = itp_reopen_regular(pfd);
	close(pfd);
	return fd;
}

/* an fd on the file mapped at e */
static int open_mapping(struct itp_ctx *c, const struct itp_maps_ent *e)
{
	char path[96];
	int fd;

	if (!c->pins.denied) {
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", (int)c->opt->pid,
			 (unsigned long long)e->start, (unsigned long long)e->end);
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
		if (errno != EPERM && errno != EACCES)
			return -errno;
		c->pins.denied = 1;
	}
	return open_verified(c, e);
}

static int pin_entry(struct itp_ctx *c, const struct itp_maps_ent *e, uint32_t *idx)
{
	struct itp_pins *p = &c->pins;
	int fd, rc;
	uint64_t key = util_fmix64(e->dev) ^ e->ino;
	uint32_t k;

	if (itp_map_get(&p->by_file, key, &k) && p->v[k].dev == e->dev && p->v[k].ino == e->ino) {
		*idx = k;
		return 0;
	}
	if (p->n >= ITP_MAX_PINS)
		return -EMFILE;
	fd = open_mapping(c, e);
	if (fd < 0)
		return fd;
	rc = itp_elf_fd_ok(fd);
	if (!rc && p->n == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 64;
		struct itp_pin *v = realloc(p->v, ncap * sizeof(*v));

		if (v) {
			p->v = v;
			p->cap = ncap;
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc && itp_map_put(&p->by_file, key, (uint32_t)p->n))
		rc = -ENOMEM;
	if (rc) {
		close(fd);
		return rc;
	}
	p->v[p->n] = (struct itp_pin){.fd = fd, .dev = e->dev, .ino = e->ino};
	*idx = (uint32_t)p->n++;
	return 0;
}

/* the address whose mapping is the module's file: its first segment's */
static int module_addr(const struct itp_module *m, uint64_t *a)
{
	size_t i;

	for (i = 0; i < m->nseg; i++)
		if (m->seg[i].memsz) {
			*a = m->base + m->seg[i].vaddr;
			return 1;
		}
	return 0;
}

static int try_pin(struct itp_ctx *c, struct itp_module *m, int may_read)
{
	const struct itp_maps_ent *e;
	uint64_t a, now;
	uint32_t idx;

	if (!module_addr(m, &a))
		return -ENOENT;
	e = find_map(&c->pins, a);
	if (!e && may_read) {
		now = util_mono_ns();
		if (c->pins.read_at_ns && now - c->pins.read_at_ns < 4 * c->pins.read_ns)
			return -EAGAIN;
		if (read_maps(c))
			return -ENOENT;
		e = find_map(&c->pins, a);
	}
	if (!e)
		return -ENOENT;
	if (pin_entry(c, e, &idx))
		return -ENOENT;
	m->pin = idx + 1;
	c->pins.pinned++;
	return 0;
}

void itp_pin_module(struct itp_ctx *c, uint32_t k)
{
	struct itp_pins *p = &c->pins;
	int rc;

	if (c->opt->pid <= 0)
		return;
	rc = try_pin(c, c->mods.v[k], 1);
	if (rc == -EAGAIN && p->nretry < RETRY_MAX) {
		if (!p->retry)
			p->retry = malloc(RETRY_MAX * sizeof(*p->retry));
		if (p->retry) {
			p->retry[p->nretry++] = k;
			return;
		}
	}
	if (rc)
		p->failed++;
}

void itp_pin_retry(struct itp_ctx *c)
{
	struct itp_pins *p = &c->pins;
	size_t i, n = p->nretry;

	if (!n || c->opt->pid <= 0)
		return;
	p->nretry = 0;
	if (read_maps(c)) {
		p->failed += n;
		return;
	}
	for (i = 0; i < n; i++)
		if (try_pin(c, c->mods.v[p->retry[i]], 0))
			p->failed++;
}

void itp_pins_free(struct itp_pins *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		close(p->v[i].fd);
	free(p->v);
	free(p->maps);
	free(p->paths);
	free(p->retry);
	itp_map_free(&p->by_file);
	*p = (struct itp_pins){0};
}
