/* bench/elf/bench_elf.c - time the GOT slot walk over every module of a process with ~100 libraries
 */
/* SPDX-License-Identifier: MIT */
/*
 * usage: bench_elf [DIR [NLIBS [REPS]]]
 *   DIR    where to dlopen libraries from (default /usr/lib/x86_64-linux-gnu)
 *   NLIBS  stop after this many modules are loaded (default 150)
 *   REPS   walks to time (default 200)
 * Each candidate is first dlopen'd in a forked child, so one that aborts or
 * crashes on load is skipped. Then every module is walked with elfr_walk_self()
 * REPS times (the whole process, as inject/ will), and each module alone,
 * best of REPS, to find the slowest one.
 */
#define _GNU_SOURCE
#include "elf/elfr.h"
#include "util/clock.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXMODS 1024
#define CAP 1024

static const char *const names[] = {
    "malloc",	     "free",	 "calloc", "realloc", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "reallocarray",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static struct elfr_slot slots[CAP];

static double now_us(void)
{
	return (double)util_mono_ns() / 1e3;
}

/* CPU time of this thread: what the walk costs, without the waits of a busy machine. */
static double cpu_us(void)
{
	return (double)util_clock_ns(CLOCK_THREAD_CPUTIME_ID) / 1e3;
}

static int count_cb(struct dl_phdr_info *dl, size_t size, void *data)
{
	(void)dl, (void)size;
	++*(size_t *)data;
	return 0;
}

static size_t count_modules(void)
{
	size_t n = 0;

	dl_iterate_phdr(count_cb, &n);
	return n;
}

/* Would dlopen(path) survive? Try it in a child first. */
static int loads_safely(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 0;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		_exit(dlopen(path, RTLD_LAZY | RTLD_LOCAL) ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int skip_name(const char *n)
{
	/* Sanitizer runtimes refuse to be loaded late; the C library is already in. */
	static const char *const bad[] = {
	    "libasan",	   "libtsan",	   "liblsan",	  "libubsan",	 "libhwasan",
	    "libc.so",	   "libc-",	   "libpthread",  "libmemusage", "libpcprofile",
	    "libSegFault", "libheaptrack", "ld-linux",	  "libfakeroot", "libeatmydata",
	    "libjsig",	   "libtcmalloc",  "libjemalloc", "libvulkan",	 "libGLX",
	    "libEGL"};

	if (!strstr(n, ".so"))
		return 1;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strstr(n, bad[i]))
			return 1;
	return 0;
}

static void load_libraries(const char *dir, size_t want)
{
	struct dirent **ents;
	char path[4096];
	int n = scandir(dir, &ents, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		if (count_modules() < want && !skip_name(ents[i]->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			if (loads_safely(path))
				dlopen(path, RTLD_LAZY | RTLD_LOCAL);
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
}

struct tally {
	size_t modules, slots, failed;
};

static int tally_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		    const struct elfr_info *info, const struct elfr_slot *s, size_t n)
{
	struct tally *t = arg;

	(void)m, (void)s, (void)info;
	t->modules++;
	t->slots += n;
	t->failed += why != ELFR_OK && why != ELFR_E_NO_DYNAMIC;
	return 0;
}

struct mods {
	size_t n;
	struct elfr_mod m[MAXMODS];
};

static int collect_cb(struct dl_phdr_info *dl, size_t size, void *data)
{
	struct mods *ms = data;

	(void)size;
	if (ms->n < MAXMODS &&
	    elfr_mod_init(&ms->m[ms->n], dl->dlpi_name, dl->dlpi_addr, dl->dlpi_phdr,
			  dl->dlpi_phnum, elfr_read_self, NULL) == ELFR_OK)
		ms->n++;
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/usr/lib/x86_64-linux-gnu";
	size_t want = argc > 2 ? strtoul(argv[2], NULL, 0) : 150;
	int reps = argc > 3 ? atoi(argv[3]) : 200;
	static struct mods ms;
	struct tally t = {0};
	double t0, c0, all, all_cpu, first, worst = 0, sum_best = 0, sum_mean = 0;
	const char *worst_name = "";
	size_t worst_syms = 0;

	if (reps < 1)
		reps = 1;
	load_libraries(dir, want);

	/* The first walk is the one attach pays: caches cold for these tables. */
	t0 = now_us();
	elfr_walk_self(names, NNAMES, slots, CAP, tally_cb, &t);
	first = now_us() - t0;

	t0 = now_us();
	c0 = cpu_us();
	for (int r = 0; r < reps; r++) {
		memset(&t, 0, sizeof(t));
		elfr_walk_self(names, NNAMES, slots, CAP, tally_cb, &t);
	}
	all = (now_us() - t0) / reps;
	all_cpu = (cpu_us() - c0) / reps;

	dl_iterate_phdr(collect_cb, &ms);
	for (size_t i = 0; i < ms.n; i++) {
		struct elfr_info info;
		double best = 1e30, a0 = now_us();

		for (int r = 0; r < reps; r++) {
			double a = now_us(), b;

			(void)!elfr_find_slots(&ms.m[i], names, NNAMES, slots, CAP, &info);
			b = now_us() - a;
			if (b < best)
				best = b;
		}
		sum_mean += (now_us() - a0) / reps;
		sum_best += best;
		if (best > worst) {
			worst = best;
			worst_name = ms.m[i].name;
			worst_syms = info.nsyms;
		}
	}

	printf("modules %zu (failed %zu), slots %zu, names %zu, reps %d\n", t.modules, t.failed,
	       t.slots, NNAMES, reps);
	printf("whole process: first walk %.1f us, then %.1f us per walk (%.1f us CPU), "
	       "%.2f us CPU per module\n",
	       first, all, all_cpu, t.modules ? all_cpu / (double)t.modules : 0.0);
	printf("per module, repeated: mean %.2f us\n", ms.n ? sum_mean / (double)ms.n : 0.0);
	printf("per module, best of %d: mean %.2f us, slowest %.2f us (%s, %zu symbols)\n", reps,
	       ms.n ? sum_best / (double)ms.n : 0.0, worst, worst_name[0] ? worst_name : "(main)",
	       worst_syms);
	return t.failed ? 1 : 0;
}
