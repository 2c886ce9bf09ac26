/* tests/e2e/sigwait.c - allocate, wait for SIGTERM or SIGINT, allocate again, exit 0 */
/* SPDX-License-Identifier: MIT */
/*
 * Target of signal.test: prints "ready pid N" once its first allocations are
 * made, waits until SIGTERM or SIGINT arrives (which heaptap record, when
 * it gets one, passes on), then allocates once more, prints what the report
 * must show and which signal came, and exits 0.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "expect.h"

#define AT(s, call) (ex_site_at(&(s), __FILE__, __LINE__), (call))

static struct ex_site s_before = EX_SITE("w_before");
static struct ex_site s_after = EX_SITE("w_after");
static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	got = sig;
}

static __attribute__((noinline)) void w_before(void)
{
	for (int i = 0; i < 5; i++) {
		void *p = AT(s_before, malloc(100));

		ex_alloc(&s_before, EX_MALLOC, p, 100);
	}
}

static __attribute__((noinline)) void w_after(void)
{
	void *p = AT(s_after, malloc(200));

	ex_alloc(&s_after, EX_MALLOC, p, 200);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* block them until sigsuspend, so a signal sent right after "ready" is not missed */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	w_before();
	ex_printf("ready pid %d\n", (int)getpid());
	while (!got)
		sigsuspend(&old);
	w_after();
	ex_printf("signal %d\n", (int)got);
	ex_print();
	return 0;
}
