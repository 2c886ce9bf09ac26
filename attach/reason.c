/* attach/reason.c - text and exit status of each attach failure reason */
/* SPDX-License-Identifier: MIT */
#include "attach/attach.h"

static const char *const reason_text[ATT_E_COUNT] = {
	[ATT_OK] = "success",
	[ATT_E_BAD_PID] = "not a valid process id",
	[ATT_E_SELF] = "refusing to attach to heaptap itself",
	[ATT_E_NO_PROCESS] = "no such process",
	[ATT_E_NOT_TGID] = "this is a thread id, not a process id",
	[ATT_E_KERNEL_THREAD] = "a kernel thread cannot be attached",
	[ATT_E_ZOMBIE] = "the process is exiting",
	[ATT_E_STOPPED] = "the process is stopped by a signal; continue it first (it was left stopped)",
	[ATT_E_TRACED] = "the process is already being traced",
	[ATT_E_OTHER_USER] = "the process belongs to another user and heaptap lacks CAP_SYS_PTRACE",
	[ATT_E_NOT_DUMPABLE] = "the process is not dumpable (setuid or prctl) and heaptap lacks CAP_SYS_PTRACE",
	[ATT_E_YAMA] = "ptrace is restricted by kernel.yama.ptrace_scope",
	[ATT_E_EXE] = "cannot read the executable's ELF header",
	[ATT_E_ARCH] = "the process is not of this machine's native ELF class and architecture",
	[ATT_E_STATIC] = "the program is statically linked: no dynamic loader to load a library",
	[ATT_E_TOO_EARLY] = "the process is still starting (libc not loaded yet); try again",
	[ATT_E_SEGV_IGNORED] = "the process ignores SIGSEGV, which remote calls rely on",
	[ATT_E_PTRACE] = "ptrace failed",
	[ATT_E_NO_THREAD] = "no thread is in a state that may be interrupted",
	[ATT_E_NO_SAFE_THREAD] = "no thread left the allocator, loader or a signal handler in time",
	[ATT_E_THREAD_UNSAFE] = "the requested thread may not be interrupted now",
	[ATT_E_STOP_TIMEOUT] = "the thread did not stop in time",
	[ATT_E_EXITED] = "the process exited during the attach",
	[ATT_E_EXEC] = "the process executed a new program during the attach",
	[ATT_E_NO_SYMBOL] = "a needed function is missing from the process's libc",
	[ATT_E_CALL_FAULT] = "a call in the process crashed; the thread was restored",
	[ATT_E_CALL_TIMEOUT] = "a call in the process did not return in time",
	[ATT_E_REMOTE_MMAP] = "mmap in the process failed",
	[ATT_E_MEMORY] = "cannot access the process's memory",
	[ATT_E_STAGE] = "the library or a library it needs cannot be made loadable in the process's root",
	[ATT_E_DLOPEN] = "the process could not load the library",
	[ATT_E_DLSYM] = "the library has no such start function",
	[ATT_E_START] = "the library's start function failed",
	[ATT_E_STATE] = "attach steps called out of order",
	[ATT_E_NOMEM] = "out of memory",
	[ATT_E_FAULT] = "fault injected by HEAPTAP_FAULT",
	[ATT_E_THREAD_CREATE] = "cannot create a thread in the process; nothing was changed",
	[ATT_E_LOAD_TIMEOUT] = "the library's loader thread did not report in time",
	[ATT_E_LIBC_VERSION] = "the process's C library is older than the library needs; nothing was changed",
	[ATT_E_NO_PROCFS] = "the process's root has no /proc mounted (heaptap's library reads /proc/self/maps); nothing was changed",
};

/* Distinct, stable exit statuses; gaps leave room per group. */
static const unsigned char reason_exit[ATT_E_COUNT] = {
	[ATT_OK] = 0,
	[ATT_E_BAD_PID] = 10,
	[ATT_E_SELF] = 11,
	[ATT_E_NO_PROCESS] = 12,
	[ATT_E_NOT_TGID] = 13,
	[ATT_E_KERNEL_THREAD] = 14,
	[ATT_E_ZOMBIE] = 15,
	[ATT_E_STOPPED] = 16,
	[ATT_E_TRACED] = 17,
	[ATT_E_OTHER_USER] = 18,
	[ATT_E_NOT_DUMPABLE] = 19,
	[ATT_E_YAMA] = 20,
	[ATT_E_EXE] = 21,
	[ATT_E_ARCH] = 22,
	[ATT_E_STATIC] = 23,
	[ATT_E_TOO_EARLY] = 24,
	[ATT_E_SEGV_IGNORED] = 25,
	[ATT_E_PTRACE] = 30,
	[ATT_E_NO_THREAD] = 31,
	[ATT_E_NO_SAFE_THREAD] = 32,
	[ATT_E_THREAD_UNSAFE] = 33,
	[ATT_E_STOP_TIMEOUT] = 34,
	[ATT_E_EXITED] = 35,
	[ATT_E_EXEC] = 36,
	[ATT_E_NO_SYMBOL] = 40,
	[ATT_E_CALL_FAULT] = 41,
	[ATT_E_CALL_TIMEOUT] = 42,
	[ATT_E_REMOTE_MMAP] = 43,
	[ATT_E_MEMORY] = 44,
	[ATT_E_STAGE] = 45,
	[ATT_E_DLOPEN] = 46,
	[ATT_E_DLSYM] = 47,
	[ATT_E_START] = 48,
	[ATT_E_STATE] = 60,
	[ATT_E_NOMEM] = 61,
	[ATT_E_FAULT] = 62,
	[ATT_E_THREAD_CREATE] = 49,
	[ATT_E_LOAD_TIMEOUT] = 50,
	[ATT_E_LIBC_VERSION] = 51,
	[ATT_E_NO_PROCFS] = 52,
};

const char *att_strerror(enum att_reason why)
{
	if ((unsigned)why >= ATT_E_COUNT || !reason_text[why])
		return "unknown reason";
	return reason_text[why];
}

int att_exit_code(enum att_reason why)
{
	if ((unsigned)why >= ATT_E_COUNT)
		return 63;
	return reason_exit[why];
}
