/* cli/top_view.c - heaptap top's screen: header, sparklines, the call-site table, a stack */
/* SPDX-License-Identifier: MIT */
/*
 * Draws struct top_ui with ncurses, laid out for 80x24 and wider:
 *
 *   heaptap top  COMM (pid N) attached  up 0:01:23  sampling 512K
 *   heap 12.3M  peak 20.1M  RSS 45.6M  allocs 12.3k/s  4.50M/s
 *   heap ▁▂▃▅▇█ ...                                  max 20.1M, last 2m
 *   RSS  ▁▁▂▂▃▃ ...                                  max 45.6M
 *   (a message: what a key did, the process exited, the library said)
 *   NOT FREED   CHANGE  ALLOC/S  CALLS/S  TEMP/S  CALL SITE
 *   rows, the selected one in reverse
 *   keys
 *
 * Enter swaps the table for the selected call site's heaviest stack. Each
 * draw erases the screen in memory and draws it again; refresh() sends
 * only what changed, so a redraw (every second, or after a resize) does
 * not flicker. Everything that came from the target is cleaned before
 * (top_clean): the process name here, symbols in top_loop.c.
 */
#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "cli/top.h"
#include "track/wire.h"

char *top_fmt_bytes(double v, char *buf, size_t len)
{
	static const char unit[] = "BKMGTP";
	int u = 0;

	if (v < 0)
		v = 0;
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%.0fB", v);
	else
		snprintf(buf, len, v < 10 ? "%.2f%c" : v < 100 ? "%.1f%c" : "%.0f%c", v, unit[u]);
	return buf;
}

char *top_fmt_count(double v, char *buf, size_t len)
{
	if (v < 0)
		v = 0;
	if (v < 1000)
		snprintf(buf, len, v < 10 && v > 0 && v != (double)(long)v ? "%.1f" : "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, len, v < 1e4 ? "%.2fk" : v < 1e5 ? "%.1fk" : "%.0fk", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, len, v < 1e7 ? "%.2fM" : v < 1e8 ? "%.1fM" : "%.0fM", v / 1e6);
	else
		snprintf(buf, len, "%.2fG", v / 1e9);
	return buf;
}

/* a signed change of bytes: "+12.3K", "-4.00M", "0" */
static char *fmt_change(int64_t v, char *buf, size_t len)
{
	char b[32];

	if (!v) {
		snprintf(buf, len, "0");
		return buf;
	}
	top_fmt_bytes(v < 0 ? -(double)v : (double)v, b, sizeof(b));
	snprintf(buf, len, "%c%.20s", v < 0 ? '-' : '+', b);
	return buf;
}

/* text at (y, x), cut to the screen's width */
static void put(int y, int x, const char *text)
{
	int h, w;

	getmaxyx(stdscr, h, w);
	if (y < 0 || y >= h || x >= w)
		return;
	mvaddnstr(y, x, text, w - x);
}

/* a whole line in reverse video, padded to the width */
static void put_bar(int y, const char *text)
{
	int h, w;

	getmaxyx(stdscr, h, w);
	if (y < 0 || y >= h)
		return;
	attron(A_REVERSE);
	mvhline(y, 0, ' ', w);
	mvaddnstr(y, 0, text, w);
	attroff(A_REVERSE);
}

static void draw_header(struct top_ui *u)
{
	char l[400], a[32], b[32], c[32], d[32], e[32], spark[TOP_HIST * 3 + 1];
	uint64_t secs = u->st.elapsed_ns / 1000000000ull, max = 0;
	size_t cells, i;
	int h, w;

	getmaxyx(stdscr, h, w);
	(void)h;
	if (u->sample)
		snprintf(b, sizeof(b), "sampling %s", cli_format_bytes(u->sample, a, sizeof(a)));
	else
		snprintf(b, sizeof(b), "full tracing");
	/* paused: said first, where a narrow screen does not cut it */
	snprintf(l, sizeof(l), "heaptap top%s  %s (pid %d) %s  up %llu:%02llu:%02llu  %s",
		 u->paused ? " [PAUSED]" : "", u->comm, (int)u->pid, u->a->what,
		 (unsigned long long)(secs / 3600), (unsigned long long)(secs / 60 % 60),
		 (unsigned long long)(secs % 60), b);
	attron(A_BOLD);
	put(0, 0, l);
	attroff(A_BOLD);
	snprintf(l, sizeof(l), "heap %s  peak %s  RSS %s  allocs %s/s  %s/s",
		 top_fmt_bytes((double)u->st.heap_bytes, a, sizeof(a)),
		 top_fmt_bytes((double)u->st.peak_bytes, b, sizeof(b)),
		 top_fmt_bytes((double)u->st.rss_bytes, c, sizeof(c)),
		 top_fmt_count(u->f ? u->f->calls_ps : 0, d, sizeof(d)),
		 top_fmt_bytes(u->f ? u->f->bytes_ps : 0, e, sizeof(e)));
	put(1, 0, l);
	/* the sparklines: what is left of the width after the label and the legend */
	cells = w > 5 + 26 ? (size_t)(w - 5 - 26) : 1;
	for (i = 0; i < u->nhist; i++)
		if (u->heap_hist[i] > max)
			max = u->heap_hist[i];
	top_sparkline(u->heap_hist, u->nhist, spark, sizeof(spark), cells, u->utf8);
	put(2, 0, "heap ");
	put(2, 5, spark);
	snprintf(l, sizeof(l), "max %s, last %llum%02llus",
		 top_fmt_bytes((double)max, a, sizeof(a)), (unsigned long long)(u->nhist / 60),
		 (unsigned long long)(u->nhist % 60));
	put(2, w > 26 ? w - 25 : 0, l);
	max = 0;
	for (i = 0; i < u->nhist; i++)
		if (u->rss_hist[i] > max)
			max = u->rss_hist[i];
	top_sparkline(u->rss_hist, u->nhist, spark, sizeof(spark), cells, u->utf8);
	put(3, 0, "RSS  ");
	put(3, 5, spark);
	snprintf(l, sizeof(l), "max %s", top_fmt_bytes((double)max, a, sizeof(a)));
	put(3, w > 26 ? w - 25 : 0, l);
}

/* the message line: the end of the session first, else the last thing said */
static void draw_message(struct top_ui *u)
{
	char l[300], clean[200];

	if (u->ended) {
		if (u->end_reason == WIRE_END_EXIT)
			snprintf(l, sizeof(l),
				 "process %d exited; the figures are its last ones. q quits",
				 (int)u->pid);
		else if (u->end_reason == WIRE_END_STOP)
			snprintf(l, sizeof(l), "the session was ended from outside; q quits");
		else
			snprintf(l, sizeof(l), "the session ended (%s); q quits",
				 u->end_err ? itp_strerror(u->end_err) : "the library ended it");
		put_bar(4, l);
		return;
	}
	if (u->msg[0]) {
		put(4, 0, u->msg);
	} else if (u->last_log[0]) {
		snprintf(l, sizeof(l), "library: %s",
			 top_clean(clean, sizeof(clean), u->last_log, sizeof(u->last_log)));
		put(4, 0, l);
	} else if (!u->f) {
		put(4, 0, "waiting for the first figures (every second)");
	} else if (u->f->unnamed) {
		put(4, 0, "naming new call sites...");
	}
}

/*
 * the call site as one short text of at most avail columns: function and
 * file:line (or where it is); a long function name gives way to the place
 */
static void site_text(struct top_ui *u, uint64_t ip, char *buf, size_t len, size_t avail)
{
	const struct top_sym *s;
	size_t fl, bl;

	if (!ip) {
		snprintf(buf, len, "[other call sites]");
		return;
	}
	s = top_sym(u, ip);
	fl = strlen(s->func);
	bl = strlen(s->base);
	if (!fl)
		snprintf(buf, len, "%s", s->base);
	else if (fl + 1 + bl <= avail || bl + 8 > avail)
		snprintf(buf, len, "%s %s", s->func, s->base);
	else
		snprintf(buf, len, "%.*s~ %s", (int)(avail - bl - 2), s->func, s->base);
}

static void draw_table(struct top_ui *u, int y0, int rows)
{
	static const char *const title[] = {"NOT FREED", "CHANGE", "ALLOC/S", "CALLS/S", "TEMP/S"};
	static const char keys[] = "lact";
	static const int width[] = {9, 7, 8, 8, 6};
	char l[600], site[400], v[5][32];
	int x = 0;

	attron(A_REVERSE);
	mvhline(y0, 0, ' ', COLS);
	for (int k = 0; k < 5; k++) {
		/* the sort column is marked; CHANGE sorts with not freed */
		const char *mark =
		    (k == 0 && u->sort == 'l') || (k >= 2 && keys[k - 1] == u->sort) ? "*" : " ";

		snprintf(l, sizeof(l), "%*s%s", width[k], title[k], mark);
		put(y0, x, l);
		x += width[k] + 1;
	}
	put(y0, x, "CALL SITE");
	attroff(A_REVERSE);
	if (!u->norder) {
		put(y0 + 1, 0, u->f ? "no allocations yet" : "");
		return;
	}
	if (u->sel >= u->first + (size_t)rows)
		u->first = u->sel - (size_t)rows + 1;
	if (u->sel < u->first)
		u->first = u->sel;
	for (int i = 0; i < rows && u->first + (size_t)i < u->norder; i++) {
		const struct top_row *r = u->order[u->first + (size_t)i];
		int selected = u->first + (size_t)i == u->sel;

		top_fmt_bytes((double)r->live_bytes, v[0], sizeof(v[0]));
		fmt_change(r->change, v[1], sizeof(v[1]));
		top_fmt_bytes(r->bytes_ps, v[2], sizeof(v[2]));
		top_fmt_count(r->calls_ps, v[3], sizeof(v[3]));
		if (u->f->sampled)
			snprintf(v[4], sizeof(v[4]), "-");
		else
			top_fmt_count(r->temp_ps, v[4], sizeof(v[4]));
		site_text(u, r->ip, site, sizeof(site), COLS > 43 ? (size_t)COLS - 43 : 20);
		snprintf(l, sizeof(l), "%9s %7s %8s %8s %6s %s", v[0], v[1], v[2], v[3], v[4],
			 site);
		if (selected) {
			attron(A_REVERSE);
			mvhline(y0 + 1 + i, 0, ' ', COLS);
		}
		put(y0 + 1 + i, 0, l);
		if (selected)
			attroff(A_REVERSE);
	}
}

static const struct top_row *selected_row(const struct top_ui *u)
{
	for (size_t i = 0; i < u->norder; i++)
		if (u->order[i]->ip == u->sel_ip)
			return u->order[i];
	return NULL;
}

static void draw_stack(struct top_ui *u, int y0, int rows)
{
	const struct top_row *r = selected_row(u);
	char l[600], site[400], a[32], b[32], c[32], d[32], e[32];

	site_text(u, u->sel_ip, site, sizeof(site), sizeof(site) - 1);
	snprintf(l, sizeof(l), "CALL SITE  %s", site);
	put_bar(y0, l);
	if (!r) {
		put(y0 + 1, 0, "this call site is no longer in the table");
		return;
	}
	snprintf(l, sizeof(l), "not freed %s in %s blocks (%s since the last refresh)",
		 top_fmt_bytes((double)r->live_bytes, a, sizeof(a)),
		 top_fmt_count((double)r->live_objects, b, sizeof(b)),
		 fmt_change(r->change, c, sizeof(c)));
	put(y0 + 1, 0, l);
	snprintf(l, sizeof(l), "allocating %s/s in %s calls/s; %s temporary/s",
		 top_fmt_bytes(r->bytes_ps, d, sizeof(d)), top_fmt_count(r->calls_ps, e, sizeof(e)),
		 u->f->sampled ? "-" : top_fmt_count(r->temp_ps, a, sizeof(a)));
	put(y0 + 2, 0, l);
	put(y0 + 3, 0, "its heaviest stack, innermost frame first:");
	for (int i = 0; i < rows - 4 && (uint32_t)i < r->nstack; i++) {
		const struct top_sym *s = top_sym(u, r->stack[i]);

		snprintf(l, sizeof(l), "#%-2d %s  %s", i, s->func[0] ? s->func : "??", s->where);
		put(y0 + 4 + i, 0, l);
	}
}

void top_draw(struct top_ui *u)
{
	int h, w, rows;

	getmaxyx(stdscr, h, w);
	(void)w;
	erase();
	draw_header(u);
	draw_message(u);
	rows = h - 7; /* header 4, message 1, titles 1, keys 1 */
	if (rows > 0) {
		if (u->stack)
			draw_stack(u, 5, rows + 1);
		else
			draw_table(u, 5, rows);
	}
	attron(A_REVERSE);
	mvhline(h - 1, 0, ' ', COLS);
	put(h - 1, 0,
	    u->stack ? "Enter/Esc back  s full/sampled  p pause  q quit"
		     : "l a c t sort  Enter stack  s full/sampled  p pause  q quit");
	attroff(A_REVERSE);
	move(h - 1, 0);
	refresh();
}
