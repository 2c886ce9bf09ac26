/* tests/e2e/static.c - a statically linked program: LD_PRELOAD cannot reach it */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	char *p = malloc(64);

	puts(p ? "static ok" : "static no memory");
	free(p);
	return 0;
}
