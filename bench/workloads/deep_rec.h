/* bench/workloads/deep_rec.h - deep's recursion, shared with bench/unwind */
/* SPDX-License-Identifier: MIT */
/*
 * Four mutually recursive functions under a dispatcher: step(path, depth)
 * goes depth levels down (two frames a level), each level's function
 * chosen by the next two bits of path, then calls leaf(path). They do work
 * after the call, so no tail call shortens a stack.
 *
 * Header for inclusion in one .c file, which defines
 *     static __attribute__((noinline)) int leaf(uint32_t path);
 * (the allocation in bench/workloads/deep.c, the probe in bench/unwind).
 */
#ifndef HEAPTAP_BENCH_DEEP_REC_H
#define HEAPTAP_BENCH_DEEP_REC_H

#include <stdint.h>

static int leaf(uint32_t path);
static int step(uint32_t path, int depth);

static __attribute__((noinline)) int fa(uint32_t path, int depth)
{
	return step(path >> 2, depth - 1) + 1;
}

static __attribute__((noinline)) int fb(uint32_t path, int depth)
{
	return step(path >> 2, depth - 1) + 2;
}

static __attribute__((noinline)) int fc(uint32_t path, int depth)
{
	return step(path >> 2, depth - 1) + 3;
}

static __attribute__((noinline)) int fd(uint32_t path, int depth)
{
	return step(path >> 2, depth - 1) + 4;
}

static __attribute__((noinline)) int step(uint32_t path, int depth)
{
	if (depth == 0)
		return leaf(path);
	switch (path & 3) {
	case 0:
		return fa(path, depth) ^ 1;
	case 1:
		return fb(path, depth) ^ 2;
	case 2:
		return fc(path, depth) ^ 3;
	default:
		return fd(path, depth) ^ 4;
	}
}

#endif /* HEAPTAP_BENCH_DEEP_REC_H */
