/* cli/spawn.c - start the program to record, with extra environment */
/* SPDX-License-Identifier: MIT */
/*
 * The exec result comes back over a close-on-exec pipe: the child writes
 * its errno there if execvpe fails; a successful exec closes the pipe with
 * nothing written. So the caller knows "No such file or directory" before
 * it starts waiting for a connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

/* Length of "NAME" in "NAME=VALUE" */
static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* environ with each override replacing the variable of its name; NULL on ENOMEM */
static char **build_env(char *const *overrides)
{
	size_t n = 0, m = 0, i, j, k = 0;
	char **env;

	while (environ && environ[n])
		n++;
	while (overrides && overrides[m])
		m++;
	env = calloc(n + m + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t l = name_len(environ[i]);
		int replaced = 0;

		for (j = 0; j < m; j++)
			if (name_len(overrides[j]) == l && !strncmp(environ[i], overrides[j], l))
				replaced = 1;
		if (!replaced)
			env[k++] = environ[i];
	}
	for (j = 0; j < m; j++)
		env[k++] = overrides[j];
	env[k] = NULL;
	return env;
}

pid_t cli_spawn(char **argv, char *const *overrides, const sigset_t *deflt,
		const sigset_t *ignore)
{
	char **env;
	int pfd[2], err = 0, ret;
	ssize_t r;
	pid_t pid;

	env = build_env(overrides);
	if (!env)
		return -ENOMEM;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out_env;
	}
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		goto out_pipe;
	}
	if (pid == 0) {
		int sig;

		/* Child: give back the dispositions heaptap found (an ignored
		 * one survives exec; a caught one becomes SIG_DFL). */
		for (sig = 1; sig < NSIG; sig++) {
			if (deflt && sigismember(deflt, sig) == 1)
				signal(sig, SIG_DFL);
			else if (ignore && sigismember(ignore, sig) == 1)
				signal(sig, SIG_IGN);
		}
		close(pfd[0]);
		execvpe(argv[0], argv, env);
		err = errno;
		if (write(pfd[1], &err, sizeof(err)) < 0) {
			/* the parent then sees EOF and a dead child */
		}
		_exit(127);
	}
	close(pfd[1]);
	pfd[1] = -1;
	do {
		r = read(pfd[0], &err, sizeof(err));
	} while (r < 0 && errno == EINTR);
	if (r == (ssize_t)sizeof(err)) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		ret = -(err ? err : ENOEXEC);
		goto out_pipe;
	}
	ret = pid;
out_pipe:
	close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
out_env:
	free(env);
	return ret;
}

int cli_preload_value(const char *lib, const char *old, char *buf, size_t len)
{
	int n;

	/* ld.so splits LD_PRELOAD at spaces and colons; ours goes first. */
	if (old && *old)
		n = snprintf(buf, len, "%s:%s", lib, old);
	else
		n = snprintf(buf, len, "%s", lib);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int cli_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return CLI_EXIT_FAIL;
}
