/* tests/sample/timerless_prog.c - a target for timerless.test: one thread, or a thread later */
/* SPDX-License-Identifier: MIT */
/*
 *   timerless_prog busy SECS   allocate and free in one thread, looking at
 *                              /proc/self/task every 10 ms, until the
 *                              session ended (or SECS seconds at most);
 *                              prints "max_threads=N calls=C ended=0|1"
 *   timerless_prog later SECS  allocate for 0.3 s, then let a thread make
 *                              1000 allocations, join it, print "calls=C"
 *                              (allocations made by this program's code),
 *                              then wait without allocating until the
 *                              session ended (SECS seconds at most);
 *                              prints "ended=0|1"
 * Both print "started" once SIGTERM is ignored. SIGTERM is ignored in
 * both, so heaptap record (which passes it on) asks the library to stop
 * while the program runs on. The session has ended when the library's
 * socket is gone from the descriptor table (it closes it after END): the
 * program runs until then, not for a fixed time, so a STOP that a loaded
 * machine delays still finds it running.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/*
 * has_socket - whether a socket is among our descriptors (the library's:
 * this program opens none). System calls and the stack only: a check made
 * while waiting must not allocate (the later case counts every call).
 */
static int has_socket(void)
{
	char buf[4096], link[64];
	int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), found = 0;
	long n;

	if (fd < 0)
		return 1; /* unknown: the caller's bound ends the wait */
	while (!found && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && !found;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			ssize_t l = readlinkat(fd, d->d_name, link, sizeof(link) - 1);

			if (l > 0) {
				link[l] = '\0';
				found = !strncmp(link, "socket:", 7);
			}
			off += d->d_reclen;
		}
	}
	close(fd);
	return found;
}

static unsigned long churn(double secs, int *max_threads, int until_ended)
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
			if (until_ended && !has_socket())
				break;
		}
	}
	return calls;
}

/* wait_ended - sleep until the library's socket is gone, secs at most; 1 if it went. */
static int wait_ended(double secs)
{
	double end = now() + secs;
	struct timespec ms10 = {0, 10000000};

	while (has_socket()) {
		if (now() >= end)
			return 0;
		nanosleep(&ms10, NULL);
	}
	return 1;
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
	if (write(STDOUT_FILENO, "started\n", 8) != 8)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "busy")) {
		int max = 0;
		unsigned long calls = churn(secs, &max, 1);

		printf("max_threads=%d calls=%lu ended=%d\n", max, calls, !has_socket());
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "later")) {
		unsigned long calls = churn(0.3, NULL, 0);
		int ended;
		pthread_t th;

		if (pthread_create(&th, NULL, worker, NULL))
			return 1;
		pthread_join(th, NULL);
		printf("calls=%lu\n", calls + 1000);
		fflush(stdout);
		ended = wait_ended(secs);
		printf("ended=%d\n", ended);
		return 0;
	}
	fprintf(stderr, "usage: timerless_prog busy|later SECS\n");
	return 2;
}
