/* tests/session/service.c - a multi-threaded service heaptap attach is tested against */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: session_service [WORKERS [WORK]]
 *   WORKERS  allocating threads (default 2)
 *   WORK     arithmetic steps each worker iteration does besides its 21
 *            allocator calls (default 0: allocation stress)
 *
 * Reads one command per line on stdin and answers one line on stdout, so a
 * test or bench drives it as a coprocess. Its threads, each noting the
 * longest gap between two turns of its loop (1 ms period unless said):
 *
 *   main      blocked in read(stdin) between commands
 *   reader    read() on a pipe the ticker writes every tick
 *   sleeper   clock_nanosleep, relative 1 ms (restart block)
 *   ticker    clock_nanosleep TIMER_ABSTIME, 1 ms period; feeds reader,
 *             condwait and epoll
 *   condwait  pthread_cond_wait, woken by the ticker
 *   epoll     epoll_wait on an eventfd the ticker writes (EINTR-prone)
 *   busy      an asm loop holding r12-r15 and xmm8-15, rounding mode
 *             toward zero, checking them after every round
 *   sigsend   sigqueue(SIGRTMIN+1, seq) to the process every tick
 *   sigrecv   the only thread with SIGRTMIN+1 unblocked: blocked in read
 *             (SA_RESTART handler); the handler checks seq, si_code, si_pid
 *   watcher   reads two malloc GOT slots every tick, the main program's
 *             and libsvc_relro.so's: when both changed (heaptap's hook)
 *             and when both came back. The library patches one module
 *             after the other (and may defer one to its next pass), so
 *             "patched" waits for both: a leak command sent after it is
 *             recorded in full.
 *   worker*   allocate and free in a loop (churn, not leaking); on the
 *             "leak" command they call leak_some() and relro_leak_some()
 *             (libsvc_relro.so, -fno-plt, full RELRO) a given number of times
 *
 * Every blocking call counts EINTR; none should ever see one.
 *
 * SVC_NO_SIGNALS=1 in the environment: sigsend never sends (for tools that
 * cannot attach to a process receiving a signal every millisecond:
 * heaptrack's gdb gives up its injected call; bench/detach/run --quiet-signals).
 *
 * Commands (answer on one line):
 *   ping               pong
 *   reset              ok            (longest gaps and iteration counts from now)
 *   stats              stats t=NS since_ns=NS iters=N maxgap_us=N gap_<thread>=US ... eintr=N
 *                      regerr=N
 *   sig                sig sent=N recv=N err=N  (pauses the sender; once it says it
 *                      sends no more, waits up to 10 s for the receiver to
 *                      take every queued signal: on a loaded machine it may
 *                      not have run for a while; a lost signal stays missing)
 *   leak N             leaked calls=N bytes=B relro_calls=N relro_bytes=B
 *   slots [-v]         slots n=N hash=H      (malloc/free/calloc/realloc slots of
 *                      every module loaded at start, hash over address
 *                      and value, a lazy slot's PLT stub counted as the
 *                      function it resolves to; -v: each slot on stderr too)
 *   waitpatched MS     patched ns=T | timeout main=0|1 relro=0|1
 *                      (both watched malloc slots left their values: the
 *                      main program's and libsvc_relro.so's; T is when the
 *                      main program's did)
 *   waitrestored MS    restored ns=T | timeout main=0|1 relro=0|1
 *                      (both came back; the next waitpatched waits for a
 *                      new change)
 *   reset also zeroes the iteration counts.
 *   tmp                tmp n=N   (entries in /tmp whose name starts "heaptap-")
 *   mem                mem rss_kb=N maps=N fds=N threads=N   (from /proc/self)
 *   fork               fork slots n=N hash=H malloc=same|changed tasks=N heaptap=N
 *                      sockets=N status=N: a child forked now reports on
 *                      itself: its slots (from the addresses noted at start:
 *                      the child must not take the loader's lock, which a
 *                      parent thread may have held at the fork), its malloc
 *                      slot against the value at start, its threads, those
 *                      named heaptap-inject, its socket descriptors; it
 *                      allocates with child_alloc() (CHILD_SIZE bytes, 5
 *                      calls, leaked) and exits; status is its exit status
 *   quit               bye, then exit 0
 * At start: "ready pid=N" once the workers ran and the slots were noted.
 *
 * The blocking threads are in svc_threads.c, the slots' walk, the watcher
 * and the forked child's report in svc_slots.c (service.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/session/service.h"
#include "tests/session/svc_relro.h"
#include "util/clock.h"

#define LEAK_SIZE 4321 /* bytes leak_some() leaks per call */
#define CHILD_SIZE 7531 /* bytes child_alloc() leaks per call, in a forked child */

static const char *const gap_names[G_WORKER0] = { "reader", "sleeper", "ticker", "condwait", "epoll",
						   "busy", "watcher" };

static _Atomic uint64_t maxgap[G_MAX]; /* longest gap of each thread, ns */
_Atomic uint64_t eintr, regerr, sigsent, sigrecv_n, sigerr;
static _Atomic uint64_t iters[MAX_WORKERS];
static _Atomic int leak_todo, relro_todo;
static _Atomic uint64_t leak_done, relro_done;
_Atomic unsigned sender_paused, sender_ack;
static int sender_started;
_Atomic uint64_t patched_ns, restored_ns;
static int nworkers = 2;
static unsigned work;		  /* WORK: arithmetic steps per worker iteration */
static __thread volatile unsigned work_sink; /* per thread: no shared cache line */
int tick_pipe[2], sig_pipe[2], evfd;
volatile uintptr_t *malloc_slot;
uintptr_t malloc_slot_value;
volatile uintptr_t *relro_slot;
uintptr_t relro_slot_value;
int sig_no;
static _Atomic uint64_t reset_ns; /* when "reset" ran (or start) */

void turn(int id, uint64_t *last)
{
	uint64_t t = util_mono_ns(), g = t - *last, m = atomic_load(&maxgap[id]);

	while (g > m && !atomic_compare_exchange_weak(&maxgap[id], &m, g))
		;
	*last = t;
}

/* The leak the tests look for: LEAK_SIZE bytes per call, never freed. */
__attribute__((noinline)) void *leak_some(void)
{
	char *p = malloc(LEAK_SIZE);

	if (p)
		p[0] = 1;
	return p;
}

/* What a forked child allocates: never recorded (the child is not tracked). */
__attribute__((noinline)) void *child_alloc(void)
{
	char *p = malloc(CHILD_SIZE);

	if (p)
		p[0] = 3;
	return p;
}

/* Churn: allocations that are freed again (temporary, not leaked). */
__attribute__((noinline)) static void churn(unsigned k)
{
	void *a[8];
	unsigned i;

	for (i = 0; i < work; i++)
		work_sink = work_sink * 31 + i; /* what a service does besides allocating */

	for (i = 0; i < 8; i++)
		a[i] = malloc(16 + ((k + i) % 64) * 8);
	a[3] = realloc(a[3], 512);
	for (i = 0; i < 8; i++)
		free(a[i]);
	free(calloc(4, 32));
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t last = util_mono_ns();
	unsigned k = 0;

	for (;;) {
		int n = atomic_load(&leak_todo);

		churn(k++);
		while (n > 0) {
			if (atomic_compare_exchange_weak(&leak_todo, &n, n - 1)) {
				(void)leak_some();
				atomic_fetch_add(&leak_done, 1);
				break;
			}
		}
		n = atomic_load(&relro_todo);
		while (n > 0) {
			if (atomic_compare_exchange_weak(&relro_todo, &n, n - 1)) {
				(void)relro_leak_some();
				atomic_fetch_add(&relro_done, 1);
				break;
			}
		}
		atomic_fetch_add_explicit(&iters[id], 1, memory_order_relaxed);
		turn(G_WORKER0 + id, &last);
	}
	return NULL;
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, arg) != 0) {
		fprintf(stderr, "service: pthread_create failed\n");
		exit(1);
	}
}

/* Wait up to ms for *v to become nonzero (after since). */
static uint64_t wait_for(_Atomic uint64_t *v, long ms)
{
	uint64_t end = util_mono_ns() + (uint64_t)ms * 1000000u;
	struct timespec ts = { 0, 1000000 };

	while (util_mono_ns() < end) {
		uint64_t x = atomic_load(v);

		if (x)
			return x;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void answer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void answer(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void cmd_stats(void)
{
	char buf[1024];
	size_t off = 0;
	uint64_t sum = 0, m = 0;
	int i;

	for (i = 0; i < nworkers; i++)
		sum += atomic_load(&iters[i]);
	for (i = 0; i < G_WORKER0 + nworkers; i++) {
		uint64_t g = atomic_load(&maxgap[i]);

		if (g > m)
			m = g;
		if (i < G_WORKER0)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, " gap_%s=%" PRIu64,
						gap_names[i], g / 1000);
		else
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, " gap_worker%d=%" PRIu64,
						i - G_WORKER0, g / 1000);
	}
	answer("stats t=%" PRIu64 " since_ns=%" PRIu64 " iters=%" PRIu64 " maxgap_us=%" PRIu64 "%s eintr=%" PRIu64
	       " regerr=%" PRIu64,
	       util_mono_ns(), util_mono_ns() - atomic_load(&reset_ns), sum, m / 1000, buf,
	       atomic_load(&eintr), atomic_load(&regerr));
}

static int tmp_entries(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "heaptap-", 8))
			n++;
	closedir(d);
	return n;
}

/* Entries of a /proc/self directory. */
static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void cmd_mem(void)
{
	unsigned long size = 0, rss = 0;
	char buf[512];
	FILE *f = fopen("/proc/self/statm", "re");
	int maps = 0;

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	f = fopen("/proc/self/maps", "re");
	if (f) {
		while (fgets(buf, sizeof(buf), f))
			maps += strchr(buf, '\n') != NULL;
		fclose(f);
	}
	answer("mem rss_kb=%lu maps=%d fds=%d threads=%d", rss * (unsigned long)(sysconf(_SC_PAGESIZE) / 1024),
	       maps, count_dir("/proc/self/fd"), count_dir("/proc/self/task"));
}

static void cmd_fork(void)
{
	char buf[512];
	ssize_t n;
	size_t len = 0;
	int p[2], status = -1;
	pid_t c;

	if (pipe(p) < 0) {
		answer("fork error=pipe");
		return;
	}
	c = fork();
	if (c == 0) {
		close(p[0]);
		child_report(p[1]);
		_exit(0);
	}
	close(p[1]);
	if (c < 0) {
		close(p[0]);
		answer("fork error=fork");
		return;
	}
	while (len < sizeof(buf) - 1 && (n = read(p[0], buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR) {
				atomic_fetch_add(&eintr, 1);
				continue;
			}
			break;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(p[0]);
	while (waitpid(c, &status, 0) < 0 && errno == EINTR)
		atomic_fetch_add(&eintr, 1);
	answer("fork %s status=%d", buf, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static void command(char *line)
{
	long n;
	int i;

	line[strcspn(line, "\r\n")] = '\0';
	if (!strcmp(line, "ping")) {
		answer("pong");
	} else if (!strcmp(line, "reset")) {
		for (i = 0; i < G_MAX; i++)
			atomic_store(&maxgap[i], 0);
		for (i = 0; i < nworkers; i++)
			atomic_store(&iters[i], 0);
		atomic_store(&reset_ns, util_mono_ns());
		answer("ok");
	} else if (!strcmp(line, "stats")) {
		cmd_stats();
	} else if (!strcmp(line, "sig")) {
		static unsigned pause_no;
		struct timespec ts = { 0, 1000000 };
		uint64_t end = util_mono_ns() + 10000000000ull;

		if (++pause_no == 0)
			pause_no = 1;
		atomic_store(&sender_paused, pause_no);
		while (sender_started && atomic_load(&sender_ack) != pause_no && util_mono_ns() < end)
			nanosleep(&ts, NULL);
		while (atomic_load(&sigrecv_n) < atomic_load(&sigsent) && util_mono_ns() < end)
			nanosleep(&ts, NULL);
		answer("sig sent=%" PRIu64 " recv=%" PRIu64 " err=%" PRIu64, atomic_load(&sigsent),
		       atomic_load(&sigrecv_n), atomic_load(&sigerr));
		atomic_store(&sender_paused, 0);
	} else if (sscanf(line, "leak %ld", &n) == 1 && n >= 0 && n < 1000000) {
		uint64_t l0 = atomic_load(&leak_done), r0 = atomic_load(&relro_done);
		struct timespec ts = { 0, 1000000 };

		atomic_fetch_add(&leak_todo, (int)n);
		atomic_fetch_add(&relro_todo, (int)n);
		while (atomic_load(&leak_done) - l0 < (uint64_t)n ||
		       atomic_load(&relro_done) - r0 < (uint64_t)n)
			nanosleep(&ts, NULL);
		answer("leaked calls=%ld bytes=%ld relro_calls=%ld relro_bytes=%ld", n,
		       n * LEAK_SIZE, n, n * (long)SVC_RELRO_LEAK_SIZE);
	} else if (!strcmp(line, "slots") || !strcmp(line, "slots -v")) {
		struct slot_acc a;

		slots_now(&a, 0, line[5] != '\0');
		answer("slots n=%zu hash=%016" PRIx64, a.n, a.hash);
	} else if (sscanf(line, "waitpatched %ld", &n) == 1) {
		uint64_t t = wait_for(&patched_ns, n);

		atomic_store(&restored_ns, 0); /* the next waitrestored waits for this session's end */
		if (t)
			answer("patched ns=%" PRIu64, t);
		else
			answer("timeout main=%d relro=%d", atomic_load(&main_changed),
			       atomic_load(&relro_changed));
	} else if (sscanf(line, "waitrestored %ld", &n) == 1) {
		uint64_t t = wait_for(&restored_ns, n);

		if (t)
			atomic_store(&patched_ns, 0); /* the next waitpatched waits for a new session */
		if (t)
			answer("restored ns=%" PRIu64, t);
		else
			answer("timeout main=%d relro=%d", atomic_load(&main_changed),
			       atomic_load(&relro_changed));
	} else if (!strcmp(line, "mem")) {
		cmd_mem();
	} else if (!strcmp(line, "fork")) {
		cmd_fork();
	} else if (!strcmp(line, "tmp")) {
		answer("tmp n=%d", tmp_entries());
	} else if (!strcmp(line, "quit")) {
		answer("bye");
		exit(0);
	} else {
		answer("unknown command");
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct slot_acc a;
	sigset_t s;
	char line[256];
	size_t len = 0;
	int i;

	if (argc > 1)
		nworkers = atoi(argv[1]);
	if (argc > 2)
		work = (unsigned)strtoul(argv[2], NULL, 10);
	if (nworkers < 1 || nworkers > MAX_WORKERS) {
		fprintf(stderr, "usage: session_service [WORKERS 1-%d [WORK]]\n", MAX_WORKERS);
		return 2;
	}
	sig_no = SIGRTMIN + 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig_no, &sa, NULL);
	/* only sigrecv takes the RT signal: the others never run its handler */
	sigemptyset(&s);
	sigaddset(&s, sig_no);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	if (pipe(tick_pipe) < 0 || pipe(sig_pipe) < 0 ||
	    (evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		perror("service: pipe");
		return 1;
	}
	for (i = 0; i < nworkers; i++)
		start(worker, (void *)(intptr_t)i);
	/*
	 * Bind the watched slots before noting them. The main program is
	 * linked with lazy binding: its malloc slot holds a PLT stub until
	 * the first call through it. Waiting for the workers to make that
	 * call is not enough on a loaded machine (they may not have run
	 * yet), and a slot bound after it was noted looks "patched" to the
	 * watcher with no heaptap around. So call malloc from here, through
	 * this very slot, and libsvc_relro's through its own.
	 */
	{
		struct timespec ts = { 0, 20000000 };
		void *volatile bind = malloc(16);

		free(bind);
		nanosleep(&ts, NULL);
		free(relro_leak_some());
	}
	for (i = 0; i < 4; i++)
		real_fn[i] = (uintptr_t)dlsym(RTLD_DEFAULT, slot_names[i]);
	slots_now(&a, 1, 0);
	if (!a.main_malloc) {
		fprintf(stderr, "service: no malloc slot in the main program\n");
		return 1;
	}
	if (!a.relro_malloc) {
		fprintf(stderr, "service: no malloc slot in libsvc_relro.so\n");
		return 1;
	}
	malloc_slot = a.main_malloc;
	malloc_slot_value = *malloc_slot;
	relro_slot = a.relro_malloc;
	relro_slot_value = *relro_slot;
	if (malloc_slot_value != real_fn[0]) {
		fprintf(stderr, "service: the main program's malloc slot holds %#lx, not malloc (%#lx)\n",
			(unsigned long)malloc_slot_value, (unsigned long)real_fn[0]);
		return 1;
	}
	start(reader, NULL);
	start(sleeper, NULL);
	start(condwait, NULL);
	start(epoller, NULL);
	start(busy, NULL);
	start(sigrecv, NULL);
	if (!getenv("SVC_NO_SIGNALS") || strcmp(getenv("SVC_NO_SIGNALS"), "1")) {
		start(sigsend, NULL);
		sender_started = 1;
	}
	start(watcher, NULL);
	start(ticker, NULL);
	atomic_store(&reset_ns, util_mono_ns());
	answer("ready pid=%d", (int)getpid());
	for (;;) {
		ssize_t n = read(STDIN_FILENO, line + len, sizeof(line) - 1 - len);
		char *nl;

		if (n < 0) {
			if (errno == EINTR) {
				atomic_fetch_add(&eintr, 1);
				continue;
			}
			return 1;
		}
		if (n == 0)
			return 0; /* stdin closed: the driver is gone */
		len += (size_t)n;
		line[len] = '\0';
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			command(line);
			len -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, len + 1);
		}
		if (len == sizeof(line) - 1)
			len = 0; /* an overlong line: drop it */
	}
}
