/* report/summary.c - the summary's parts taken from metadata and ticks */
/* SPDX-License-Identifier: MIT */
/*
 * Metadata keys read (written by interpret/; absent keys are tolerated):
 *   "exe", "command" (or "cmdline"), "pid", "attached", "sampled",
 *   "sample_bytes", "duration_ns", "peak_rss", "end_reason". docs/report.md
 *   lists them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

static uint64_t meta_u64(const struct rec_reader *r, const char *key)
{
	const char *v = rec_meta(r, key);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return 0;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end)
		return 0;
	return x;
}

static int meta_flag(const struct rec_reader *r, const char *key)
{
	const char *v = rec_meta(r, key);

	if (!v || !*v)
		return 0;
	return strcmp(v, "0") && strcmp(v, "no") && strcmp(v, "false");
}

/* The peak's time: the first tick at or after the event that reached it. */
static void ticks(struct rpt_data *d)
{
	size_t n = 0, i;
	const struct rec_tick *t = rec_ticks(d->r, &n);

	if (!t)
		return;
	for (i = 0; i < n; i++) {
		if (t[i].time_ns > d->sum.duration_ns)
			d->sum.duration_ns = t[i].time_ns;
		if (t[i].rss > d->sum.peak_rss)
			d->sum.peak_rss = t[i].rss;
		if (!d->sum.peak_time_known && d->sum.peak_event &&
		    t[i].event_index >= d->sum.peak_event) {
			d->sum.peak_time_known = 1;
			d->sum.peak_time_ns = t[i].time_ns;
		}
	}
}

int rpt_summary_meta(struct rpt_data *d)
{
	const struct rec_reader *r = d->r;
	const char *exe = rec_meta(r, "exe");
	const char *cmd = rec_meta(r, "command");
	uint64_t dur, rss;

	if (!cmd || !*cmd)
		cmd = rec_meta(r, "cmdline");
	d->sum.exe = exe ? exe : "";
	if (cmd && *cmd) {
		char *c = strdup(cmd);
		size_t i;

		if (!c)
			return -ENOMEM;
		/* Arguments may come NUL- or newline-separated; show them on one line. */
		for (i = 0; c[i]; i++)
			if (c[i] == '\n' || c[i] == '\t')
				c[i] = ' ';
		d->command = c;
		d->sum.command = c;
	} else {
		d->sum.command = d->sum.exe;
	}
	d->sum.pid = meta_u64(r, "pid");
	d->sum.end_reason = rec_meta(r, "end_reason");
	if (d->sum.end_reason && !*d->sum.end_reason)
		d->sum.end_reason = NULL;
	d->sum.attached = meta_flag(r, "attached");
	d->sum.sample_bytes = meta_u64(r, "sample_bytes");
	if (d->sum.sample_bytes || meta_flag(r, "sampled"))
		d->sum.sampled = 1;
	d->sum.estimated = d->sum.sampled;
	{
		/* sampling mode: exact totals beside the estimates */
		size_t n;
		const struct rec_site_count *sc = rec_site_counts(r, &n);

		d->sum.site_counts = n != 0;
		for (size_t i = 0; i < n; i++) {
			d->sum.exact_calls += sc[i].calls;
			d->sum.exact_bytes += sc[i].bytes;
		}
	}
	ticks(d);
	dur = meta_u64(r, "duration_ns");
	if (dur > d->sum.duration_ns)
		d->sum.duration_ns = dur;
	rss = meta_u64(r, "peak_rss");
	if (rss > d->sum.peak_rss)
		d->sum.peak_rss = rss;
	return 0;
}
