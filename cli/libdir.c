/* cli/libdir.c - find the directory of the libraries loaded into targets */
/* SPDX-License-Identifier: MIT */
/*
 * Order: $HEAPTAP_LIBDIR (only there when set), <dir of heaptap>/../lib
 * (the build tree: build/bin/heaptap -> build/lib), then the installed
 * places relative to <dir of heaptap>: the one this build installs to
 * (HEAPTAP_PKGLIBDIR_REL, from CMake's GNUInstallDirs: ../lib/heaptap, or
 * ../lib/x86_64-linux-gnu/heaptap for the prefix /usr on Debian), then
 * ../lib/<multiarch>/heaptap and ../lib/heaptap, so that a tree installed
 * with either layout works wherever it is copied. Nothing absolute: an
 * installed tree (cmake --install --prefix DIR, a .deb unpacked anywhere)
 * finds its own libraries, never another installation's.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* 0 if dir/lib can be read, else -errno */
static int has_lib(const char *dir, const char *lib)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, lib);

	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, R_OK) < 0)
		return -errno;
	return 0;
}

static int put(char *buf, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(buf, s, n + 1);
	return 0;
}

#ifndef HEAPTAP_PKGLIBDIR_REL
#define HEAPTAP_PKGLIBDIR_REL "../lib/heaptap"
#endif

int cli_libdir(const char *env_dir, const char *self_exe, const char *lib, char *buf, size_t len)
{
	static const char *const rel[] = {
		"../lib",
		HEAPTAP_PKGLIBDIR_REL,
#ifdef HEAPTAP_MULTIARCH
		"../lib/" HEAPTAP_MULTIARCH "/heaptap",
#endif
		"../lib/heaptap",
	};
	char dir[PATH_MAX], cand[PATH_MAX];
	const char *slash;
	size_t i, n;

	if (env_dir && *env_dir) {
		int ret = has_lib(env_dir, lib);

		if (ret < 0)
			return ret == -ENAMETOOLONG ? ret : -ENOENT;
		return put(buf, len, env_dir);
	}
	if (!self_exe || !(slash = strrchr(self_exe, '/')))
		return -ENOENT;
	n = (size_t)(slash - self_exe);
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, self_exe, n);
	dir[n] = '\0';
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		int m = snprintf(cand, sizeof(cand), "%s/%s", dir, rel[i]);

		if (m < 0 || (size_t)m >= sizeof(cand))
			return -ENAMETOOLONG;
		if (has_lib(cand, lib) == 0) {
			char real[PATH_MAX];

			/* a clean absolute path for LD_PRELOAD and messages */
			if (realpath(cand, real))
				return put(buf, len, real);
			return put(buf, len, cand);
		}
	}
	return -ENOENT;
}

int cli_find_libdir(const char *lib, char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		self[0] = '\0';
	else
		self[n] = '\0';
	return cli_libdir(getenv("HEAPTAP_LIBDIR"), n < 0 ? NULL : self, lib, buf, len);
}
