/* bench/consume/tee.c - LD_PRELOAD shim for heaptap: copy the event stream it reads to a file */
/* SPDX-License-Identifier: MIT */
/*
 * Used only by bench/consume/run to capture a live event stream once, so
 * the interpreter can be replayed on exactly the same bytes (replay.c).
 * Preloaded into the heaptap process with HEAPTAP_TEE=<file>: the first
 * read(2) of any descriptor whose data starts with the stream magic
 * ("HTAPEVS1", track/wire.h) marks that descriptor, and everything read
 * from it afterwards is appended to the file. Other descriptors (pipes,
 * /proc files, the control socket) are untouched. Not thread-safe beyond
 * what heaptap needs: itp_run reads the stream from one thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tee_fd = -1;	   /* the output file, opened on the first match */
static int stream_fd = -1; /* the descriptor that carries the stream */

static void copy_out(const void *buf, ssize_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(tee_fd, p, (size_t)n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= w;
	}
}

ssize_t read(int fd, void *buf, size_t count)
{
	static ssize_t (*real_read)(int, void *, size_t);
	ssize_t n;
	int saved;

	if (!real_read)
		real_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	n = real_read(fd, buf, count);
	if (n <= 0)
		return n;
	saved = errno;
	if (stream_fd < 0 && n >= 8 && !memcmp(buf, "HTAPEVS1", 8) && getenv("HEAPTAP_TEE")) {
		tee_fd = open(getenv("HEAPTAP_TEE"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (tee_fd >= 0)
			stream_fd = fd;
	}
	if (fd == stream_fd)
		copy_out(buf, n);
	errno = saved;
	return n;
}
