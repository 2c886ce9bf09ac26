/* preload/init.c - constructor and destructor of libheaptap_preload.so */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. The constructor resolves the real allocator, reads
 * HEAPTAP_SOCKET / HEAPTAP_DEPTH / HEAPTAP_SAMPLE / HEAPTAP_TIMER, cleans the environment (exec'd children
 * are not recorded), connects and starts the session; any failure leaves
 * the library inert (everything passes through). The destructor ends the
 * session with WIRE_END_EXIT: .fini_array of an LD_PRELOAD library runs
 * after the program's atexit handlers and the destructors of the program
 * and of every library loaded after it, which is as late as a library can
 * get (libraries initialised before it, libc among them, still run theirs
 * afterwards; their frees go unrecorded). A process ending through _exit
 * or exit_group skips it: heaptap then sees EOF, with everything up to the
 * last tick (10 ms) flushed.
 * A forked child stops recording and closes its copy of the socket
 * (pthread_atfork); the parent goes on.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "preload/preload.h"
#include "pyframes/pyframes.h"
#include "track/track.h"

extern char **environ;

/*
 * parse_sample - HEAPTAP_SAMPLE=RATE[,SEED] (decimal; heaptap record sets it,
 * RATE 0 = full tracing): the session starts with it at once instead of
 * waiting for heaptap's first WIRE_CTL_SAMPLE. Unset or malformed: not given.
 */
static void parse_sample(const char *v, struct trk_config *cfg)
{
	unsigned long long rate, seed = 0;
	char *end;

	if (!v || *v < '0' || *v > '9')
		return;
	errno = 0;
	rate = strtoull(v, &end, 10);
	if (*end == ',') {
		const char *s = end + 1;

		if (*s < '0' || *s > '9')
			return;
		seed = strtoull(s, &end, 10);
	}
	if (*end || errno)
		return;
	cfg->sample_given = 1;
	cfg->sample_rate = rate;
	cfg->sample_seed = seed;
}

static void on_fork_child(void)
{
	trk_after_fork_child();
}

__attribute__((constructor)) static void pld_init(void)
{
	struct trk_config cfg = { .fd = -1 };
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *s, *d;
	int saved_errno = errno, fd;
	unsigned pyflags = 0;

	if (!pld_resolve())
		goto out;
	s = getenv("HEAPTAP_SOCKET");
	d = getenv("HEAPTAP_DEPTH");
	{
		const char *u = getenv("HEAPTAP_UNWIND");

		cfg.libunwind_only = u && strcmp(u, "libunwind") == 0;
	}
	{
		/*
		 * HEAPTAP_TIMER=thread: always the timer thread (comparisons,
		 * tests); else none while the program has one thread and samples.
		 */
		const char *tm = getenv("HEAPTAP_TIMER");

		cfg.timerless = !(tm && strcmp(tm, "thread") == 0);
	}
	parse_sample(getenv("HEAPTAP_SAMPLE"), &cfg);
	{
		/* HEAPTAP_PYFRAMES=0: record --no-python-frames; HEAPTAP_FAULT=python-version: tests */
		const char *pf = getenv("HEAPTAP_PYFRAMES"), *ft = getenv("HEAPTAP_FAULT");

		if (pf && strcmp(pf, "0") == 0)
			pyflags |= PYF_OFF;
		if (ft && strcmp(ft, "python-version") == 0)
			pyflags |= PYF_FAKE_VERSION;
	}
	if (d) {
		char *end;
		unsigned long v = strtoul(d, &end, 10);

		if (end != d && !*end && v > 0)
			cfg.depth = v > TRK_DEPTH_MAX ? TRK_DEPTH_MAX : (unsigned)v;
	}
	sock[0] = '\0';
	if (s && strlen(s) < sizeof(sock))
		memcpy(sock, s, strlen(s) + 1);
	pld_env_clean(environ); /* s and d may point into dropped strings: not used after */
	if (!sock[0])
		goto out;
	fd = trk_connect(sock);
	if (fd < 0)
		goto out;
	cfg.fd = fd;
	if (pthread_atfork(NULL, NULL, on_fork_child) != 0) {
		close(fd);
		goto out;
	}
	if (trk_start(&cfg) < 0)
		goto out; /* trk_start closed the fd; we stay inert */
	(void)pyf_start(pyflags);
out:
	errno = saved_errno;
}

__attribute__((destructor)) static void pld_fini(void)
{
	trk_stop(WIRE_END_EXIT);
}
