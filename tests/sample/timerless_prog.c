/* tests/sample/timerless_prog.c - a target for timerless.test: one thread, or a thread later */
/* SPDX-License-Identifier: MIT */
/*
 *   timerless_prog busy SECS   allocate and free for SECS seconds in one
 *                              thread, looking at /proc/self/task every
 *                              10 ms; prints "max_threads=N calls=C"
 *   timerless_prog later SECS  allocate for 0.3 s, then let a thread make
 *                              1000 allocations, join it, print "calls=C"
 *                              (allocations made by this program's code),
 *                              then sleep SECS without allocating
 * SIGTERM is ignored in both, so heaptap record (which passes it on) asks
 * the library to stop while the program runs on.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static unsigned long churn(double secs, int *max_threads)
{
	double end = now() + secs, next = 0;
	unsigned long calls = 0;

	while (now() < end) {
		for (int i = 0; i < 1000; i++) {
			char *p = malloc(64 + (size_t)(i % 64) * 64);

			if (!p)
				abort();
			p[0] = (char)i;
			__asm__ volatile("" : : "r"(p) : "memory");
			free(p);
			calls++;
		}
		if (max_threads && now() >= next) {
			int n = tasks();

			if (n > *max_threads)
				*max_threads = n;
			next = now() + 0.01;
		}
	}
	return calls;
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		char *p = malloc(1024);

		if (!p)
			abort();
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 5;

	signal(SIGTERM, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "busy")) {
		int max = 0;
		unsigned long calls = churn(secs, &max);

		printf("max_threads=%d calls=%lu\n", max, calls);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "later")) {
		unsigned long calls = churn(0.3, NULL);
		pthread_t th;

		if (pthread_create(&th, NULL, worker, NULL))
			return 1;
		pthread_join(th, NULL);
		printf("calls=%lu\n", calls + 1000);
		fflush(stdout);
		sleep((unsigned)secs);
		return 0;
	}
	fprintf(stderr, "usage: timerless_prog busy|later SECS\n");
	return 2;
}
