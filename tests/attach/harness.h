/* tests/attach/harness.h - shared state and helpers of the attach test driver */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TESTS_ATTACH_HARNESS_H
#define HEAPTAP_TESTS_ATTACH_HARNESS_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/attach.h"

#define SKIP 77

/* Threads of tests/attach/victim.c, in the order of its "ready" line. */
enum role {
	R_MAIN, R_READER, R_SLEEPER, R_TICKER, R_CONDWAIT, R_EPOLL, R_BUSY, R_SIGRECV,
	R_INHANDLER, R_INALLOC, R_COUNT
};
extern const char *const role_name[R_COUNT];

/* A running victim: its pid, our ends of its stdin/stdout, its thread ids. */
struct victim {
	pid_t pid;
	int in, out;
	int tid[R_COUNT];
	char ready[512];
};

/* Paths from the command line; the file the test library's start function writes. */
extern const char *victim_path, *lib_path, *static_path, *zl_path;
extern char out_file[PATH_MAX + 64];
/* Set by a failed check(). */
extern int failed;
/* Cases prefixed "loader-": inject through att_inject_start/att_inject_wait (a loader thread). */
extern int loader_mode;
extern unsigned loader_wait_ms;

/* Print "ok"/"FAIL" and the message; a failure sets failed. */
void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Value of " key=N" in text, -1 if absent. */
long kv(const char *text, const char *key);
/* One line from fd within timeout_ms, without the newline. 0 or -1. */
int read_line(int fd, char *buf, size_t cap, int timeout_ms);
/* Start argv with pipes on stdin/stdout and read its "ready" line. 0 or -1. */
int spawn(struct victim *v, char *const argv[]);
/* spawn() of tests/attach/victim. */
int victim_start(struct victim *v);
/* Send a command line, read the reply line. 0 or -1. */
int victim_cmd(struct victim *v, const char *cmd, char *reply, size_t cap);
/* Close its stdin, reap it (kill after 3 s). Returns the wait status. */
int victim_stop(struct victim *v);
/*
 * Ping and check its self-checks; job_control tolerates epoll EINTR caused
 * by the test itself (SIGSTOP/SIGCONT, strace's attach), not by attach/.
 */
void victim_check_jc(struct victim *v, const char *when, int job_control);
void victim_check(struct victim *v, const char *when);
/* The looping threads still turn: lap counts of ping reply r against a ping 100 ms later. */
void victim_check_progress(struct victim *v, const char *r, const char *when);
/* Role of a tid in the victim, -1 if none. */
int role_of(const struct victim *v, pid_t tid);
/* Print the session's measurements. */
void print_stats(const struct victim *v, struct att_ctx *ctx);
/* Lines of path containing needle. */
int count_lines(const char *path, const char *needle);
/* TracerPid of pid, -1 if unreadable. */
int tracer_pid(pid_t pid);
/* State letter of pid from /proc/PID/stat, '?' if unreadable. */
char proc_state(pid_t pid);
/* Does /proc/PID/maps mention needle / hold addr in an anonymous mapping of <= 3 pages (a scratch one)? */
int maps_contains(pid_t pid, const char *needle);
int maps_has_addr(pid_t pid, uint64_t addr);
/* Threads of pid named heaptap-load (attach/loader.c's loader threads). */
int loaders_alive(pid_t pid);
/* preflight, prepare (lib_path), seize: a thread held on ATT_OK; else the first failing reason. */
enum att_reason seize_with_lib(struct att_ctx *ctx);
/* seize_with_lib, [hold], inject, release; the first failing reason. */
enum att_reason attach_once(struct att_ctx *ctx, const char *sym, const char *arg,
			    struct att_inject_result *res, unsigned hold_ms);
/*
 * att_inject + att_release, or in loader_mode att_inject_start + att_release +
 * att_inject_wait, checking that the loader thread and its pages are gone.
 */
enum att_reason inject_release(struct att_ctx *ctx, const char *lib, const char *sym,
			       const char *arg, struct att_inject_result *res);
/* Print a step's reason, exit code, detail and errno. */
void report_reason(const char *what, struct att_ctx *ctx, enum att_reason why);

/* Cases, each returning 0 pass, 1 fail, 77 skip. */
int case_inject(void);
int case_thread(const char *role);
int case_hold(void);
int case_pause(void);
int case_defer_signals(void);
int case_zombie_leader(void);
int case_stopped(void);
int case_stopped_late(void);
int case_traced(void);
int case_traced_strace(void);
int case_static(void);
int case_nopid(void);
int case_gone_before_seize(void);
int case_exit_mid_call(void);
int case_bad_call(const char *which);
int case_stop_in_call(const char *which);
int case_fault(const char *step);
int case_namespace(const char *fault);
int case_killed_steps(const char *role);
int case_killed_random(void);
int case_eagain(void);
int case_priority(void);

#endif /* HEAPTAP_TESTS_ATTACH_HARNESS_H */
