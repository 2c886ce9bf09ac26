/* bench/sample/cpu_report.c - LD_PRELOAD helper of bench/sample/run: the target's own CPU time at exit */
/* SPDX-License-Identifier: MIT */
/*
 * bench/sample/run compiles this into a shared library in its temporary
 * directory and preloads it into every batch run (untracked, heaptap
 * record and heaptrack keep an LD_PRELOAD they find). Its destructor
 * appends "USER_S SYS_S EXE\n" (getrusage RUSAGE_SELF: every thread of the
 * process, joined or running; the tool's own processes report too, the bench
 * keeps the workload's line) to the file named by BENCH_CPU_OUT, so the
 * bench can tell the cost inside the target from the tool's own work
 * (symbolizing, writing the recording), which the wall time of the whole
 * command mixes in. Allocates nothing (the allocator may be hooked).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((destructor)) static void cpu_report(void)
{
	const char *path = getenv("BENCH_CPU_OUT");
	struct rusage ru;
	char line[4200], exe[4096];
	ssize_t el;
	int fd, n;

	if (!path || !*path || getrusage(RUSAGE_SELF, &ru) != 0)
		return;
	el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[el < 0 ? 0 : el] = '\0';
	n = snprintf(line, sizeof(line), "%ld.%06ld %ld.%06ld %s\n", (long)ru.ru_utime.tv_sec,
		     (long)ru.ru_utime.tv_usec, (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, exe);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (n > 0 && write(fd, line, (size_t)n) < 0)
		n = 0; /* nothing to do: the bench reports the run without CPU */
	close(fd);
}
