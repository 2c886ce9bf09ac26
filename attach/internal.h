/* attach/internal.h - layouts and helpers shared by the attacher's files */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_ATTACH_INTERNAL_H
#define HEAPTAP_ATTACH_INTERNAL_H

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "attach/attach.h"
#include "util/clock.h"

struct elfr_file;

#define ATT_XSTATE_MAX 16384	/* XSAVE area, generous for AMX */
#define ATT_MAX_CAND 256	/* threads ranked per choice */
#define ATT_STOP_TIMEOUT_MS 1000
#define ATT_CALL_TIMEOUT_MS 5000
#define ATT_SEIZE_ROUNDS 50	/* choice rounds before ATT_E_NO_SAFE_THREAD */
#define ATT_ROUND_PAUSE_MS 10	/* the target runs this long between rounds */
#define ATT_MAX_FRAMES 128
/* Remote call frame (arch/x86_64.c), offsets from its address */
#define ATT_FRAME_UC 8		/* struct ucontext of the rt_sigframe */
#define ATT_FRAME_INFO 312	/* its siginfo, 128 bytes, which rt_sigreturn does not read: */
#define ATT_FRAME_RESULT 312	/*   the trampoline stores rax here */
#define ATT_FRAME_ERRNO_ADDR 320 /*  address of the thread's errno, 0 until known */
#define ATT_FRAME_ERRNO_VAL 328	/*   errno as it was */
#define ATT_FRAME_END_SIG 336	/*   signal the trampoline sends itself at the end, or 0 */
#define ATT_FRAME_STAGE 344	/*   u32 the loader stub's progress: 1 from its pthread_create on */
#define ATT_FRAME_FPMAX (ATT_XSTATE_MAX + 64)
#define ATT_FRAME_MAX (640 + ATT_FRAME_FPMAX)
#define ATT_TRAMP_SPACE 128	/* the trampoline's bytes at the start of the scratch mapping */
#define ATT_CHAIN_LEN 440	/* a second signal frame below the call frame (att_arch_chain_build) */

/* The steps HEAPTAP_FAULT can make fail (fault.c names them). */
enum att_fault_step {
	ATT_F_NONE = 0,
	ATT_F_SEIZE,
	ATT_F_INTERRUPT,
	ATT_F_CHOOSE,
	ATT_F_IDENT,
	ATT_F_REGS,
	ATT_F_MASK,
	ATT_F_ERRNO,
	ATT_F_SCRATCH,
	ATT_F_WRITE,
	ATT_F_STAGE,
	ATT_F_DLOPEN,
	ATT_F_DLSYM,
	ATT_F_START,
	ATT_F_FIXED,
	ATT_F_STUB,
	ATT_F_STUBCRASH,
	ATT_F_SYMBOLIZER,	/* interpret/'s: attach/ only accepts the name */
	ATT_F_COUNT
};

/* The instants HEAPTAP_HANG can stop heaptap at (hang.c names them). */
enum att_hang_step {
	ATT_H_NONE = 0,
	ATT_H_PREFLIGHTED,
	ATT_H_STOPPED,
	ATT_H_SAVED,
	ATT_H_CALLREGS,
	ATT_H_MASKED,
	ATT_H_SENT,
	ATT_H_RESUMED,
	ATT_H_SYSSTOP,
	ATT_H_END,
	ATT_H_ERRNO,
	ATT_H_RESTORE_FP,
	ATT_H_RESTORED,
	ATT_H_SESSION_BOUND,	/* the command layer's (att_hang_env) */
	ATT_H_SESSION_OWNED,
	ATT_H_COUNT
};

/* HEAPTAP_HANG=<step>[@N][:kill], parsed. */
struct att_hang_spec {
	enum att_hang_step step;	/* ATT_H_NONE: not set */
	unsigned nth;			/* the Nth visit of step, from 1 */
	bool kill_self;			/* ":kill": SIGKILL instead of SIGSTOP */
};

/* What we know of one thread's ptrace state. */
enum att_state {
	ATT_TS_UNTRACED = 0,	/* not seized by us */
	ATT_TS_SEIZED,		/* seized, PTRACE_INTERRUPT sent, stop not seen yet */
	ATT_TS_STOPPED,		/* in a ptrace stop we can work in */
	ATT_TS_CALLING,		/* running a remote call of ours */
	ATT_TS_GONE,		/* exited (or reaped): nothing left to undo */
};

/* One waitpid status, classified (wait.c). */
enum att_event {
	ATT_EV_TIMEOUT = 0,	/* no status before the deadline */
	ATT_EV_INTERRUPT_STOP,	/* PTRACE_EVENT_STOP after PTRACE_INTERRUPT */
	ATT_EV_GROUP_STOP,	/* PTRACE_EVENT_STOP with a stop signal: job control stop */
	ATT_EV_SIGNAL_STOP,	/* signal-delivery-stop: a signal is about to be delivered */
	ATT_EV_SYSCALL_STOP,	/* syscall-stop (SIGTRAP|0x80); we never ask for these */
	ATT_EV_EXEC,		/* PTRACE_EVENT_EXEC */
	ATT_EV_OTHER_EVENT,	/* another PTRACE_EVENT_* */
	ATT_EV_EXITED,		/* exited or killed */
	ATT_EV_ERROR,		/* waitpid failed (ECHILD: no longer ours) */
};

/* What the thread is doing, as /proc/PID/task/TID/syscall tells (arch decides). */
enum att_sysclass {
	ATT_SC_RESTART = 0,	/* blocked in a syscall restarted transparently: best */
	ATT_SC_USER,		/* running user code (or "running") */
	ATT_SC_REENTER,		/* returns EINTR when interrupted; re-entered at the stop (reenter.c) */
	ATT_SC_PROBE,		/* temporary signal mask: the call is completed first (reenter.c) */
	ATT_SC_EINTR,		/* syscall returns EINTR when interrupted: never */
	ATT_SC_MASKSWAP,	/* syscall with a temporary signal mask and no timeout: never */
	ATT_SC_UNKNOWN,		/* unknown syscall: never */
	ATT_SC_GONE,		/* thread vanished while reading */
};

/* Saved register state of a thread. */
struct att_regs {
	struct user_regs_struct gp;
	struct user_fpregs_struct fp;	/* fallback when NT_X86_XSTATE is not offered */
	size_t xstate_len;		/* 0: xstate not saved, fp used */
	uint64_t mask;			/* PTRACE_GETSIGMASK */
	unsigned char xstate[ATT_XSTATE_MAX] __attribute__((aligned(64)));
};

/* The frame a remote call runs on, as written below the thread's stack pointer. */
struct att_frame {
	uint64_t addr;			/* rsp at the callee's entry (its return address slot) */
	size_t len;			/* bytes from addr */
	unsigned char buf[ATT_FRAME_MAX];
};

/*
 * How a thread stopped in a waiting call that would return EINTR is let go
 * on (reenter.c); the registers of the stop were rewritten accordingly.
 */
struct att_reent {
	uint64_t ts_addr;		/* the call's own timeout, rewritten at release (0: none) */
	bool ts_timeval;		/* struct timeval (select), else struct timespec */
	uint64_t remain_ns;		/* what was left of it at the stop */
	uint64_t t_stop;		/* monotonic ns of the stop */
	long sysno;			/* the call re-entered (0 with reissue false) */
	bool reissue;			/* rip is on its syscall instruction: it is issued again */
};

/* One thread of the target. */
struct att_thread {
	pid_t tid;
	enum att_state state;
	enum att_sysclass sysclass;
	long sysno;			/* -1: user code */
	unsigned long sysargs[6];
	bool at_signal_stop;		/* current stop is a signal-delivery-stop (injection possible) */
	bool group_stop_seen;		/* a job control stop happened while we held it */
	bool regs_saved;		/* saved holds its state; must be put back */
	bool mask_changed;		/* we changed its signal mask */
	bool errno_saved;
	bool interrupting;		/* we sent PTRACE_INTERRUPT to end a call that hung */
	int call_req;			/* PTRACE_CONT or PTRACE_SYSCALL: how the current call runs */
	uint64_t errno_addr;
	int errno_value;
	int last_sig;			/* signal of the last signal stop */
	uint64_t fault_addr;		/* si_addr of a crash in a call */
	struct att_regs saved;
	struct att_frame frame;		/* written at the first call, while regs_saved */
	bool frame_written;
	uint64_t frame_ret;		/* return address currently in the frame's slot */
	uint64_t chain_addr;		/* the chained frame below it (att_call_map_at), 0 if none */
	uint64_t t_interrupt;		/* monotonic ns at PTRACE_INTERRUPT */
	struct att_reent reent;		/* reenter.c */
};

/* A candidate thread as ranked by att_choose_thread. */
struct att_cand {
	pid_t tid;
	enum att_sysclass sysclass;
	long sysno;
	unsigned long sysargs[6];
	int rank;
};

/* heaptap's own priority while a thread is held (hold.c) */
enum att_boost { ATT_BOOST_NONE, ATT_BOOST_NICE, ATT_BOOST_FIFO };

/* The hold of the hijacked thread, PTRACE_INTERRUPT to PTRACE_DETACH (hold.c, wait.c). */
struct att_hold {
	bool active;
	pid_t tid;
	bool stat_ok;			/* its schedstat and our CPU time read at the start */
	uint64_t thr_run, thr_wait;	/* the thread's schedstat at the start, ns */
	uint64_t own_run;		/* our thread's CPU time at the start, ns */
	int boost;			/* enum att_boost in effect */
	int old_policy;
	struct sched_param old_param;
	int old_nice;
	int slack;			/* our timer slack before (ns), -1 unknown */
	unsigned stops;			/* stops of the thread att_wait saw */
	uint64_t wait_ns;		/* time att_wait waited for it */
};

/* One line of /proc/PID/maps. */
struct att_map {
	uint64_t start, end, offset;
	char perms[5];
	char path[PATH_MAX];
};

struct att_maps {
	struct att_map *v;
	size_t n, cap;
};

struct att_ctx {
	pid_t pid;
	/*
	 * /proc/PID, or /proc/PID/task/TID of a live thread when the main
	 * thread has exited (pthread_exit) and the leader is a zombie: its
	 * exe, maps and root links are gone, the process lives on.
	 */
	char procdir[64];
	uid_t uid;			/* target's effective uid */
	gid_t gid;
	char comm[32];
	/* last failure */
	int err;
	char detail[512];
	/* HEAPTAP_FAULT (fault.c) */
	enum att_fault_step fault;
	bool preflight_ok;
	pid_t prefer_tid;
	/* who the preflight checked (ident.c): re-checked once a thread is held */
	int pidfd;			/* -1 when none (kernel without pidfd_open) */
	bool ident;
	unsigned long long start_time;	/* field 22 of /proc/PID/stat */
	dev_t exe_dev;
	ino_t exe_ino;
	/* choice */
	struct att_cand cand[ATT_MAX_CAND];
	size_t ncand;
	/* the hijacked thread */
	struct att_thread thr;
	bool have_thr;
	/* libc of the target (elf/ file view, open while ctx lives) */
	struct elfr_file *libc;
	char libc_path[PATH_MAX];	/* path inside the target */
	char libc_open[PATH_MAX + 128];	/* how we open it: /proc/PID/map_files/... */
	uint64_t libc_bias;
	/* staged copy of the library */
	char stage_dir[PATH_MAX];	/* host view, "" if none */
	char stage_file[PATH_MAX];
	bool stage_fds;			/* stage_fd and stage_parent_fd are open (stage.c) */
	int stage_fd, stage_parent_fd;	/* the staging directory and its parent */
	/* forbidden ranges (forbidden.c), built before the first stop */
	struct att_range *forb;
	size_t nforb, capforb;
	struct att_scanned *scanned;
	size_t nscanned, capscanned;
	bool forb_built;
	/* functions called in the target, resolved before the first stop */
	bool funcs_known;
	bool libc_mode;			/* __libc_dlopen_mode / __libc_dlsym (glibc < 2.34) */
	uint64_t fn_dlopen, fn_dlerror, fn_dlsym, fn_mmap, fn_munmap, fn_errno;
	uint64_t fn_sigreturn;		/* "mov $15, %rax; syscall" in libc's code */
	uint64_t fn_syscall_ret;	/* "syscall; ret" in libc's code (getpid's), 0 if none */
	uint64_t fixed_at;		/* free address for the loader's pages (loader.c), 0 if none */
	/* the loader thread's functions (loader.c); any 0: dlopen runs in the hijacked thread */
	uint64_t fn_mprotect, fn_pthread_create, fn_pthread_self, fn_pthread_detach;
	int end_sig;			/* a signal the process ignores (call.c), 0 if none */
	/* scratch mapping: trampoline, then strings (call.c) */
	uint64_t scratch;
	size_t scratch_size;
	/* HEAPTAP_HANG=<step>[@N][:kill] (hang.c) */
	struct att_hang_spec hang;
	unsigned hang_seen;		/* visits of hang.step so far */
	/* library staged by att_prepare */
	char prepared_lib[PATH_MAX];
	char prepared_tpath[PATH_MAX];
	int prepared_staged;
	/* our own signal mask while the target runs our code (call.c) */
	bool own_mask_saved;
	sigset_t own_mask;
	/* att_inject_start's loader thread (loader.c) */
	struct {
		bool pending;		/* att_inject_wait has an outcome to collect */
		bool threaded;		/* a loader thread runs; else att_inject ran synchronously */
		enum att_reason sync_why; /* the synchronous outcome */
		int sync_err;
		char sync_detail[512];
		uint64_t data;		/* its data page in the target */
		uint64_t cookie;
		uint64_t t_ref;		/* last instant the loader was seen before any outcome */
		uint64_t t_spawn;
		struct att_inject_result res;
	} ld;
	struct att_stats st;
	struct att_hold hold;
	unsigned stop_timeout_ms;
	unsigned call_timeout_ms;
};

/* ---- fail.c ---- */
/* Record a failure: errno value (0 if none) and printf-style detail. Returns why. */
enum att_reason att_fail(struct att_ctx *ctx, enum att_reason why, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* ATT_E_EXITED, "process PID is gone". */
enum att_reason att_gone(struct att_ctx *ctx);
/*
 * The rule for a process that died mid-call: a ptrace or memory failure
 * (ATT_E_PTRACE, ATT_E_MEMORY) while the process is dying (SIGKILL
 * mid-call, exit) is ATT_E_EXITED. Its threads take a moment to be gone,
 * so this looks for up to 200 ms. Any other why is returned as it is.
 */
enum att_reason att_gone_mid_call(struct att_ctx *ctx, enum att_reason why);
void att_sleep_ms(unsigned ms);

/* ---- fault.c ---- */
/* True when HEAPTAP_FAULT names step; records ATT_E_FAULT's detail. */
bool att_fault(struct att_ctx *ctx, enum att_fault_step step);
/* The step's name in HEAPTAP_FAULT, NULL for ATT_F_NONE or past the last. */
const char *att_fault_name(enum att_fault_step step);
/* spec (NULL or "": none) into *step; -EINVAL with err naming the steps when it names none. */
int att_fault_parse(const char *spec, enum att_fault_step *step, char *err, size_t cap);

/* ---- hang.c ---- */
/* HEAPTAP_HANG names step (its Nth time): stop (or kill) heaptap itself here. */
void att_hang(struct att_ctx *ctx, enum att_hang_step step);
/* The step's name in HEAPTAP_HANG, NULL for ATT_H_NONE or past the last. */
const char *att_hang_name(enum att_hang_step step);
/*
 * spec ("step[@N][:kill]"; NULL or "": none) into *h; -EINVAL with err
 * saying what is wrong: no such step (the steps named), N not a count
 * from 1, a suffix other than ":kill".
 */
int att_hang_parse(const char *spec, struct att_hang_spec *h, char *err, size_t cap);

/* ---- procfs.c ---- */
/*
 * Read a small /proc file into buf (NUL-terminated): util_read_file, its
 * first cap - 1 bytes taken when it is longer. Returns length or -errno.
 */
ssize_t att_read_file(const char *path, char *buf, size_t cap);
/* Value after "key:" in a /proc/PID/status text, or NULL. */
const char *att_status_field(const char *status, const char *key);
/* Fields of /proc/PID/stat: state letter and flags. Returns 0 or -errno. */
int att_parse_stat(const char *text, char *state, unsigned long *flags, pid_t *ppid);
/* Parse a /proc/.../syscall line. Returns 0 or -EINVAL; sysno -1 for "running"/user code. */
int att_parse_syscall(const char *text, long *sysno, unsigned long args[6], bool *running);
/* Yama ptrace_scope decision: 0 allowed, else ATT_E_YAMA. */
enum att_reason att_yama_check(int scope, bool descendant, bool cap_sys_ptrace);
/* True if we hold CAP_SYS_PTRACE in our effective set. */
bool att_have_cap_ptrace(void);
/* Read /proc/PID/maps. Returns 0 or -errno. */
int att_maps_read(pid_t pid, struct att_maps *m);
/* Read <dir>/maps (dir: ctx->procdir). Returns 0 or -errno. */
int att_maps_read_at(const char *dir, struct att_maps *m);
/* Does the process still have a thread that is not a zombie? */
bool att_process_alive(pid_t pid);
/* A live (not zombie) thread of pid other than the leader, or 0. */
pid_t att_live_task(pid_t pid);
void att_maps_free(struct att_maps *m);
/* Mapping containing addr, or NULL. */
const struct att_map *att_maps_find(const struct att_maps *m, uint64_t addr);
/* Lowest mapping with file offset 0 whose path's base name starts with prefix, or NULL. */
const struct att_map *att_maps_module(const struct att_maps *m, const char *prefix);

/* ---- ident.c ---- */
/* Take the process's pidfd, start time and program (dev, inode); the preflight's last step. */
enum att_reason att_ident_take(struct att_ctx *ctx);
/*
 * Once a thread is held: the same process, still running the same program?
 * Otherwise ATT_E_EXITED (pid reused) or ATT_E_EXEC, and the caller lets the
 * thread go untouched. HEAPTAP_FAULT=ident makes it see another process.
 */
enum att_reason att_ident_recheck(struct att_ctx *ctx);

/* ---- libc.c ---- */
/* dlopen of the target's libc (or __libc_dlopen_mode: *libc_mode). */
enum att_reason att_libc_dlopen(struct att_ctx *ctx, uint64_t *addr, bool *libc_mode);
void att_libc_close(struct att_ctx *ctx);
/* Address of an rt_sigreturn stub in the target's libc code. */
enum att_reason att_libc_sigreturn(struct att_ctx *ctx, uint64_t *addr);
/*
 * Open a module of the target as elf/'s file view: path holds
 * /proc/PID/map_files/START-END, else procdir/root/mpath is tried (path then
 * holds that). *vaddr: its first PT_LOAD address. NULL if neither reads.
 */
struct elfr_file *att_elf_open_module(char *path, size_t cap, const char *procdir,
				      const char *mpath, uint64_t *vaddr);
/*
 * Addresses of exported names[0..n) in the loaded module whose file name
 * starts with prefix (e.g. "libdl.so"): all of them or ATT_E_NO_SYMBOL.
 */
enum att_reason att_module_symbols(struct att_ctx *ctx, const char *prefix, const char *const *names,
				   uint64_t *addrs, size_t n);
/* Is the ELF file at path native? ATT_OK, ATT_E_EXE or ATT_E_ARCH; what gets text. */
enum att_reason att_check_exe(const char *path, char *what, size_t cap, int *err);

/* ---- forbidden.c ---- */
/* Address ranges of functions a hijacked thread must not be inside (see unwind.c). */
struct att_range {
	uint64_t lo, hi;
	char name[48];
};
/*
 * A module whose symbols were scanned: ip in [lo, hi) needs no name lookup.
 * When eh_ok, its unwind table is known too (runtime addresses).
 */
struct att_scanned {
	uint64_t lo, hi;
	bool eh_ok;
	uint64_t ip_lo, ip_hi;		/* bias + PT_LOAD extent */
	uint64_t eh_hdr;		/* bias + PT_GNU_EH_FRAME */
	uint64_t fde_count;
};
/* True if a function of this name must not be on the hijacked thread's stack. */
bool att_name_forbidden(const char *name);
/* Scan every file-backed module of the target, before anything is stopped. */
enum att_reason att_forbidden_build(struct att_ctx *ctx);
/* 1: ip is in a forbidden function (name set); 0: it is not; -1: module not scanned. */
int att_forbidden_lookup(const struct att_ctx *ctx, uint64_t ip, const char **name);
void att_forbidden_free(struct att_ctx *ctx);
/* The scanned module containing ip with a known unwind table, or NULL. */
const struct att_scanned *att_unwind_module(const struct att_ctx *ctx, uint64_t ip);

/* ---- reenter.c ---- */
/*
 * At the interrupt stop of a thread whose call was broken by the stop
 * (gp: its registers there): set it up so that the program cannot tell,
 * per call kind (docs/attach.md, "Waiting calls that return EINTR"). May
 * run the program's own call once with a zero timeout (a temporary signal
 * mask) and leave the thread at that call's exit stop. Returns 0 (go on,
 * ctx->st.resumed says what was done, "" if nothing), 1 (the thread was
 * let go untouched or is to be: why says why; state UNTRACED when done
 * here) or -1 (*reason says why: the thread vanished, execve, a job
 * control stop, a stop timeout).
 */
int att_reenter(struct att_ctx *ctx, struct att_thread *thr, struct user_regs_struct *gp, char *why,
		size_t cap, enum att_reason *reason);
/* Before the detach of a thread set up by att_reenter: its timeout less the hold, a signal. */
void att_reenter_finish(struct att_ctx *ctx, struct att_thread *thr);
/* Does the thread or process have a signal pending that the thread does not block? */
bool att_signal_pending(pid_t pid, pid_t tid);

/* ---- arch/x86_64.c ---- */
/*
 * Where a waiting call keeps its timeout and signal mask (see
 * arch/x86_64.c): *targ the argument index of the timeout (-1 none),
 * *tkind 0 milliseconds in a register, 1 struct timespec pointer, 2
 * struct timeval pointer; *marg the index of the signal mask pointer (-1
 * none). Returns false for a call that is not a waiting call.
 */
bool att_arch_wait_args(long sysno, int *targ, int *tkind, int *marg);
/* Syscall argument i of gp (rdi, rsi, rdx, r10, r8, r9), and setting it. */
uint64_t att_arch_sysarg(const struct user_regs_struct *gp, int i);
void att_arch_set_sysarg(struct user_regs_struct *gp, int i, uint64_t v);
enum att_sysclass att_arch_sysclass(long sysno, const unsigned long args[6]);
/* Does the syscall resume through the restart block when interrupted (see arch/x86_64.c)? */
bool att_arch_uses_restart_block(long sysno, const unsigned long args[6]);
/* Prepare gp for a call of fn(args) on the frame at frame. */
void att_arch_setup_call(struct user_regs_struct *gp, uint64_t fn, const uint64_t *args,
			 unsigned nargs, uint64_t frame);
/* Prepare gp for a bare syscall at insn ("syscall; ret"), rsp at sp. */
void att_arch_setup_syscall(struct user_regs_struct *gp, uint64_t insn, long sysno,
			    const uint64_t *args, unsigned nargs, uint64_t sp);
/* A second signal frame below f0 that resumes at via with rsp at f0 (see arch/x86_64.c). */
size_t att_arch_chain_build(const struct att_frame *f0, uint64_t via, uint64_t mask,
			    unsigned char *buf, uint64_t *addr);
/* Registers a thread stopped with *stop resumes with, orig_rax -1 (see arch/x86_64.c). */
void att_arch_resume_regs(const struct user_regs_struct *stop, struct user_regs_struct *out,
			  bool via_sigreturn);
/* Stopped in a syscall that resumes through its restart block (see arch/x86_64.c)? */
bool att_arch_stopped_in_restart_block(const struct user_regs_struct *stop);
/* Build the call frame (signal frame of the saved state) below saved->gp.rsp. */
void att_arch_frame_build(const struct att_regs *saved, struct att_frame *f);
/* The trampoline's code; *marker_end: offset right after its tgkill (the end of a call). */
const unsigned char *att_arch_tramp(size_t *len, size_t *marker_end);
/* The loader thread's start routine (arch/x86_64_loader.c), position-independent bytes. */
const unsigned char *att_arch_loader(size_t *len);
/*
 * The stub the hijacked thread calls with the data page's address: errno
 * into the frame's slots, mprotect of the data page, pthread_create;
 * returns pthread_create's value (0 or an errno, zero-extended) or
 * mprotect's -errno (negative as int64).
 */
const unsigned char *att_arch_loader_stub(size_t *len);
/* The i-th byte pattern of an rt_sigreturn stub, NULL past the last. */
const unsigned char *att_arch_sigreturn_stub(unsigned i, size_t *len);
/* Offset of "syscall; ret" in the first len bytes of libc's getpid, or -1. */
long att_arch_syscall_ret(const unsigned char *code, size_t len);
uint64_t att_arch_ret(const struct user_regs_struct *gp);
uint64_t att_arch_pc(const struct user_regs_struct *gp);
const char *att_arch_sysname(long sysno);

/* ---- wait.c ---- */
/* Wait for a status of thr up to timeout_ms; classify it. *status raw. */
enum att_event att_wait(struct att_ctx *ctx, struct att_thread *thr, unsigned timeout_ms, int *status);
enum att_phase { ATT_PH_STOPPING, ATT_PH_CALLING };
enum att_disp { ATT_D_DONE, ATT_D_AGAIN, ATT_D_FAIL, ATT_D_SYSCALL };
/*
 * Act on one event in a phase. ATT_D_DONE: reached the awaited stop;
 * ATT_D_SYSCALL (calling phase): a syscall stop, left for the caller.
 */
enum att_disp att_dispatch(struct att_ctx *ctx, struct att_thread *thr, enum att_phase ph,
			   enum att_event ev, int status, enum att_reason *why);

/* ---- hold.c ---- */
/*
 * Before PTRACE_INTERRUPT of a candidate: note its schedstat and our CPU
 * time, raise our own thread's priority (nice -20 when allowed; never the
 * target's), lower our timer slack.
 */
void att_hold_begin(struct att_ctx *ctx, pid_t tid);
/* After its detach: undo all that; kept: it was the hijacked thread, its figures go into st. */
void att_hold_end(struct att_ctx *ctx, bool kept);

/* ---- seize.c ---- */
/* Put thr's registers back if needed and detach it. Safe in any state. */
void att_thread_detach(struct att_ctx *ctx, struct att_thread *thr);

/* ---- unwind.c ---- */
/* 0 if thr's stack has no forbidden frame, else -1 with why filled. */
int att_stack_check(struct att_ctx *ctx, struct att_thread *thr, const struct att_maps *maps,
		    char *why, size_t cap);

/* ---- regs.c ---- */
enum att_reason att_regs_save(struct att_ctx *ctx, struct att_thread *thr);
enum att_reason att_regs_restore(struct att_ctx *ctx, struct att_thread *thr);
enum att_reason att_mask_block(struct att_ctx *ctx, struct att_thread *thr);

/* ---- mem.c ---- */
int att_mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len);
/* The same for our own r-x pages: /proc/TID/mem first (process_vm_writev cannot write them). */
int att_mem_write_code(pid_t tid, uint64_t addr, const void *buf, size_t len);
int att_mem_read(pid_t tid, uint64_t addr, void *buf, size_t len);
/* Read a NUL-terminated string of at most cap-1 bytes. Returns 0 or -errno. */
int att_mem_read_str(pid_t tid, uint64_t addr, char *buf, size_t cap);

/* ---- call.c ---- */
/* How a remote call returns to heaptap, and where heaptap takes the thread back (call.c). */
enum att_call_kind {
	ATT_CALL_TRAMP,		/* a function, returning into the trampoline: the end signal's stop */
	ATT_CALL_MMAP,		/* libc's mmap, returning into libc's sigreturn stub: its exit stop */
	ATT_CALL_MUNMAP,	/* libc's munmap, the same */
	ATT_CALL_CHAIN,		/* a bare mmap at a fixed address, through the chained frame */
};
/* ATT_OK when a thread is held and stopped, else ATT_E_STATE. */
enum att_reason att_need_stopped(struct att_ctx *ctx);
/*
 * One call of fn(args) (at most 6) from the saved registers on the frame;
 * kind says how it returns. *ret: the syscall's result (MMAP, MUNMAP), the
 * function's rax (TRAMP), 0 (CHAIN: the maps tell).
 */
enum att_reason att_call_run(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			     enum att_call_kind kind, uint64_t *ret);
/* One call of a function between att_call_begin and att_call_end (ATT_CALL_TRAMP). */
enum att_reason att_call_raw(struct att_ctx *ctx, uint64_t fn, const uint64_t *args, unsigned nargs,
			     uint64_t *ret);

/* ---- bracket.c ---- */
/*
 * Save regs, map the scratch page (data bytes after the trampoline: at
 * ctx->scratch + ATT_TRAMP_SPACE), block the mask, save errno.
 */
enum att_reason att_call_begin(struct att_ctx *ctx, size_t data);
/* att_call_begin without the __errno_location call: code in the scratch page saves errno itself. */
enum att_reason att_call_map(struct att_ctx *ctx, size_t data);
/*
 * The same with the scratch mapping at a fixed free address, in one ptrace
 * stop instead of two (needs ctx->end_sig and ctx->fn_syscall_ret): a bare
 * mmap(at, size, r-x, MAP_FIXED_NOREPLACE) that returns through a chained
 * signal frame, ending at the delivery stop of the end signal heaptap sent
 * before the resume. Whether it mapped is read from the target's memory.
 */
enum att_reason att_call_map_at(struct att_ctx *ctx, uint64_t at, size_t size);
/*
 * After a call that ran our own code (the loader stub): read the frame's
 * errno slots and stage word. When the call did not return normally
 * (crash, timeout), the errno it saved is put back by att_call_end.
 */
enum att_reason att_call_slots(struct att_ctx *ctx, bool returned, uint32_t *stage);
/* Unblock heaptap's own signals deferred by att_call_begin (idempotent). */
void att_own_signals_restore(struct att_ctx *ctx);
/* Unmap the scratch page, put errno, mask and registers back. Keeps the first failure in *why. */
void att_call_end(struct att_ctx *ctx, enum att_reason *why);

/* ---- prepare.c ---- */
/*
 * Resolve, once, every function called in the target (mmap, munmap,
 * __errno_location, dlopen, dlsym, dlerror, the loader thread's), and
 * choose ctx->end_sig (from /proc/PID/status) with what the loader's
 * one-stop mmap needs. Stops nothing.
 */
enum att_reason att_resolve_funcs(struct att_ctx *ctx);
/* 64 random bits (getrandom, mixed with the clock and our pid). */
uint64_t att_random64(void);

/* ---- inject.c ---- */
enum att_reason att_inject_check(struct att_ctx *ctx, const char *lib_path, const char *start_symbol,
				 const char *arg);
enum att_reason att_inject_tpath(struct att_ctx *ctx, const char *lib_path, char *tpath, size_t cap,
				 int *staged);

/* ---- stage.c ---- */
/* Path of lib as the target sees it, staging a copy if needed (tpath out). */
enum att_reason att_stage(struct att_ctx *ctx, const char *lib, char *tpath, size_t cap, int *staged);
void att_unstage(struct att_ctx *ctx);

/* ---- deps.c ---- */
#define ATT_MAX_DEPS 16
/* One DT_NEEDED name of the library's closure. */
struct att_dep {
	char name[64];		/* the soname */
	char host[PATH_MAX];	/* where this host has it; "" for a libc part or when not found */
	bool libc_part;		/* part of glibc: the target's own must be used, never a copy */
};
struct att_deps {
	struct att_dep v[ATT_MAX_DEPS];
	size_t n;
};
/* Whether a soname is one glibc ships (libc.so.6, libm.so.6, ld-linux-*, libnss_*, ...). */
bool att_dep_is_libc(const char *name);
/*
 * The DT_NEEDED closure of the host file lib, breadth first, each name
 * resolved where this host's loader would find it (RPATH/RUNPATH with
 * $ORIGIN, then the default directories); libc parts are not followed.
 * Returns 0, -errno when lib cannot be read, -ENOEXEC when it is not ELF,
 * -E2BIG past ATT_MAX_DEPS.
 */
int att_deps_find(const char *lib, struct att_deps *d);

#endif /* HEAPTAP_ATTACH_INTERNAL_H */
