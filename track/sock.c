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
 *
 * A full socket (heaptap reads slower than the target records) is waited
 * for outside the socket lock: trk_sock_lock_room waits until the record
 * fits (SIOCOUTQ against the send buffer, looked at every millisecond) and
 * takes the lock only then, so the lock is held for a copy, never for
 * heaptap's reading, a writer goes on as soon as one chunk fits (not when
 * the kernel would wake it, after three quarters of the buffer were read),
 * and the timer thread's small writes (TICK, idle flushes) do not queue
 * behind hooks that wait for heaptap.
 *
 * No thread of the target waits on heaptap forever: a wait for room, or a
 * write (SO_SNDTIMEO), that sees no progress for TRK_SEND_STALL_MS
 * (heaptap stopped, or another process holds the connection without
 * reading) marks the socket dead like any other failed write: recording
 * stops, every waiter returns, and the timer thread restores the slots
 * (inject/).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "track/internal.h"
#include "track/sample_internal.h"

#define TRK_SNDBUF (1 << 20) /* asked for; the kernel doubles it */
#define ROOM_MARGIN (16 * 1024) /* kernel overhead of the buffers a record becomes */
#define ROOM_SLICE_MS 1	     /* a writer waiting for room looks again this often */

static int sock_sndbuf; /* SO_SNDBUF as the kernel set it (bytes it counts against SIOCOUTQ) */

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
	{
		/* a peer that stops reading cannot hold a thread of the target forever */
		struct timeval tv = { .tv_sec = TRK_SEND_STALL_MS / 1000,
				      .tv_usec = (TRK_SEND_STALL_MS % 1000) * 1000 };

		/* room for heaptap's scheduling hiccups (the kernel caps it at 2 x wmem_max) */
		int sndbuf = TRK_SNDBUF;

		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		socklen_t sl = sizeof(sock_sndbuf);

		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sock_sndbuf, &sl) < 0)
			sock_sndbuf = 0;
	}
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
			/* SO_SNDTIMEO ran out without a byte going out: the peer stopped reading */
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
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

/*
 * stalled_locked - heaptap read nothing for TRK_SEND_STALL_MS: the session
 * is over. The shutdown wakes every other thread polling for room (and the
 * timer, which then restores the slots) at once, instead of each waiting
 * out its own limit; heaptap, if it ever looks again, sees the end.
 */
static void stalled_locked(void)
{
	trk_g.ended = 1;
	atomic_store(&trk_g.state, TRK_DONE);
	trk_smp_stop();
	if (trk_sock_ours())
		shutdown(trk_g.fd, SHUT_RDWR);
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
		trk_smp_stop();
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
	if (ret == -ETIMEDOUT) {
		stalled_locked();
	} else if (ret < 0) {
		/* heaptap went away: nothing more can be said, stop recording */
		trk_g.ended = 1;
		atomic_store(&trk_g.state, TRK_DONE);
		trk_smp_stop();
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

	trk_sock_lock_room(len + 1 + WIRE_VARINT_MAX);
	ret = trk_sock_send_locked(type, &v, 1);
	pthread_mutex_unlock(&trk_g.sock_lock);
	return ret;
}

int trk_send_record(uint8_t type, const void *payload, size_t len)
{
	if (!trk_active())
		return -EPIPE;
	return trk_sock_send(type, payload, len);
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

/*
 * has_room - whether need more bytes can be written without blocking: the
 * unread bytes (SIOCOUTQ, counted like the send buffer, with the kernel's
 * per-buffer overhead) plus need and a margin for that overhead stay below
 * the send buffer. fd < 0 or an error: true (the locked path finds out).
 * *unread gets the unread count (for progress).
 */
static bool has_room(int fd, size_t need, int *unread)
{
	*unread = 0;
	if (fd < 0 || ioctl(fd, SIOCOUTQ, unread) < 0 || sock_sndbuf <= 0)
		return true;
	if (need + ROOM_MARGIN > (size_t)sock_sndbuf)
		return *unread == 0; /* bigger than the buffer: once heaptap read everything */
	return (size_t)*unread + need + ROOM_MARGIN <= (size_t)sock_sndbuf;
}

/*
 * wait_room - wait until need bytes fit. The kernel wakes a writer of a
 * unix stream socket only once three quarters of its buffer were read, so
 * a thread that sleeps in sendmsg (or in poll for POLLOUT) waits for
 * heaptap to read about 1.5 MB: tens of ms when heaptap is slower than the
 * target. This waits in poll slices of ROOM_SLICE_MS and goes on as soon as
 * one chunk fits, so a writer waits about as long as heaptap takes to read
 * one chunk. 1: room (or fd < 0, closed, hung up: the locked path finds
 * out); 0: heaptap read nothing for TRK_SEND_STALL_MS; -1: with ctl,
 * heaptap sent something to read first.
 */
static int wait_room(int fd, size_t need, bool ctl)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT | (ctl ? POLLIN : 0) };
	uint64_t last = 0;
	int unread, prev = -1;

	while (!has_room(fd, need, &unread)) {
		uint64_t now = util_mono_ns();
		int r;

		if (prev < 0 || unread < prev)
			last = now; /* heaptap read something */
		else if (now - last >= (uint64_t)TRK_SEND_STALL_MS * 1000000u)
			return 0;
		prev = unread;
		do
			r = poll(&pfd, 1, ROOM_SLICE_MS);
		while (r < 0 && errno == EINTR);
		if (r > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
			return 1;
		if (ctl && r > 0 && (pfd.revents & POLLIN))
			return -1;
	}
	return 1;
}

static int lock_room(size_t need, bool ctl)
{
	int saved_errno = errno, ret = 0, unread;

	for (;;) {
		/* unlocked peek at the fd: a stale number only costs an ioctl, the lock checks it */
		int fd = trk_g.fd, r = wait_room(fd, need, ctl);

		if (r < 0) {
			ret = -EAGAIN;
			break;
		}
		pthread_mutex_lock(&trk_g.sock_lock);
		if (r == 0) {
			if (!trk_g.ended && trk_g.fd == fd) {
				/* heaptap took no byte for TRK_SEND_STALL_MS: stop, write nothing more */
				stalled_locked();
				ret = -ETIMEDOUT;
			}
			break;
		}
		/* another writer may have filled it between the check and the lock */
		if (trk_g.ended || trk_g.fd != fd || has_room(fd, need, &unread))
			break;
		pthread_mutex_unlock(&trk_g.sock_lock);
	}
	errno = saved_errno;
	return ret;
}

int trk_sock_lock_room(size_t need)
{
	return lock_room(need, false);
}

int trk_sock_lock_room_ctl(size_t need)
{
	return lock_room(need, true);
}

int trk_wait_drained(unsigned timeout_ms)
{
	struct timespec ms = { 0, 1000000 };
	unsigned waited = 0;

	for (;;) {
		int unread = -1, ret = 0;

		pthread_mutex_lock(&trk_g.sock_lock);
		if (trk_g.ended || !trk_sock_ours())
			ret = -EPIPE;
		else if (ioctl(trk_g.fd, SIOCOUTQ, &unread) < 0)
			ret = -errno;
		pthread_mutex_unlock(&trk_g.sock_lock);
		if (ret < 0)
			return ret;
		if (unread == 0)
			return 0;
		if (waited++ >= timeout_ms)
			return -ETIMEDOUT;
		nanosleep(&ms, NULL);
	}
}
