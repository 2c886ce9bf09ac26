/* cli/status.c - the live status line of record and attach on a terminal */
/* SPDX-License-Identifier: MIT */
/*
 * While the interpreter runs, its status callback (about every 250 ms, see
 * interpret/run.c) redraws one line on stderr:
 *
 *   heaptap: 12.3s  8.00M calls  651.2k/s  heap 1.2 MiB  peak 3.4 MiB  1234 stacks  rec 5.6 MiB
 *
 * Each redraw is "\r" + erase-to-end-of-line + the text, in one write, cut
 * to the terminal's width so it never wraps (a wrapped line cannot be
 * redrawn in place). calls/s is the rate since the previous redraw (the
 * first: since the start); the
 * final line, ended by a newline so it stays on the screen, shows the mean
 * over the whole session instead. A library log message erases the line
 * first, so it starts at column 0; the next redraw brings the line back.
 *
 * Nothing at all happens when stderr is not a terminal (a file, a pipe):
 * cli_status_begin() then leaves the options untouched.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "interpret/interpret.h"
#include "report/report.h"
#include "util/clock.h"

#define LINE_MAX_BYTES 512

/* A count in at most 7 characters: "12345", "123.4k", "8.00M", "1.23G". */
static void fmt_count(uint64_t v, char *buf, size_t len)
{
	if (v < 100000)
		snprintf(buf, len, "%" PRIu64, v);
	else if (v < 1000000)
		snprintf(buf, len, "%.1fk", (double)v / 1e3);
	else if (v < 1000000000)
		snprintf(buf, len, "%.2fM", (double)v / 1e6);
	else
		snprintf(buf, len, "%.2fG", (double)v / 1e9);
}

/* Columns of the terminal on stderr; 80 if it does not say. */
static size_t columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

static void put(const char *buf, size_t n)
{
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* a status line that cannot be shown is not worth an error */
	}
}

/* Draw st with the given rate; final = end the line with a newline. */
static void draw(struct cli_status *s, const struct itp_status *st, double rate, int final)
{
	char line[LINE_MAX_BYTES], calls[16], cps[16], heap[32], peak[32], rec[32], traces[16];
	double secs;
	size_t width, n;
	int m;

	secs = st->elapsed_ns ? (double)st->elapsed_ns / 1e9 : (double)(util_mono_ns() - s->start_ns) / 1e9;
	fmt_count(st->alloc_calls, calls, sizeof(calls));
	fmt_count(rate > 0 ? (uint64_t)(rate + 0.5) : 0, cps, sizeof(cps));
	fmt_count(st->traces, traces, sizeof(traces));
	rpt_format_size(st->heap_bytes, heap, sizeof(heap));
	rpt_format_size(st->peak_bytes, peak, sizeof(peak));
	rpt_format_size(st->output_bytes, rec, sizeof(rec));
	memcpy(line, "\r\033[K", 4);
	m = snprintf(line + 4, sizeof(line) - 5,
		     "heaptap: %.1fs  %s calls  %s/s  heap %s  peak %s  %s stacks  rec %s", secs,
		     calls, cps, heap, peak, traces, rec);
	if (m < 0)
		return;
	n = (size_t)m < sizeof(line) - 5 ? (size_t)m : sizeof(line) - 6;
	/* one column less than the width: a full line would wrap on some terminals */
	width = columns() - 1;
	if (n > width)
		n = width;
	n += 4;
	if (final)
		line[n++] = '\n';
	put(line, n);
	s->shown = !final;
}

static void on_status(const struct itp_status *st, void *arg)
{
	struct cli_status *s = arg;
	uint64_t now = util_mono_ns();
	double rate = 0;

	if (s->status)
		s->status(st, s->status_arg);
	if (s->last_ns && now > s->last_ns && st->alloc_calls >= s->last_calls)
		rate = (double)(st->alloc_calls - s->last_calls) * 1e9 / (double)(now - s->last_ns);
	s->last_ns = now;
	s->last_calls = st->alloc_calls;
	draw(s, st, rate, 0);
}

static void on_log(int level, const char *msg, size_t len, void *arg)
{
	struct cli_status *s = arg;

	if (s->shown) {
		put("\r\033[K", 4);
		s->shown = 0;
	}
	if (s->log)
		s->log(level, msg, len, s->status_arg); /* the interpreter passes status_arg to both */
}

void cli_status_begin(struct cli_status *s, struct itp_options *opt)
{
	memset(s, 0, sizeof(*s));
	if (!isatty(STDERR_FILENO))
		return;
	s->on = 1;
	s->start_ns = util_mono_ns();
	s->last_ns = s->start_ns;
	s->status = opt->status;
	s->status_arg = opt->status_arg;
	s->log = opt->log;
	opt->status = on_status;
	opt->status_arg = s;
	opt->log = on_log;
}

void cli_status_end(struct cli_status *s, struct itp_options *opt, const struct itp_status *final)
{
	double secs;

	if (!s->on)
		return;
	opt->status = s->status;
	opt->status_arg = s->status_arg;
	opt->log = s->log;
	if (!final) {
		if (s->shown)
			put("\r\033[K", 4);
		s->shown = 0;
		return;
	}
	secs = final->elapsed_ns ? (double)final->elapsed_ns / 1e9
				 : (double)(util_mono_ns() - s->start_ns) / 1e9;
	draw(s, final, secs > 0 ? (double)final->alloc_calls / secs : 0, 1);
}
