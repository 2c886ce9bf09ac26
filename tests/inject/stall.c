/* tests/inject/stall.c - the library when heaptap reads slowly, or stops reading */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: inject_stall INJECT_LIB
 *
 * A forked child plays heaptap: it accepts the library's connection and
 * reads the stream, or stops reading, or sends STOP, as this process (the
 * target) tells it through a pipe. The target runs two threads that call
 * malloc/free through its own GOT slot all the time, loads the library and
 * calls its start function itself (as attach/ would), then checks:
 *
 *   1. heaptap stops reading: the allocating threads soon wait (the socket
 *      is full). heaptap sends STOP and still reads nothing: the library
 *      must read the STOP anyway and put the malloc slot back (before_end
 *      runs before the last flush) within STOP_MS: the timer thread must
 *      not queue behind the blocked hooks and read the STOP only once
 *      heaptap drains the socket. Then heaptap reads again: the stream ends
 *      with END, reason STOP, and the threads allocate again.
 *   2. A second session; heaptap stops reading and never reads again (a
 *      hung heaptap, or a connection another process holds): after the
 *      library's stall limit (10 s without a byte taken) the session ends by
 *      itself, the slot is back and the threads run again (not blocked in
 *      the send for good).
 *
 * Prints "key value" lines; each failed check prints "FAIL what" and makes
 * the exit 1. "OK" at the end.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#include "elf/elfr.h"
#include "track/wire.h"

#define STOP_MS 5000	     /* STOP read and slot restored while heaptap reads nothing */
#define STALL_LIMIT_MS 10000 /* the library's TRK_SEND_STALL_MS */
#define MAX_SLOTS 256

static int failed;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		printf("FAIL " __VA_ARGS__);                                                       \
		printf("\n");                                                                      \
		failed = 1;                                                                        \
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- the child: heaptap's side ------------------------------------------ */

/* handle_stream - parse what arrived; 1 once END was seen (its reason in *reason). */
struct stream {
	uint8_t buf[1 << 20];
	size_t len;
	size_t hdr_left; /* header bytes still to skip; SIZE_MAX until its length is known */
};

static int parse(struct stream *s, uint64_t *reason)
{
	size_t off = 0;
	int end = 0;

	if (s->hdr_left == SIZE_MAX) {
		struct wire_header h;

		if (s->len < sizeof(h))
			return 0;
		memcpy(&h, s->buf, sizeof(h));
		s->hdr_left = h.header_len;
	}
	if (s->hdr_left) {
		size_t k = s->len < s->hdr_left ? s->len : s->hdr_left;

		off += k;
		s->hdr_left -= k;
	}
	while (!end && off < s->len) {
		const uint8_t *p = s->buf + off + 1, *e = s->buf + s->len;
		uint64_t len;

		if (wire_get_varint(&p, e, &len) < 0 || len > (uint64_t)(e - p))
			break; /* incomplete */
		if (s->buf[off] == WIRE_REC_END) {
			const uint8_t *q = p;
			uint64_t total;

			if (wire_get_varint(&q, p + len, &total) == 0 &&
			    wire_get_varint(&q, p + len, reason) == 0)
				end = 1;
		}
		off = (size_t)(p - s->buf) + (size_t)len;
	}
	memmove(s->buf, s->buf + off, s->len - off);
	s->len -= off;
	return end;
}

static void child(int lfd, int cmd, int rep)
{
	static struct stream s;

	for (;;) {
		struct pollfd pl[2] = {{.fd = lfd, .events = POLLIN}, {.fd = cmd, .events = POLLIN}};
		int fd, reading = 1;
		char c;

		if (poll(pl, 2, -1) < 0)
			continue;
		if (pl[1].revents) {
			if (read(cmd, &c, 1) != 1 || c == 'q')
				_exit(0);
			continue;
		}
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		memset(&s, 0, offsetof(struct stream, buf));
		s.len = 0;
		s.hdr_left = SIZE_MAX;
		for (;;) {
			struct pollfd p[2] = {{.fd = fd, .events = reading ? POLLIN : 0},
					      {.fd = cmd, .events = POLLIN}};
			uint64_t reason = 0;

			if (poll(p, 2, -1) < 0)
				continue;
			if (p[1].revents) {
				if (read(cmd, &c, 1) != 1 || c == 'q')
					_exit(0);
				if (c == 'p')
					reading = 0;
				else if (c == 'r')
					reading = 1;
				else if (c == 's') {
					uint8_t stop[2] = {WIRE_CTL_STOP, 0};

					if (send(fd, stop, 2, MSG_NOSIGNAL) != 2)
						_exit(3);
				}
				continue;
			}
			if (reading && p[0].revents) {
				ssize_t n = read(fd, s.buf + s.len, sizeof(s.buf) - s.len);

				if (n <= 0) {
					c = 'X'; /* EOF without END */
					(void)!write(rep, &c, 1);
					break;
				}
				s.len += (size_t)n;
				if (parse(&s, &reason)) {
					c = reason == WIRE_END_STOP ? 'S' : 'E';
					(void)!write(rep, &c, 1);
					break;
				}
				if (s.len == sizeof(s.buf))
					s.len = 0; /* a record this big is not ours to check */
			}
		}
		close(fd);
	}
}

/* ---- the target --------------------------------------------------------- */

static _Atomic uint64_t iters;
static volatile uintptr_t *malloc_slot; /* the main program's malloc GOT slot */
static uintptr_t malloc_orig;

static void *churn(void *arg)
{
	unsigned k = 0;

	(void)arg;
	for (;;) {
		void *p = malloc(16 + (k++ % 64) * 8);

		if (p)
			*(volatile char *)p = 1;
		free(p);
		atomic_fetch_add_explicit(&iters, 1, memory_order_relaxed);
	}
	return NULL;
}

static int slot_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		   const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	(void)arg;
	(void)why;
	(void)info;
	if (m->name && *m->name)
		return 0; /* the main program only */
	for (size_t i = 0; i < nslots; i++) {
		if (slots[i].want == 0) {
			malloc_slot = (volatile uintptr_t *)slots[i].addr;
			return 1;
		}
	}
	return 0;
}

/* wait_slot - until the malloc slot is (patched) or is not (restored) the original; ms or -1 */
static long wait_slot(int patched, unsigned limit_ms)
{
	uint64_t t0 = now_ms();

	while (now_ms() - t0 < limit_ms) {
		if ((*malloc_slot != malloc_orig) == patched)
			return (long)(now_ms() - t0);
		sleep_ms(1);
	}
	return -1;
}

/* wait_blocked - until the allocating threads made no progress for 200 ms; ms or -1 */
static long wait_blocked(unsigned limit_ms)
{
	uint64_t t0 = now_ms();

	while (now_ms() - t0 < limit_ms) {
		uint64_t a = atomic_load(&iters);

		sleep_ms(200);
		if (atomic_load(&iters) == a)
			return (long)(now_ms() - t0);
	}
	return -1;
}

/* running - the allocating threads make progress within 2 s */
static int running(void)
{
	uint64_t a = atomic_load(&iters), t0 = now_ms();

	while (now_ms() - t0 < 2000) {
		sleep_ms(10);
		if (atomic_load(&iters) > a + 100)
			return 1;
	}
	return 0;
}

static void tell(int cmd, char c)
{
	if (write(cmd, &c, 1) != 1)
		FAIL("telling the reader '%c'", c);
}

static char report(int rep, unsigned limit_ms)
{
	struct pollfd p = {.fd = rep, .events = POLLIN};
	char c = 0;

	if (poll(&p, 1, (int)limit_ms) == 1 && read(rep, &c, 1) != 1)
		c = 0;
	return c;
}

static int start_session(int (*start)(const char *), const char *sock)
{
	uint64_t t0 = now_ms();
	int r;

	/* a session that just ended lets go of the library within microseconds */
	while ((r = start(sock)) == -EBUSY && now_ms() - t0 < 5000)
		sleep_ms(5);
	return r;
}

/*
 * stop_unread - the first session: heaptap (the child, told through cmd; its
 * report on rep) stops reading, then sends STOP without reading. -1: the
 * session did not start, the rest is pointless.
 */
static int stop_unread(int (*start)(const char *), const char *sock, int cmd, int rep)
{
	long ms;
	char c;

	if (start_session(start, sock) != 0) {
		FAIL("start");
		return -1;
	}
	ms = wait_slot(1, 10000);
	printf("PATCHED_MS %ld\n", ms);
	if (ms < 0) {
		FAIL("malloc slot not patched within 10 s");
		return -1;
	}
	sleep_ms(100);
	tell(cmd, 'p');
	ms = wait_blocked(5000);
	printf("BLOCKED_MS %ld\n", ms);
	if (ms < 0)
		FAIL("the allocating threads never waited for the reader (socket never full?)");
	tell(cmd, 's');
	ms = wait_slot(0, STOP_MS);
	printf("STOP_ANSWERED_MS %ld\n", ms);
	if (ms < 0)
		FAIL("STOP not acted on within %d ms while the socket was full", STOP_MS);
	tell(cmd, 'r');
	c = report(rep, 10000);
	printf("END1 %c\n", c ? c : '-');
	if (c != 'S')
		FAIL("first session: no END with reason STOP (%c)", c ? c : '-');
	if (!running())
		FAIL("first session: the allocating threads did not run again after the end");
	return 0;
}

/* stalled - the second session: heaptap stops reading for good */
static void stalled(int (*start)(const char *), const char *sock, int cmd, int rep)
{
	long ms;
	char c;

	if (start_session(start, sock) != 0) {
		FAIL("second start");
		return;
	}
	ms = wait_slot(1, 10000);
	printf("PATCHED2_MS %ld\n", ms);
	if (ms < 0) {
		FAIL("second session: malloc slot not patched within 10 s");
		return;
	}
	sleep_ms(100);
	tell(cmd, 'p');
	ms = wait_blocked(5000);
	printf("BLOCKED2_MS %ld\n", ms);
	if (ms < 0)
		FAIL("second session: the allocating threads never waited for the reader");
	ms = wait_slot(0, STALL_LIMIT_MS + 10000);
	printf("STALL_ENDED_MS %ld\n", ms);
	if (ms < 0)
		FAIL("second session: still hooked %d ms after heaptap stopped reading",
		     STALL_LIMIT_MS + 10000);
	if (!running())
		FAIL("second session: the allocating threads stayed blocked");
	tell(cmd, 'r');
	c = report(rep, 5000);
	printf("END2 %c\n", c ? c : '-');
	if (c != 'X')
		FAIL("second session: the stream of a stalled session should end without END (%c)",
		     c ? c : '-');
}

int main(int argc, char **argv)
{
	static struct elfr_slot slots[MAX_SLOTS];
	static const char *const names[] = {"malloc"};
	char dir[] = "/tmp/heaptap-stall-XXXXXX", sock[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int (*start)(const char *);
	int lfd, cmdp[2], repp[2], status;
	pthread_t th[2];
	pid_t pid;
	void *inj;

	if (argc != 2) {
		fprintf(stderr, "usage: inject_stall INJECT_LIB\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("START\n"); /* stdout's buffer exists before anything is patched */
	if (!mkdtemp(dir)) {
		FAIL("mkdtemp: %s", strerror(errno));
		return 1;
	}
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 2) < 0 ||
	    pipe(cmdp) < 0 || pipe(repp) < 0) {
		FAIL("socket set-up: %s", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		FAIL("fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(cmdp[1]);
		close(repp[0]);
		child(lfd, cmdp[0], repp[1]);
		_exit(0);
	}
	close(lfd);
	close(cmdp[0]);
	close(repp[1]);

	elfr_walk_self(names, 1, slots, MAX_SLOTS, slot_cb, NULL);
	if (!malloc_slot) {
		FAIL("the main program's malloc slot was not found");
		goto out;
	}
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, churn, NULL)) {
			FAIL("pthread_create");
			goto out;
		}
	sleep_ms(50); /* lazy binding done */
	malloc_orig = *malloc_slot;
	inj = dlopen(argv[1], RTLD_NOW);
	start = inj ? (int (*)(const char *))dlsym(inj, "heaptap_inject_start") : NULL;
	if (!start) {
		FAIL("loading %s: %s", argv[1], dlerror());
		goto out;
	}

	if (stop_unread(start, sock, cmdp[1], repp[0]) == 0)
		stalled(start, sock, cmdp[1], repp[0]);
out:
	tell(cmdp[1], 'q');
	waitpid(pid, &status, 0);
	unlink(sock);
	rmdir(dir);
	printf("%s\n", failed ? "FAILED" : "OK");
	/* the churn threads never end: leave without joining them */
	_exit(failed);
}
