/* preload/exit.c - _exit and _Exit: end the session before the process goes */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. _exit skips atexit handlers and destructors, so the
 * session would end with EOF and lose what the threads still buffer. These
 * wrappers flush and send END (WIRE_END_EXIT) first, then make the
 * exit_group system call themselves, exactly what glibc's _exit does (no
 * lookup of the real function needed). A vfork child calling _exit shares
 * our memory but has its own pid: trk_stop ignores it, the parent's
 * session goes on. A raw exit_group syscall or a fatal signal cannot be
 * caught: then heaptap sees EOF after the last tick's flushes.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/preload.h"
#include "track/track.h"

static __attribute__((noreturn)) void leave(int status)
{
	trk_stop(WIRE_END_EXIT);
	for (;;)
		syscall(SYS_exit_group, status);
}

PLD_EXPORT void _exit(int status)
{
	leave(status);
}

PLD_EXPORT void _Exit(int status)
{
	leave(status);
}
