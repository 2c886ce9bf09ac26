/* tests/e2e/dlmod.c - a module dlopen.c loads, unloads and loads again; it allocates */
/* SPDX-License-Identifier: MIT */
/*
 * Each function allocates from one call site and stores that site's line
 * in *line, so the target can print where the report must place it.
 */
#include <stdlib.h>

__attribute__((noinline)) int dlm_leak(size_t n, int count, int *line)
{
	int made = 0;

	for (int i = 0; i < count; i++) {
		*line = __LINE__ + 1;
		void *p = malloc(n);

		made += p != NULL;
	}
	return made;
}

__attribute__((noinline)) int dlm_temp(size_t n, int count, int *line)
{
	int made = 0;

	for (int i = 0; i < count; i++) {
		*line = __LINE__ + 1;
		void *p = malloc(n);

		made += p != NULL;
		free(p);
	}
	return made;
}

__attribute__((noinline)) void *dlm_again(size_t n, int *line)
{
	*line = __LINE__ + 1;
	return calloc(1, n);
}
