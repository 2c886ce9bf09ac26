/* cli/attach_int.h - what cmd_attach.c and its helper files (attach_*.c) share */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_CLI_ATTACH_INT_H
#define HEAPTAP_CLI_ATTACH_INT_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/attach.h"
#include "cli/cli.h"
#include "interpret/interpret.h"

#define CLI_ATTACH_ACCEPT_MS 5000 /* the library's thread connects within microseconds */
#define CLI_ATTACH_LOAD_MS 10000  /* the loader thread's dlopen: ~10 ms, more under load */

/*
 * The stop flag (itp_options.stop) and the signal that set it (0 = none),
 * set by the stop signals' handler (attach_stop.c).
 */
extern volatile sig_atomic_t cli_attach_stop;
extern volatile sig_atomic_t cli_attach_stop_sig;

/* cli_attach_stop_set - the set of the stop signals. */
void cli_attach_stop_set(sigset_t *set);

struct cli_signals;
/*
 * cli_attach_stop_install - clear the flags and catch the stop signals
 * (SIGPIPE ignored); cli_signals_restore(old) undoes it.
 */
void cli_attach_stop_install(struct cli_signals *old);

/*
 * --duration counts from the start of the library's session (its stream
 * header), not from the connection: the library may take a while between
 * connecting and starting (a loaded machine), and the time asked for is
 * time recorded. The interpreter's status callback (every 250 ms) sees
 * elapsed_ns turn nonzero once the header came; the timer is armed then
 * for what is left.
 */
struct cli_attach_duration {
	double secs; /* 0 = none */
	int armed;
};

/*
 * The session thread. It accepts the library's connection, answers its
 * sampling rate at once and runs the interpreter, while the main thread
 * still finishes the attach (reads the loader's outcome, lets go of
 * ptrace). The library's start waits for the rate (TRK_SAMPLE_WAIT_MS, 2 s
 * at most) and then for heaptap to read its header before patching
 * (INJ_DRAIN_MS, 3 s at most); neither waits for the main thread here, so
 * a delay of that thread (a CPU it does not get, the loader thread writing
 * its outcome late) does not delay the first event.
 *
 * It starts with every signal blocked and unblocks the stop signals once
 * it has accepted (the injection is done by then: the library connects
 * from its start function), so a stop interrupts the interpreter's wait
 * at once; the main thread blocks them when it has nothing left to do.
 * Only the main thread touches ptrace; only this thread touches d and the
 * connection between cli_attach_thread_start and the join.
 */
struct cli_attach_thread {
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int running;	   /* the thread exists (join it) */
	int accepted;	   /* the accept ended: acc_ret says how (under lock) */
	int acc_ret;	   /* cli_attach_dir_accept's return */
	int conn;	   /* the library's connection, -1 */
	uint64_t t_conn;   /* when it was accepted */
	/* in */
	struct cli_attach_dir *d;
	struct cli_ctl *ctl;
	pid_t pid;
	int nice;	   /* heaptap's nice before the hold raised the main thread's */
	const struct cli_attach_args *a;
	const char *sysroot;
	struct cli_attach_duration *dur;
	struct cli_snap *snap;
	const struct cli_live *live;
	/* out: interpret()'s return, the recording's name, the result */
	int ret;
	int interpreted;
	char out[PATH_MAX];
	struct itp_result res;
};

/* cli_attach_thread_start - the thread, with every signal blocked. 0 or -errno. */
int cli_attach_thread_start(struct cli_attach_thread *s);

/* cli_attach_thread_accepted - wait until the thread's accept ended; its return. */
int cli_attach_thread_accepted(struct cli_attach_thread *s);

/*
 * cli_attach_thread_join - the main thread is done with the attach: stop
 * signals go to the session thread from now on (one that came to us
 * meanwhile is passed on), then wait for it. abort: the attach failed
 * after all, so an accepting thread gives up and a running session is
 * stopped (the library restores its slots) and its recording removed.
 */
void cli_attach_thread_join(struct cli_attach_thread *s, int abort);

/*
 * Phase timings of attach -v (attach_timing.c). t: the monotonic times of
 * the command's start, the session directory made, the preparation done,
 * the thread seized, the library loaded and released, and its connection
 * accepted; ast: the attacher's figures for the held thread.
 */
void cli_attach_print_phases(pid_t pid, const uint64_t t[6], const struct att_stats *ast);

/* attach -v: how the library's start went (WIRE_REC_START); t0: when the command started. */
void cli_attach_print_startup(pid_t pid, const struct itp_start *s, uint64_t t0);

#endif
