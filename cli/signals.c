/* cli/signals.c - the signals a command catches while it runs, and their undo */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap attach, record and top catch their stop signals with a handler
 * of their own and ignore SIGPIPE; the setting up and the putting back are
 * here. What a handler does is its command's (cmd_attach.c, cmd_record.c,
 * top_launch.c).
 */
#include <string.h>
#include <sys/time.h>

#include "cli/signals.h"

static int was_ignored(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN;
}

void cli_signals_set(sigset_t *set, const int *sigs, size_t n)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < n; i++)
		sigaddset(set, sigs[i]);
}

void cli_signals_install(struct cli_signals *s, const int *sigs, size_t n, cli_signal_fn *fn,
			 const sigset_t *keep_ignored)
{
	struct sigaction sa;
	size_t i;

	memset(s, 0, sizeof(*s));
	sigemptyset(&s->deflt);
	sigemptyset(&s->ignore);
	if (n > CLI_SIGNALS_MAX)
		n = CLI_SIGNALS_MAX;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: interrupt poll and read */
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < n; i++) {
		s->sig[i] = sigs[i];
		sigaction(sigs[i], NULL, &s->old[i]);
		if (was_ignored(&s->old[i])) {
			if (keep_ignored && sigismember(keep_ignored, sigs[i]) == 1)
				continue;
			sigaddset(&s->ignore, sigs[i]);
		}
		sigaction(sigs[i], &sa, NULL);
		s->caught[i] = 1;
	}
	s->n = n;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &s->pipe);
	if (!was_ignored(&s->pipe))
		sigaddset(&s->deflt, SIGPIPE);
}

void cli_signals_restore(const struct cli_signals *s)
{
	struct itimerval off;
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->sig[i] == SIGALRM && s->caught[i]) {
			memset(&off, 0, sizeof(off));
			setitimer(ITIMER_REAL, &off, NULL);
		}
	for (i = 0; i < s->n; i++)
		if (s->caught[i])
			sigaction(s->sig[i], &s->old[i], NULL);
	sigaction(SIGPIPE, &s->pipe, NULL);
}
