/* attach/mem.c - read and write a stopped thread's memory */
/* SPDX-License-Identifier: MIT */
/*
 * process_vm_readv/writev first (one call, any length); they honour page
 * protections, so a write to a read-only page (the r-x scratch page) goes
 * through /proc/TID/mem (one pwrite, FOLL_FORCE for the tracer), and
 * PTRACE_PEEKDATA / POKEDATA word by word when that is refused too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "attach/internal.h"

static int peek(pid_t tid, uint64_t addr, long *word)
{
	errno = 0;
	*word = ptrace(PTRACE_PEEKDATA, tid, (void *)addr, 0);
	return errno ? -errno : 0;
}

int att_mem_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	unsigned char *out = buf;
	size_t done = 0, n;
	long w;
	int ret;

	if (process_vm_readv(tid, &l, 1, &r, 1, 0) == (ssize_t)len)
		return 0;
	while (done < len) {
		ret = peek(tid, addr + done, &w);
		if (ret)
			return ret;
		n = len - done < sizeof(w) ? len - done : sizeof(w);
		memcpy(out + done, &w, n);
		done += n;
	}
	return 0;
}

int att_mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len }, r = { (void *)addr, len };
	const unsigned char *in = buf;
	size_t done = 0, n;
	char path[64];
	long w;
	int ret, fd;

	if (process_vm_writev(tid, &l, 1, &r, 1, 0) == (ssize_t)len)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t wr = pwrite(fd, buf, len, (off_t)addr);

		close(fd);
		if (wr == (ssize_t)len)
			return 0;
	}
	while (done < len) {
		n = len - done < sizeof(w) ? len - done : sizeof(w);
		if (n < sizeof(w)) {
			ret = peek(tid, addr + done, &w);	/* keep the bytes after the end */
			if (ret)
				return ret;
		}
		memcpy(&w, in + done, n);
		if (ptrace(PTRACE_POKEDATA, tid, (void *)(addr + done), (void *)w) < 0)
			return -errno;
		done += n;
	}
	return 0;
}

/*
 * Our own r-x pages (trampoline, stub, loader): process_vm_writev would
 * only fail on them, so straight to /proc/TID/mem (one open, one pwrite:
 * two system calls fewer while the thread is held), else as above.
 */
int att_mem_write_code(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	char path[64];
	ssize_t wr;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)tid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		wr = pwrite(fd, buf, len, (off_t)addr);
		close(fd);
		if (wr == (ssize_t)len)
			return 0;
	}
	return att_mem_write(tid, addr, buf, len);
}

int att_mem_read_str(pid_t tid, uint64_t addr, char *buf, size_t cap)
{
	size_t done = 0, i;
	long w;
	int ret;

	if (cap == 0)
		return -EINVAL;
	while (done < cap - 1) {
		ret = peek(tid, addr + done, &w);
		if (ret) {
			buf[done] = '\0';
			return done ? 0 : ret;
		}
		for (i = 0; i < sizeof(w) && done < cap - 1; i++) {
			buf[done] = ((char *)&w)[i];
			if (!buf[done])
				return 0;
			done++;
		}
	}
	buf[done] = '\0';
	return 0;
}
