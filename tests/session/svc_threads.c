/* tests/session/svc_threads.c - the test service's threads that block in the kernel, and its signal pair */
/* SPDX-License-Identifier: MIT */
/*
 * Each notes the longest gap between two turns of its loop (turn) and
 * counts every EINTR it sees (none should ever come): reader, sleeper,
 * ticker, condwait, epoll, busy (registers and rounding mode held across
 * rounds), sigsend and sigrecv (service.c's opening comment says what each
 * does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "tests/session/service.h"
#include "util/clock.h"

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ccv = PTHREAD_COND_INITIALIZER;
static unsigned long cgen; /* the ticker's turns, for condwait */
static uint64_t next_seq; /* sigrecv's expected sequence number (handler only) */

void *reader(void *arg)
{
	uint64_t last = util_mono_ns();
	char buf[64];

	(void)arg;
	for (;;) {
		ssize_t n = read(tick_pipe[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
		turn(G_READER, &last);
	}
	return NULL;
}

void *sleeper(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	uint64_t last = util_mono_ns();

	(void)arg;
	for (;;) {
		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			atomic_fetch_add(&eintr, 1);
		turn(G_SLEEPER, &last);
	}
	return NULL;
}

void *ticker(void *arg)
{
	struct timespec next;
	uint64_t last = util_mono_ns(), one = 1;
	char c = 't';

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		int r;

		next.tv_nsec += 1000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		while ((r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL)) == EINTR)
			atomic_fetch_add(&eintr, 1);
		turn(G_TICKER, &last);
		if (write(tick_pipe[1], &c, 1) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
		if (write(evfd, &one, sizeof(one)) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
		pthread_mutex_lock(&cmu);
		cgen++;
		pthread_cond_signal(&ccv);
		pthread_mutex_unlock(&cmu);
		/* If we fell behind (a stop), start the period from now. */
		{
			struct timespec t;

			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec > next.tv_sec + 1)
				next = t;
		}
	}
	return NULL;
}

void *condwait(void *arg)
{
	uint64_t last = util_mono_ns();
	unsigned long seen = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&cmu);
		while (cgen == seen)
			pthread_cond_wait(&ccv, &cmu);
		seen = cgen;
		pthread_mutex_unlock(&cmu);
		turn(G_COND, &last);
	}
	return NULL;
}

void *epoller(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t last = util_mono_ns(), v;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	(void)arg;
	ev.data.fd = evfd;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, evfd, &ev) < 0) {
		atomic_fetch_add(&regerr, 1000000); /* make the failure visible */
		return NULL;
	}
	for (;;) {
		int n = epoll_wait(ep, &ev, 1, 5);

		if (n < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
		if (n > 0 && read(evfd, &v, sizeof(v)) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
		turn(G_EPOLL, &last);
	}
	return NULL;
}

/* One round of the register check: 1 when every register held its value. */
static int busy_round(uint64_t seed, uint64_t spins)
{
	uint64_t r[4], x[16];
	int i, ok = 1;

	__asm__ volatile("mov %[seed], %%r12\n\t"
			 "lea 1(%%r12), %%r13\n\t"
			 "lea 2(%%r12), %%r14\n\t"
			 "lea 3(%%r12), %%r15\n\t"
			 "movq %%r12, %%xmm8\n\t"
			 "pinsrq $1, %%r13, %%xmm8\n\t"
			 "movq %%r13, %%xmm9\n\t"
			 "pinsrq $1, %%r14, %%xmm9\n\t"
			 "movq %%r14, %%xmm10\n\t"
			 "pinsrq $1, %%r15, %%xmm10\n\t"
			 "movq %%r15, %%xmm11\n\t"
			 "pinsrq $1, %%r12, %%xmm11\n\t"
			 "movdqa %%xmm8, %%xmm12\n\t"
			 "pxor %%xmm9, %%xmm12\n\t"
			 "movdqa %%xmm9, %%xmm13\n\t"
			 "pxor %%xmm10, %%xmm13\n\t"
			 "movdqa %%xmm10, %%xmm14\n\t"
			 "pxor %%xmm11, %%xmm14\n\t"
			 "movdqa %%xmm11, %%xmm15\n\t"
			 "pxor %%xmm8, %%xmm15\n\t"
			 "mov %[spins], %%rcx\n"
			 "1:\n\t"
			 "pause\n\t"
			 "dec %%rcx\n\t"
			 "jnz 1b\n\t"
			 "mov %%r12, 0(%[r])\n\t"
			 "mov %%r13, 8(%[r])\n\t"
			 "mov %%r14, 16(%[r])\n\t"
			 "mov %%r15, 24(%[r])\n\t"
			 "movdqu %%xmm8, 0(%[x])\n\t"
			 "movdqu %%xmm9, 16(%[x])\n\t"
			 "movdqu %%xmm10, 32(%[x])\n\t"
			 "movdqu %%xmm11, 48(%[x])\n\t"
			 "movdqu %%xmm12, 64(%[x])\n\t"
			 "movdqu %%xmm13, 80(%[x])\n\t"
			 "movdqu %%xmm14, 96(%[x])\n\t"
			 "movdqu %%xmm15, 112(%[x])\n\t"
			 :
			 : [seed] "r"(seed), [spins] "r"(spins), [r] "r"(r), [x] "r"(x)
			 : "rcx", "r12", "r13", "r14", "r15", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
			   "xmm13", "xmm14", "xmm15", "memory", "cc");
	for (i = 0; i < 4; i++)
		ok &= r[i] == seed + (uint64_t)i;
	for (i = 0; i < 4; i++) {
		ok &= x[2 * i] == seed + (uint64_t)i;
		ok &= x[2 * i + 1] == seed + (uint64_t)((i + 1) % 4);
	}
	for (i = 0; i < 4; i++) {
		ok &= x[8 + 2 * i] == (x[2 * i] ^ x[(2 * i + 2) % 8]);
		ok &= x[8 + 2 * i + 1] == (x[2 * i + 1] ^ x[(2 * i + 3) % 8]);
	}
	return ok;
}

void *busy(void *arg)
{
	uint64_t last = util_mono_ns(), seed = 0x0123456789abcdefull;

	(void)arg;
	fesetround(FE_TOWARDZERO);
	for (;;) {
		if (!busy_round(seed, 2000) || fegetround() != FE_TOWARDZERO)
			atomic_fetch_add(&regerr, 1);
		seed += 0x1000;
		turn(G_BUSY, &last);
	}
	return NULL;
}

void on_rt(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE || si->si_pid != getpid() ||
	    (uint64_t)si->si_value.sival_ptr != next_seq)
		atomic_fetch_add(&sigerr, 1);
	next_seq = (uint64_t)si->si_value.sival_ptr + 1;
	atomic_fetch_add(&sigrecv_n, 1);
}

void *sigsend(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	uint64_t seq = 0;

	(void)arg;
	for (;;) {
		unsigned paused = atomic_load(&sender_paused);

		if (paused) {
			atomic_store(&sender_ack, paused); /* any sigqueue of ours has been counted */
		} else {
			union sigval v = { .sival_ptr = (void *)seq };

			if (sigqueue(getpid(), sig_no, v) == 0) {
				seq++;
				atomic_fetch_add(&sigsent, 1);
			}
		}
		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			atomic_fetch_add(&eintr, 1);
	}
	return NULL;
}

void *sigrecv(void *arg)
{
	sigset_t s;
	char buf[8];

	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, sig_no);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	for (;;) {
		if (read(sig_pipe[0], buf, sizeof(buf)) < 0 && errno == EINTR)
			atomic_fetch_add(&eintr, 1);
	}
	return NULL;
}
