/* cli/top.h - heaptap top's parts: the model the session fills, the screen, the launch */
/* SPDX-License-Identifier: MIT */
/*
 * Shared by the top_*.c files and cmd_top.c only (the command itself is in
 * cli.h). The interpreter runs on a session thread and hands the model a
 * snapshot every second (interpret/agg.c: per-stack sums, calibrated to the
 * exact site counts when sampled); the model folds it into one row per
 * call site (the stack's innermost frame), with the names the interpreter's
 * symbolizer gave the addresses (itp_snapshot.frames), and publishes it as
 * a frame. The main thread runs the screen: it takes the newest frame and
 * draws it with ncurses.
 */
#ifndef HEAPTAP_CLI_TOP_H
#define HEAPTAP_CLI_TOP_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/cli.h"
#include "interpret/interpret.h"

#define TOP_STACK_MAX 64 /* frames kept of a call site's heaviest stack */
#define TOP_HIST 600	 /* seconds of heap and RSS history (the sparklines) */
#define TOP_DEFAULT_SAMPLE (512u << 10)
#define TOP_REFRESH_NS 1000000000ull /* a snapshot every second */
#define TOP_FIRST_NS 250000000ull    /* the first one this soon after the start */

struct cli_top_args {
	const char *output; /* -o FILE: also keep a recording */
	const char *log;    /* --log FILE: a launched program's stdout and stderr */
	uint64_t sample;    /* --sample BYTES (default 512K), 0 = --full */
	pid_t pid;	    /* the process, 0 when launching */
	int argc;	    /* launch: the program and its arguments */
	char **argv;
	int help;
};

/* cli_top_parse - "top [--full|--sample B] [-o FILE] [--log FILE] PID | -- PROG [ARGS]". */
int cli_top_parse(int argc, char **argv, struct cli_top_args *a, char *err, size_t errlen);

/* One call site: the innermost frame of its stacks. */
struct top_row {
	uint64_t ip;	    /* return address - 1; 0 = no frame */
	int64_t live_bytes; /* not freed now */
	int64_t live_objects;
	int64_t change;	 /* live_bytes minus the previous frame's (0 when new) */
	double bytes_ps; /* allocated per second over the last interval */
	double calls_ps;
	double temp_ps;	 /* temporary allocations per second */
	uint32_t nstack; /* its heaviest stack, innermost first */
	uint64_t stack[TOP_STACK_MAX];
};

struct top_mod {
	char *path;
	uint64_t base, lo, hi;
	uint8_t *build_id;
	size_t build_id_len;
};

/* What the interpreter named an ip (the innermost link of its chain); copies. */
struct top_fsym {
	uint64_t ip;
	char *function; /* NULL if unknown */
	char *file;	/* NULL if unknown */
	uint32_t line;
	uint8_t xframe, lang, xkind; /* a foreign (Java, Python) frame: its language and kind */
};

/* One refresh: what a snapshot said, folded per call site. */
struct top_frame {
	uint64_t elapsed_ns;	   /* session time */
	double interval_s;	   /* what the rates are over */
	double calls_ps, bytes_ps; /* all call sites */
	int sampled; /* temporary allocations are not known (only full tracing tells) */
	int unnamed; /* new call sites are being named: this frame's names follow */
	struct top_row *rows;
	size_t nrows;
	struct top_mod *mods; /* modules loaded now */
	struct top_fsym *syms; /* the names of every ip of rows and stacks, by ip */
	size_t nsyms;
	size_t nmods;
};

/* The heap and RSS of the last TOP_HIST seconds, one point a snapshot. */
struct top_hist {
	uint64_t heap[TOP_HIST], rss[TOP_HIST];
	size_t n, head; /* head: the next slot written */
};

struct top_model {
	pthread_mutex_t lock;
	pid_t pid;
	struct top_frame *frame; /* newest frame not yet taken, or NULL */
	uint64_t gen;		 /* frames published */
	struct itp_status st;	 /* newest status */
	struct top_hist hist;
	uint64_t sample;       /* the rate in force (0 = full tracing) */
	uint64_t sample_asked; /* the rate s goes back to */
	int conn;	       /* the library's socket (s), -1 before */
	int wake_fd;	       /* eventfd: a new frame or the end (the screen polls it) */
	int ended;	       /* the interpreter returned */
	int end_reason;	       /* enum wire_end_reason of the end */
	int end_err;	       /* enum itp_err of the end */
	char sysroot[64];      /* module paths as the target sees them */
	char last_log[160];    /* the library's last message */
	/* the session thread's own: the previous frame's live bytes by ip (sorted) */
	struct top_prev {
		uint64_t ip;
		int64_t live;
		double calls_ps, bytes_ps, temp_ps;
	} * prev;
	size_t nprev;
	double prev_window_s; /* what the last frame's rates were over */
	uint64_t last_snap_ns;
	/* the callbacks the session set before us (chained) */
	void (*status_next)(const struct itp_status *st, void *arg);
	void (*log_next)(int level, const char *msg, size_t len, void *arg);
	void *next_arg;
};

/* top_model.c */
void top_model_init(struct top_model *m, pid_t pid, uint64_t sample);
void top_model_destroy(struct top_model *m);
/*
 * top_model_fold - the frame of snapshot s; prev/nprev: live bytes and rates
 * of the last frame, by ip, whose rates were over window_s seconds. A
 * snapshot that covers less time than that (the session's last, at its end)
 * gives its rates over the same window: the time before its own interval
 * at the last frame's rates.
 */
struct top_frame *top_model_fold(const struct itp_snapshot *s, const struct top_prev *prev,
				 size_t nprev, double window_s);
void top_frame_free(struct top_frame *f);
/* top_model_wake - tell the screen something changed (m->wake_fd) */
void top_model_wake(struct top_model *m);
/* top_model_take - the newest frame not taken yet (the caller owns it), or NULL */
struct top_frame *top_model_take(struct top_model *m);
/* the hooks of struct cli_live; arg is the model */
void top_model_options(void *arg, struct itp_options *opt, int conn);
void top_model_ended(void *arg, int ret, const struct itp_result *res);
/* top_frame_sym - what f's snapshot named ip, or NULL */
const struct top_fsym *top_frame_sym(const struct top_frame *f, uint64_t ip);
/* top_module_of - the module of f holding ip, or NULL */
const struct top_mod *top_module_of(const struct top_frame *f, uint64_t ip);
/* top_sparkline - n cells (UTF-8 block characters when utf8, else ASCII) of the last points */
void top_sparkline(const uint64_t *v, size_t count, char *buf, size_t len, size_t cells, int utf8);
/* top_hist_get - the history oldest first into heap/rss (TOP_HIST each); returns how many */
size_t top_hist_get(const struct top_hist *h, uint64_t *heap, uint64_t *rss);

/*
 * top_clean - src (at most n bytes, up to a NUL; from the target: a name, a
 * path) made safe for the screen by rpt_escape: printable ASCII and
 * well-formed UTF-8 as they are, every other byte as \xNN, a backslash \\.
 * Always NUL-terminated. Returns dst.
 */
char *top_clean(char *dst, size_t len, const char *src, size_t n);

/* top_loop.c: the screen; returns when q or Ctrl+C was pressed or *stop was set */
struct top_view_args {
	struct top_model *m;
	volatile sig_atomic_t *stop;
	const char *what;   /* "attached" or "launched" */
	const char *comm;   /* the process's name (raw) */
	const char *output; /* the recording, or NULL */
};
void top_view_run(const struct top_view_args *v);

/* What the screen shows of an ip: cleaned, ready to draw. */
struct top_sym {
	uint64_t ip;	 /* 0 = an empty slot (ip 0 is never looked up) */
	char func[160];	 /* function, "" = unknown */
	char where[300]; /* file:line, or module+0xOFFSET, or the address */
	char base[120];	 /* where, short: the file's base name:line, the module's */
};

/* The screen's state (top_loop.c owns it, top_view.c draws it). */
struct top_ui {
	const struct top_view_args *a;
	struct top_frame *f;	/* shown (NULL before the first) */
	struct top_row **order; /* f's rows, sorted */
	size_t norder;
	int sort;	   /* 'l' not freed, 'a' bytes/s, 'c' calls/s, 't' temporary/s */
	uint64_t sel_ip;   /* the selected call site */
	size_t sel, first; /* its place in order, the first row on screen */
	int stack, paused, utf8;
	char msg[200]; /* the message line */
	/* the model's state as of the last look */
	struct itp_status st;
	uint64_t sample;
	int ended, end_reason, end_err;
	char last_log[160];
	uint64_t heap_hist[TOP_HIST], rss_hist[TOP_HIST];
	size_t nhist;
	char comm[64]; /* cleaned */
	pid_t pid;
	/* symbols by ip (open addressing) */
	struct top_sym *syms;
	size_t nsyms, cap_syms;
};

/* top_syms.c: the symbol of ip (never NULL) */
const struct top_sym *top_sym(struct top_ui *u, uint64_t ip);

/* top_view.c: draw the whole screen (erase, draw, refresh: only changes reach the terminal) */
void top_draw(struct top_ui *u);
/* top_fmt_bytes - "512B", "12.3K", "4.50M", "1.20G"; top_fmt_count - "123", "12.3k", "4.50M" */
char *top_fmt_bytes(double v, char *buf, size_t len);
char *top_fmt_count(double v, char *buf, size_t len);

/*
 * top_launch.c: heaptap top -- PROG ARGS: run the program under the preload
 * library and watch it; m->pid is set once it runs. Returns the exit code.
 */
int top_launch(const struct cli_top_args *a, const struct cli_live *live, struct top_model *m);

#endif /* HEAPTAP_CLI_TOP_H */
