/* cli/session.c - the private session directory and its listening socket */
/* SPDX-License-Identifier: MIT */
/*
 * docs/design.md "Leave no file behind": files of a session live in a private 0700 directory and
 * are removed on every path. mkdtemp() creates the directory 0700; the
 * socket inside it is reachable only by its owner (and root).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

#define POLL_MS 50

int cli_session_open(struct cli_session *s)
{
	struct sockaddr_un addr;
	const char *tmp = getenv("TMPDIR");
	int n, ret;

	s->dir[0] = '\0';
	s->sock[0] = '\0';
	s->listen_fd = -1;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	n = snprintf(s->dir, sizeof(s->dir), "%s/heaptap-XXXXXX", tmp);
	if (n < 0 || (size_t)n >= sizeof(s->dir)) {
		s->dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (!mkdtemp(s->dir)) {
		ret = -errno;
		s->dir[0] = '\0';
		return ret;
	}
	n = snprintf(s->sock, sizeof(s->sock), "%s/sock", s->dir);
	if (n < 0 || (size_t)n >= sizeof(s->sock) || (size_t)n >= sizeof(addr.sun_path)) {
		s->sock[0] = '\0';
		ret = -ENAMETOOLONG;
		goto out_rmdir;
	}
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0) {
		ret = -errno;
		goto out_rmdir;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, s->sock, (size_t)n + 1);
	if (bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		ret = -errno;
		goto out_close;
	}
	if (listen(s->listen_fd, 4) < 0) {
		ret = -errno;
		goto out_unlink;
	}
	return 0;

out_unlink:
	unlink(s->sock);
out_close:
	close(s->listen_fd);
	s->listen_fd = -1;
out_rmdir:
	s->sock[0] = '\0';
	rmdir(s->dir);
	s->dir[0] = '\0';
	return ret;
}

/* Stop listening: close and unlink the socket (the directory stays until close). */
static void stop_listening(struct cli_session *s)
{
	if (s->listen_fd >= 0) {
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	if (s->sock[0]) {
		unlink(s->sock);
		s->sock[0] = '\0';
	}
}

/* Accept one pending connection; 1 if it is pid's, 0 if not ours or none, -errno. */
static int take(struct cli_session *s, pid_t pid, int *conn)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd;

	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return 0;
		return -errno;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid != pid) {
		/* Not the program we started: someone else of our user, or a
		 * process it started before its own library connected. */
		close(fd);
		return 0;
	}
	*conn = fd;
	return 1;
}

int cli_session_accept(struct cli_session *s, pid_t pid, int *conn, int *exited, int *status)
{
	struct pollfd pfd;
	int ret;

	*conn = -1;
	*exited = 0;
	if (s->listen_fd < 0)
		return -EBADF;
	/* Non-blocking, so a connection that vanished between poll and accept
	 * does not block us. */
	if (fcntl(s->listen_fd, F_SETFL, fcntl(s->listen_fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	for (;;) {
		pid_t w;

		pfd.fd = s->listen_fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		ret = poll(&pfd, 1, POLL_MS);
		if (ret < 0 && errno != EINTR)
			return -errno;
		if (ret > 0) {
			ret = take(s, pid, conn);
			if (ret < 0)
				return ret;
			if (ret > 0)
				break;
		}
		w = waitpid(pid, status, WNOHANG);
		if (w < 0 && errno != EINTR)
			return -errno;
		if (w == pid) {
			/* It may have connected just before exiting: its
			 * connection still waits in the backlog. */
			*exited = 1;
			do {
				ret = take(s, pid, conn);
			} while (ret == 0 && poll(&pfd, 1, 0) > 0);
			if (ret < 0)
				return ret;
			if (ret == 0)
				return -ECHILD;
			break;
		}
	}
	stop_listening(s);
	return 0;
}

void cli_session_close(struct cli_session *s)
{
	stop_listening(s);
	if (s->dir[0]) {
		rmdir(s->dir);
		s->dir[0] = '\0';
	}
}
