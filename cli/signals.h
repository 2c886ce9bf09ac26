/* cli/signals.h - the signals a command catches while it runs, and their undo */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_CLI_SIGNALS_H
#define HEAPTAP_CLI_SIGNALS_H

#include <signal.h>
#include <stddef.h>

#define CLI_SIGNALS_MAX 8

/*
 * What cli_signals_install changed, for cli_signals_restore: the caught
 * signals with their earlier actions, and SIGPIPE's. deflt and ignore are
 * for a program heaptap spawns (cli_spawn): it must see the dispositions
 * heaptap found, not heaptap's own. A caught signal is back to SIG_DFL
 * after exec by itself; one heaptap found ignored (a background job of a
 * non-interactive shell ignores SIGINT) is in ignore; SIGPIPE, which
 * heaptap ignores and exec keeps ignored, is in deflt unless heaptap found
 * it ignored.
 */
struct cli_signals {
	size_t n;
	int sig[CLI_SIGNALS_MAX];
	struct sigaction old[CLI_SIGNALS_MAX];
	int caught[CLI_SIGNALS_MAX]; /* 0: found ignored and left so (keep_ignored) */
	struct sigaction pipe;
	sigset_t deflt;
	sigset_t ignore;
};

typedef void cli_signal_fn(int sig, siginfo_t *si, void *uc);

/*
 * cli_signals_install - catch each of sigs[0..n) (n <= CLI_SIGNALS_MAX)
 * with fn, and ignore SIGPIPE (a target that dies while heaptap writes to
 * it must not kill heaptap). The handler has SA_SIGINFO and no SA_RESTART,
 * so a signal interrupts poll and read; no signal is blocked while it
 * runs. A signal in keep_ignored (NULL: none) that heaptap found ignored
 * stays ignored (SIGHUP under nohup).
 */
void cli_signals_install(struct cli_signals *s, const int *sigs, size_t n, cli_signal_fn *fn,
			 const sigset_t *keep_ignored);

/*
 * cli_signals_restore - the actions cli_signals_install found. When
 * SIGALRM was caught, the ITIMER_REAL timer (alarm, setitimer) is
 * cancelled first, so it cannot fire into the earlier action.
 */
void cli_signals_restore(const struct cli_signals *s);

/* cli_signals_set - set = { sigs[0..n) }. */
void cli_signals_set(sigset_t *set, const int *sigs, size_t n);

#endif
