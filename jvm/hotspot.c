/* jvm/hotspot.c - ask a running HotSpot JVM to load heaptap's library as a JVMTI agent */
/* SPDX-License-Identifier: MIT */
/*
 * HotSpot's dynamic attach mechanism (what jcmd and jattach use): a JVM
 * whose attach listener is not running yet starts it when it gets SIGQUIT
 * while a file .attach_pid<PID> of its euid (or root) exists in its working
 * directory or its temporary directory (/tmp); the listener listens on
 * /tmp/.java_pid<PID>, a socket of mode 0600, and accepts a peer whose
 * euid and egid are its own (or root). PID is the JVM's pid in its own pid
 * namespace. A request is the protocol version "1", the command and three
 * arguments, each NUL-terminated; "load PATH true OPTIONS" loads PATH as a
 * JVMTI agent and calls its Agent_OnAttach. The answer is the command's
 * status on a line ("0": done), then the command's output (for load: the
 * agent's return value, "return code: N" in later JDKs); the JVM closes
 * the connection after it.
 *
 * The JVM is not trusted, nor its /tmp: the handshake runs in a child
 * that has dropped to the JVM's uid and gid (no supplementary groups, not
 * dumpable, no descriptor but the JVM's /tmp and the result pipe), so the
 * JVM's user can make it do nothing that user could not do; the /tmp is
 * the one of the JVM's root, opened with a symlink refused at each step
 * (attach/rootfs.c); the peer of the socket must be the JVM's process and
 * user (SO_PEERCRED); the answer is read up to JVM_REPLY_MAX bytes within
 * the deadline and escaped before it is shown. The parent waits for the
 * child's one result record through a pipe with the same deadline and
 * SIGKILLs it if it overstays.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach/attach.h"
#include "jvm/jvm.h"
#include "util/clock.h"
#include "util/procids.h"
#include "util/procread.h"

/* What the child hands back through the pipe. */
struct result {
	int ret;
	char why[240];
};

/* The JVM's ids and pid in its namespace, from /proc/PID/status. */
struct ids {
	uid_t uid;
	gid_t gid;
	long nspid;
};

enum jvm_kind jvm_hotspot_probe(pid_t pid, const char *libname, char *lib, size_t cap)
{
	enum jvm_kind kind = JVM_NONE;
	char path[64], line[4096 + 256];
	size_t nlen = strlen(libname);
	FILE *fp;

	if (cap)
		lib[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return JVM_NONE;
	while (fgets(line, sizeof(line), fp)) {
		char *p = strchr(line, '/'), *nl = strchr(line, '\n');
		size_t len;

		if (!p)
			continue;
		if (nl)
			*nl = '\0';
		len = strlen(p);
		if (strstr(p, "/libj9vm") || strstr(p, "/libopenj9"))
			kind = JVM_OTHER;
		else if (kind == JVM_NONE && len >= 10 && !strcmp(p + len - 10, "/libjvm.so"))
			kind = JVM_HOTSPOT;
		if (cap && !lib[0] && len > nlen && p[len - nlen - 1] == '/' &&
		    !strcmp(p + len - nlen, libname) && len < cap)
			memcpy(lib, p, len + 1); /* a " (deleted)" one does not end in libname */
	}
	fclose(fp);
	return kind;
}

/* The JVM's effective ids (util_ids_read), then its NSpid line's last pid. */
static int read_ids(pid_t pid, struct ids *id)
{
	char path[64], line[512];
	struct util_ids all;
	FILE *fp;
	int ret;

	ret = util_ids_read(pid, &all);
	if (ret < 0)
		return ret;
	id->uid = all.uid[UTIL_ID_EFFECTIVE];
	id->gid = all.gid[UTIL_ID_EFFECTIVE];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	id->nspid = 0;
	while (fgets(line, sizeof(line), fp) && id->nspid <= 0) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *last = strrchr(line, '\t');

			id->nspid = last ? strtol(last + 1, NULL, 10) : 0;
		}
	}
	fclose(fp);
	return id->nspid > 0 ? 0 : -ESRCH;
}

/* Whether the JVM was told to refuse attaching: its command line or the JVM's option variables say so. */
static int attach_disabled(pid_t pid)
{
	static const char flag[] = "-XX:+DisableAttachMechanism";
	static const char *const names[] = { "cmdline", "environ" };
	char *buf;
	size_t n, i;
	int hit = 0;

	buf = malloc(1 << 20);
	if (!buf)
		return 0;
	for (i = 0; i < 2 && !hit; i++) {
		int err = util_proc_read(pid, names[i], buf, 1 << 20, &n);

		if (err && err != -EFBIG) /* the first MiB of either is looked at */
			continue;
		/* an argument of its own, or inside JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, _JAVA_OPTIONS */
		for (size_t off = 0; off < n && !hit; off += strlen(buf + off) + 1) {
			const char *s = buf + off;

			if (i == 0 ? !strcmp(s, flag)
				   : ((!strncmp(s, "JAVA_TOOL_OPTIONS=", 18) ||
				       !strncmp(s, "JDK_JAVA_OPTIONS=", 17) || !strncmp(s, "_JAVA_OPTIONS=", 14)) &&
				      strstr(s, flag)))
				hit = 1;
		}
	}
	free(buf);
	return hit;
}

/* Append s (n bytes) to why, escaped: printable ASCII as is, the rest as \xNN, newlines as "; ". */
static void escape_into(char *why, size_t whylen, const char *s, size_t n)
{
	size_t w = strlen(why);

	for (size_t i = 0; i < n && whylen - w > 5; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			w += (size_t)snprintf(why + w, whylen - w, "%s", i + 1 < n ? "; " : "");
		else if (c >= 0x20 && c < 0x7f && c != '\\')
			why[w++] = (char)c;
		else
			w += (size_t)snprintf(why + w, whylen - w, "\\x%02x", c);
		why[w] = '\0';
	}
}

int jvm_reply_parse(const char *buf, size_t len, char *why, size_t whylen)
{
	const char *nl = memchr(buf, '\n', len), *rest;
	char num[24];
	size_t rlen, k;
	long code, agent;

	why[0] = '\0';
	if (!nl || nl == buf || (size_t)(nl - buf) >= sizeof(num))
		goto bad;
	memcpy(num, buf, (size_t)(nl - buf));
	num[nl - buf] = '\0';
	for (k = num[0] == '-'; num[k]; k++)
		if (!isdigit((unsigned char)num[k]))
			goto bad;
	code = strtol(num, NULL, 10);
	rest = nl + 1;
	rlen = len - (size_t)(rest - buf);
	if (code != 0) {
		snprintf(why, whylen, "the JVM refused to load the agent (status %ld): ", code);
		escape_into(why, whylen, rest, rlen);
		return -EPROTO;
	}
	if (rlen > 13 && !memcmp(rest, "return code: ", 13)) {
		rest += 13;
		rlen -= 13;
	}
	for (k = 0; k < rlen && k < sizeof(num) - 1 && rest[k] != '\n'; k++)
		num[k] = rest[k];
	num[k] = '\0';
	if (!k || (num[0] != '-' && !isdigit((unsigned char)num[0])))
		goto bad;
	agent = strtol(num, NULL, 10);
	if (agent != 0) {
		snprintf(why, whylen, "the agent did not start (Agent_OnAttach returned %ld)", agent);
		return -EPROTO;
	}
	return 0;
bad:
	snprintf(why, whylen, "not an answer of HotSpot's attach protocol: \"");
	escape_into(why, whylen, buf, len > 120 ? 120 : len);
	escape_into(why, whylen, "\"", 1);
	return -EPROTO;
}

static int64_t left_ms(uint64_t deadline)
{
	uint64_t now = util_mono_ns();

	return now >= deadline ? 0 : (int64_t)((deadline - now) / 1000000) + 1;
}

/* Wait until the listener's socket is there (a socket of the JVM's uid). 0 or -ETIMEDOUT. */
static int wait_socket(int tmpfd, const char *sock, uid_t uid, uint64_t deadline)
{
	struct stat st;

	for (;;) {
		if (fstatat(tmpfd, sock, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
		    st.st_uid == uid)
			return 0;
		if (!left_ms(deadline))
			return -ETIMEDOUT;
		usleep(20000);
	}
}

/* Start the attach listener: the trigger file, SIGQUIT, wait for the socket; the file is removed. */
static int trigger(pid_t pid, int tmpfd, const struct ids *id, const char *sock, uint64_t deadline,
		   struct result *res)
{
	char name[48];
	int fd, ret;

	snprintf(name, sizeof(name), ".attach_pid%ld", id->nspid);
	fd = openat(tmpfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno != EEXIST) {
		ret = -errno;
		snprintf(res->why, sizeof(res->why), "cannot create /tmp/%s in its root: %s", name,
			 strerror(errno));
		return ret;
	}
	if (fd >= 0)
		close(fd);
	if (kill(pid, SIGQUIT) < 0) {
		ret = -errno;
		snprintf(res->why, sizeof(res->why), "SIGQUIT: %s", strerror(errno));
	} else {
		ret = wait_socket(tmpfd, sock, id->uid, deadline);
		if (ret < 0)
			snprintf(res->why, sizeof(res->why),
				 "its attach listener did not start within %u ms (no /tmp/%s)", JVM_ATTACH_MS,
				 sock);
	}
	if (fd >= 0)
		unlinkat(tmpfd, name, 0);
	return ret;
}

/* Connect to the listener and check who answers. The socket, or -errno (res->why says). */
static int connect_checked(pid_t pid, int tmpfd, const struct ids *id, const char *sock, struct result *res)
{
	struct sockaddr_un sa;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	int s, ret;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", tmpfd, sock);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		snprintf(res->why, sizeof(res->why), "connect /tmp/%s: %s", sock, strerror(errno));
		close(s);
		return ret;
	}
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0 || cr.pid != pid || cr.uid != id->uid) {
		snprintf(res->why, sizeof(res->why),
			 "/tmp/%s is not the JVM's: its peer is pid %d uid %u, not pid %d uid %u", sock,
			 (int)cr.pid, (unsigned)cr.uid, (int)pid, (unsigned)id->uid);
		close(s);
		return -EPERM;
	}
	return s;
}

/* Send the load request and read the answer until EOF, the cap or the deadline. */
static int request(int s, const char *lib, uint64_t deadline, struct result *res)
{
	char req[4200], reply[JVM_REPLY_MAX];
	size_t n = 0, len = strlen(lib), got = 0;
	struct pollfd pfd = { .fd = s, .events = POLLIN };
	ssize_t r;

	if (len > sizeof(req) - 32)
		return -ENAMETOOLONG;
	memcpy(req, "1\0load\0", 7);
	n = 7;
	memcpy(req + n, lib, len + 1);
	n += len + 1;
	memcpy(req + n, "true\0heaptap\0", 13);
	n += 13;
	if (send(s, req, n, MSG_NOSIGNAL) != (ssize_t)n) {
		snprintf(res->why, sizeof(res->why), "sending the load request: %s", strerror(errno));
		return -EIO;
	}
	while (got < sizeof(reply)) {
		int64_t ms = left_ms(deadline);

		if (!ms || poll(&pfd, 1, (int)ms) == 0) {
			snprintf(res->why, sizeof(res->why), "the JVM did not answer within %u ms", JVM_ATTACH_MS);
			return -ETIMEDOUT;
		}
		r = read(s, reply + got, sizeof(reply) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return jvm_reply_parse(reply, got, res->why, sizeof(res->why));
}

/* The child: drop to the JVM's ids, then the whole handshake. Never returns. */
static void child(pid_t pid, int tmpfd, int wfd, const struct ids *id, const char *lib, uint64_t deadline)
{
	struct result res;
	char sock[48];
	struct stat st;
	int s;

	memset(&res, 0, sizeof(res));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (setgroups(0, NULL) < 0 || setresgid(id->gid, id->gid, id->gid) < 0 ||
	    setresuid(id->uid, id->uid, id->uid) < 0) {
		res.ret = -errno;
		snprintf(res.why, sizeof(res.why), "cannot take the JVM's user %u: %s", (unsigned)id->uid,
			 strerror(errno));
		goto out;
	}
	prctl(PR_SET_DUMPABLE, 0);
	snprintf(sock, sizeof(sock), ".java_pid%ld", id->nspid);
	if (fstatat(tmpfd, sock, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != id->uid)
		res.ret = trigger(pid, tmpfd, id, sock, deadline, &res);
	if (res.ret == 0) {
		s = connect_checked(pid, tmpfd, id, sock, &res);
		res.ret = s < 0 ? s : request(s, lib, deadline, &res);
		if (s >= 0)
			close(s);
	}
out:
	if (write(wfd, &res, sizeof(res)) < 0)
		_exit(1);
	_exit(0);
}

/* Wait for the child's record within the deadline (or *stop); the child is reaped, killed if need be. */
static int parent_wait(pid_t kid, int rfd, uint64_t deadline, const volatile sig_atomic_t *stop,
		       struct result *res)
{
	struct pollfd pfd = { .fd = rfd, .events = POLLIN };
	ssize_t r = 0;
	int ret = -ETIMEDOUT;

	for (;;) {
		int64_t ms = left_ms(deadline + 500000000ull); /* the child's own deadline comes first */

		if (!ms || (stop && *stop))
			break;
		if (poll(&pfd, 1, ms > 50 ? 50 : (int)ms) > 0) {
			r = read(rfd, res, sizeof(*res));
			ret = r == (ssize_t)sizeof(*res) ? 1 : -EIO;
			break;
		}
	}
	if (ret != 1)
		kill(kid, SIGKILL);
	while (waitpid(kid, NULL, 0) < 0 && errno == EINTR)
		;
	if (ret == -ETIMEDOUT && stop && *stop)
		snprintf(res->why, sizeof(res->why), "interrupted before the JVM answered");
	else if (ret == -ETIMEDOUT)
		snprintf(res->why, sizeof(res->why), "no answer within %u ms", JVM_ATTACH_MS);
	else if (ret == -EIO)
		snprintf(res->why, sizeof(res->why), "the attach helper died");
	else
		ret = res->ret;
	return ret;
}

int jvm_hotspot_load(pid_t pid, const char *lib, const volatile sig_atomic_t *stop, char *why, size_t whylen)
{
	char procdir[32];
	struct result res;
	struct ids id = { 0, 0, 0 };
	int tmpfd, p[2], ret;
	uint64_t deadline = util_mono_ns() + (uint64_t)JVM_ATTACH_MS * 1000000;
	pid_t kid;

	memset(&res, 0, sizeof(res));
	if (lib[0] != '/') {
		snprintf(why, whylen, "heaptap's library is not at a path the JVM can see");
		return -ENOENT;
	}
	if (attach_disabled(pid)) {
		snprintf(why, whylen, "the JVM was started with -XX:+DisableAttachMechanism");
		return -EPERM;
	}
	ret = read_ids(pid, &id);
	if (ret < 0) {
		snprintf(why, whylen, "/proc/%d/status: %s", (int)pid, strerror(-ret));
		return ret;
	}
	snprintf(procdir, sizeof(procdir), "/proc/%d", (int)pid);
	tmpfd = att_open_root_dir(procdir, "tmp");
	if (tmpfd < 0) {
		snprintf(why, whylen, "its /tmp: %s", strerror(-tmpfd));
		return tmpfd;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		ret = -errno;
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		goto out_tmp;
	}
	kid = fork();
	if (kid < 0) {
		ret = -errno;
		snprintf(why, whylen, "fork: %s", strerror(errno));
		goto out_pipe;
	}
	if (kid == 0) {
		/* only the JVM's /tmp and the pipe, at 3 and 4; everything else of heaptap closed */
		if (dup2(tmpfd, 100) < 0 || dup2(p[1], 101) < 0 || dup2(100, 3) < 0 || dup2(101, 4) < 0)
			_exit(1);
		syscall(SYS_close_range, 5u, ~0u, 0u);
		child(pid, 3, 4, &id, lib, deadline);
	}
	close(p[1]);
	p[1] = -1;
	ret = parent_wait(kid, p[0], deadline, stop, &res);
	snprintf(why, whylen, "%s", res.why);
out_pipe:
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
out_tmp:
	close(tmpfd);
	return ret;
}
