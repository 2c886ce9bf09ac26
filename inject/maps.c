/* inject/maps.c - a snapshot of the page protections in /proc/self/maps */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target (library thread, before_end caller). Reads with plain
 * syscalls into a stack buffer and parses byte by byte, so a line split
 * across two reads needs no copy; only "start-end perms" of each line is
 * kept. Adjacent entries with the same protection are merged: a JVM has
 * thousands of mappings, and only the protection of a page is asked.
 * Entries beyond INJ_MAX_RANGES are dropped: their pages read as unknown,
 * and inject/ never writes to a page of unknown protection.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "inject/internal.h"

enum field { F_START, F_END, F_PERMS, F_REST, F_SKIP /* malformed line: ignored */ };

struct parse {
	enum field f;
	uintptr_t start, end;
	int prot, nperm;
};

static void add_range(uintptr_t start, uintptr_t end, int prot)
{
	struct inj_range *last = inj_g.nranges ? &inj_g.ranges[inj_g.nranges - 1] : NULL;

	if (last && last->end == start && last->prot == prot) {
		last->end = end;
		return;
	}
	if (inj_g.nranges == INJ_MAX_RANGES)
		return;
	inj_g.ranges[inj_g.nranges].start = start;
	inj_g.ranges[inj_g.nranges].end = end;
	inj_g.ranges[inj_g.nranges].prot = prot;
	inj_g.nranges++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static void feed(struct parse *p, char c)
{
	int h;

	if (c == '\n') {
		if (p->f == F_REST || (p->f == F_PERMS && p->nperm == 4))
			add_range(p->start, p->end, p->prot);
		*p = (struct parse){.f = F_START};
		return;
	}
	switch (p->f) {
	case F_START:
		h = hexval(c);
		if (h >= 0)
			p->start = p->start << 4 | (uintptr_t)h;
		else
			p->f = c == '-' ? F_END : F_SKIP;
		break;
	case F_END:
		h = hexval(c);
		if (h >= 0)
			p->end = p->end << 4 | (uintptr_t)h;
		else
			p->f = c == ' ' && p->end > p->start ? F_PERMS : F_SKIP;
		break;
	case F_PERMS:
		if (p->nperm < 4) {
			if (c == 'r')
				p->prot |= PROT_READ;
			else if (c == 'w')
				p->prot |= PROT_WRITE;
			else if (c == 'x')
				p->prot |= PROT_EXEC;
			p->nperm++;
		} else {
			p->f = F_REST;
		}
		break;
	default:
		break;
	}
}

int inj_maps_read(void)
{
	struct parse p = {.f = F_START};
	char buf[4096];
	int fd, ret = 0;

	inj_g.nranges = 0;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			inj_g.nranges = 0; /* a partial view could mislead */
			break;
		}
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			feed(&p, buf[i]);
	}
	close(fd);
	return ret;
}

int inj_maps_prot(uintptr_t addr)
{
	size_t lo = 0, hi = inj_g.nranges;

	/* /proc/self/maps is sorted by address */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct inj_range *r = &inj_g.ranges[mid];

		if (addr < r->start)
			hi = mid;
		else if (addr >= r->end)
			lo = mid + 1;
		else
			return r->prot;
	}
	return -1;
}
