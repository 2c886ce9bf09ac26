/* tests/session/static_target.c - a statically linked program heaptap attach must refuse */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		free(malloc(64));
		sleep(1);
	}
}
