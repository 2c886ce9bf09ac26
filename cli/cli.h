/* cli/cli.h - the heaptap command: commands, argument parsing and their helpers */
/* SPDX-License-Identifier: MIT */
/*
 * cli/ is the only folder that prints. Each command is one file
 * (cmd_<name>.c) with a run function and a usage text, registered in the
 * table of main.c; attach and detach slot in the same way. Helpers that a
 * test can call without running a command are declared here too: argument
 * parsing (which fills an error message instead of printing), output
 * names, the library directory and the session directory.
 *
 * Exit codes: 0 success (record: the program's own status), 1 an error,
 * 2 bad usage.
 */
#ifndef HEAPTAP_CLI_H
#define HEAPTAP_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

#define CLI_PRELOAD_LIB "libheaptap_preload.so"
#define CLI_EXT "htap"

/* One command of the table in main.c. */
struct cli_command {
	const char *name;
	const char *summary;		     /* one line for "heaptap --help" */
	int (*run)(int argc, char **argv);   /* argv[0] is the command name; returns the exit code */
	void (*usage)(FILE *f);		     /* the text of "heaptap NAME --help" */
};

/* The commands (cmd_record.c, cmd_report.c). */
int cli_cmd_record(int argc, char **argv);
void cli_usage_record(FILE *f);
int cli_cmd_report(int argc, char **argv);
void cli_usage_report(FILE *f);
int cli_cmd_attach(int argc, char **argv);   /* cmd_attach.c */
void cli_usage_attach(FILE *f);
int cli_cmd_detach(int argc, char **argv);   /* cmd_detach.c */
void cli_usage_detach(FILE *f);

/*
 * cli_msg - print "heaptap: " + the formatted message + "\n" to stderr in
 * one write(2), so messages of concurrent processes do not interleave.
 * errno is preserved. The message is escaped (rpt_escape): bytes another
 * party chose never reach the terminal as controls.
 */
void cli_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------ */
/* Argument parsing. On bad usage these return -EINVAL and put one line  */
/* (no "heaptap: " prefix, no newline) in err; they print nothing.       */

struct cli_record_args {
	const char *output; /* -o FILE, NULL = default name */
	uint64_t max_memory; /* --max-memory BYTES, 0 = the default */
	int debuginfod;	    /* --debuginfod given */
	unsigned depth;	    /* --depth N, 0 = not given */
	uint64_t sample;    /* --sample BYTES, 0 = full tracing */
	uint32_t langs_off; /* --no-python-frames: 1 << WIRE_LANG_PYTHON (HEAPTAP_PYFRAMES=0) */
	int help;	    /* --help seen */
	int argc;	    /* the program and its arguments (argv[0] = PROGRAM) */
	char **argv;
};

/*
 * cli_getopt_reset - before a getopt_long loop: start over at argv[1] (the
 * parsers run more than once in a process, e.g. the unit tests) and let
 * getopt print nothing.
 */
void cli_getopt_reset(void);

/*
 * cli_getopt_error - put the message for getopt_long's ':' (missing
 * argument) or '?' (unknown option) result c into err; returns -EINVAL.
 */
int cli_getopt_error(int c, char **argv, char *err, size_t errlen);

/* cli_parse_pid - a process id (1..INT_MAX) from s into *out; -EINVAL and err otherwise. */
int cli_parse_pid(const char *s, pid_t *out, char *err, size_t errlen);

/*
 * cli_parse_pid_operand - the one operand argv[first] (first = optind after
 * the options) is a process id: into *out. -EINVAL and err when there is
 * none, more than one, or it is not a process id.
 */
int cli_parse_pid_operand(int argc, char **argv, int first, pid_t *out, char *err, size_t errlen);

/* cli_parse_output - -o FILE: s (not empty) into *out; -EINVAL and err otherwise. */
int cli_parse_output(const char *s, const char **out, char *err, size_t errlen);

/*
 * cli_parse_seconds - a number of seconds (decimals allowed) above 0, at
 * least min (0: any) and at most max, for option opt; -EINVAL and err otherwise.
 */
int cli_parse_seconds(const char *opt, const char *s, double min, double max, double *out, char *err,
		      size_t errlen);

/* cli_record_parse - parse "record [-o FILE] [--depth N] [--] PROGRAM [ARGS...]". */
int cli_record_parse(int argc, char **argv, struct cli_record_args *a, char *err, size_t errlen);

enum cli_format {
	CLI_FORMAT_TEXT = 0,
	CLI_FORMAT_JSON,
	CLI_FORMAT_HTML,      /* one self-contained page (text) */
	CLI_FORMAT_PPROF,
	CLI_FORMAT_HEAPTRACK, /* heaptrack_print's input, zstd'd (binary) */
	CLI_FORMAT_COLLAPSED, /* folded stacks (text) */
	CLI_FORMAT_MASSIF,    /* valgrind massif's file (text) */
};

struct cli_report_args {
	const char *file;
	const char *output; /* -o FILE, NULL = stdout */
	int cost;	    /* --cost: enum rpt_fold_cost (collapsed), -1 = not given */
	int diff;	    /* --diff: file is the OLD recording, file2 the NEW one */
	const char *file2;
	enum cli_format format;
	size_t top;	/* -n N, default 10 */
	size_t backtraces; /* -b N backtraces per call site, default 5, 0 = all */
	unsigned threads; /* --threads N, 0 = automatic */
	int force;	/* --force: replace an existing -o file */
	int native_all;	/* --native-all: CPython's evaluation-loop frames kept */
	int help;
};

/* cli_report_parse - parse "report [--format text|json] [-n N] FILE". */
int cli_report_parse(int argc, char **argv, struct cli_report_args *a, char *err, size_t errlen);

struct cli_attach_args {
	const char *output; /* -o FILE, NULL = default name */
	uint64_t max_memory; /* --max-memory BYTES, 0 = the default */
	int debuginfod;	    /* --debuginfod given */
	uint64_t sample;    /* --sample BYTES, 0 = full tracing */
	double snapshot_every; /* --snapshot-every SECS, 0 = none */
	const char *out_dir;   /* --out DIR (snapshots) */
	int format_pprof;      /* --format pprof given */
	double duration;    /* --duration SECS, 0 = until a signal */
	/*
	 * --no-python-frames, --no-java-frames: 1 << WIRE_LANG_PYTHON, _JAVA.
	 * The whole mask goes to the library in WIRE_CTL_XFRAMES at the start
	 * (cli_sample_start_xframes), where it skips the producers of those
	 * languages: Python's is part of heaptap's own library, already in the
	 * process. Java's producer is a JVMTI agent that only heaptap asks the
	 * JVM to load, after the attach (cli_java_frames): with the Java bit
	 * the JVM is not asked at all, so nothing of heaptap's runs inside it
	 * (docs/design.md "Switching a language's frames off").
	 */
	uint32_t langs_off;
	pid_t pid;	    /* the process */
	int help;	    /* --help seen */
	int verbose;	    /* -v: step times */
};

/*
 * cli_java_frames - in a HotSpot JVM, have heaptap's library loaded as its
 * JVMTI agent (jvm/jvm.h), so stacks go on into Java frames; says one line
 * when that cannot be done (the recording then has native stacks only),
 * and with verbose when it is. Nothing for a process without a JVM. Waits
 * at most JVM_ATTACH_MS, less once *stop is set.
 */
void cli_java_frames(pid_t pid, int verbose, const volatile sig_atomic_t *stop);

/* ------------------------------------------------------------------ */
/* Sampling (sample_args.c)                                           */

#define CLI_SAMPLE_MAX (1ull << 30) /* --sample at most 1G */

struct itp_options;
struct itp_result;

/* ------------------------------------------------------------------ */
/* Symbolization and the memory budget (sym_args.c)                     */

#define CLI_MAX_MEMORY_MIN ((uint64_t)64 << 20)

/* cli_parse_max_memory - --max-memory's value (>= 64M); 0, or -EINVAL with err filled in. */
int cli_parse_max_memory(const char *s, uint64_t *out, char *err, size_t errlen);
/*
 * cli_sym_options - the target pid (its modules are pinned through
 * /proc/PID), the budget, debuginfod, and symbolization in a child; when
 * heaptap is root and pid's effective user is not, the child runs as
 * pid's effective uid and gid. 0, or -errno (pid's status unreadable).
 */
int cli_sym_options(struct itp_options *opt, pid_t pid, uint64_t max_memory, int debuginfod);
/* cli_sym_summary - one warning line when symbolization ended early. */
void cli_sym_summary(const char *cmd, const struct itp_result *res);

/* cli_parse_bytes - "512K", "1M", "4096", "2Gi", "64KB" (binary units) into *out; 0 or -EINVAL. */
int cli_parse_bytes(const char *s, uint64_t *out);
/* cli_parse_sample - --sample's value (1 .. CLI_SAMPLE_MAX); 0, or -EINVAL with err filled in. */
int cli_parse_sample(const char *s, uint64_t *out, char *err, size_t errlen);
/* cli_sample_seed - HEAPTAP_SAMPLE_SEED (a number; tests fix the samples with it), else 0. */
uint64_t cli_sample_seed(void);
/*
 * cli_sample_start - send the library its start rate (WIRE_CTL_SAMPLE, 0 =
 * full tracing, seed from HEAPTAP_SAMPLE_SEED) on the accepted event socket,
 * at once: an attached library's trk_start waits for it (TRK_SAMPLE_WAIT_MS,
 * before its hooks are installed) so no allocation is recorded in the wrong
 * mode. record's library has the rate from HEAPTAP_SAMPLE already; the
 * record, read again by its timer, then changes nothing.
 */
void cli_sample_start(int conn, uint64_t sample);

/*
 * cli_sample_start_xframes - cli_sample_start, and in the same write
 * WIRE_CTL_XFRAMES with the languages whose frames are not wanted
 * (cli_attach_args.langs_off; 0: none is sent), so an attached library
 * starts with both.
 */
void cli_sample_start_xframes(int conn, uint64_t sample, uint32_t langs_off);
/* cli_sample_options - the rate for the recording's metadata (itp_run sends nothing more). */
void cli_sample_options(struct itp_options *opt, uint64_t sample);
/* cli_format_bytes - v as "512K", "1M", "3G" when exact, else plain digits; returns buf. */
char *cli_format_bytes(uint64_t v, char *buf, size_t len);
/* cli_sample_summary - the closing line of a sampled session (nothing for sample 0). */
void cli_sample_summary(const char *cmd, uint64_t sample, const struct itp_result *res);

/* Periodic pprof snapshots of an attach session (sample_snap.c). */
#define CLI_SNAP_PATH 4096
struct itp_snapshot;
struct cli_snap {
	const char *dir;	/* --out DIR (exists) */
	pid_t pid;
	unsigned written, errors;
	unsigned same;		/* snapshots in the same second so far */
	char last_when[32];
};
/* cli_snap_write - itp_options.snapshot: write one gzip'd pprof heap profile into sn->dir. */
void cli_snap_write(const struct itp_snapshot *s, void *arg);
/* cli_snap_stats - (-v) the snapshots' name cache: addresses, memory, time spent naming. */
struct itp_result;
void cli_snap_stats(const struct itp_result *res);

/* cli_attach_parse - parse "attach [-o FILE] [--duration SECS] [-v] PID" (attach_args.c). */
int cli_attach_parse(int argc, char **argv, struct cli_attach_args *a, char *err, size_t errlen);

/*
 * A live viewer of a session (heaptap top): three hooks, all optional. The
 * session (attach or a launched program) calls options on its session
 * thread before the interpreter starts (conn: the library's event socket,
 * open until the session is over), ended on that thread once the
 * interpreter returned, and run on the main thread once the session runs:
 * run returns when the viewer is done or *stop was set (a signal, a
 * `heaptap detach`); the session is then stopped (the library restores
 * its slots) and summed up on stderr as without a viewer.
 */
struct cli_live {
	void (*options)(void *arg, struct itp_options *opt, int conn);
	void (*ended)(void *arg, int ret, const struct itp_result *res);
	void (*run)(void *arg, volatile sig_atomic_t *stop);
	void *arg;
};

/*
 * cli_attach_session - heaptap attach with parsed arguments a; with live,
 * a viewer watches the session (the status line and a->duration are not
 * used then). Returns attach's exit code.
 */
int cli_attach_session(const struct cli_attach_args *a, const struct cli_live *live);

/* heaptap top (cmd_top.c) */
int cli_cmd_top(int argc, char **argv);
void cli_usage_top(FILE *f);

/* ------------------------------------------------------------------ */
/* Output names (outname.c)                                             */

/*
 * cli_outname - write into buf the name "heaptap.COMM.PID.EXT" (attempt 0)
 * or "heaptap.COMM.PID.N.EXT" (attempt N >= 1), inside dir when dir is not
 * NULL. Characters of comm other than letters, digits and "._+-" become
 * "_"; an empty comm is "prog". Returns 0, or -ENAMETOOLONG.
 */
int cli_outname(const char *dir, const char *comm, uint32_t pid, const char *ext, unsigned attempt,
		char *buf, size_t len);

/*
 * cli_outname_free - the first cli_outname() from attempt `from` on that
 * names no existing file; *attempt gets its number. Returns 0, -EEXIST
 * after 10000 taken names, or another -errno of lstat().
 */
int cli_outname_free(const char *dir, const char *comm, uint32_t pid, const char *ext,
		     unsigned from, unsigned *attempt, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Running the interpreter (interp.c)                                   */

struct itp_options;
struct itp_result;

#define CLI_NO_NAME (-0x7fff0000) /* cli_interpret: no output name could be chosen */

/*
 * cli_interpret - itp_run on conn with opt (its output set here) into
 * opt_out, or else the first free default name heaptap.COMM.PID.htap; a
 * name taken between the check and the create (the writer's O_EXCL) moves
 * on to the next. out gets the name used. With opt->snapshot set and no
 * opt_out, no recording is written and out gets "". Returns what itp_run
 * returned, or CLI_NO_NAME after printing why no name could be chosen.
 */
int cli_interpret(int conn, struct itp_options *opt, const char *opt_out, const char *cmd,
		  const char *comm, pid_t pid, char *out, size_t outlen, struct itp_result *res);

struct itp_input;

/* cli_input_stats - one -v line: how the stream was read (reader thread, socket backlog). */
void cli_input_stats(const char *cmd, const struct itp_input *in);

/* ------------------------------------------------------------------ */
/* Live status line on a terminal (status.c)                           */

struct itp_status;

/* What cli_status_begin() put aside; the caller only owns the storage. */
struct cli_status {
	int on;	   /* stderr is a terminal */
	int shown; /* a line is on the screen without its newline */
	uint64_t start_ns, last_ns, last_calls;
	void (*status)(const struct itp_status *st, void *arg); /* the command's own callbacks */
	void (*log)(int level, const char *msg, size_t len, void *arg);
	void *status_arg;
};

/*
 * cli_status_begin - when stderr is a terminal, chain opt's status and log
 * callbacks behind ones that draw the one-line live status (elapsed,
 * allocation calls and calls/s, heap, peak, stacks, recording size) on
 * stderr; otherwise change nothing. cli_interpret() calls it.
 */
void cli_status_begin(struct cli_status *s, struct itp_options *opt);

/*
 * cli_status_end - put opt's callbacks back; with final, draw the last line
 * (calls/s over the whole session) and end it with a newline, else erase
 * the line. Nothing when stderr is not a terminal.
 */
void cli_status_end(struct cli_status *s, struct itp_options *opt, const struct itp_status *final);

/* ------------------------------------------------------------------ */
/* Facts checked before a command starts (procinfo.c)                  */

/*
 * cli_check_output_dir - 0 if a file can be created where path names (its
 * directory is writable and searchable), else -errno; checked before the
 * target is touched, for a clear message.
 */
int cli_check_output_dir(const char *path);

/*
 * cli_read_comm - pid's comm (what ps shows) into buf; if it cannot be read,
 * the base name of fallback (15 characters, as the kernel keeps), or "prog".
 */
void cli_read_comm(pid_t pid, const char *fallback, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Library directory (libdir.c)                                        */

/*
 * cli_libdir - find the directory holding lib: env_dir if set and not
 * empty (and only there), else <dir of self_exe>/../lib (build tree), else
 * <dir of self_exe>/../lib/heaptap (installed). Writes the directory to
 * buf. Returns 0, -ENOENT if lib is in none of them, -ENAMETOOLONG.
 */
int cli_libdir(const char *env_dir, const char *self_exe, const char *lib, char *buf, size_t len);

/* cli_find_libdir - cli_libdir() with $HEAPTAP_LIBDIR and /proc/self/exe. */
int cli_find_libdir(const char *lib, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Session directory and socket (session.c)                            */

struct cli_session {
	char dir[4096];	 /* "" when not created */
	char sock[108];	 /* socket path inside dir (sun_path size) */
	int listen_fd;	 /* -1 when closed */
};

/*
 * cli_session_open - create a private 0700 directory heaptap-XXXXXX under
 * $TMPDIR (or /tmp) holding a listening AF_UNIX stream socket "sock".
 * Returns 0, or -errno with everything undone.
 */
int cli_session_open(struct cli_session *s);

/*
 * cli_session_accept - wait for the connection of process pid (checked with
 * SO_PEERCRED; connections of other processes are closed), watching pid:
 * if it exits without connecting, returns -ECHILD with its wait status in
 * *status. If it connected and already exited, returns 0 with *exited = 1
 * and *status set (pid is then reaped). Returns 0 with *conn (close-on-exec)
 * on success, or -errno. Once a connection is accepted the listening socket
 * is closed and unlinked: processes the program starts later with the same
 * environment find no one listening, and their library stays inert.
 */
int cli_session_accept(struct cli_session *s, pid_t pid, int *conn, int *exited, int *status);

/* cli_session_close - close the socket, remove it and the directory. Idempotent. */
void cli_session_close(struct cli_session *s);

/* ------------------------------------------------------------------ */
/* Attach session directory (attach_session.c)                          */

struct cli_attach_dir {
	char name[16];	      /* "heaptap-XXXXXX" */
	char where[16];	      /* "/tmp" or "/dev/shm": the target's directory used */
	char target_sock[108]; /* the socket path as the target sees it */
	int parent_fd;	      /* the target's /tmp (O_PATH), -1 when closed */
	int dir_fd;	      /* the session directory (flock'ed while open), -1 when closed */
	int listen_fd;	      /* listening socket (non-blocking), -1 when closed */
	int sock_fd;	      /* the socket's file (O_PATH), -1 when closed */
	struct stat dir_st;   /* what the directory and the socket file are: */
	struct stat sock_st;  /*   a name swapped for something else is not removed */
	int bound;	      /* the socket file exists */
	volatile int cancel;  /* set by another thread: cli_attach_dir_accept gives up */
	char why[160];	      /* a refusal that strerror cannot say, "" if none */
};

/*
 * cli_attach_dir_open - create a private 0700 directory heaptap-XXXXXX in
 * process pid's own /tmp (through /proc/PID/root, so in its mount
 * namespace; its /dev/shm when /tmp is missing or read-only) with a
 * listening AF_UNIX socket "sock" (mode 0600), both made while the
 * directory is ours and then handed to the target's filesystem uid/gid
 * through descriptors. A name swapped meanwhile is refused (-EEXIST, why
 * says what happened). Directories a killed heaptap left there go first
 * (att_sweep). target_sock is the path the target must connect to.
 * Returns 0, or -errno with everything undone.
 */
int cli_attach_dir_open(struct cli_attach_dir *d, pid_t pid);

/*
 * cli_attach_dir_accept - wait up to timeout_ms for a connection from
 * process pid (SO_PEERCRED; others are closed). Returns 0 with *conn
 * (close-on-exec, blocking), -ETIMEDOUT, -ESRCH when pid is gone,
 * -ECANCELED once d->cancel is set (looked at every 50 ms), or -errno.
 */
int cli_attach_dir_accept(struct cli_attach_dir *d, pid_t pid, unsigned timeout_ms, int *conn);

/* cli_attach_dir_close - close the socket, remove it and the directory. Idempotent. */
void cli_attach_dir_close(struct cli_attach_dir *d);

/* ------------------------------------------------------------------ */
/* Session control socket: one heaptap per process, detach (detach_ctl.c) */

#define CLI_CTL_PATH 4096

struct cli_ctl; /* opaque: the holder's side */

/* Who holds the session of a process. */
struct cli_ctl_holder {
	pid_t heaptap;	/* its pid (SO_PEERCRED), 0 if unknown */
	long long since; /* when it took the session (seconds since the epoch), 0 if unknown */
	int answered;	/* it sent its greeting (a stopped heaptap does not) */
	uid_t uid;	/* its uid (SO_PEERCRED) */
	int untrusted;	/* not uid 0 or ours, or not this heaptap program: nothing it said is used */
};

/* How a session ended, as the holder tells a `heaptap detach`. */
struct cli_ctl_result {
	int code;	    /* heaptap attach's exit code */
	int end_reason;	    /* enum wire_end_reason, 0 if no END came */
	uint64_t allocs;    /* allocations recorded */
	uint64_t restored;  /* GOT slots put back */
	uint64_t left;	    /* slots that no longer held the hook */
	char out[CLI_CTL_PATH]; /* the recording (absolute path), "" if none */
};

/*
 * cli_ctl_open - take the session of process pid: bind the abstract socket
 * "heaptap-session/PID/STARTTIME" and answer on it from a thread (all
 * signals blocked, no ptrace). A "detach" request sets *stop. Returns 0
 * with *out, -EBUSY when another heaptap holds it (*h says who), -EPERM
 * when a process that is not a trusted heaptap holds the name (*h says
 * who, h->untrusted), -ESRCH when pid is gone, or -errno.
 */
int cli_ctl_open(pid_t pid, volatile sig_atomic_t *stop, struct cli_ctl **out,
		 struct cli_ctl_holder *h);

/*
 * cli_ctl_describe - "heaptap PID (attached since DATE UTC, N s ago)" into
 * buf; for an untrusted holder "held by uid N (pid M), not a heaptap
 * session: not trusted".
 */
void cli_ctl_describe(const struct cli_ctl_holder *h, char *buf, size_t len);

/* cli_ctl_finish - send r to every client that asked for a detach. NULL c is fine. */
void cli_ctl_finish(struct cli_ctl *c, const struct cli_ctl_result *r);

/* cli_ctl_close - end the thread, close every socket (the name is gone). NULL is fine. */
void cli_ctl_close(struct cli_ctl *c);

/*
 * cli_ctl_who - who holds pid's session. Returns 0 (*h filled; h->answered
 * 0 when it did not greet within 5 s), -ENOENT when nobody does, -EPERM
 * when the holder is not trusted (h->untrusted), -errno. The functions
 * below that talk to the holder return -EPERM for such a holder too.
 */
int cli_ctl_who(pid_t pid, struct cli_ctl_holder *h);

/*
 * cli_ctl_detach - ask the holder of pid's session to end it and wait up to
 * timeout_ms for the result. Returns 0 (*r filled), -ENOENT when nobody
 * holds it, -ETIMEDOUT when the holder does not greet (stopped) or does not
 * finish in time, -EPIPE when it went away without a result (killed),
 * -EPROTO for a malformed answer, or -errno. *h says who it was.
 */
int cli_ctl_detach(pid_t pid, unsigned timeout_ms, struct cli_ctl_holder *h,
		   struct cli_ctl_result *r);

/* cli_ctl_set_conn - the session's event socket for "sample" requests (-1: none). NULL c is fine. */
void cli_ctl_set_conn(struct cli_ctl *c, int conn);

/*
 * cli_ctl_request - send line (with its newline) to the holder of pid's
 * session and read its one-line answer into reply (newline removed).
 * Returns 0, -ENOENT when nobody holds it, -ETIMEDOUT when it does not
 * greet or answer within 5 s, -EPIPE when it closed first, or -errno.
 */
int cli_ctl_request(pid_t pid, const char *line, char *reply, size_t len, struct cli_ctl_holder *h);

/* cli_ctl_parse_rate - "off", "full", "0" -> 0; else 1 .. CLI_SAMPLE_MAX bytes (ctl_sample.c). 0 or -EINVAL. */
int cli_ctl_parse_rate(const char *s, uint64_t *rate);

/*
 * cli_ctl_sample_request - the holder's side of "sample ARG" (ctl_sample.c):
 * parse ARG (bytes, "off" or 0 = full tracing), send WIRE_CTL_SAMPLE on conn
 * (-1: no session yet). Returns the answer line in buf ("sample ok N\n" or
 * "sample error REASON\n"); buf may hold ARG.
 */
const char *cli_ctl_sample_request(int conn, const char *arg, char *buf, size_t len);

/* ------------------------------------------------------------------ */
/* heaptap ctl (cmd_ctl.c)                                              */

int cli_cmd_ctl(int argc, char **argv);
void cli_usage_ctl(FILE *f);

/* ------------------------------------------------------------------ */
/* Launching (spawn.c)                                                 */

/*
 * cli_spawn - fork and exec argv[0] (searched in PATH) with the current
 * environment plus the given NAME=VALUE overrides (NULL-terminated list; a
 * variable of the same name is replaced); in the child, the signals in
 * deflt are set to SIG_DFL and those in ignore to SIG_IGN (either may be
 * NULL). Returns the pid once the exec succeeded, or -errno of the failed
 * exec (the child is then reaped) or of fork.
 */
pid_t cli_spawn(char **argv, char *const *overrides, const sigset_t *deflt,
		const sigset_t *ignore);

/*
 * cli_preload_value - the LD_PRELOAD value with lib first and the old value
 * (may be NULL) after it, into buf. Returns 0 or -ENAMETOOLONG.
 */
int cli_preload_value(const char *lib, const char *old, char *buf, size_t len);

/* cli_exit_status - a wait status as an exit code: the status, or 128 + signal. */
int cli_exit_status(int status);

#endif /* HEAPTAP_CLI_H */
