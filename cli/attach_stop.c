/* cli/attach_stop.c - heaptap attach's stop signals: the flags the session watches, their handler */
/* SPDX-License-Identifier: MIT */
/*
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGALRM (the
 * --duration timer) only set cli_attach_stop (cmd_attach.c says what a
 * stop does at each step). cmd_attach.c installs the handler,
 * attach_thread.c moves the signals to the session thread.
 * Globals here: the signal flags (docs/design.md "Globals").
 */
#include <signal.h>
#include <unistd.h>

#include "cli/attach_int.h"
#include "cli/signals.h"

volatile sig_atomic_t cli_attach_stop;	    /* itp_options.stop */
volatile sig_atomic_t cli_attach_stop_sig; /* the signal that set it (0 = none) */

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* cli_attach_thread_join's wake-up of the session thread is not a second stop */
	if (si->si_code == SI_TKILL && si->si_pid == getpid())
		return;
	/* a second stop: the interpreter ends at once, the recording cut short */
	cli_attach_stop = cli_attach_stop ? 2 : 1;
	if (!cli_attach_stop_sig)
		cli_attach_stop_sig = sig;
}

/* cli_attach_stop_set - the set of stop_signals. */
void cli_attach_stop_set(sigset_t *set)
{
	cli_signals_set(set, stop_signals, NSTOP);
}

/* cli_attach_stop_install - the flags cleared, the handler installed; cli_signals_restore undoes it. */
void cli_attach_stop_install(struct cli_signals *old)
{
	cli_attach_stop = 0;
	cli_attach_stop_sig = 0;
	cli_signals_install(old, stop_signals, NSTOP, on_signal, NULL);
}
