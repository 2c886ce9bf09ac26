/* demo/sample_service.c - a small service with a known leak, for the demo */
/* SPDX-License-Identifier: MIT */
/*
 * Serves "requests" in a loop for the given number of seconds (default 2):
 * each request parses a header into temporary strings, keeps a session
 * object in a small cache, and leaks one buffer every tenth request from
 * remember_request(). Built as build/bin/heaptap-sample-service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct session {
	char *user;
	size_t hits;
};

#define CACHE_SLOTS 64

static __attribute__((noinline)) char *parse_header(const char *line)
{
	char *copy = strdup(line);
	char *colon = strchr(copy, ':');

	if (colon)
		*colon = '\0';
	return copy;
}

static __attribute__((noinline)) struct session *open_session(const char *user)
{
	struct session *s = calloc(1, sizeof(*s));

	s->user = strdup(user);
	return s;
}

static __attribute__((noinline)) void close_session(struct session *s)
{
	if (!s)
		return;
	free(s->user);
	free(s);
}

static __attribute__((noinline)) void remember_request(unsigned long n)
{
	/* the bug the demo finds: this buffer is never freed */
	char *note = malloc(256);

	snprintf(note, 256, "request %lu", n);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct session *cache[CACHE_SLOTS] = { 0 };
	double end = now() + seconds;
	unsigned long n = 0;

	while (now() < end) {
		char line[64];
		char *key;
		unsigned slot;

		for (int i = 0; i < 100; i++, n++) {
			snprintf(line, sizeof(line), "user%lu: request", n % 1000);
			key = parse_header(line);
			slot = (unsigned)(n % CACHE_SLOTS);
			close_session(cache[slot]);
			cache[slot] = open_session(key);
			free(key);
			if (n % 10 == 0)
				remember_request(n);
		}
		struct timespec pause = { 0, 1000000 };
		nanosleep(&pause, NULL);
	}
	for (unsigned i = 0; i < CACHE_SLOTS; i++)
		close_session(cache[i]);
	printf("sample-service: served %lu requests\n", n);
	return 0;
}
