/* cli/detach_ctl.c - the session's control socket: one heaptap per process, and `heaptap detach` */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap attach binds an abstract unix socket named after the target,
 *
 *   "\0heaptap-session/PID/STARTTIME"      (STARTTIME: field 22 of
 *                                            /proc/PID/stat, so a reused pid
 *                                            gets another name)
 *
 * before it touches the process, and keeps it until the session has ended.
 * The bind is the lock: a second heaptap attach gets EADDRINUSE and is
 * refused, naming the first. An abstract name is no file: nothing is left
 * behind when heaptap is killed (the kernel drops the name with the last
 * descriptor), and no directory has to be shared between the two heaptaps.
 * Abstract names belong to the network namespace: a heaptap in another one
 * does not see this one (docs/attach-command.md).
 *
 * Protocol (text lines; SOCK_STREAM):
 *
 *   holder -> client   "heaptap-ctl 1 pid=HEAPTAP since=EPOCH target=PID\n"
 *   client -> holder   "detach\n"   end the session (as SIGTERM would)
 *                      "sample N\n" sample one allocation per N bytes, 0 = full
 *                                   tracing (`heaptap ctl`)
 *                      (anything else, or closing: just asked who holds it)
 *   holder -> client   "sample ok N\n" or "sample error REASON\n" at once
 *   holder -> client   "done code=N end=R allocs=N restored=N left=N out=PATH\n"
 *                      once the session has ended (detach clients only)
 *
 * Only clients of the holder's own uid, of the target's uid (it may end a
 * session on its own process) or root are answered (SO_PEERCRED). The
 * name is predictable and anyone may bind it first, so clients believe a
 * holder only when it is uid 0 or their own euid and runs the same
 * program file as they do (holder_trusted); a squatter is named and
 * nothing it says is used.
 * The holder's thread does no ptrace (the attaching thread must do all of
 * it) and runs with every signal blocked, so heaptap's stop signals still
 * reach the main thread. It sets the command's stop flag; itp_run sees it
 * within its 250 ms poll.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/procids.h"
#include "util/procread.h"

#define CTL_MAX_CLIENTS 8
#define CTL_HELLO_MS 5000 /* a live holder answers at once */

struct cli_ctl {
	int listen_fd;
	int wake[2]; /* closing the write end ends the thread */
	pthread_t thr;
	int thr_ok;
	volatile sig_atomic_t *stop;
	_Atomic int conn; /* the session's event socket once accepted, else -1 ("sample") */
	uid_t target_uid; /* its clients may ask too */
	pthread_mutex_t lock; /* clients[] and their want flags */
	int clients[CTL_MAX_CLIENTS];
	int detach[CTL_MAX_CLIENTS]; /* this client asked for a detach: gets the result */
	char hello[128];
};

/* Field 22 of /proc/PID/stat (start time in clock ticks since boot). */
static int start_time(pid_t pid, unsigned long long *st)
{
	char buf[1024], *p;
	size_t n;
	int err, field;

	err = util_proc_read(pid, "stat", buf, sizeof(buf), &n);
	if (err && err != -EFBIG) /* field 22 comes within the first 1023 bytes */
		return err == -ENOENT ? -ESRCH : err;
	if (n == 0)
		return -ESRCH;
	p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	if (!p)
		return -EINVAL;
	p++;
	/* after ')': field 3 (state) is the first; field 22 is the 20th */
	for (field = 2; field < 21 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", st) != 1)
		return -EINVAL;
	return 0;
}

/* The real uid of pid, or 0 (root only) when it cannot be read. */
static uid_t target_uid(pid_t pid)
{
	struct util_ids ids = { 0 }; /* left alone when it cannot be read */

	util_ids_read(pid, &ids);
	return ids.uid[UTIL_ID_REAL];
}

static int ctl_addr(pid_t pid, struct sockaddr_un *a, socklen_t *len)
{
	unsigned long long st;
	int n, ret = start_time(pid, &st);

	if (ret < 0)
		return ret;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "heaptap-session/%d/%llu", (int)pid,
		     st);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

/* Read one line (without its newline) within ms; returns its length, -ETIMEDOUT, -EPIPE, -errno. */
static int read_line(int fd, char *buf, size_t cap, int ms)
{
	size_t len = 0;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = ms;
		ssize_t n;
		int r;

		if (ms >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			left = ms - ((t.tv_sec - t0.tv_sec) * 1000L + (t.tv_nsec - t0.tv_nsec) / 1000000L);
			if (left <= 0)
				return -ETIMEDOUT;
		}
		r = poll(&p, 1, left > 200 || left < 0 ? 200 : (int)left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = read(fd, buf + len, 1); /* byte-wise: never read past the line */
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		if (buf[len] == '\n') {
			buf[len] = '\0';
			return (int)len;
		}
		if (++len == cap - 1) {
			buf[len] = '\0';
			return (int)len; /* overlong: cut */
		}
	}
}

static void write_all(int fd, const char *s)
{
	size_t len = strlen(s);

	while (len) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void drop_client(struct cli_ctl *c, int i)
{
	close(c->clients[i]);
	c->clients[i] = -1;
	c->detach[i] = 0;
}

static void take_client(struct cli_ctl *c)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), i;

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
	    (cred.uid != 0 && cred.uid != geteuid() && cred.uid != c->target_uid)) {
		close(fd); /* another user's process: not its business */
		return;
	}
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < CTL_MAX_CLIENTS && c->clients[i] >= 0; i++)
		;
	if (i == CTL_MAX_CLIENTS) {
		pthread_mutex_unlock(&c->lock);
		close(fd);
		return;
	}
	c->clients[i] = fd;
	c->detach[i] = 0;
	pthread_mutex_unlock(&c->lock);
	write_all(fd, c->hello);
}

/* A client said something (or closed). */
static void client_input(struct cli_ctl *c, int i)
{
	char buf[64];
	ssize_t n = read(c->clients[i], buf, sizeof(buf) - 1);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		drop_client(c, i);
		return;
	}
	buf[n] = '\0';
	if (!strncmp(buf, "detach", 6)) {
		c->detach[i] = 1;
		*c->stop = 1;
	} else if (!strncmp(buf, "sample ", 7)) {
		char reply[160];

		write_all(c->clients[i], cli_ctl_sample_request(atomic_load(&c->conn), buf + 7,
								 reply, sizeof(reply)));
	}
}

static void *ctl_main(void *arg)
{
	struct cli_ctl *c = arg;

	for (;;) {
		struct pollfd p[2 + CTL_MAX_CLIENTS];
		int map[2 + CTL_MAX_CLIENTS], n = 0, i;

		p[n].fd = c->wake[0];
		p[n++].events = POLLIN;
		p[n].fd = c->listen_fd;
		p[n++].events = POLLIN;
		pthread_mutex_lock(&c->lock);
		for (i = 0; i < CTL_MAX_CLIENTS; i++) {
			if (c->clients[i] < 0)
				continue;
			map[n] = i;
			p[n].fd = c->clients[i];
			p[n++].events = POLLIN;
		}
		pthread_mutex_unlock(&c->lock);
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[0].revents)
			return NULL; /* cli_ctl_close */
		if (p[1].revents & POLLIN)
			take_client(c);
		pthread_mutex_lock(&c->lock);
		for (i = 2; i < n; i++)
			if (p[i].revents && c->clients[map[i]] == p[i].fd)
				client_input(c, map[i]);
		pthread_mutex_unlock(&c->lock);
	}
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/*
 * Is the peer of fd (the holder of a session name, which anyone can take)
 * a heaptap we may believe: uid 0 or our euid, and its program the same
 * file as ours? Fills h->heaptap and h->uid. Its pidfd (SO_PEERPIDFD, where
 * the kernel has it) makes sure the program looked at is the peer's.
 */
static int holder_trusted(int fd, struct cli_ctl_holder *h)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred), plen = sizeof(int);
	struct stat me, it;
	char path[64];
	int pidfd = -1, ok;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		return 0;
	h->heaptap = cred.pid;
	h->uid = cred.uid;
	if ((cred.uid != 0 && cred.uid != geteuid()) || cred.pid <= 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &plen) < 0)
		pidfd = -1;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)cred.pid);
	ok = stat("/proc/self/exe", &me) == 0 && stat(path, &it) == 0 && me.st_dev == it.st_dev &&
	     me.st_ino == it.st_ino;
	if (pidfd >= 0) {
		ok = ok && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
		close(pidfd);
	}
	return ok;
}

/*
 * Ask the holder of name who it is; fills h. 0, or -errno (-ENOENT: nobody
 * listens; -EPERM: the holder is not a heaptap we trust, h->untrusted, and
 * nothing was read from it).
 */
static int ask_holder(const struct sockaddr_un *a, socklen_t alen, struct cli_ctl_holder *h,
		      int *fd_out)
{
	char line[256];
	int fd, ret;
	long long since = 0;
	int hp = 0, tp = 0;

	memset(h, 0, sizeof(*h));
	/* non-blocking: a holder that stopped accepting (full backlog) must not block us */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)a, alen) < 0) {
		if (errno == EAGAIN) {
			/* bound, but its backlog is full: who it is cannot be checked */
			h->untrusted = 1;
			h->uid = (uid_t)-1;
			close(fd);
			return -EPERM;
		}
		ret = errno == ECONNREFUSED ? -ENOENT : -errno;
		close(fd);
		return ret;
	}
	if (!holder_trusted(fd, h)) {
		h->untrusted = 1;
		close(fd);
		return -EPERM;
	}
	ret = read_line(fd, line, sizeof(line), CTL_HELLO_MS);
	if (ret >= 0 && sscanf(line, "heaptap-ctl 1 pid=%d since=%lld target=%d", &hp, &since, &tp) == 3) {
		h->since = since;
		h->answered = 1;
		if (hp > 0)
			h->heaptap = hp;
	}
	if (fd_out)
		*fd_out = fd;
	else
		close(fd);
	return 0;
}

int cli_ctl_open(pid_t pid, volatile sig_atomic_t *stop, struct cli_ctl **out,
		 struct cli_ctl_holder *h)
{
	struct sockaddr_un a;
	socklen_t alen;
	sigset_t all, old;
	struct cli_ctl *c;
	int ret, i;

	*out = NULL;
	ret = ctl_addr(pid, &a, &alen);
	if (ret < 0)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->stop = stop;
	atomic_init(&c->conn, -1);
	c->target_uid = target_uid(pid);
	c->wake[0] = c->wake[1] = -1;
	pthread_mutex_init(&c->lock, NULL);
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		c->clients[i] = -1;
	snprintf(c->hello, sizeof(c->hello), "heaptap-ctl 1 pid=%d since=%lld target=%d\n",
		 (int)getpid(), (long long)time(NULL), (int)pid);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->listen_fd < 0) {
		ret = -errno;
		goto out_free;
	}
	if (bind(c->listen_fd, (struct sockaddr *)&a, alen) < 0) {
		ret = -errno;
		if (ret == -EADDRINUSE) {
			ret = ask_holder(&a, alen, h, NULL);
			if (ret == -ENOENT) {
				/* the holder closed meanwhile: the name is free; one more try */
				if (bind(c->listen_fd, (struct sockaddr *)&a, alen) == 0)
					goto bound;
			}
			if (ret != -EPERM)
				ret = -EBUSY;
		}
		goto out_close;
	}
bound:
	if (listen(c->listen_fd, CTL_MAX_CLIENTS) < 0 || pipe2(c->wake, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out_close;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&c->thr, NULL, ctl_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		goto out_pipe;
	c->thr_ok = 1;
	*out = c;
	return 0;

out_pipe:
	close(c->wake[0]);
	close(c->wake[1]);
out_close:
	close(c->listen_fd);
out_free:
	pthread_mutex_destroy(&c->lock);
	free(c);
	return ret;
}

void cli_ctl_finish(struct cli_ctl *c, const struct cli_ctl_result *r)
{
	char line[CLI_CTL_PATH + 160];
	int i;

	if (!c)
		return;
	snprintf(line, sizeof(line), "done code=%d end=%d allocs=%llu restored=%llu left=%llu out=%s\n",
		 r->code, r->end_reason, (unsigned long long)r->allocs,
		 (unsigned long long)r->restored, (unsigned long long)r->left, r->out);
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (c->clients[i] >= 0 && c->detach[i])
			write_all(c->clients[i], line);
	pthread_mutex_unlock(&c->lock);
}

void cli_ctl_close(struct cli_ctl *c)
{
	int i;

	if (!c)
		return;
	if (c->thr_ok) {
		close(c->wake[1]);
		pthread_join(c->thr, NULL);
		close(c->wake[0]);
	}
	/* clients waiting for a result see EOF */
	for (i = 0; i < CTL_MAX_CLIENTS; i++)
		if (c->clients[i] >= 0)
			close(c->clients[i]);
	close(c->listen_fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int cli_ctl_who(pid_t pid, struct cli_ctl_holder *h)
{
	struct sockaddr_un a;
	socklen_t alen;
	int ret = ctl_addr(pid, &a, &alen);

	memset(h, 0, sizeof(*h));
	if (ret < 0)
		return ret;
	return ask_holder(&a, alen, h, NULL);
}

/*
 * exchange - one request line to the holder of pid's session and one answer
 * line back within timeout_ms. 0, or a negative errno (-EPIPE: the holder
 * closed without answering; -ETIMEDOUT: it never said hello).
 */
static int exchange(pid_t pid, const char *req, char *reply, size_t len, int timeout_ms,
		    struct cli_ctl_holder *h)
{
	struct sockaddr_un a;
	socklen_t alen;
	int fd = -1, ret = ctl_addr(pid, &a, &alen);

	memset(h, 0, sizeof(*h));
	if (ret < 0)
		return ret;
	ret = ask_holder(&a, alen, h, &fd);
	if (ret < 0)
		return ret;
	if (!h->answered) {
		close(fd);
		return -ETIMEDOUT;
	}
	write_all(fd, req);
	ret = read_line(fd, reply, len, timeout_ms);
	close(fd);
	return ret < 0 ? ret : 0;
}

int cli_ctl_detach(pid_t pid, unsigned timeout_ms, struct cli_ctl_holder *h,
		   struct cli_ctl_result *r)
{
	char line[CLI_CTL_PATH + 160];
	int ret, code, end;
	unsigned long long al, re, le;
	int off = 0;

	memset(r, 0, sizeof(*r));
	/* -EPIPE: the holder ended without a result (killed) */
	ret = exchange(pid, "detach\n", line, sizeof(line), (int)timeout_ms, h);
	if (ret < 0)
		return ret;
	if (sscanf(line, "done code=%d end=%d allocs=%llu restored=%llu left=%llu out=%n", &code, &end,
		   &al, &re, &le, &off) != 5 || !off)
		return -EPROTO;
	r->code = code;
	r->end_reason = end;
	r->allocs = al;
	r->restored = re;
	r->left = le;
	snprintf(r->out, sizeof(r->out), "%s", line + off);
	return 0;
}

void cli_ctl_set_conn(struct cli_ctl *c, int conn)
{
	if (!c)
		return;
	/* under the lock client_input runs with: no request still uses an fd being closed */
	pthread_mutex_lock(&c->lock);
	atomic_store(&c->conn, conn);
	pthread_mutex_unlock(&c->lock);
}

int cli_ctl_request(pid_t pid, const char *line, char *reply, size_t len, struct cli_ctl_holder *h)
{
	return exchange(pid, line, reply, len, CTL_HELLO_MS, h);
}

void cli_ctl_describe(const struct cli_ctl_holder *h, char *buf, size_t len)
{
	time_t s = (time_t)h->since;
	struct tm tm;
	char when[64];

	if (h->untrusted && h->uid == (uid_t)-1) {
		snprintf(buf, len, "held by a process that accepts no connection, which cannot be checked: "
			 "not trusted");
		return;
	}
	if (h->untrusted) {
		snprintf(buf, len, "held by uid %ld (pid %d), not a heaptap session: not trusted", (long)h->uid,
			 (int)h->heaptap);
		return;
	}
	if (!h->since || !gmtime_r(&s, &tm)) {
		snprintf(buf, len, "heaptap %d", (int)h->heaptap);
		return;
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "heaptap %d (attached since %s, %lld s ago)", (int)h->heaptap, when,
		 (long long)(time(NULL) - s));
}
