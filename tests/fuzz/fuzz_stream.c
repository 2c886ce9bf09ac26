/* tests/fuzz/fuzz_stream.c - libFuzzer harness: arbitrary bytes as an event stream */
/* SPDX-License-Identifier: MIT */
/*
 * Each input is written into a pipe and read by the real itp_run, the way
 * heaptap reads the target's socket. Whatever the bytes, itp_run must not
 * crash, must return a reason, and (unless writing itself failed) must
 * leave a recording that rec_open accepts. It runs under a memory budget,
 * as heaptap does, and libFuzzer's RSS limit is set just above it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpret/interpret.h"
#include "recfile/recfile.h"

#define MAX_INPUT (1 << 20)
#define FUZZ_BUDGET_MIB 512 /* itp_options.max_memory; interpret.cmake's RSS limit allows for it */

static char dir[64];

static void remove_dir(void)
{
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct itp_options opt = {.no_symbols = 1, .max_memory = (uint64_t)FUZZ_BUDGET_MIB << 20};
	struct itp_result res;
	struct rec_reader *r;
	char path[128];
	int fds[2], rc, err = 0;

	if (size > MAX_INPUT)
		return 0;
	if (!dir[0]) {
		/* tmpfs when there is one: a disk file system's journal makes each run wait */
		struct stat sb;

		snprintf(dir, sizeof(dir), "%s/fuzz_stream.%d",
			 stat("/dev/shm", &sb) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
		(void)!mkdir(dir, 0700);
		atexit(remove_dir);
	}
	snprintf(path, sizeof(path), "%s/rec.htap", dir);
	unlink(path);
	if (pipe2(fds, O_CLOEXEC))
		abort();
	/* the whole input must fit, as nobody drains the pipe while we write */
	if (size > 65536 && fcntl(fds[1], F_SETPIPE_SZ, MAX_INPUT) < (int)size) {
		close(fds[0]);
		close(fds[1]);
		return 0;
	}
	if (size && write(fds[1], data, size) != (ssize_t)size)
		abort();
	close(fds[1]);
	opt.output = path;
	rc = itp_run(fds[0], &opt, &res);
	close(fds[0]);
	if (rc != -res.err || (rc && !res.detail[0]) || strlen(res.detail) >= sizeof(res.detail))
		abort();
	if (res.err != ITP_E_OUTPUT) {
		r = rec_open(path, &err);
		if (!r) {
			fprintf(stderr, "recording unreadable: %s (itp: %s)\n", rec_strerror(err),
				res.detail);
			abort();
		}
		rec_close(r);
	}
	unlink(path);
	return 0;
}
