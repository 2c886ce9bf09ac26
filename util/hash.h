/* util/hash.h - the 64-bit finalizer the hash tables on both sides use */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_UTIL_HASH_H
#define HEAPTAP_UTIL_HASH_H

#include <stdint.h>

/*
 * util_fmix64 - murmur3's 64-bit finalizer: every input bit reaches every
 * output bit, so the low bits of the result index a power-of-two table well
 * even when the keys are pointers or return addresses (aligned, clustered).
 * A bijection: distinct keys give distinct results. No state, no allocation,
 * safe inside the target's hooks.
 */
static inline uint64_t util_fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

#endif
