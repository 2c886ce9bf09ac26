/* tests/unit/check_interpret_tools.c - check_interpret's --bench* and --write-seeds: timing and the fuzz seeds */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tests/lib/check_fixture.h"
#include "check_interpret_wire.h"
#include "interpret/internal.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"

#include "check_interpret_harness.h"
#include "check_interpret_tools.h"

/*
 * --bench EVENTS: a synthetic stream of 4 threads taking sequence numbers
 * in runs of 64, each buffering 4000 events per chunk (so chunks arrive out
 * of order as in a real session); each thread keeps 256 live blocks, so
 * allocations and frees alternate once warm; 1000 trace nodes.
 */
static void bench_gen(uint64_t nev, struct sbuf *out)
{
	enum { T = 4, RUN = 64, PER_CHUNK = 4000, LIVE = 256, NODES = 1000 };
	struct chunkb c[T];
	size_t cnt[T] = {0};
	uint64_t ring[T][LIVE], q;
	size_t head[T] = {0}, nlive[T] = {0};
	struct sbuf s = {0};
	int t;

	header(&s);
	ck_begin(&c[0], 1000, 0);
	for (q = 0; q < NODES; q++)
		ck_node(&c[0], q, q + 1, q ? (q * 7) % q + 1 : 0, 0x400000 + q * 16);
	ck_end(&s, &c[0]);
	for (t = 0; t < T; t++)
		ck_begin(&c[t], 1000 + t, NODES);
	for (q = NODES; q < NODES + nev; q++) {
		t = (int)((q / RUN) % T);
		if (nlive[t] == LIVE || (nlive[t] > LIVE / 2 && (q & 1))) {
			ck_free(&c[t], q, ring[t][head[t]]);
			head[t] = (head[t] + 1) % LIVE;
			nlive[t]--;
		} else {
			uint64_t ptr = 0x10000000ull * (t + 1) + (q << 4);

			ck_alloc(&c[t], q, WIRE_KIND_MALLOC, 16 + (q % 61) * 8, 1 + q % NODES, ptr);
			ring[t][(head[t] + nlive[t]) % LIVE] = ptr;
			nlive[t]++;
		}
		if (++cnt[t] == PER_CHUNK) {
			ck_end(&s, &c[t]);
			ck_begin(&c[t], 1000 + t, q + 1);
			cnt[t] = 0;
		}
	}
	for (t = 0; t < T; t++)
		ck_end(&s, &c[t]);
	sb_end(&s, NODES + nev, WIRE_END_EXIT);

	*out = s;
}

/* feed a stream to itp_run as fast as a socket takes it; print the rate */
static int bench_run(struct sbuf *s, uint64_t nev)
{
	struct itp_options opt = {.no_symbols = 1};
	struct itp_result res;
	struct feeder f = {0};
	pthread_t th;
	int sv[2], rc;
	double t0, t1, c0, c1;

	snprintf(outpath, sizeof(outpath), "/tmp/itp-bench.%d.htap", (int)getpid());
	opt.output = outpath;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 1;
	f.fd = sv[1];
	f.s = s;
	c0 = cpu_s();
	t0 = now_s();
	pthread_create(&th, NULL, feed, &f);
	rc = itp_run(sv[0], &opt, &res);
	t1 = now_s();
	c1 = cpu_s();
	close(sv[0]);
	pthread_join(th, NULL);
	close(sv[1]);
	if (!nev)
		nev = res.final.alloc_calls + res.final.free_calls + res.final.traces;
	printf("stream %.1f MB, %llu events, itp_run %.3f s wall, %.3f s CPU (both threads): "
	       "%.1f M events/s, %.0f MB/s; rc %d %s; recording %.1f MB; late %llu skipped %llu\n",
	       (double)s->len / 1e6, (unsigned long long)nev, t1 - t0, c1 - c0,
	       (double)nev / (t1 - t0) / 1e6, (double)s->len / (t1 - t0) / 1e6, rc, res.detail,
	       (double)res.final.output_bytes / 1e6, (unsigned long long)res.warn.late_events,
	       (unsigned long long)res.warn.skipped_seqs);
	if (!getenv("ITP_BENCH_KEEP"))
		unlink(outpath);
	return rc ? 1 : 0;
}

/* --bench N: generate a stream of N events and run it; --bench-gen N FILE: only write it */
int bench_stream(uint64_t nev, const char *file)
{
	struct sbuf s = {0};
	int rc = 0;

	bench_gen(nev, &s);
	if (file) {
		FILE *fp = fopen(file, "wb");

		if (!fp || fwrite(s.p, 1, s.len, fp) != s.len || fclose(fp)) {
			perror(file);
			rc = 1;
		}
	} else {
		rc = bench_run(&s, nev + 1000);
	}
	sb_free(&s);
	return rc;
}

/* --bench-run FILE: run a stream from a file (read into memory first) */
int bench_file(const char *file)
{
	struct sbuf s = {0};
	char tmp[1 << 16];
	size_t n;
	FILE *fp = fopen(file, "rb");
	int rc;

	if (!fp) {
		perror(file);
		return 1;
	}
	while ((n = fread(tmp, 1, sizeof(tmp), fp)) > 0)
		sb_bytes(&s, tmp, n);
	fclose(fp);
	rc = bench_run(&s, 0);
	sb_free(&s);
	return rc;
}

/* ---- seeds for the fuzzer ------------------------------------------------ */

static void write_file(const char *dir, const char *name, const struct sbuf *s)
{
	char path[4096];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || fwrite(s->p, 1, s->len, fp) != s->len) {
		perror(path);
		exit(1);
	}
	fclose(fp);
}

int write_seeds(const char *dir)
{
	const uint64_t seg[] = {0, 0x2000, 5, 0x2000, 0x1000, 6};
	struct sbuf s = {0};
	struct chunkb c;

	header(&s);
	ck_begin(&c, 1, 0);
	ck_module(&c, 0, 0x400000, 2, seg, (const uint8_t *)"\xaa\xbb\xcc", 3, "/bin/true");
	ck_node(&c, 1, 1, 0, 0x400100);
	ck_node(&c, 2, 2, 1, 0x400200);
	ck_alloc(&c, 3, WIRE_KIND_MALLOC, 16, 2, P1);
	ck_alloc_w(&c, 5, 32, 1, P2, 4096);
	ck_free(&c, 6, P1);
	ck_end(&s, &c);
	ck_begin(&c, 2, 4);
	ck_alloc(&c, 4, WIRE_KIND_CALLOC, 100, 1, P3);
	ck_nop(&c, 7);
	ck_free(&c, 8, P3);
	ck_module_del(&c, 9, 0x400000);
	ck_end(&s, &c);
	sb_tick(&s, 1000, 8192, 5);
	sb_end(&s, 10, WIRE_END_EXIT);
	write_file(dir, "two-threads", &s);
	sb_free(&s);

	header(&s);
	ck_begin(&c, 7, 0);
	ck_alloc(&c, 0, WIRE_KIND_REALLOC, 1, 0, P1);
	ck_end(&s, &c);
	write_file(dir, "no-end", &s);
	sb_free(&s);

	header(&s);
	ck_begin(&c, 3, 0);
	ck_alloc_d(&c, 0, WIRE_KIND_MALLOC, 24, 0, P2);
	ck_alloc_d(&c, 1, WIRE_KIND_MALLOC, 40, 0, P1);
	ck_free(&c, 2, P1);
	ck_alloc_d(&c, 3, WIRE_KIND_MALLOC, 8, 0, P1);
	ck_free_d(&c, 4, P2);
	ck_end(&s, &c);
	sb_end(&s, 5, WIRE_END_EXIT);
	write_file(dir, "ptr-delta", &s);
	sb_free(&s);

	sb_header(&s, 1, WIRE_F_ATTACHED | WIRE_F_SAMPLED, "", "", 0);
	sb_u8(&s, WIRE_REC_LOG);
	sb_var(&s, 3);
	sb_bytes(&s, "\x01hi", 3);
	sb_end(&s, 0, WIRE_END_STOP);
	write_file(dir, "log-only", &s);
	sb_free(&s);
	return 0;
}
