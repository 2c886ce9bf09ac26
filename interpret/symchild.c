/* interpret/symchild.c - read the target's ELF and DWARF in a child process with least privilege */
/* SPDX-License-Identifier: MIT */
/*
 * ELF and DWARF come from files the target chose (it maps them) and libdw
 * parses them: a crafted file could crash it, make it loop or allocate
 * without end. So with opt->sym_child the parsing runs in a forked child:
 * with opt->sym_drop it drops to the target's user and groups first (it
 * then reads what the target could read, through the fds pinned for it);
 * (the target's user is looked up again at the fork: a recorded program
 * may have left root since it started); it sets no_new_privs, is not
 * dumpable, dies with heaptap, gets an
 * address-space limit (what it has plus SYM_AS_EXTRA or the memory budget)
 * and a CPU limit, and keeps no fd but its pipe and the pinned files.
 *
 * The child writes each ip's chain into a pipe in the order of v:
 *   u32 i | u32 n | n x (u32 line | u16 function length | u16 file length |
 *   function bytes, NUL | file bytes, NUL)      (length 0xffff = none)
 * and last u32 0xffffffff | u32 modules whose build-id did not match,
 * and the parent writes them into the recording. A child that dies, stops
 * answering or is killed on a second stop leaves the rest as addresses;
 * res->sym_error says what happened (one line). Not answering is counted
 * in the child's CPU time (SYM_IDLE_MS of it without a chain: it loops) and
 * in time without CPU either (SYM_IDLE_MS: it hangs), never in time alone:
 * on a loaded machine a child that works gets little CPU, and its chains
 * come in 64 KiB writes. The target's user can signal the child; it cannot
 * do more than stop it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interpret/sym_internal.h"
#include "util/procids.h"
#include "util/procread.h"

#define SYM_AS_EXTRA ((uint64_t)1 << 30) /* address space the child may add, at least */
#define SYM_CPU_S 300			 /* CPU seconds the child may use */
#define SYM_IDLE_MS 30000		 /* no chain for this long, working or not */
#define SYM_FAULT_IDLE_MS 1000		 /* the same, under the tests' slow-child faults */
#define NAME_MAX_LEN 4096		 /* bytes of a name sent, longer ones are cut */
#define NONE_LEN 0xffff

struct out {
	int fd;
	uint8_t buf[64 << 10];
	size_t len;
};

static int out_flush(struct out *o)
{
	size_t off = 0;

	while (off < o->len) {
		ssize_t n = write(o->fd, o->buf + off, o->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	o->len = 0;
	return 0;
}

static int out_put(struct out *o, const void *p, size_t n)
{
	if (n > sizeof(o->buf) - o->len && out_flush(o))
		return -1;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

static uint16_t str_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return s ? (uint16_t)(n > NAME_MAX_LEN ? NAME_MAX_LEN : n) : NONE_LEN;
}

static int child_sink(void *arg, size_t i, const struct rec_sym *chain, size_t n)
{
	struct out *o = arg;
	uint32_t h[2] = {(uint32_t)i, (uint32_t)n};
	size_t k;

	if (out_put(o, h, sizeof(h)))
		return -ITP_E_IO;
	for (k = 0; k < n; k++) {
		uint16_t fl = str_len(chain[k].function), sl = str_len(chain[k].file);
		uint32_t line = chain[k].line;

		if (out_put(o, &line, 4) || out_put(o, &fl, 2) || out_put(o, &sl, 2) ||
		    (fl != NONE_LEN && (out_put(o, chain[k].function, fl) || out_put(o, "", 1))) ||
		    (sl != NONE_LEN && (out_put(o, chain[k].file, sl) || out_put(o, "", 1))))
			return -ITP_E_IO;
	}
	return 0;
}

static int fd_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* close every fd but keep[0, n) */
static void close_others(int *keep, size_t n)
{
	unsigned lo = 0;
	size_t i;

	qsort(keep, n, sizeof(*keep), fd_cmp);
	for (i = 0; i < n; i++) {
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0u, 0);
}

static uint64_t vm_bytes(void)
{
	unsigned long long pages = 0;
	char buf[128];
	int err = util_read_file("/proc/self/statm", buf, sizeof(buf), NULL);

	if ((err && err != -EFBIG) || sscanf(buf, "%llu", &pages) != 1)
		pages = 0;
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/*
 * Who the child runs as, decided again now: a target that started as root
 * (a recorded program) may have become another user since. *drop, *uid,
 * *gid: the user to become; c->sym_paths: whether the stream's paths may be
 * opened (the child is not root, the target is root at both ends, or it is
 * a program we started as root that has exited: see itp_options.launched).
 */
static void choose_user(struct itp_ctx *c, int *drop, uint32_t *uid, uint32_t *gid)
{
	const struct itp_options *opt = c->opt;
	struct util_ids ids = { 0 }; /* left alone when it cannot be read */
	int now = opt->pid > 0 ? util_ids_read(opt->pid, &ids) : -ESRCH;
	uint32_t u = ids.uid[UTIL_ID_EFFECTIVE], g = ids.gid[UTIL_ID_EFFECTIVE];

	*drop = opt->sym_drop;
	*uid = opt->sym_uid;
	*gid = opt->sym_gid;
	if (geteuid() != 0) {
		c->sym_paths = 1; /* we are the target's user (or could not trace it) */
		return;
	}
	if (!now && u != 0) {
		*drop = 1;
		*uid = u;
		*gid = g;
	}
	c->sym_paths = *drop || (!now && u == 0) || (now && opt->launched && !opt->sym_drop);
}

static int limit_self(const struct itp_ctx *c, int drop, uint32_t uid, uint32_t gid)
{
	const struct itp_options *opt = c->opt;
	uint64_t extra = opt->max_memory > SYM_AS_EXTRA ? opt->max_memory : SYM_AS_EXTRA;
	struct rlimit as = {.rlim_cur = vm_bytes() + extra, .rlim_max = vm_bytes() + extra};
	struct rlimit cpu = {.rlim_cur = SYM_CPU_S, .rlim_max = SYM_CPU_S + 5};
	struct rlimit core = {0};

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || prctl(PR_SET_DUMPABLE, 0))
		return -1;
	if (drop) {
		gid_t g = (gid_t)gid;
		uid_t u = (uid_t)uid;

		if (setgroups(0, NULL) || setresgid(g, g, g) || setresuid(u, u, u) ||
		    getuid() != u || geteuid() != u || getegid() != g)
			return -1;
		prctl(PR_SET_DUMPABLE, 0);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	if (setrlimit(RLIMIT_AS, &as) || setrlimit(RLIMIT_CPU, &cpu) || setrlimit(RLIMIT_CORE, &core))
		return -1;
	if (!opt->debuginfod)
		unsetenv("DEBUGINFOD_URLS");
	return 0;
}

static int fault_is(const char *what)
{
	const char *f = getenv("HEAPTAP_FAULT");

	return f && !strcmp(f, what);
}

struct child_user {
	int drop;
	uint32_t uid, gid;
};

static __attribute__((noreturn)) void child_main(struct itp_ctx *c, const struct itp_symq *v,
						 size_t nv, int wfd, int root_fd,
						 const struct child_user *who)
{
	struct out *o = malloc(sizeof(*o));
	int *keep = malloc((c->pins.n + 4) * sizeof(*keep));
	size_t nk = 0, i;
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (!o || !keep)
		_exit(2);
	keep[nk++] = 2; /* libdw prints nothing, but a sanitizer report goes there */
	keep[nk++] = wfd;
	if (root_fd >= 0)
		keep[nk++] = root_fd;
	for (i = 0; i < c->pins.n; i++)
		keep[nk++] = c->pins.v[i].fd;
	close_others(keep, nk);
	if (limit_self(c, who->drop, who->uid, who->gid))
		_exit(3);
	/*
	 * the fault points of the tests (HEAPTAP_FAULT, as attach/ has): a
	 * symbolizer that crashes, one that works for 3 idle limits before its
	 * first chain with a tenth of a CPU (as a starved one does), one that
	 * hangs
	 */
	if (fault_is("symbolizer")) {
		signal(SIGSEGV, SIG_DFL);
		raise(SIGSEGV);
	}
	if (fault_is("symbolizer-busy")) {
		uint64_t end = util_mono_ns() + 3ull * SYM_FAULT_IDLE_MS * 1000000ull;
		volatile uint64_t spin = 0;

		while (util_mono_ns() < end) {
			uint64_t slice = util_mono_ns() + 1000000;

			while (util_mono_ns() < slice)
				spin++;
			usleep(9000);
		}
	}
	if (fault_is("symbolizer-hang"))
		for (;;)
			pause();
	o->fd = wfd;
	o->len = 0;
	if (itp_sym_batch(c, v, nv, child_sink, o, NULL, root_fd))
		_exit(4);
	{
		uint32_t t[2] = {UINT32_MAX, (uint32_t)c->res->warn.build_id_mismatch};

		if (out_put(o, t, sizeof(t)) || out_flush(o))
			_exit(4);
	}
	_exit(0);
}

/* the parent's side: chains in, recording out */
struct in {
	int fd;
	uint8_t *buf;
	size_t len, off, cap;
};

/* read what the pipe holds after the bytes not taken yet; 1, 0 (interrupted) or -1 (EOF, error) */
static int fill(struct in *in)
{
	ssize_t r;

	if (in->off) {
		memmove(in->buf, in->buf + in->off, in->len - in->off);
		in->len -= in->off;
		in->off = 0;
	}
	r = read(in->fd, in->buf + in->len, in->cap - in->len);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r <= 0)
		return -1;
	in->len += (size_t)r;
	return 1;
}

/* one whole chain at in->off, or 0 when more bytes are needed; -1 = malformed */
static int take_chain(struct in *in, size_t nv, uint32_t *i, struct rec_sym *chain, size_t *n)
{
	const uint8_t *p = in->buf + in->off, *end = in->buf + in->len;
	uint32_t h[2];
	size_t k;

	if ((size_t)(end - p) < sizeof(h))
		return 0;
	memcpy(h, p, sizeof(h));
	p += sizeof(h);
	if (h[0] == UINT32_MAX) {
		*i = h[0];
		*n = h[1];
		in->off = (size_t)(p - in->buf);
		return 1;
	}
	if (h[0] >= nv || h[1] > ITP_MAX_INLINE)
		return -1;
	for (k = 0; k < h[1]; k++) {
		uint16_t fl, sl;
		uint32_t line;
		size_t need;

		if ((size_t)(end - p) < 8)
			return 0;
		memcpy(&line, p, 4);
		memcpy(&fl, p + 4, 2);
		memcpy(&sl, p + 6, 2);
		p += 8;
		if (fl != NONE_LEN && fl > NAME_MAX_LEN)
			return -1;
		if (sl != NONE_LEN && sl > NAME_MAX_LEN)
			return -1;
		need = (fl == NONE_LEN ? 0 : fl + 1u) + (size_t)(sl == NONE_LEN ? 0 : sl + 1u);
		if ((size_t)(end - p) < need)
			return 0;
		chain[k].line = line;
		chain[k].function = NULL;
		chain[k].file = NULL;
		if (fl != NONE_LEN) {
			if (p[fl])
				return -1;
			chain[k].function = (const char *)p;
			p += fl + 1u;
		}
		if (sl != NONE_LEN) {
			if (p[sl])
				return -1;
			chain[k].file = (const char *)p;
			p += sl + 1u;
		}
	}
	*i = h[0];
	*n = h[1];
	in->off = (size_t)(p - in->buf);
	return 1;
}

static void say_status(struct itp_ctx *c, int status, const char *why)
{
	char *d = c->res->sym_error;
	size_t n = sizeof(c->res->sym_error);

	if (why)
		snprintf(d, n, "%s", why);
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
		snprintf(d, n, "the symbolizer used its %d s of CPU", SYM_CPU_S);
	else if (WIFSIGNALED(status))
		snprintf(d, n, "the symbolizer was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		snprintf(d, n, "the symbolizer could not drop its privileges");
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		snprintf(d, n, "the symbolizer failed (exit status %d: out of memory or its address-space limit)",
			 WEXITSTATUS(status));
}

/* the CPU time pid used so far, in ns (0 when it cannot be read) */
static uint64_t cpu_ns(pid_t pid)
{
	unsigned long long ut = 0, st = 0;
	char buf[512], *p;
	int err = util_proc_read(pid, "stat", buf, sizeof(buf), NULL);

	if (err && err != -EFBIG) /* the fields wanted come within the first 512 bytes */
		return 0;
	/* after the name's ")": state, then utime and stime are the 12th and 13th fields */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/*
 * whether the child stopped answering: idle_ms of its CPU time without a
 * chain (it loops), or idle_ms with neither CPU nor a chain (it hangs);
 * *cpu_chain, *cpu_seen, *still_since: its CPU time at the last chain
 * (UINT64_MAX: one just came), when last looked at, and since when it has
 * not changed
 */
static int not_answering(pid_t pid, uint64_t idle_ms, uint64_t *cpu_chain, uint64_t *cpu_seen,
			 uint64_t *still_since)
{
	uint64_t now = util_mono_ns(), cpu = cpu_ns(pid);

	if (*cpu_chain == UINT64_MAX)
		*cpu_chain = cpu;
	if (cpu != *cpu_seen) {
		*cpu_seen = cpu;
		*still_since = now;
	}
	return cpu - *cpu_chain > idle_ms * 1000000ull || now - *still_since > idle_ms * 1000000ull;
}

/* read chains until the child is done; the index of the first ip not written */
static size_t pump(struct itp_ctx *c, const struct itp_symq *v, size_t nv, pid_t pid, struct in *in,
		   const char **why, int *ret)
{
	struct rec_sym chain[ITP_MAX_INLINE];
	uint64_t still_since = util_mono_ns(), cpu_chain = cpu_ns(pid), cpu_seen = cpu_chain;
	uint64_t idle_ms = fault_is("symbolizer-busy") || fault_is("symbolizer-hang")
				   ? SYM_FAULT_IDLE_MS
				   : SYM_IDLE_MS;
	size_t next = 0, n;
	uint32_t i;
	int rc;

	for (;;) {
		struct pollfd pf = {.fd = in->fd, .events = POLLIN};

		while ((rc = take_chain(in, nv, &i, chain, &n)) == 1) {
			if (i == UINT32_MAX) {
				c->res->warn.build_id_mismatch += n;
				return next;
			}
			if (i != next) {
				*why = "the symbolizer sent chains out of order";
				return next;
			}
			*ret = itp_sym_put(c, &v[next], chain, n);
			next++;
			if (*ret)
				return next;
			cpu_chain = UINT64_MAX; /* taken at the next look */
			still_since = util_mono_ns();
		}
		if (rc < 0) {
			*why = "the symbolizer sent a malformed chain";
			return next;
		}
		if (c->opt->stop && *c->opt->stop >= 2) {
			*why = "symbolization skipped on a second stop";
			return next;
		}
		if (not_answering(pid, idle_ms, &cpu_chain, &cpu_seen, &still_since)) {
			*why = "the symbolizer stopped answering";
			return next;
		}
		if (in->len - in->off == in->cap && in->off == 0) {
			*why = "the symbolizer sent a chain too long";
			return next;
		}
		rc = poll(&pf, 1, 250);
		if (rc < 0 && errno != EINTR)
			return next;
		if (rc > 0 && fill(in) < 0)
			return next;
	}
}

int itp_symchild_run(struct itp_ctx *c, const struct itp_symq *v, size_t nv)
{
	struct in in = {.fd = -1, .cap = (size_t)ITP_MAX_INLINE * 2 * (NAME_MAX_LEN + 16) + 64};
	const char *why = NULL;
	int fds[2] = {-1, -1}, status = 0, ret = 0, root_fd = -1;
	struct child_user who;
	size_t next = 0;
	pid_t pid = -1;

	choose_user(c, &who.drop, &who.uid, &who.gid);
	/* the child may not be allowed to open /proc/PID/root once it is the target's user */
	if (c->opt->sysroot && c->opt->sysroot[0])
		root_fd = open(c->opt->sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
	in.buf = malloc(in.cap);
	if (!in.buf || pipe2(fds, O_CLOEXEC))
		why = "the symbolizer could not be started (out of memory or file descriptors)";
	else
		pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child_main(c, v, nv, fds[1], root_fd, &who);
	}
	if (fds[1] >= 0)
		close(fds[1]);
	in.fd = fds[0];
	if (pid < 0 && !why) {
		why = "the symbolizer could not be started";
	} else if (pid > 0) {
		next = pump(c, v, nv, pid, &in, &why, &ret);
		if (next < nv || why)
			kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (next < nv && !ret) {
		say_status(c, status, why);
		c->res->sym_left = nv - next;
	}
	if (in.fd >= 0)
		close(in.fd);
	if (root_fd >= 0)
		close(root_fd);
	free(in.buf);
	/* the rest stay addresses, with their modules */
	for (; next < nv && !ret; next++)
		ret = itp_sym_put(c, &v[next], NULL, 0);
	return ret;
}
