/* tests/session/service.h - what the test service's three files share */
/* SPDX-License-Identifier: MIT */
/*
 * service.c has the workers, the commands and main (usage and commands in
 * its opening comment); svc_threads.c the threads that block in the kernel
 * and the signal pair; svc_slots.c the GOT slots: the walk at start, the
 * "slots" hash, the watcher and the forked child's report. The state below
 * is defined in service.c unless said.
 */
#ifndef HEAPTAP_TESTS_SESSION_SERVICE_H
#define HEAPTAP_TESTS_SESSION_SERVICE_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_WORKERS 16
#define SLOT_CAP 256

/* Each thread's index in the longest-gap table (turn). */
enum gap_id {
	G_READER, G_SLEEPER, G_TICKER, G_COND, G_EPOLL, G_BUSY, G_WATCHER, G_WORKER0,
	G_MAX = G_WORKER0 + MAX_WORKERS
};

extern _Atomic uint64_t eintr, regerr;		  /* EINTRs seen; register or set-up errors */
extern _Atomic uint64_t sigsent, sigrecv_n, sigerr; /* the signal pair's counts */
extern _Atomic unsigned sender_paused; /* 0: send; else the "sig" command's pause number */
extern _Atomic unsigned sender_ack;    /* the pause number sigsend last saw (it sends no more) */
extern _Atomic uint64_t patched_ns, restored_ns; /* the watcher's answers (0: not yet) */
extern int tick_pipe[2], sig_pipe[2], evfd;
extern int sig_no; /* SIGRTMIN + 1 */
extern volatile uintptr_t *malloc_slot; /* main program's malloc GOT slot */
extern uintptr_t malloc_slot_value;	/* its value at start */
extern volatile uintptr_t *relro_slot;	/* libsvc_relro.so's malloc GOT slot (GLOB_DAT) */
extern uintptr_t relro_slot_value;	/* its value at start */

/* turn - a loop of thread id turned: note the gap since *last, set *last to now */
void turn(int id, uint64_t *last);

/* child_alloc - what a forked child allocates (CHILD_SIZE bytes, leaked) */
void *child_alloc(void);

/* svc_threads.c: thread bodies for pthread_create (arg unused); on_rt is sigrecv's handler. */
void *reader(void *arg);
void *sleeper(void *arg);
void *ticker(void *arg);
void *condwait(void *arg);
void *epoller(void *arg);
void *busy(void *arg);
void *sigsend(void *arg);
void *sigrecv(void *arg);
void on_rt(int sig, siginfo_t *si, void *uc);

/* svc_slots.c: the four functions whose slots are watched, and their addresses (set by main). */
extern const char *const slot_names[4];
extern uintptr_t real_fn[4]; /* dlsym(RTLD_DEFAULT) of slot_names */
extern _Atomic int main_changed, relro_changed; /* as the watcher saw them last */

/* One walk over the slots of the modules loaded at start. */
struct slot_acc {
	int noting; /* the first walk: note the modules */
	int dump;   /* print each slot on stderr ("slots -v") */
	size_t n, mod;
	uint64_t hash;
	volatile uintptr_t *main_malloc;
	volatile uintptr_t *relro_malloc;
};

/*
 * slots_now - walk the process's modules into *a: the count and hash of
 * their malloc/free/calloc/realloc slots. noting: the first walk, at start,
 * which notes the modules and slots (later walks only hash those modules,
 * the forked child reads the noted slots); dump: each slot on stderr too.
 */
void slots_now(struct slot_acc *a, int noting, int dump);

/* watcher - the thread that notes when both watched malloc slots changed and came back */
void *watcher(void *arg);

/* child_report - in the forked child: what it finds in itself, as one line on fd */
void child_report(int fd);

#endif /* HEAPTAP_TESTS_SESSION_SERVICE_H */
