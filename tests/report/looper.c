/* tests/report/looper.c - a program to attach to: allocates, frees and leaks until told to stop */
/* SPDX-License-Identifier: MIT */
/*
 * Prints "ready" and then, every millisecond, allocates and frees a 64-byte
 * block and every tenth round keeps a 1000-byte one (at most 100000 kept),
 * until stdin reaches end of file or 60 s have passed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *kept[100000];

__attribute__((noinline)) static void *loop_keep(void)
{
	return malloc(1000);
}

__attribute__((noinline)) static void loop_temp(void)
{
	free(malloc(64));
}

int main(void)
{
	struct timespec ms = { 0, 1000000 };
	char c;
	size_t n = 0;

	fcntl(0, F_SETFL, O_NONBLOCK);
	printf("ready\n");
	fflush(stdout);
	for (long round = 0; round < 60000; round++) {
		if (read(0, &c, 1) == 0)
			break;
		loop_temp();
		if (round % 10 == 0 && n < sizeof(kept) / sizeof(kept[0]))
			kept[n++] = loop_keep();
		nanosleep(&ms, NULL);
	}
	printf("kept %zu\n", n);
	return 0;
}
