/* recfile/strtab.c - the writer's string interning table */
/* SPDX-License-Identifier: MIT */
/*
 * Strings are kept once in an arena; an open-addressing table of string
 * indices (+1, 0 = empty slot) finds them by hash. String 0 is "" and is
 * present from the first call on.
 */
#include <stdlib.h>

#include "recfile/internal.h"

static uint64_t str_hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)s[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

int rec_grow(void **arr, size_t *cap, size_t n, size_t more, size_t elem)
{
	size_t need, ncap;
	void *p;

	if (more > SIZE_MAX - n)
		return -REC_E_NOMEM;
	need = n + more;
	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -REC_E_NOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -REC_E_NOMEM;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -REC_E_NOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

static int rehash(struct rec_strtab *t, size_t nslot)
{
	uint32_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return -REC_E_NOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t j = t->hash[i] & (nslot - 1);

		while (slot[j])
			j = (j + 1) & (nslot - 1);
		slot[j] = (uint32_t)i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = nslot;
	return 0;
}

static int append(struct rec_strtab *t, const char *s, size_t len, uint64_t h)
{
	size_t n = t->n;
	size_t c = t->cap;
	int ret;

	if (n >= REC_MAX_INDEX)
		return -REC_E_RANGE;
	if (n == t->cap) {
		c = t->cap;
		ret = rec_grow((void **)&t->hash, &c, n, 1, sizeof(*t->hash));
		if (ret)
			return ret;
		c = t->cap;
		ret = rec_grow((void **)&t->off, &c, n, 1, sizeof(*t->off));
		if (ret)
			return ret;
		c = t->cap;
		ret = rec_grow((void **)&t->len, &c, n, 1, sizeof(*t->len));
		if (ret)
			return ret;
		t->cap = c;
	}
	ret = rec_grow((void **)&t->arena, &t->arena_cap, t->arena_len, len ? len : 1, 1);
	if (ret)
		return ret;
	memcpy(t->arena + t->arena_len, s, len);
	t->hash[n] = h;
	t->off[n] = t->arena_len;
	t->len[n] = (uint32_t)len;
	t->arena_len += len;
	t->n = n + 1;
	return 0;
}

/*
 * rec_strtab_intern - find s[0..len) or add it. *idx gets its index, *added
 * is 1 when it is new. Returns 0 or -REC_E_NOMEM / -REC_E_RANGE; the table
 * is unchanged on error.
 */
int rec_strtab_intern(struct rec_strtab *t, const char *s, size_t len, uint32_t *idx, int *added)
{
	uint64_t h = str_hash(s, len);
	size_t j;
	int ret;

	*added = 0;
	if (!t->slot) {
		ret = rehash(t, 1024);
		if (ret)
			return ret;
		ret = append(t, "", 0, str_hash("", 0));
		if (ret)
			return ret;
		t->slot[t->hash[0] & (t->nslot - 1)] = 1;
	}
	for (j = h & (t->nslot - 1); t->slot[j]; j = (j + 1) & (t->nslot - 1)) {
		uint32_t i = t->slot[j] - 1;

		if (t->hash[i] == h && t->len[i] == len && !memcmp(t->arena + t->off[i], s, len)) {
			*idx = i;
			return 0;
		}
	}
	/* keep the load at most 1/2 */
	if ((t->n + 1) * 2 > t->nslot) {
		if (t->nslot > SIZE_MAX / 4)
			return -REC_E_NOMEM;
		ret = rehash(t, t->nslot * 2);
		if (ret)
			return ret;
		for (j = h & (t->nslot - 1); t->slot[j]; j = (j + 1) & (t->nslot - 1))
			;
	}
	ret = append(t, s, len, h);
	if (ret)
		return ret;
	t->slot[j] = (uint32_t)t->n;
	*idx = (uint32_t)t->n - 1;
	*added = 1;
	return 0;
}

void rec_strtab_free(struct rec_strtab *t)
{
	free(t->slot);
	free(t->hash);
	free(t->off);
	free(t->len);
	free(t->arena);
	memset(t, 0, sizeof(*t));
}
