/* tests/attach/victim.c - multi-threaded attach target that checks itself and answers on a pipe */
/* SPDX-License-Identifier: MIT */
/*
 * Threads, each in a loop that records its longest gap between iterations:
 *   main      read() on stdin: commands "ping", "reset", "exit"
 *   reader    read() on a pipe the ticker writes a byte to every tick
 *   sleeper   nanosleep(1 ms), relative: -ERESTART_RESTARTBLOCK when stopped
 *   ticker    clock_nanosleep(TIMER_ABSTIME, 1 ms): -ERESTARTNOHAND; each tick
 *             feeds reader, condwait and epoll, and sigqueue()s SIGRTMIN+1
 *             with a sequence number to the process
 *   condwait  pthread_cond_wait (futex), woken by the ticker
 *   epoll     epoll_wait(10 ms) on a pipe the ticker feeds: EINTR if interrupted
 *   busy      spins in asm with known values in ymm8-15 (xmm8-15 without AVX)
 *             and r12-r15, MXCSR rounding toward zero; checks them each lap
 *   sigrecv   read() on a pipe nobody writes; the only thread with SIGRTMIN+1
 *             unblocked; its SA_RESTART handler checks the sequence
 *   inhandler blocked in read() inside a SIGUSR2 handler: must never be hijacked
 *   inalloc   blocked in read() inside a function named like an allocator
 *             (victim_malloc_wait): must never be hijacked
 * Every EINTR any loop sees is counted (epoll separately), as are signals
 * out of sequence, wrong si_code/si_pid, register corruption, and a signal
 * mask that changed under a looping thread (checked every lap), and any
 * other failure of a blocking call (syserr: e.g. errno 512 if a syscall
 * restart went wrong). main, reader, sleeper and ticker set errno to a mark
 * before their blocking call and count a successful call after which it
 * changed (errnobad): heaptap's calls in the thread must put errno back.
 *
 * With ATT_VICTIM_CATCH set, it catches SIGURG, SIGWINCH and SIGCHLD (and
 * counts them: othersig) so that it ignores no signal, like a Go program.
 *
 * Output: "ready pid=P main=T reader=T ... avx=0|1" on start, then one line
 * per command: "pong k=v ..." for ping (after letting in-flight signals
 * arrive), "ok" for reset. EOF on stdin ends it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

enum role {
	R_MAIN, R_READER, R_SLEEPER, R_TICKER, R_CONDWAIT, R_EPOLL, R_BUSY, R_SIGRECV,
	R_INHANDLER, R_INALLOC, R_COUNT
};
static const char *const role_name[R_COUNT] = {
	"main", "reader", "sleeper", "ticker", "condwait", "epoll", "busy", "sigrecv",
	"inhandler", "inalloc",
};

static _Atomic long max_gap_ns[R_COUNT];
static _Atomic long laps[R_COUNT];	/* turns of each loop: a thread stuck after an attach stops counting */
static _Atomic int tids[R_COUNT];
static _Atomic int eintr_count, epoll_eintr, reg_bad, seq_err, info_bad, mask_bad, sys_bad;
static _Atomic int errno_bad;	/* errno changed under a blocking call that succeeded */
static _Atomic int other_sigs;	/* ATT_VICTIM_CATCH: SIGURG/SIGWINCH/SIGCHLD received (none expected) */
static _Atomic long sent, received;
static _Atomic int pause_send, send_paused;
static volatile long last_seq;	/* only touched by the handler (one thread) */
static int pipe_reader[2], pipe_epoll[2], pipe_sig[2], pipe_never[2];
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long ticks;
static int use_avx;
static int sig_rt;

/* Each looping thread's signal mask as it set it; checked every lap. */
static __thread sigset_t my_mask;
static __thread int my_mask_known;

static void lap(enum role r, long *last)
{
	long t = (long)util_mono_ns(), gap = t - *last;
	sigset_t cur;

	memset(&cur, 0, sizeof(cur));	/* the kernel fills only its 64 bits */
	if (pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0) {
		if (!my_mask_known) {
			my_mask = cur;
			my_mask_known = 1;
		} else if (memcmp(&cur, &my_mask, sizeof(cur)) != 0) {
			atomic_fetch_add(&mask_bad, 1);
			my_mask = cur;
		}
	}

	if (*last && gap > atomic_load(&max_gap_ns[r]))
		atomic_store(&max_gap_ns[r], gap);
	atomic_fetch_add(&laps[r], 1);
	*last = t;
}

/* errno still the mark set before a blocking call that succeeded? */
static void errno_kept(int mark)
{
	if (errno != mark)
		atomic_fetch_add(&errno_bad, 1);
}

/* A blocking call failed with e: EINTR is counted apart, anything else is a bad return. */
static void failed_with(int e)
{
	if (e == EINTR)
		atomic_fetch_add(&eintr_count, 1);
	else
		atomic_fetch_add(&sys_bad, 1);
}

static void hello(enum role r)
{
	atomic_store(&tids[r], (int)syscall(SYS_gettid));
}

static void *reader(void *a)
{
	long last = 0;
	char c;
	ssize_t n;

	(void)a;
	hello(R_READER);
	for (;;) {
		errno = 7001;
		n = read(pipe_reader[0], &c, 1);
		if (n < 0)
			failed_with(errno);
		else
			errno_kept(7001);
		lap(R_READER, &last);
	}
	return NULL;
}

static void *sleeper(void *a)
{
	struct timespec ts = { 0, 1000000 };
	long last = 0;

	(void)a;
	hello(R_SLEEPER);
	for (;;) {
		errno = 7002;
		if (nanosleep(&ts, NULL) < 0)
			failed_with(errno);
		else
			errno_kept(7002);
		lap(R_SLEEPER, &last);
	}
	return NULL;
}

static void *ticker(void *a)
{
	struct timespec next;
	union sigval v;
	long last = 0;
	int rc;

	(void)a;
	hello(R_TICKER);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		errno = 7003;
		rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		if (rc)
			failed_with(rc);
		else
			errno_kept(7003);
		lap(R_TICKER, &last);
		if (write(pipe_reader[1], "t", 1) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_count, 1);
		if (write(pipe_epoll[1], "t", 1) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_count, 1);
		pthread_mutex_lock(&mtx);
		ticks++;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&mtx);
		if (atomic_load(&pause_send)) {
			atomic_store(&send_paused, 1);
			continue;
		}
		atomic_store(&send_paused, 0);
		v.sival_int = (int)(atomic_load(&sent) + 1);
		if (sigqueue(getpid(), sig_rt, v) == 0)
			atomic_fetch_add(&sent, 1);
		else if (errno == EINTR)
			atomic_fetch_add(&eintr_count, 1);
	}
	return NULL;
}

static void *condwait(void *a)
{
	long last = 0, seen = 0;

	(void)a;
	hello(R_CONDWAIT);
	pthread_mutex_lock(&mtx);
	for (;;) {
		while (ticks == seen)
			pthread_cond_wait(&cond, &mtx);
		seen = ticks;
		lap(R_CONDWAIT, &last);
	}
	return NULL;
}

static void *epoller(void *a)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	char buf[256];
	long last = 0;
	int ep, n;

	(void)a;
	hello(R_EPOLL);
	ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_ctl(ep, EPOLL_CTL_ADD, pipe_epoll[0], &ev);
	for (;;) {
		n = epoll_wait(ep, &out, 1, 10);
		if (n < 0 && errno == EINTR)
			atomic_fetch_add(&epoll_eintr, 1);
		else if (n < 0)
			atomic_fetch_add(&sys_bad, 1);
		if (n > 0 && read(pipe_epoll[0], buf, sizeof(buf)) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr_count, 1);
		lap(R_EPOLL, &last);
	}
	return NULL;
}

/* Spin with known values in vector and callee-saved registers; 0 if they held. */
static int busy_lap(uint64_t seed)
{
	uint64_t pat[32] __attribute__((aligned(32))), out[32] __attribute__((aligned(32)));
	uint64_t gin[4], gout[4];
	long spins = 200000;
	int i;

	for (i = 0; i < 32; i++)
		pat[i] = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i * 0x0101010101010101ULL;
	for (i = 0; i < 4; i++)
		gin[i] = ~seed + (uint64_t)i;
	memset(out, 0, sizeof(out));
	if (use_avx) {
		__asm__ volatile(
			"vmovdqu 0(%[p]), %%ymm8\n\t"
			"vmovdqu 32(%[p]), %%ymm9\n\t"
			"vmovdqu 64(%[p]), %%ymm10\n\t"
			"vmovdqu 96(%[p]), %%ymm11\n\t"
			"vmovdqu 128(%[p]), %%ymm12\n\t"
			"vmovdqu 160(%[p]), %%ymm13\n\t"
			"vmovdqu 192(%[p]), %%ymm14\n\t"
			"vmovdqu 224(%[p]), %%ymm15\n\t"
			"mov 0(%[g]), %%r12\n\t"
			"mov 8(%[g]), %%r13\n\t"
			"mov 16(%[g]), %%r14\n\t"
			"mov 24(%[g]), %%r15\n\t"
			"1: dec %[n]\n\t"
			"jnz 1b\n\t"
			"vmovdqu %%ymm8, 0(%[o])\n\t"
			"vmovdqu %%ymm9, 32(%[o])\n\t"
			"vmovdqu %%ymm10, 64(%[o])\n\t"
			"vmovdqu %%ymm11, 96(%[o])\n\t"
			"vmovdqu %%ymm12, 128(%[o])\n\t"
			"vmovdqu %%ymm13, 160(%[o])\n\t"
			"vmovdqu %%ymm14, 192(%[o])\n\t"
			"vmovdqu %%ymm15, 224(%[o])\n\t"
			"mov %%r12, 0(%[h])\n\t"
			"mov %%r13, 8(%[h])\n\t"
			"mov %%r14, 16(%[h])\n\t"
			"mov %%r15, 24(%[h])\n\t"
			"vzeroupper\n\t"
			: [n] "+r"(spins)
			: [p] "r"(pat), [o] "r"(out), [g] "r"(gin), [h] "r"(gout)
			: "memory", "cc", "r12", "r13", "r14", "r15", "xmm8", "xmm9", "xmm10",
			  "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
		return memcmp(pat, out, sizeof(pat)) || memcmp(gin, gout, sizeof(gin));
	}
	__asm__ volatile(
		"movdqu 0(%[p]), %%xmm8\n\t"
		"movdqu 16(%[p]), %%xmm9\n\t"
		"movdqu 32(%[p]), %%xmm10\n\t"
		"movdqu 48(%[p]), %%xmm11\n\t"
		"movdqu 64(%[p]), %%xmm12\n\t"
		"movdqu 80(%[p]), %%xmm13\n\t"
		"movdqu 96(%[p]), %%xmm14\n\t"
		"movdqu 112(%[p]), %%xmm15\n\t"
		"mov 0(%[g]), %%r12\n\t"
		"mov 8(%[g]), %%r13\n\t"
		"mov 16(%[g]), %%r14\n\t"
		"mov 24(%[g]), %%r15\n\t"
		"1: dec %[n]\n\t"
		"jnz 1b\n\t"
		"movdqu %%xmm8, 0(%[o])\n\t"
		"movdqu %%xmm9, 16(%[o])\n\t"
		"movdqu %%xmm10, 32(%[o])\n\t"
		"movdqu %%xmm11, 48(%[o])\n\t"
		"movdqu %%xmm12, 64(%[o])\n\t"
		"movdqu %%xmm13, 80(%[o])\n\t"
		"movdqu %%xmm14, 96(%[o])\n\t"
		"movdqu %%xmm15, 112(%[o])\n\t"
		"mov %%r12, 0(%[h])\n\t"
		"mov %%r13, 8(%[h])\n\t"
		"mov %%r14, 16(%[h])\n\t"
		"mov %%r15, 24(%[h])\n\t"
		: [n] "+r"(spins)
		: [p] "r"(pat), [o] "r"(out), [g] "r"(gin), [h] "r"(gout)
		: "memory", "cc", "r12", "r13", "r14", "r15", "xmm8", "xmm9", "xmm10", "xmm11",
		  "xmm12", "xmm13", "xmm14", "xmm15");
	return memcmp(pat, out, 128) || memcmp(gin, gout, sizeof(gin));
}

static void *busy(void *a)
{
	long last = 0;
	uint64_t seed = 1;

	(void)a;
	hello(R_BUSY);
	fesetround(FE_TOWARDZERO);	/* lives in MXCSR and the x87 control word */
	for (;;) {
		if (busy_lap(seed++) || fegetround() != FE_TOWARDZERO)
			atomic_fetch_add(&reg_bad, 1);
		lap(R_BUSY, &last);
	}
	return NULL;
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	int e = errno;

	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE || si->si_pid != getpid())
		atomic_fetch_add(&info_bad, 1);
	if (si->si_value.sival_int != last_seq + 1)
		atomic_fetch_add(&seq_err, 1);
	last_seq = si->si_value.sival_int;
	atomic_fetch_add(&received, 1);
	errno = e;
}

static void *sigrecv(void *a)
{
	struct sigaction sa;
	sigset_t set;
	long last = 0;
	char c;

	(void)a;
	hello(R_SIGRECV);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_rt;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig_rt, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig_rt);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	for (;;) {
		if (read(pipe_sig[0], &c, 1) < 0)
			failed_with(errno);
		lap(R_SIGRECV, &last);
	}
	return NULL;
}

/* Stands for an allocator holding its lock: blocks forever. */
__attribute__((noinline)) void victim_malloc_wait(void);
__attribute__((noinline)) void victim_malloc_wait(void)
{
	char c;

	while (read(pipe_never[0], &c, 1) < 0 && errno == EINTR)
		atomic_fetch_add(&eintr_count, 1);
	__asm__ volatile("" ::: "memory");	/* keep the frame: no tail call */
}

static void *inalloc(void *a)
{
	(void)a;
	hello(R_INALLOC);
	victim_malloc_wait();
	return NULL;
}

static void on_other(int sig)
{
	(void)sig;
	atomic_fetch_add(&other_sigs, 1);
}

static void on_usr2(int sig)
{
	char c;

	(void)sig;
	hello(R_INHANDLER);
	while (read(pipe_never[0], &c, 1) < 0 && errno == EINTR)
		atomic_fetch_add(&eintr_count, 1);
}

static void *inhandler(void *a)
{
	struct sigaction sa;

	(void)a;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	pthread_kill(pthread_self(), SIGUSR2);
	return NULL;
}

static void reply(const char *s)
{
	size_t len = strlen(s), off = 0;
	ssize_t n;

	while (off < len) {
		n = write(1, s + off, len - off);
		if (n < 0) {
			if (errno == EINTR) {
				atomic_fetch_add(&eintr_count, 1);
				continue;
			}
			exit(1);
		}
		off += (size_t)n;
	}
}

static void ping(void)
{
	char buf[1024];
	int i, len;
	long t0;

	/* stop sending, then let queued signals arrive (at most 2 s) */
	atomic_store(&pause_send, 1);
	t0 = (long)util_mono_ns();
	while (!atomic_load(&send_paused) && (long)util_mono_ns() - t0 < 2000000000L)
		usleep(1000);
	while (atomic_load(&received) < atomic_load(&sent) && (long)util_mono_ns() - t0 < 2000000000L)
		usleep(1000);
	len = snprintf(buf, sizeof(buf),
		       "pong eintr=%d epoll_eintr=%d seqerr=%d infobad=%d sent=%ld recv=%ld regbad=%d "
		       "maskbad=%d syserr=%d othersig=%d errnobad=%d",
		       atomic_load(&eintr_count), atomic_load(&epoll_eintr), atomic_load(&seq_err),
		       atomic_load(&info_bad), atomic_load(&sent), atomic_load(&received),
		       atomic_load(&reg_bad), atomic_load(&mask_bad),
		       atomic_load(&sys_bad), atomic_load(&other_sigs), atomic_load(&errno_bad));
	for (i = 0; i < R_COUNT; i++)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, " gap_%s=%ld", role_name[i],
				atomic_load(&max_gap_ns[i]) / 1000);
	for (i = 0; i < R_COUNT; i++)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, " laps_%s=%ld", role_name[i],
				atomic_load(&laps[i]));
	snprintf(buf + len, sizeof(buf) - (size_t)len, "\n");
	atomic_store(&pause_send, 0);
	reply(buf);
}

int main(void)
{
	void *(*fn[R_COUNT])(void *) = {
		NULL, reader, sleeper, ticker, condwait, epoller, busy, sigrecv, inhandler, inalloc,
	};
	char buf[1024], line[256];
	size_t used = 0;
	pthread_t t;
	sigset_t set;
	long last = 0;
	ssize_t n;
	int i, all;
	char *nl;

	sig_rt = SIGRTMIN + 1;
	if (getenv("ATT_VICTIM_CATCH")) {
		/* like a Go program: no signal left that the process ignores */
		struct sigaction sa;

		for (i = 1; i < 65; i++)	/* the driver ignores SIGPIPE; we inherit that */
			if (sigaction(i, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
				signal(i, SIG_DFL);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_other;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGURG, &sa, NULL);
		sigaction(SIGWINCH, &sa, NULL);
		sigaction(SIGCHLD, &sa, NULL);
	}
	__builtin_cpu_init();
	use_avx = __builtin_cpu_supports("avx");
	if (pipe(pipe_reader) || pipe(pipe_epoll) || pipe(pipe_sig) || pipe(pipe_never))
		return 1;
	sigemptyset(&set);
	sigaddset(&set, sig_rt);
	pthread_sigmask(SIG_BLOCK, &set, NULL);	/* inherited: only sigrecv unblocks it */
	hello(R_MAIN);
	for (i = 1; i < R_COUNT; i++)
		if (pthread_create(&t, NULL, fn[i], NULL))
			return 1;
	do {
		usleep(1000);
		for (all = 1, i = 0; i < R_COUNT; i++)
			all &= atomic_load(&tids[i]) != 0;
	} while (!all);
	n = snprintf(line, sizeof(line), "ready pid=%d", (int)getpid());
	for (i = 0; i < R_COUNT; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s=%d", role_name[i],
			      atomic_load(&tids[i]));
	snprintf(line + n, sizeof(line) - (size_t)n, " avx=%d\n", use_avx);
	reply(line);

	for (;;) {
		errno = 7004;
		n = read(0, buf + used, sizeof(buf) - 1 - used);
		if (n > 0)
			errno_kept(7004);
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintr_count, 1);
			continue;
		}
		if (n <= 0)
			return 0;
		lap(R_MAIN, &last);
		used += (size_t)n;
		buf[used] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			if (strcmp(buf, "ping") == 0) {
				ping();
			} else if (strcmp(buf, "reset") == 0) {
				for (i = 0; i < R_COUNT; i++)
					atomic_store(&max_gap_ns[i], 0);
				reply("ok\n");
			} else if (strcmp(buf, "exit") == 0) {
				return 0;
			}
			used -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, used + 1);
		}
		if (used == sizeof(buf) - 1)
			used = 0;
	}
}
