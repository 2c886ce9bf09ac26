/* attach/attach.h - seize one safe thread of a live process and load a library into it */
/* SPDX-License-Identifier: MIT */
/*
 * The attacher knows ptrace and processes and nothing of the event stream.
 * A session is a struct att_ctx and a sequence of paired steps:
 *
 *   att_new(pid)               ... att_free()
 *   att_preflight()            reads /proc only, stops nothing
 *   att_prepare(lib)           optional: file work done before any stop
 *                              (libc symbols, forbidden ranges, unwind
 *                              tables, staging the library)
 *   att_choose_thread()        ranks threads from /proc/PID/task/TID/syscall
 *                              (att_seize calls it; callable alone to look)
 *   att_seize()                ... att_release()   stops the best safe thread
 *                              (needs a passed preflight)
 *   att_inject_start()         saves registers, signal mask and errno, maps a
 *                              page and starts a loader thread in the target
 *                              (two remote calls), then puts everything back;
 *                              the loader thread does dlopen, dlsym and the
 *                              start function after the release
 *   att_release()              lets the thread go
 *   att_inject_wait()          the loader thread's outcome
 *
 * att_inject() is the synchronous form: every call (mmap, dlopen, dlsym,
 * the start function) in the seized thread itself, for targets without
 * pthread_create in libc and for the tests.
 *
 * Only one thread of the target is ever stopped, and only between
 * att_seize() and att_release(); every other thread keeps running.
 * The target never depends on heaptap staying alive: PTRACE_O_EXITKILL is
 * not used, so if heaptap dies the kernel detaches and the target runs on.
 *
 * Every step returns enum att_reason: ATT_OK (0), or why it failed. After a
 * failure the step has undone what it did (the target runs as before); the
 * caller calls att_release() and att_free() as usual. att_strerror() gives
 * the text, att_detail() the specifics (tracer pid and comm, dlerror()
 * text, the errno of the failing call), att_exit_code() a distinct process
 * exit status for the command layer. Nothing here prints.
 *
 * Threads: ptrace ties a tracee to the thread that seized it, so every
 * call for one ctx must come from the same thread of heaptap. While the
 * target's thread runs our code (inside att_inject/att_call), the calling
 * thread blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and
 * SIGALRM, and unblocks them when the registers are back: if heaptap died
 * in that window the kernel would detach a thread whose registers are ours
 * and the target would crash at our return address. The command layer
 * must still handle those signals (flag + act after the step returns) and
 * block them in its other threads; SIGKILL cannot be covered.
 *
 * Fault injection: HEAPTAP_FAULT=<step> (read by att_new) makes that step
 * fail right after its action, so its rollback runs (see docs/attach.md for
 * the step names). The failure reason is then ATT_E_FAULT. A name that is
 * no step makes att_new fail (att_env_check).
 */
#ifndef HEAPTAP_ATTACH_H
#define HEAPTAP_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ATT_MUST_CHECK __attribute__((warn_unused_result))

/* Why a step failed. The values are stable: att_exit_code() maps them. */
enum att_reason {
	ATT_OK = 0,
	/* preflight: nothing was touched */
	ATT_E_BAD_PID,		/* pid <= 0 */
	ATT_E_SELF,		/* the pid is heaptap itself */
	ATT_E_NO_PROCESS,	/* no such process */
	ATT_E_NOT_TGID,		/* the pid is a thread, not a process (detail names the process) */
	ATT_E_KERNEL_THREAD,	/* a kernel thread */
	ATT_E_ZOMBIE,		/* the process is exiting or a zombie */
	ATT_E_STOPPED,		/* stopped by a signal (state T): left stopped, not touched */
	ATT_E_TRACED,		/* already traced (detail: tracer pid and comm) */
	ATT_E_OTHER_USER,	/* another user's process and no CAP_SYS_PTRACE */
	ATT_E_NOT_DUMPABLE,	/* non-dumpable (setuid, prctl) and no CAP_SYS_PTRACE */
	ATT_E_YAMA,		/* kernel.yama.ptrace_scope forbids it (detail: the scope) */
	ATT_E_EXE,		/* cannot read the executable's ELF header */
	ATT_E_ARCH,		/* other ELF class or machine (detail says which) */
	ATT_E_STATIC,		/* statically linked: no dynamic loader to load a library */
	ATT_E_TOO_EARLY,	/* loader mapped but libc not yet: still starting or mid-exec */
	ATT_E_SEGV_IGNORED,	/* the target ignores SIGSEGV, which the remote call's return relies on */
	/* seize and thread choice */
	ATT_E_PTRACE,		/* a ptrace request failed (detail: which; errno) */
	ATT_E_NO_THREAD,	/* no thread is in a state we may interrupt (all in EINTR syscalls, ...) */
	ATT_E_NO_SAFE_THREAD,	/* every candidate stayed inside the allocator, loader, or a signal handler */
	ATT_E_THREAD_UNSAFE,	/* the thread asked for with att_prefer_thread() may not be interrupted */
	ATT_E_STOP_TIMEOUT,	/* the thread did not stop in time after PTRACE_INTERRUPT */
	ATT_E_EXITED,		/* the target exited during the attach */
	ATT_E_EXEC,		/* the target called execve during the attach */
	/* injection */
	ATT_E_NO_SYMBOL,	/* dlopen, mmap, ... not found in the target's libc (detail: which) */
	ATT_E_CALL_FAULT,	/* a remote call crashed; the target was put back (detail: signal, address) */
	ATT_E_CALL_TIMEOUT,	/* a remote call did not return in time; the thread was put back mid-call */
	ATT_E_REMOTE_MMAP,	/* mmap in the target failed */
	ATT_E_MEMORY,		/* reading or writing the target's memory failed */
	ATT_E_STAGE,		/* copying the library into the target's mount namespace failed */
	ATT_E_DLOPEN,		/* dlopen returned NULL (detail: dlerror() text from the target) */
	ATT_E_DLSYM,		/* the start function is not in the library (detail: dlerror()) */
	ATT_E_START,		/* the start function returned nonzero (detail: its value) */
	ATT_E_STATE,		/* API misuse: a step called out of order */
	ATT_E_NOMEM,		/* out of memory in heaptap */
	ATT_E_FAULT,		/* HEAPTAP_FAULT made this step fail (detail: the step) */
	ATT_E_THREAD_CREATE,	/* pthread_create in the target failed (errno: its value, e.g. EAGAIN) */
	ATT_E_LOAD_TIMEOUT,	/* the loader thread did not report within the wait (it goes on alone) */
	ATT_E_LIBC_VERSION,	/* the library needs a glibc symbol version the process's libc lacks */
	ATT_E_NO_PROCFS,	/* no procfs at /proc in the process's root (inject/ reads /proc/self/maps) */
	ATT_E_COUNT
};

/* Text for a reason: lowercase, no period, never NULL. */
const char *att_strerror(enum att_reason why);

/*
 * Files of the target's tree (rootfs.c). procdir is "/proc/PID" or
 * "/proc/PID/task/TID": the process's root, in its mount namespace. Paths
 * are resolved inside that root (openat2 RESOLVE_IN_ROOT: an absolute
 * symlink the process planted stays in its root, never reaches the host's
 * files; no magic links), the name is opened O_PATH first so a FIFO or
 * device is never opened, and only a regular file of at most
 * ATT_ROOT_MAX_SIZE bytes is opened for reading.
 */
#define ATT_ROOT_MAX_SIZE (1LL << 30)

struct stat;
struct elfr_file;

/*
 * att_root_open - open path (absolute, as the process sees it) for reading.
 * Returns the descriptor (close-on-exec; *st, may be NULL, its stat), or
 * -errno: -EINVAL not a regular file, -EFBIG too large, -ENOENT, ...
 */
int att_root_open(const char *procdir, const char *path, struct stat *st);

/* att_root_stat - stat path as att_root_open resolves it, opening nothing. 0 or -errno. */
int att_root_stat(const char *procdir, const char *path, struct stat *st);

/*
 * att_open_regular - open a magic link heaptap trusts to name one inode
 * (/proc/PID/map_files/START-END) for reading, with att_root_open's checks
 * (regular file, size). Returns the descriptor or -errno.
 */
int att_open_regular(const char *path, struct stat *st);

/*
 * att_dir_is_mine - 0 when fd is a directory of our euid that no one else
 * may enter, else -EEXIST (someone else's) or -errno.
 */
int att_dir_is_mine(int fd);

/* att_elf_open_fd - elf/'s file view of the open file fd (closed here). NULL on failure (errno). */
struct elfr_file *att_elf_open_fd(int fd);

/*
 * att_sweep - remove the heaptap-XXXXXX directories (session or staging) a
 * killed heaptap left in procdir's /tmp and /dev/shm: owned by uid or us,
 * holding no directory, with no live heaptap (their flock) and nobody
 * listening in them (sweep.c). Returns how many were removed.
 */
int att_sweep(const char *procdir, uid_t uid);

/* The command layer's instants for HEAPTAP_HANG (attach/hang.c lists them all). */
enum att_hang_env_step {
	ATT_HANG_SESSION_BOUND,	/* "session-bound" */
	ATT_HANG_SESSION_OWNED,	/* "session-owned" */
};

/*
 * att_hang_env - a step of the command layer for HEAPTAP_HANG=<step>[:kill]
 * (tests only): heaptap stops itself with SIGSTOP there (or SIGKILLs itself)
 * when the variable names step.
 */
void att_hang_env(enum att_hang_env_step step);

/*
 * att_env_check - the test knobs HEAPTAP_FAULT=<step> and
 * HEAPTAP_HANG=<step>[@N][:kill], when set, name steps that exist (the
 * names are in docs/attach.md), N is a count from 1 and ":kill" the only
 * suffix. 0, or -EINVAL with err holding one line that says what is
 * wrong, e.g. "HEAPTAP_FAULT=sieze: no such step (seize, interrupt, ...)".
 * att_new fails on the same, so a misspelt knob never goes unnoticed.
 */
int att_env_check(char *err, size_t cap);

/*
 * Open dir ("tmp", "dev/shm") below procdir's root, O_PATH, refusing a
 * symlink at each step (a symlink the process planted could point a root
 * heaptap at the host's files). Returns the descriptor or -errno (-ENOTDIR
 * for a symlink).
 */
int att_open_root_dir(const char *procdir, const char *dir);

/*
 * Process exit status the command layer uses for a reason: 0 for ATT_OK,
 * otherwise distinct values in 10..63 (never 1, 2 or 77), stable across
 * versions.
 */
int att_exit_code(enum att_reason why);

/* A session with one target. Opaque; layout in attach/internal.h. */
struct att_ctx;

/*
 * Make a session for process pid. Reads HEAPTAP_FAULT and HEAPTAP_HANG.
 * Touches nothing in the target. Returns NULL with errno ENOMEM, or EINVAL
 * when a knob names no step (att_env_check says which).
 */
struct att_ctx *att_new(pid_t pid) ATT_MUST_CHECK;

/*
 * Release the target if still held (as att_release) and free ctx. NULL is
 * fine.
 */
void att_free(struct att_ctx *ctx);

/*
 * Check, from /proc only and without stopping anything, that pid can be
 * attached: it exists, is a user process and not ourselves, not stopped, not
 * traced, ptrace is allowed (uid, dumpable, Yama), the executable is native
 * (ELF class and machine), dynamically linked with libc loaded, and does not
 * ignore SIGSEGV. Returns ATT_OK or the first reason found.
 */
enum att_reason att_preflight(struct att_ctx *ctx) ATT_MUST_CHECK;

/*
 * Deadlines: stop_ms for a thread to stop after PTRACE_INTERRUPT (default
 * 1000), call_ms for one remote call to return (default 5000); 0 keeps the
 * current value. A call that times out is stopped where it is and the
 * thread's registers are put back (the called code's state is abandoned).
 */
void att_set_timeouts(struct att_ctx *ctx, unsigned stop_ms, unsigned call_ms);

/*
 * Ask for a given thread of the target rather than letting
 * att_choose_thread() rank them (tests; the command layer may offer it).
 * It is still refused if its state is not safe. 0 clears the wish.
 */
void att_prefer_thread(struct att_ctx *ctx, pid_t tid);

/*
 * Read /proc/PID/task/TID/syscall of every thread, without stopping any,
 * and rank them: first a thread waiting in pthread_join (the java
 * launcher's main thread), then threads blocked in a syscall the kernel restarts
 * transparently after a ptrace stop (read, futex, nanosleep, wait4, ...),
 * then threads running user code, then threads in a waiting call that
 * returns EINTR when a stop breaks it (epoll_wait, ppoll or pselect6 with
 * a signal mask, sigwaitinfo, ...), which att_seize sets up to go on as
 * if never stopped or as if its timeout expired (docs/attach.md), least
 * noticeable first; rt_sigsuspend, other EINTR-returning syscalls and
 * unknown ones are never candidates. Returns ATT_OK, ATT_E_NO_THREAD,
 * ATT_E_THREAD_UNSAFE (the preferred thread is not a candidate),
 * ATT_E_EXITED or ATT_E_NOMEM. att_seize() calls it again on retries.
 */
enum att_reason att_choose_thread(struct att_ctx *ctx) ATT_MUST_CHECK;

/*
 * Stop the best candidate: PTRACE_SEIZE (no EXITKILL) and PTRACE_INTERRUPT,
 * then unwind its stack (libunwind-ptrace) and let it go again if any frame
 * is in the allocator, the dynamic loader, thread creation, fork, or a
 * signal handler; then try the next candidate. When none is safe, wait a
 * little, choose again and retry, a bounded number of times. A signal that
 * reaches the thread while it is being stopped is delivered to it at once,
 * exactly once, with its siginfo. On success exactly one thread is stopped;
 * on failure none is. Returns ATT_OK, ATT_E_NO_THREAD, ATT_E_NO_SAFE_THREAD,
 * ATT_E_STOPPED (the process got a stop signal meanwhile; it stays
 * stopped), ATT_E_TRACED, ATT_E_EXITED, ATT_E_EXEC, ATT_E_PTRACE,
 * ATT_E_STOP_TIMEOUT or ATT_E_FAULT.
 */
enum att_reason att_seize(struct att_ctx *ctx) ATT_MUST_CHECK;

/*
 * Optional, before att_seize(): do now, while nothing is stopped, the work
 * that reads files: resolve the libc functions to call, learn where the
 * forbidden functions are (for the stack check), and if lib_path is not
 * NULL, make the library visible in the target's mount namespace (staging
 * a copy if needed; removed by att_inject/att_release/att_free). att_seize()
 * does the first two itself; att_inject() stages if this was not called
 * with the same path, then while the thread is stopped. Returns ATT_OK,
 * ATT_E_NO_SYMBOL, ATT_E_STAGE, ATT_E_EXITED or ATT_E_NOMEM.
 */
enum att_reason att_prepare(struct att_ctx *ctx, const char *lib_path) ATT_MUST_CHECK;

/* What att_inject() got back from the target. */
struct att_inject_result {
	uint64_t handle;	/* dlopen's handle (the same for a second injection) */
	uint64_t start_addr;	/* address of the start function in the target */
	int start_ret;		/* the start function's return value */
	int staged;		/* 1 when the library was copied into the target's mount namespace */
	int threaded;		/* 1: a loader thread did dlopen (att_inject_start), 0: the hijacked thread */
	pid_t loader_tid;	/* that thread's tid, 0 if unknown */
	uint64_t load_ns;	/* pthread_create to the outcome being seen by heaptap */
};

/*
 * In the seized thread: save its registers (general and XSAVE area), signal
 * mask and errno; block every asynchronous signal; mmap a scratch page for
 * strings; dlopen(lib_path, RTLD_NOW); dlsym(handle, start_symbol); call
 * start(arg) as int start(const char *arg); munmap the page; put errno,
 * mask and every register back exactly, so that a syscall the thread was
 * blocked in restarts as if nothing happened. lib_path must be absolute;
 * if it is not visible at the same path in the target's mount namespace, a
 * copy is made in a private 0700 directory under the target's /tmp, owned
 * by the target's user, and removed after the call. The thread stays
 * stopped (att_release() lets it go). On failure everything above is
 * undone, except that a library dlopen loaded stays loaded (it is never
 * unloaded; the start function was not called or failed). res may be NULL.
 * Returns ATT_OK or ATT_E_STATE, ATT_E_NO_SYMBOL, ATT_E_STAGE,
 * ATT_E_REMOTE_MMAP, ATT_E_MEMORY, ATT_E_DLOPEN, ATT_E_DLSYM, ATT_E_START,
 * ATT_E_CALL_FAULT, ATT_E_CALL_TIMEOUT, ATT_E_EXITED, ATT_E_EXEC,
 * ATT_E_PTRACE, ATT_E_FAULT.
 */
enum att_reason att_inject(struct att_ctx *ctx, const char *lib_path, const char *start_symbol,
			   const char *arg, struct att_inject_result *res) ATT_MUST_CHECK;

/*
 * As att_inject(), but the seized thread does not load the library: it
 * only creates a new thread in the target (pthread_create of the target's
 * libc, every asynchronous signal blocked, so the new thread inherits that
 * mask) whose start routine, copied into a page of its own, does dlopen,
 * dlsym and start(arg), records the outcome (and dlerror()'s text) in a
 * page heaptap reads, detaches itself, unmaps its pages and ends. The
 * seized thread makes two remote calls: an mmap of three pages and a stub
 * that takes errno's address, makes the data page writable and calls
 * pthread_create; everything of it is put back as by att_inject(). Then:
 * att_release(), and att_inject_wait() for the outcome. Without a
 * pthread_create in the target (libc only before glibc 2.34, and no
 * libpthread loaded) or with a path too long for the page, it falls back to
 * att_inject() itself (res.threaded 0). The staged copy of the library (if any) stays until att_inject_wait()
 * or att_free(). Returns as att_inject(), plus ATT_E_THREAD_CREATE (the
 * target's pthread_create failed: nothing was changed).
 */
enum att_reason att_inject_start(struct att_ctx *ctx, const char *lib_path, const char *start_symbol,
				 const char *arg) ATT_MUST_CHECK;

/*
 * After att_inject_start() and att_release(): wait up to timeout_ms for the
 * loader thread's outcome, reading its page with process_vm_readv (nothing
 * is stopped). Returns ATT_OK (the start function returned 0), ATT_E_DLOPEN
 * or ATT_E_DLSYM (detail: dlerror() text), ATT_E_START (res->start_ret),
 * ATT_E_EXITED, ATT_E_LOAD_TIMEOUT (the thread is still loading; it finishes
 * or fails on its own and cleans up after itself), ATT_E_STATE (nothing was
 * started), or the synchronous att_inject() outcome. res may be NULL.
 */
enum att_reason att_inject_wait(struct att_ctx *ctx, unsigned timeout_ms,
				struct att_inject_result *res) ATT_MUST_CHECK;

/*
 * Let the target go: detach the stopped thread (registers were already put
 * back by att_inject). Signals that came meanwhile were delivered at once
 * or stay pending (blocked during the calls). Idempotent; safe after any
 * failure. Records the pause in the stats.
 */
void att_release(struct att_ctx *ctx);

/* What a session measured; times in nanoseconds (CLOCK_MONOTONIC). */
struct att_stats {
	pid_t tid;		/* the hijacked thread, 0 if none */
	long syscall;		/* syscall it was blocked in, -1 for user code */
	long stop_rax;		/* rax at the stop: -512 ERESTARTSYS, -514 ERESTARTNOHAND, ... */
	unsigned threads;	/* threads of the target at the last choice */
	unsigned candidates;	/* of them, candidates */
	unsigned rejected;	/* threads stopped, unwound and let go as unsafe */
	unsigned rounds;	/* choice rounds att_seize needed */
	unsigned syscall_stops;	/* syscall stops inside our calls (mmap, munmap; all with end_sig 0) */
	int end_sig;		/* signal that ends trampoline calls, 0: they end at a syscall stop */
	unsigned delivered_signals; /* signals that arrived while stopping and were delivered at once */
	unsigned calls;		/* remote calls made */
	unsigned eintr_repaired; /* EINTR of an epoll_wait-like call our stop caused, rewound */
	uint64_t pause_ns;	/* PTRACE_INTERRUPT of the hijacked thread to its detach */
	uint64_t stop_ns;	/* PTRACE_INTERRUPT to the stop being seen */
	uint64_t unwind_ns;	/* stack check of the hijacked thread */
	uint64_t call_ns;	/* time the thread spent running remote calls */
	uint64_t max_reject_ns;	/* longest stop of a thread that was let go as unsafe */
	uint64_t scratch;	/* address of the last scratch page (unmapped again) */
	/* the hold (pause_ns) broken down; see attach/hold.c */
	unsigned hold_stops;	/* ptrace stops of the hijacked thread heaptap waited for */
	uint64_t hold_wait_ns;	/* heaptap waiting for those stops (the rest of pause_ns: its own work) */
	int hold_sched_ok;	/* the four figures below were taken */
	uint64_t hold_thr_run_ns;  /* the hijacked thread on a CPU during the hold (its schedstat) */
	uint64_t hold_thr_wait_ns; /* the hijacked thread runnable, waiting for a CPU (its schedstat) */
	uint64_t hold_own_run_ns;  /* heaptap's attaching thread on a CPU (its CPU clock) */
	uint64_t hold_own_wait_ns; /* heaptap off a CPU while not waiting for a stop: its work's wall
				      time (pause_ns - hold_wait_ns) minus hold_own_run_ns, at least 0 */
	int hold_boost;		/* heaptap's priority meanwhile: 0 as it was, 1 nice raised, 2 SCHED_FIFO */
	char reject_why[128];	/* why the last rejected thread was unsafe */
	/*
	 * The hijacked thread was in a waiting call that the stop broke off
	 * (epoll_wait, ppoll with a mask, ...): what was done so that the
	 * program cannot tell, e.g. "epoll_wait: re-entered with timeout 0,
	 * the program sees a wake-up with no events"; "" otherwise.
	 */
	char resumed[192];
};

/* Copy the session's measurements into *st. */
void att_get_stats(const struct att_ctx *ctx, struct att_stats *st);

/*
 * Specifics of the last failure, e.g. "traced by 4242 (strace)" or the
 * target's dlerror() text; "" when there are none. Owned by ctx, valid
 * until the next step.
 */
const char *att_detail(const struct att_ctx *ctx);

/* errno of the failing system call of the last failure, or 0. */
int att_errno(const struct att_ctx *ctx);

/*
 * Generic remote function call in the seized thread (for inject/ later):
 * fn(args[0..nargs)) with nargs <= 6 integer/pointer arguments; *ret gets
 * rax. Registers, mask and errno are saved before and restored after.
 * Returns like att_inject().
 */
enum att_reason att_call(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			 uint64_t *ret) ATT_MUST_CHECK;

/*
 * Address of an exported function of the target's libc (e.g. "getpid"),
 * found from /proc/PID/maps and libc's ELF file. Returns ATT_OK or
 * ATT_E_NO_SYMBOL.
 */
enum att_reason att_libc_symbol(struct att_ctx *ctx, const char *name, uint64_t *addr) ATT_MUST_CHECK;

#endif /* HEAPTAP_ATTACH_H */
