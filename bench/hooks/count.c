/* bench/hooks/count.c - the churn loop through the hooks in-process, for callgrind's instruction counts */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: hooks_count ITERS [plain]
 *
 * bench/hooks/churn.c's loop (8 mallocs of 16-520 bytes, a realloc, 8
 * frees, a calloc and its free: 10 allocation and 10 free events an
 * iteration), calling track/'s trk_malloc & co. directly with a live
 * session over a socketpair (full tracing, the stream drained and thrown
 * away by a second thread), after 1,000 iterations of warm-up. With
 * "plain" the same loop calls libc and nothing is recorded. Built into the
 * program (no preload, no ptrace), so valgrind runs it as it is:
 * bench/hooks/icount subtracts the two counts and divides by the
 * iterations. Built -O0 with frame pointers like churn.c (the hooks start
 * their walk from the caller's frame).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/hooks/churn_body.h"
#include "tests/lib/check_libc_real.h"
#include "track/track.h"
#include "track/wire.h"

#define WARMUP 1000

static int drain_fd;
static int plain;

static void *drain(void *arg)
{
	static char buf[1 << 20];

	(void)arg;
	while (read(drain_fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

/* churn - churn.c's loop body, through the hooks or (plain) straight to libc */
__attribute__((noinline)) static void churn(unsigned k)
{
	if (plain)
		CHURN_BODY(k, malloc, realloc, free, calloc);
	else
		CHURN_BODY(k, trk_malloc, trk_realloc, trk_free, trk_calloc);
}

int main(int argc, char **argv)
{
	struct trk_config cfg;
	unsigned long n, k;
	pthread_t th;
	char *end;
	int sv[2];

	if (argc < 2 || argc > 3 || (n = strtoul(argv[1], &end, 10)) == 0 || *end) {
		fprintf(stderr, "usage: hooks_count ITERS [plain]\n");
		return 2;
	}
	plain = argc == 3 && strcmp(argv[2], "plain") == 0;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		perror("hooks_count: socketpair");
		return 1;
	}
	drain_fd = sv[1];
	if (pthread_create(&th, NULL, drain, NULL) != 0) {
		fprintf(stderr, "hooks_count: no thread\n");
		return 1;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = sv[0];
	cfg.sample_given = 1; /* rate 0: full tracing at once */
	trk_set_real(&libc_real);
	if (trk_start(&cfg) < 0) {
		fprintf(stderr, "hooks_count: the session did not start\n");
		return 1;
	}
	for (k = 0; k < WARMUP; k++)
		churn((unsigned)k);
	for (k = 0; k < n; k++)
		churn((unsigned)k);
	trk_stop(WIRE_END_EXIT);
	pthread_join(th, NULL);
	printf("hooks_count iters=%lu warmup=%d plain=%d\n", n, WARMUP, plain);
	return 0;
}
