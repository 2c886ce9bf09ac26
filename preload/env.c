/* preload/env.c - keep programs the target execs from being recorded */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target's constructor, before main and before any thread:
 * drops every HEAPTAP_* variable and this library's entries from
 * LD_PRELOAD (entries are separated by ':' or ' ', as ld.so accepts), so
 * an exec'd child neither loads the library nor finds the socket. The
 * environ array is compacted in place; a shortened LD_PRELOAD is put in a
 * static buffer, the program's own strings are never written. Nothing is
 * allocated.
 */
#include <string.h>

#include "preload/preload.h"

/* A new LD_PRELOAD value is put here, never into the program's strings. */
static char new_preload[4096];

/* is_us - whether one LD_PRELOAD entry (len bytes at s) names this library. */
static bool is_us(const char *s, size_t len)
{
	size_t n = sizeof(PLD_LIB_NAME) - 1;

	if (len < n || memcmp(s + len - n, PLD_LIB_NAME, n) != 0)
		return false;
	return len == n || s[len - n - 1] == '/';
}

/* strip_preload - the value without our entries, in new_preload; NULL if too long. */
static const char *strip_preload(const char *val)
{
	size_t out = 0;
	const char *p = val;

	while (*p) {
		size_t len = strcspn(p, " :");

		if (len && !is_us(p, len)) {
			if (out + len + 2 > sizeof(new_preload))
				return NULL;
			if (out)
				new_preload[out++] = ':';
			memcpy(new_preload + out, p, len);
			out += len;
		}
		p += len;
		if (*p)
			p++;
	}
	new_preload[out] = '\0';
	return new_preload;
}

void pld_env_clean(char **env)
{
	static const char pre[] = "LD_PRELOAD=";
	size_t r, w;

	if (!env)
		return;
	/* before main, single-threaded: editing the array in place is safe */
	for (r = w = 0; env[r]; r++) {
		char *e = env[r];

		if (strncmp(e, "HEAPTAP_", 8) == 0)
			continue;
		if (strncmp(e, pre, sizeof(pre) - 1) == 0) {
			const char *v = strip_preload(e + sizeof(pre) - 1);

			if (v && !*v)
				continue; /* nothing else was preloaded: drop it */
			if (v) {
				/* "LD_PRELOAD=" + value, in the static buffer */
				size_t vl = strlen(v);

				memmove(new_preload + sizeof(pre) - 1, new_preload, vl + 1);
				memcpy(new_preload, pre, sizeof(pre) - 1);
				e = new_preload;
			}
		}
		env[w++] = e;
	}
	env[w] = NULL;
}

