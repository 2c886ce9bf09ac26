/* tests/attach/minroot_victim.c - a target that needs nothing but libc, for a minimal root (minroot.sh) */
/* SPDX-License-Identifier: MIT */
/*
 * Runs chrooted in a root that holds only the dynamic loader, libc.so.6,
 * libm.so.6 and this program (no libunwind, no liblzma), so it must link
 * nothing else. One command a line on stdin, one answer a line on stdout:
 *   ping               pong
 *   patched MS         patched | timeout   (this program's malloc GOT slot
 *                      left its value at start: heaptap's hook is in)
 *   restored MS        restored | timeout  (the slot holds its start value again)
 *   leak N             leaked n=N bytes=B  (minroot_leak: N blocks of
 *                      LEAK_SIZE bytes, kept, never freed)
 *   tmp                tmp n=N   (entries in /tmp and /dev/shm named heaptap-*)
 *   quit               bye, then exit 0
 * At start: "ready pid=N". It waits in read(), so the thread heaptap holds
 * is blocked in a restartable call; an unexpected error ends it with
 * "ERR ..." on stdout.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEAK_SIZE 4321
#define KEEP_MAX 4096

static void *kept[KEEP_MAX];
static size_t nkept;
static uintptr_t slot_at_start;

/*
 * The value of this program's malloc GOT slot: in a PIE, the address of an
 * imported function is loaded from it (built -O0 -fno-plt: reread each call).
 */
static __attribute__((noinline)) uintptr_t malloc_slot(void)
{
	void *(*volatile f)(size_t) = malloc;

	return (uintptr_t)f;
}

static __attribute__((noinline)) size_t minroot_leak(size_t n)
{
	size_t i, bytes = 0;

	for (i = 0; i < n && nkept < KEEP_MAX; i++) {
		kept[nkept] = malloc(LEAK_SIZE);
		if (!kept[nkept])
			break;
		memset(kept[nkept], (int)i, LEAK_SIZE);
		nkept++;
		bytes += LEAK_SIZE;
	}
	return bytes;
}

static void answer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void answer(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Poll until want(slot) holds or ms pass. */
static int wait_slot(int changed, long ms)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	long waited;

	for (waited = 0; waited <= ms; waited += 5) {
		if ((malloc_slot() != slot_at_start) == changed)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int count_dir(const char *path)
{
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "heaptap-", 8))
			n++;
	closedir(d);
	return n;
}

int main(void)
{
	char line[128];
	long v;

	slot_at_start = malloc_slot();
	answer("ready pid=%d", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "ping")) {
			answer("pong");
		} else if (sscanf(line, "patched %ld", &v) == 1) {
			answer("%s", wait_slot(1, v) ? "patched" : "timeout");
		} else if (sscanf(line, "restored %ld", &v) == 1) {
			answer("%s", wait_slot(0, v) ? "restored" : "timeout");
		} else if (sscanf(line, "leak %ld", &v) == 1 && v > 0) {
			answer("leaked n=%ld bytes=%zu", v, minroot_leak((size_t)v));
		} else if (!strcmp(line, "tmp")) {
			answer("tmp n=%d", count_dir("/tmp") + count_dir("/dev/shm"));
		} else if (!strcmp(line, "quit")) {
			answer("bye");
			return 0;
		} else {
			answer("unknown command");
		}
	}
	if (ferror(stdin))
		answer("ERR read: %s", strerror(errno));
	return 0;
}
