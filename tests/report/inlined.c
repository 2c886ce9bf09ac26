/* tests/report/inlined.c - a known stack with an inlined frame, for the folded-stack test */
/* SPDX-License-Identifier: MIT */
/*
 * main -> outer_fn -> inl_alloc (always inlined into outer_fn) -> malloc.
 * 7 blocks of 100 bytes are freed, 3 of 333 are kept (leaked). The folded
 * stacks must read "...;main;outer_fn;inl_alloc N": outer to inner, the
 * inlined function after the function it was inlined into.
 */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) void *inl_alloc(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) void *outer_fn(size_t n)
{
	return inl_alloc(n);
}

int main(void)
{
	static void *keep[3];
	int i;

	for (i = 0; i < 7; i++)
		free(outer_fn(100));
	for (i = 0; i < 3; i++)
		keep[i] = outer_fn(333);
	printf("kept %p %p %p\n", keep[0], keep[1], keep[2]);
	return 0;
}
