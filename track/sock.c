/* track/sock.c - write framed records to the heaptap socket */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. Every write uses sendmsg with MSG_NOSIGNAL so a
 * vanished heaptap never raises SIGPIPE; any failure other than EINTR marks
 * the socket dead and the session over (hooks pass through from then on).
 * Callers hold trk_g.sock_lock, so records of different threads never
 * interleave byte-wise. Before each write the fd is checked to still be our
 * socket (device and inode), because a daemonising program may close every
 * fd and open files that get the same number: then we let go silently
 * rather than write into its file (or close it).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "track/internal.h"

/* Identity of our socket: programs that close every fd must not make us write into theirs. */
static dev_t sock_dev;
static ino_t sock_ino;

/*
 * fd_table_size - FDSize of /proc/self/status: how many descriptors the
 * process's table holds now (plain syscalls, no allocation); 0 if unknown.
 */
static int fd_table_size(void)
{
	static const char key[] = "\nFDSize:";
	char buf[2048];
	size_t got = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC), v = 0;
	const char *p;

	if (fd < 0)
		return 0;
	while (got < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	p = strstr(buf, key);
	if (!p)
		return 0;
	for (p += sizeof(key) - 1; *p == ' ' || *p == '\t'; p++)
		;
	while (*p >= '0' && *p <= '9' && v < (1 << 28))
		v = v * 10 + (*p++ - '0');
	return v;
}

/*
 * trk_sock_adopt - move the socket out of the way of programs that dup2
 * onto small fds: to the highest free number inside the current descriptor
 * table. Not above it: growing the table of a multi-threaded process makes
 * the kernel wait for an RCU grace period (seconds on a loaded machine,
 * seen delaying an attach). A program that closes and reuses fds anyway is
 * caught by the identity checks before every write and close.
 */
int trk_sock_adopt(int fd)
{
	struct stat st;
	int size = fd_table_size(), i;

	for (i = size - 1; i > fd && i > 2; i--) {
		if (fcntl(i, F_GETFD) == -1 && errno == EBADF) {
			/* lowest free >= i: i itself unless a thread just took it */
			int hi = fcntl(fd, F_DUPFD_CLOEXEC, i);

			if (hi >= 0) {
				close(fd);
				fd = hi;
			}
			break;
		}
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC); /* also where it stayed: exec'd programs get none */
	errno = 0;
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		int e = errno ? errno : ENOTSOCK;

		close(fd);
		return -e;
	}
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	return fd;
}

bool trk_sock_ours(void)
{
	struct stat st;

	return trk_g.fd >= 0 && fstat(trk_g.fd, &st) == 0 && st.st_ino == sock_ino &&
	       st.st_dev == sock_dev;
}

void trk_sock_close_locked(void)
{
	if (trk_sock_ours())
		close(trk_g.fd);
	trk_g.fd = -1;
}

#define HDR_IOV 8

static int send_all(struct iovec *iov, int n)
{
	struct msghdr mh = { 0 };

	while (n > 0) {
		ssize_t w;

		mh.msg_iov = iov;
		mh.msg_iovlen = (size_t)n;
		w = sendmsg(trk_g.fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* skip what was written; a partial write resumes mid-iovec */
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int trk_sock_send_locked(uint8_t type, const struct iovec *iov, int iovcnt)
{
	struct iovec v[HDR_IOV + 1];
	uint8_t hdr[1 + WIRE_VARINT_MAX];
	size_t len = 0, hl = 0;
	int i, ret;

	if (trk_g.ended || trk_g.fd < 0)
		return -EPIPE;
	if (!trk_sock_ours()) {
		/* the program closed our fd (and maybe reused the number): let go */
		trk_g.ended = 1;
		trk_g.fd = -1;
		atomic_store(&trk_g.state, TRK_DONE);
		return -EBADF;
	}
	if (iovcnt > HDR_IOV)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > WIRE_MAX_RECORD)
		return -EMSGSIZE;
	hdr[hl++] = type;
	hl += wire_put_varint(hdr + hl, len);
	v[0].iov_base = hdr;
	v[0].iov_len = hl;
	for (i = 0; i < iovcnt; i++)
		v[i + 1] = iov[i];
	ret = send_all(v, iovcnt + 1);
	if (ret < 0) {
		/* heaptap went away: nothing more can be said, stop recording */
		trk_g.ended = 1;
		atomic_store(&trk_g.state, TRK_DONE);
	}
	return ret;
}

int trk_sock_write_raw_locked(const void *data, size_t len)
{
	struct iovec v = { .iov_base = (void *)data, .iov_len = len };

	return trk_g.ended || !trk_sock_ours() ? -EPIPE : send_all(&v, 1);
}

int trk_sock_send(uint8_t type, const void *payload, size_t len)
{
	struct iovec v = { .iov_base = (void *)payload, .iov_len = len };
	int ret;

	pthread_mutex_lock(&trk_g.sock_lock);
	ret = trk_sock_send_locked(type, &v, 1);
	pthread_mutex_unlock(&trk_g.sock_lock);
	return ret;
}

int trk_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = path ? strlen(path) : 0;
	int fd;

	if (len == 0 || len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(fd);
		return -e;
	}
	return fd;
}
