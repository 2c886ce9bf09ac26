/* cli/top_loop.c - heaptap top's screen loop: keys, sorting, symbols, the terminal */
/* SPDX-License-Identifier: MIT */
/*
 * Runs on heaptap's main thread while the session thread fills the model.
 * The terminal is in raw mode while the screen is up: Ctrl+C is a key (as q)
 * and no signal, so a launched program in heaptap's process group does not
 * get it; Ctrl+Z and Ctrl+\ do nothing. Keys are read with a 200 ms
 * timeout, or until the model's eventfd says a new frame is there; a new
 * frame, a key or a resize (ncurses' KEY_RESIZE) redraws.
 *
 *   l a c t        sort by not freed, bytes/s, calls/s, temporary/s
 *   Up Down PgUp PgDn Home End j k   move the selection
 *   Enter          the selected call site's heaviest stack (Enter/Esc: back)
 *   s              full tracing <-> sampling (the session's rate, else 512K),
 *                  sent to the library as `heaptap ctl PID sample` does
 *   p              pause the display (the session goes on)
 *   q Ctrl+C       leave: heaptap detaches
 *
 * Symbols: the interpreter names each address once per session for the
 * snapshots (interpret/snapsym.c, the recording's own symbolizer); a frame
 * carries the names of what it shows, and the screen keeps each ip's
 * cleaned text once it drew it (top_syms.c).
 */
#include <curses.h>
#include <errno.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/top.h"

#define KEY_WAIT_MS 200
#define CTRL(c) ((c)&0x1f)

/* ------------------------------------------------------------------ */
/* Sorting                                                              */

static double key_of(const struct top_row *r, int sort)
{
	switch (sort) {
	case 'a':
		return r->bytes_ps;
	case 'c':
		return r->calls_ps;
	case 't':
		return r->temp_ps;
	default:
		return (double)r->live_bytes;
	}
}

static int row_cmp(const void *a, const void *b, void *arg)
{
	const struct top_row *x = *(const struct top_row *const *)a;
	const struct top_row *y = *(const struct top_row *const *)b;
	int sort = *(const int *)arg;
	double kx = key_of(x, sort), ky = key_of(y, sort);

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->live_bytes != y->live_bytes)
		return x->live_bytes > y->live_bytes ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

/* order the shown frame's rows by u->sort; the selection stays on its call site */
static void resort(struct top_ui *u)
{
	struct top_row **o;

	u->norder = 0;
	if (!u->f)
		return;
	o = realloc(u->order, (u->f->nrows + 1) * sizeof(*o));
	if (!o)
		return;
	u->order = o;
	for (size_t i = 0; i < u->f->nrows; i++)
		o[i] = &u->f->rows[i];
	u->norder = u->f->nrows;
	qsort_r(o, u->norder, sizeof(*o), row_cmp, &u->sort);
	u->sel = 0;
	for (size_t i = 0; i < u->norder; i++)
		if (o[i]->ip == u->sel_ip) {
			u->sel = i;
			return;
		}
	if (u->norder)
		u->sel_ip = o[0]->ip; /* gone (or none yet): the top row */
}

/* ------------------------------------------------------------------ */
/* Keys                                                                 */

/* s: full tracing <-> sampling, on the live session */
static void toggle_sampling(struct top_ui *u)
{
	struct top_model *m = u->a->m;
	char arg[32], reply[200], b[32];
	uint64_t rate, got;

	pthread_mutex_lock(&m->lock);
	rate = m->sample ? 0 : m->sample_asked;
	if (m->conn < 0 || m->ended) {
		snprintf(u->msg, sizeof(u->msg), "the session is over: nothing to change");
	} else {
		snprintf(arg, sizeof(arg), "%" PRIu64, rate);
		cli_ctl_sample_request(m->conn, arg, reply, sizeof(reply));
		reply[strcspn(reply, "\n")] = '\0';
		if (sscanf(reply, "sample ok %" SCNu64, &got) == 1 && got == rate) {
			m->sample = rate;
			if (rate)
				snprintf(u->msg, sizeof(u->msg),
					 "sampling one allocation per %s bytes on average",
					 cli_format_bytes(rate, b, sizeof(b)));
			else
				snprintf(u->msg, sizeof(u->msg),
					 "full tracing: every allocation is recorded");
		} else {
			snprintf(u->msg, sizeof(u->msg), "the session refused: %.150s",
				 !strncmp(reply, "sample error ", 13) ? reply + 13 : reply);
		}
	}
	pthread_mutex_unlock(&m->lock);
}

static void move_sel(struct top_ui *u, long by)
{
	long s = (long)u->sel + by;

	if (!u->norder)
		return;
	if (s < 0)
		s = 0;
	if (s >= (long)u->norder)
		s = (long)u->norder - 1;
	u->sel = (size_t)s;
	u->sel_ip = u->order[u->sel]->ip;
}

/* one key; returns 1 to leave */
static int key(struct top_ui *u, int c)
{
	long page = LINES > 8 ? LINES - 8 : 1;

	switch (c) {
	case 'q':
	case 'Q':
	case CTRL('c'):
		return 1;
	case 'l':
	case 'a':
	case 'c':
	case 't':
		u->sort = c;
		resort(u);
		if (c == 't' && u->f && u->f->sampled)
			snprintf(u->msg, sizeof(u->msg),
				 "temporary allocations are told under full tracing only (s switches)");
		break;
	case 'p':
		u->paused = !u->paused;
		snprintf(u->msg, sizeof(u->msg), "%s",
			 u->paused ? "display paused (p resumes)" : "");
		break;
	case 's':
		toggle_sampling(u);
		break;
	case '\n':
	case '\r':
	case KEY_ENTER:
		u->stack = !u->stack && u->norder;
		break;
	case 27: /* Esc */
	case KEY_BACKSPACE:
		u->stack = 0;
		break;
	case KEY_UP:
	case 'k':
		move_sel(u, -1);
		break;
	case KEY_DOWN:
	case 'j':
		move_sel(u, 1);
		break;
	case KEY_PPAGE:
		move_sel(u, -page);
		break;
	case KEY_NPAGE:
		move_sel(u, page);
		break;
	case KEY_HOME:
		move_sel(u, -(long)u->norder);
		break;
	case KEY_END:
		move_sel(u, (long)u->norder);
		break;
	default:
		break;
	}
	return 0;
}

/* what the model says now; a new frame replaces the shown one unless paused. 1: something changed
 */
static int look(struct top_ui *u)
{
	struct top_model *m = u->a->m;
	struct top_frame *f = NULL;
	int changed = 0;

	pthread_mutex_lock(&m->lock);
	if (!u->paused) {
		f = m->frame;
		m->frame = NULL;
		u->st = m->st;
		u->nhist = top_hist_get(&m->hist, u->heap_hist, u->rss_hist);
	}
	changed = u->ended != m->ended || u->sample != m->sample;
	u->sample = m->sample;
	u->ended = m->ended;
	u->end_reason = m->end_reason;
	u->end_err = m->end_err;
	memcpy(u->last_log, m->last_log, sizeof(u->last_log));
	if (u->pid != m->pid) {
		char raw[64];

		u->pid = m->pid;
		cli_read_comm(u->pid, u->a->comm, raw, sizeof(raw));
		top_clean(u->comm, sizeof(u->comm), raw, sizeof(raw));
		changed = 1;
	}
	pthread_mutex_unlock(&m->lock);
	if (f) {
		/* what an unnamed frame drew of its new call sites was addresses */
		if (u->f && u->f->unnamed && u->cap_syms) {
			memset(u->syms, 0, u->cap_syms * sizeof(*u->syms));
			u->nsyms = 0;
		}
		top_frame_free(u->f);
		u->f = f;
		resort(u);
		changed = 1;
	}
	return changed;
}

/*
 * until a key, a new frame (the model's eventfd), a signal (SIGWINCH: a
 * resize) or KEY_WAIT_MS: a new frame is drawn as soon as it is published
 */
static void wait_input(int wake_fd)
{
	struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
			      {.fd = wake_fd, .events = POLLIN}};
	uint64_t v;

	if (poll(p, wake_fd >= 0 ? 2 : 1, KEY_WAIT_MS) > 0 && (p[1].revents & POLLIN) &&
	    read(wake_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: another look already took it */
	}
}

void top_view_run(const struct top_view_args *va)
{
	struct top_ui *u = calloc(1, sizeof(*u));
	SCREEN *scr;
	int c, dirty = 1;

	if (!u)
		return;
	u->a = va;
	u->sort = 'l';
	u->pid = -1;
	setlocale(LC_ALL, "");
	u->utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		free(u);
		return; /* checked before the attach: cannot happen but for memory */
	}
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	timeout(0);
	while (!*va->stop) {
		dirty |= look(u);
		if (dirty) {
			top_draw(u);
			dirty = 0;
		}
		/* every key that waits (ncurses may hold some already), then sleep */
		while ((c = getch()) != ERR) {
			if (key(u, c))
				goto out_screen;
			dirty = 1; /* a key, or KEY_RESIZE */
			if (c != 's' && c != 'p' && c != 't' && u->msg[0] && !u->paused)
				u->msg[0] = '\0';
		}
		if (!dirty)
			wait_input(va->m->wake_fd);
	}
out_screen:
	endwin();
	delscreen(scr);
	top_frame_free(u->f);
	free(u->order);
	free(u->syms);
	free(u);
}
