/* inject/inject.h - libheaptap_inject.so: the library attach loads into a running process */
/* SPDX-License-Identifier: MIT */
/*
 * Runtime-attach half that runs inside the target. `heaptap attach` (attach/)
 * makes a thread it hijacked start a short-lived loader thread, which calls
 * dlopen("libheaptap_inject.so", RTLD_NOW) and then
 * heaptap_inject_start(socket_path); the synchronous path (att_inject, the
 * tests) makes both calls in the hijacked thread itself. The start function
 * only validates and creates the library's own thread, so its caller is
 * free again within microseconds. That thread connects
 * the socket, starts a track/ session (WIRE_F_ATTACHED) and points the GOT
 * slots of malloc & co. in every loaded module at track/'s hooks; modules
 * loaded later are patched within INJ_POLL_MS. When the session ends (STOP,
 * EOF, heaptap_inject_stop) every slot that still holds a hook gets back the
 * exact value it held. The library is never unloaded: after the session it
 * is inert (docs/inject.md).
 *
 * Only the three functions below are exported (exports.map); everything else
 * in the .so is hidden. All three are plain C, one pointer argument or none, and
 * return an int, so a remote call through the System V ABI needs only rdi
 * and rax.
 */
#ifndef HEAPTAP_INJECT_H
#define HEAPTAP_INJECT_H

#define INJ_EXPORT __attribute__((visibility("default")))
#define INJ_LIB_NAME "libheaptap_inject.so"
#define INJ_START_SYMBOL "heaptap_inject_start"
#define INJ_STOP_SYMBOL "heaptap_inject_stop"
#define INJ_DETACH_SYMBOL "heaptap_inject_detach"
/* comm of the library's thread and of track's timer thread (it inherits it) */
#define INJ_THREAD_NAME "heaptap-inject"

/*
 * heaptap_inject_start - begin a session that streams to the unix stream
 * socket at socket_path (heaptap listens there). The path is copied before
 * returning, so the caller may free it afterwards.
 * Runs in whatever thread calls it (a hijacked one): it allocates nothing
 * through malloc itself, takes no lock but the library's own, leaves the
 * caller's signal mask and errno as they were, and returns after
 * pthread_create (tens of microseconds). Everything else happens in the
 * library's thread, whose signals are all blocked.
 * Returns 0 when the thread was created; -EINVAL for NULL or "",
 * -ENAMETOOLONG when the path does not fit sockaddr_un.sun_path, -EBUSY
 * while a session of this library is still starting, running or ending, or
 * -errno of pthread_create. A failure after 0 was returned (connect, the
 * real allocator not found, track refusing the session) leaves the process
 * as it was: no slot is patched before the session started, and heaptap
 * sees the connection fail or close without a stream header.
 */
int heaptap_inject_start(const char *socket_path) INJ_EXPORT;

/*
 * heaptap_inject_stop - end the running session from inside the target (for
 * `heaptap detach PID` when no heaptap is connected any more): restore every
 * slot, flush, send END (reason WIRE_END_STOP), close the socket. Blocks
 * for as long as that takes (the socket write; a dead peer fails at once).
 * Returns 0, or -ENOENT when no session of this library runs.
 */
int heaptap_inject_stop(void) INJ_EXPORT;

/*
 * heaptap_inject_detach - ask the library's thread to end the running
 * session (`heaptap detach PID` calls it remotely when no heaptap holds the
 * session). Returns at once: it only sets a flag, which the library's thread
 * sees within INJ_POLL_MS and then ends the session as heaptap_inject_stop
 * does (restore every slot, flush, END, close), and ends. So the hijacked
 * thread runs a few instructions: no lock, no I/O, nothing that could block
 * on a peer that stopped reading. A request made while the session is still
 * starting is kept and honoured as soon as it runs. Async-signal-safe;
 * errno is preserved. Returns 0, or -ENOENT when no session of this library
 * is starting or running. The thread's name is INJ_THREAD_NAME, so a caller
 * sees the end in /proc/PID/task/TID/comm.
 */
int heaptap_inject_detach(void) INJ_EXPORT;

#endif /* HEAPTAP_INJECT_H */
