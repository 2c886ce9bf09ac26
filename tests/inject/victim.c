/* tests/inject/victim.c - a running program heaptap attaches to with ptrace (unit.inject_attach) */
/* SPDX-License-Identifier: MIT */
/*
 * A worker thread allocates all the time (victim_alloc, strdup, free, with
 * a short sleep); the main thread answers "ping" on stdin with
 * "pong ROUNDS" and ends on "exit" or EOF. Nothing here knows about
 * heaptap: the library is loaded from outside (attach/ + inject/), and the
 * driver checks the program still answers and still allocates afterwards.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VICTIM_SZ 1234

static _Atomic unsigned long rounds;
static _Atomic int quit;

__attribute__((noinline)) void *victim_alloc(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory");
	return p;
}

static void *worker(void *arg)
{
	void *keep[16] = {0};

	(void)arg;
	while (!quit) {
		struct timespec ts = {0, 200000};
		unsigned long i = rounds;
		char *s;

		free(keep[i % 16]);
		keep[i % 16] = victim_alloc(VICTIM_SZ);
		s = strdup("victim");
		if (!s || !keep[i % 16])
			abort();
		free(s);
		rounds++;
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < 16; i++)
		free(keep[i]);
	return NULL;
}

int main(void)
{
	char line[64];
	pthread_t t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	printf("ready\n");
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "ping\n"))
			printf("pong %lu\n", (unsigned long)rounds);
		else if (!strcmp(line, "exit\n"))
			break;
	}
	quit = 1;
	pthread_join(t, NULL);
	return 0;
}
