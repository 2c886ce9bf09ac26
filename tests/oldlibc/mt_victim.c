/* tests/oldlibc/mt_victim.c - a multi-threaded target for glibc 2.31, built by oldlibc.sh at test time */
/* SPDX-License-Identifier: MIT */
/*
 * Debian 11's minbase has no multi-threaded program that waits, so
 * oldlibc.sh builds this one against the rootfs's own libpthread.so.0 and
 * libc.so.6 (no libdl: dlopen then is libc's __libc_dlopen_mode, while
 * pthread_create exists): every symbol binds to GLIBC_2.2.5. Two threads
 * sleep 50 ms in a loop, the main thread prints a tick every 50 ms; a
 * nanosleep that fails (EINTR) prints "ERR" and ends the program with 3.
 * Nothing here needs constructors (the host's crt1.o passes no init
 * function to glibc 2.31's __libc_start_main).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void nap(void)
{
	struct timespec t = { 0, 50000000 };

	if (nanosleep(&t, NULL) != 0) {
		printf("ERR nanosleep errno %d\n", errno);
		fflush(stdout);
		exit(3);
	}
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		nap();
	return NULL;
}

int main(void)
{
	pthread_t t;
	unsigned long n = 0;
	int i;

	for (i = 0; i < 2; i++) {
		if (pthread_create(&t, NULL, sleeper, NULL) != 0) {
			printf("ERR pthread_create\n");
			return 2;
		}
	}
	for (;;) {
		nap();
		printf("%lu\n", ++n);
		fflush(stdout);
	}
}
