/* tests/attach/zl_victim.c - target whose main thread has exited (zombie leader), one worker left */
/* SPDX-License-Identifier: MIT */
/*
 * main() starts a worker and calls pthread_exit: /proc/PID then shows
 * state Z and no maps or exe, while the process lives on. The worker
 * answers "ping" on stdin with "pong eintr=N" and exits on EOF.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void *worker(void *a)
{
	char buf[256], out[64];
	int eintr = 0, len;
	size_t used = 0;
	ssize_t n;
	char *nl;

	(void)a;
	len = snprintf(out, sizeof(out), "ready pid=%d\n", (int)getpid());
	if (write(1, out, (size_t)len) < 0)
		_exit(1);
	for (;;) {
		n = read(0, buf + used, sizeof(buf) - 1 - used);
		if (n < 0 && errno == EINTR) {
			eintr++;
			continue;
		}
		if (n <= 0)
			_exit(0);
		used += (size_t)n;
		buf[used] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			len = snprintf(out, sizeof(out), "pong eintr=%d\n", eintr);
			if (write(1, out, (size_t)len) < 0)
				_exit(1);
			used -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, used + 1);
		}
		if (used == sizeof(buf) - 1)
			used = 0;
	}
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}
