/* bench/workloads/strings.c - many small string allocations from a few call stacks */
/* SPDX-License-Identifier: MIT */
/*
 * strings [N]: N rounds (default 4,000,000) of formatting a short key of
 * pseudo-random length (12 to 43 bytes), strdup()ing it into a ring of
 * 4096 live strings (the oldest is freed),
 * and every 8th round joining two of them into a new string. About one
 * second uninstrumented on the reference machine; the allocations come
 * from three call stacks, so the cost is the per-call overhead of a tool,
 * not stack capture of new stacks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 4096

static char *ring[RING];

/* "key-<i>-<i%97>" padded with dots to a pseudo-random length of 12..43 */
static __attribute__((noinline)) char *make_key(unsigned long i)
{
	static unsigned long seed = 88172645463325252ul;
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "key-%lu-%lu", i, i % 97);
	size_t len;

	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	len = 12 + seed % 32;
	if ((size_t)n < len)
		memset(buf + n, '.', len - (size_t)n);
	buf[len > (size_t)n ? len : (size_t)n] = 0;
	return strdup(buf);
}

static __attribute__((noinline)) char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);

	if (!s)
		return NULL;
	memcpy(s, a, la);
	s[la] = '/';
	memcpy(s + la + 1, b, lb + 1);
	return s;
}

static void put(unsigned long i, char *s)
{
	free(ring[i % RING]);
	ring[i % RING] = s;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000000;
	unsigned long sum = 0;

	for (unsigned long i = 0; i < n; i++) {
		char *s = make_key(i);

		if (!s)
			return 1;
		sum += (unsigned char)s[4];
		put(i, s);
		if (i % 8 == 7 && ring[(i - 3) % RING]) {
			char *j = join(s, ring[(i - 3) % RING]);

			if (!j)
				return 1;
			put(i + RING / 2, j);
		}
	}
	for (int i = 0; i < RING; i++)
		free(ring[i]);
	printf("strings: %lu rounds, checksum %lu\n", n, sum);
	return 0;
}
