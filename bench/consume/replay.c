/* bench/consume/replay.c - feed a captured event stream to itp_run, report its CPU per event */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: consume_replay FILE [-n RUNS] [-o RECORDING] [--symbols]
 *
 * FILE is an event stream as the library sends it (captured by tee.c). It
 * is read into memory once; each run creates a socketpair, a feeder thread
 * writes the whole stream into one end and closes it, and this thread runs
 * itp_run on the other end, exactly as heaptap does after accept. The CPU
 * time of this process during itp_run (getrusage, so any thread itp_run
 * starts counts too) minus the feeder thread's own (CLOCK_THREAD_CPUTIME_ID)
 * is measured: other processes on a shared machine and the feeder's writes
 * do not count. Also the CPU of the thread that runs itp_run alone (its
 * other threads, the reader and the recording's chunk thread, work beside
 * it on a spare core): the pace an interpreter keeps on a free core.
 * Prints each run and the median: CPU seconds and ns per event (events =
 * allocations + frees + trace nodes applied); each run also its wall time
 * (CLOCK_MONOTONIC around itp_run: the interpreter's pace when the stream
 * is there as fast as it can take it). Without -o the recording
 * goes to a temporary file that is removed; symbolization is skipped
 * unless --symbols (it is a once-per-ip cost at the end, not per event).
 * The header's start_mono_ns is cleared in the copy in memory: the session's
 * duration then comes from the ticks alone, and the recording is flushed
 * only when its buffers fill (itp_options.no_timed_flush), so every replay
 * (and every build's) writes the same recording, byte for byte, which
 * bench/consume/run compares.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "interpret/interpret.h"
#include "track/wire.h"

struct feeder {
	int fd;
	const uint8_t *p;
	size_t len;
	double cpu; /* the feeder thread's CPU seconds */
};

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double process_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void *feed(void *arg)
{
	struct feeder *f = arg;
	size_t off = 0;

	while (off < f->len) {
		ssize_t w = write(f->fd, f->p + off, f->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(f->fd, SHUT_WR);
	f->cpu = thread_cpu();
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!fp)
		return NULL;
	do {
		if (n == cap) {
			uint8_t *v = realloc(buf, cap ? cap * 2 : 1 << 20);

			if (!v) {
				free(buf);
				fclose(fp);
				return NULL;
			}
			buf = v;
			cap = cap ? cap * 2 : 1 << 20;
		}
		got = fread(buf + n, 1, cap - n, fp);
		n += got;
	} while (got);
	fclose(fp);
	*len = n;
	return buf;
}

static int run_once(const uint8_t *s, size_t len, const char *out, int symbols, double *cpu,
		    double *tcpu, double *wall, uint64_t *events, struct itp_result *res)
{
	struct itp_options opt = {.no_symbols = !symbols, .output = out, .no_timed_flush = 1};
	struct feeder f = {.p = s, .len = len};
	pthread_t th;
	int sv[2], rc;
	double c0, t0, w0;

	unlink(out);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	f.fd = sv[1];
	if (pthread_create(&th, NULL, feed, &f)) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	w0 = mono();
	c0 = process_cpu();
	t0 = thread_cpu();
	rc = itp_run(sv[0], &opt, res);
	*tcpu = thread_cpu() - t0;
	*wall = mono() - w0;
	close(sv[0]);
	pthread_join(th, NULL);
	*cpu = process_cpu() - c0 - f.cpu;
	close(sv[1]);
	*events = res->final.alloc_calls + res->final.free_calls + res->final.traces;
	return rc;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *out = NULL;
	char tmp[64];
	int runs = 5, symbols = 0, i;
	double *cpu, *tcpu;
	uint64_t events = 0;
	uint8_t *s;
	size_t len;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--symbols"))
			symbols = 1;
		else if (!file && argv[i][0] != '-')
			file = argv[i];
		else
			file = NULL, i = argc;
	}
	if (!file || runs < 1) {
		fprintf(stderr, "usage: consume_replay FILE [-n RUNS] [-o RECORDING] [--symbols]\n");
		return 2;
	}
	s = slurp(file, &len);
	if (!s) {
		fprintf(stderr, "consume_replay: %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (len >= WIRE_HDR_FIXED && !memcmp(s, WIRE_MAGIC, 8))
		memset(s + offsetof(struct wire_header, start_mono_ns), 0,
		       sizeof(((struct wire_header *)0)->start_mono_ns));
	if (!out) {
		snprintf(tmp, sizeof(tmp), "/tmp/consume-replay.%d.htap", (int)getpid());
		out = tmp;
	}
	cpu = calloc((size_t)runs, sizeof(*cpu));
	tcpu = calloc((size_t)runs, sizeof(*tcpu));
	if (!cpu || !tcpu)
		return 1;
	for (i = 0; i < runs; i++) {
		struct itp_result res;
		double wall;
		int rc = run_once(s, len, out, symbols, &cpu[i], &tcpu[i], &wall, &events, &res);

		if (rc || res.err) {
			fprintf(stderr, "consume_replay: run %d: itp_run %d: %s\n", i + 1, rc,
				res.detail);
			return 1;
		}
		printf("run %d: %.3f s CPU, %llu events, %.1f ns/event, itp_run's thread %.1f "
		       "ns/event, recording %.1f MB, wall %.3f s\n",
		       i + 1, cpu[i], (unsigned long long)events, cpu[i] * 1e9 / (double)events,
		       tcpu[i] * 1e9 / (double)events, (double)res.final.output_bytes / 1e6, wall);
		fflush(stdout);
	}
	qsort(cpu, (size_t)runs, sizeof(*cpu), cmp_double);
	qsort(tcpu, (size_t)runs, sizeof(*tcpu), cmp_double);
	printf("median of %d: %.3f s CPU, %.1f ns/event (min %.1f, max %.1f); stream %.1f MB, "
	       "%llu events; itp_run's thread %.1f ns/event\n",
	       runs, cpu[runs / 2], cpu[runs / 2] * 1e9 / (double)events,
	       cpu[0] * 1e9 / (double)events, cpu[runs - 1] * 1e9 / (double)events,
	       (double)len / 1e6, (unsigned long long)events,
	       tcpu[runs / 2] * 1e9 / (double)events);
	if (out == tmp)
		unlink(tmp);
	free(cpu);
	free(tcpu);
	free(s);
	return 0;
}
