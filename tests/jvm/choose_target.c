/* tests/jvm/choose_target.c - threads laid out to show which one heaptap attach picks (a JVM's launcher in small) */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: choose_target join|jit
 *
 * join: the main thread waits on a condition variable (futex, no timeout:
 *       the best class of waits, and the lowest tid); a second thread joins
 *       a third that sleeps in a condition wait too. heaptap must hold the
 *       joining thread, as it holds the `java` launcher's main thread.
 * jit:  the main thread (lowest tid, blocked in pause(), ranked with the
 *       best) runs code copied into anonymous executable memory, as JIT
 *       code would; a second thread waits on a condition variable. heaptap
 *       must try the main thread, find a frame without unwind info, let it
 *       go and hold the other one.
 * Prints "ready main=T1 joiner=T2 waiter=T3" (join) or "ready main=T1
 * waiter=T2" (jit), then runs until killed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pid_t tids[3];
static int started;

static void note_started(int i)
{
	pthread_mutex_lock(&mu);
	tids[i] = (pid_t)syscall(SYS_gettid);
	started++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Wait for ever on the condition variable (a futex wait without a timeout). */
static void wait_forever(void)
{
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&cv, &mu);
}

static void *waiter(void *arg)
{
	note_started((int)(long)arg);
	wait_forever();
	return NULL;
}

static void *joiner(void *arg)
{
	pthread_t t;

	(void)arg;
	note_started(1);
	if (pthread_create(&t, NULL, waiter, (void *)2L))
		return NULL;
	pthread_join(t, NULL);
	return NULL;
}

static void wait_started(int n)
{
	pthread_mutex_lock(&mu);
	while (started < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

/*
 * for (;;) pause(); as machine code, no unwind info anywhere:
 *   mov eax, SYS_pause (34) ; syscall ; jmp back to the mov
 */
static const unsigned char jit_pause[] = {
	0xb8, 0x22, 0x00, 0x00, 0x00, /* mov eax, 34 */
	0x0f, 0x05,		      /* syscall */
	0xeb, 0xf7,		      /* jmp -9 */
};

int main(int argc, char **argv)
{
	pthread_t t;
	void *code;

	if (argc != 2 || (strcmp(argv[1], "join") && strcmp(argv[1], "jit"))) {
		fprintf(stderr, "usage: choose_target join|jit\n");
		return 2;
	}
	tids[0] = (pid_t)syscall(SYS_gettid);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(argv[1], "join") == 0) {
		if (pthread_create(&t, NULL, joiner, NULL))
			return 1;
		wait_started(2);
		printf("ready main=%d joiner=%d waiter=%d\n", (int)tids[0], (int)tids[1], (int)tids[2]);
		wait_forever();
	}
	if (pthread_create(&t, NULL, waiter, (void *)1L))
		return 1;
	wait_started(1);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, jit_pause, sizeof(jit_pause));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;
	printf("ready main=%d waiter=%d\n", (int)tids[0], (int)tids[1]);
	((void (*)(void))code)();
	return 0;
}
