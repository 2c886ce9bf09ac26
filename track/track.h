/* track/track.h - the recording core that runs inside the target process */
/* SPDX-License-Identifier: MIT */
/*
 * Shared by preload/ (LD_PRELOAD) and inject/ (runtime attach).
 * Hooks capture the call stack, find or add it in the process-wide trace
 * tree, and append events (track/wire.h) to a per-thread buffer that is
 * written to the socket. Everything here runs in the target: it never
 * prints, never aborts, preserves errno, never allocates through the hooked
 * allocator (own mmap-backed memory) and never raises SIGPIPE.
 *
 * Life cycle (one session per process at a time; sessions may follow each
 * other):
 *
 *   trk_set_real(&real)      the caller found the real allocator functions
 *   trk_start(&cfg)          header + module list sent, timer thread runs,
 *                            hooks record from now on
 *   ... trk_malloc() & co. are called instead of malloc() & co. ...
 *   trk_stop(reason)         flush, END record, hooks pass through again
 *
 * Before trk_start and after trk_stop the hooks only call the real
 * functions, so they may be installed before the session starts and stay
 * installed forever. The timer thread also ends the session on its own when
 * heaptap sends WIRE_CTL_STOP (reason WIRE_END_STOP) or the socket dies (no
 * END can be sent then).
 *
 * Thread-local state is initial-exec TLS only (the thread's buffer pointer
 * and the sampling block), so this code can be dlopen'ed into a running
 * process without __tls_get_addr on the hot path.
 */
#ifndef HEAPTAP_TRACK_H
#define HEAPTAP_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include "track/wire.h"

#define TRK_DEPTH_DEFAULT 64 /* frames kept per stack (HEAPTAP_DEPTH) */
#define TRK_DEPTH_MAX 256
/*
 * How long inject/'s trk_start waits for heaptap's first WIRE_CTL_SAMPLE
 * (cfg.sample_wait_ms): in the library's own thread, before any hook is
 * installed, so only the attach waits, never the target.
 */
#define TRK_SAMPLE_WAIT_MS 2000

/* The allocator functions the hooks forward to; every member must be set. */
struct trk_real {
	void *(*malloc)(size_t size);
	void (*free)(void *ptr);
	void *(*calloc)(size_t nmemb, size_t size);
	void *(*realloc)(void *ptr, size_t size);
	void *(*reallocarray)(void *ptr, size_t nmemb, size_t size);
	int (*posix_memalign)(void **memptr, size_t alignment, size_t size);
	void *(*aligned_alloc)(size_t alignment, size_t size);
	void *(*memalign)(size_t alignment, size_t size);
	void *(*valloc)(size_t size);
	void *(*pvalloc)(size_t size);
};

/* What trk_start needs. */
struct trk_config {
	int fd;		    /* connected stream socket to heaptap; owned by
			       track from trk_start on (closed by it) */
	unsigned depth;	    /* frames per stack, 0 = TRK_DEPTH_DEFAULT,
			       clamped to TRK_DEPTH_MAX */
	uint32_t flags;	    /* WIRE_F_* for the stream header */
	int libunwind_only; /* nonzero: capture with libunwind only, not the
			       CFI walker (HEAPTAP_UNWIND=libunwind) */
	/*
	 * Called once when the session ends, before the END record, from the
	 * thread that ends it (NULL: none). inject/ restores its GOT slots here
	 * and reports how many it put back and how many it had to leave.
	 */
	void (*before_end)(void *arg, uint64_t *slots_restored, uint64_t *slots_left);
	void *before_end_arg;
	/*
	 * How the session starts (docs/track.md "Sampling"). sample_given
	 * nonzero: with sample_rate (mean bytes between samples, 0 = full
	 * tracing) and sample_seed (0 = from the clock), at once; heaptap's
	 * WIRE_CTL_SAMPLE records change them later. Else trk_start waits up
	 * to sample_wait_ms for heaptap's first WIRE_CTL_SAMPLE on fd (0: takes
	 * it only if it is there already) and traces fully without one.
	 */
	int sample_given;
	uint64_t sample_rate, sample_seed;
	unsigned sample_wait_ms;
	/*
	 * Nonzero: while the process has one thread (glibc's
	 * __libc_single_threaded) and samples, start no timer thread; the
	 * hooks do its work (docs/track.md "Without a timer thread") and
	 * start it only when they cannot (a second thread, full tracing, a
	 * program that went quiet). preload/ sets it; inject/ has a thread
	 * of its own anyway.
	 */
	int timerless;
};

/*
 * trk_set_real - set the functions the hooks forward to (copied). Call it
 * before trk_start, and before the first hook call that is not handled by
 * the caller itself, apart from malloc, free, calloc and realloc (below).
 * Set it once: a hook running meanwhile reads each pointer either before or
 * after (aligned pointer stores), never a mix of one.
 */
void trk_set_real(const struct trk_real *real);

/*
 * trk_boot_malloc & co. - what trk_malloc_ra, trk_free_ra, trk_calloc_ra
 * and trk_realloc_ra forward to before trk_set_real, when the embedder
 * defines them (weak: NULL otherwise). preload/ does: its exported
 * functions then jump to the hooks with no "resolved yet?" test of their
 * own, and these look the real allocator up on first use. inject/ defines
 * none: it sets the real functions before a hook can be reached.
 */
void *trk_boot_malloc(size_t size) __attribute__((weak, visibility("hidden")));
void trk_boot_free(void *ptr) __attribute__((weak, visibility("hidden")));
void *trk_boot_calloc(size_t nmemb, size_t size) __attribute__((weak, visibility("hidden")));
void *trk_boot_realloc(void *ptr, size_t size) __attribute__((weak, visibility("hidden")));

/*
 * trk_start - start a session on cfg->fd: send the stream header and the
 * module list, start the timer thread, let the hooks record. On failure
 * returns -errno, cfg->fd is closed and the hooks keep passing through.
 * Returns -EALREADY while another session runs or is still ending (its
 * timer thread has not let go of the socket yet), and in a forked child of
 * a session. Once a session has fully ended another may start (a second
 * attach): numbered from 0 again, with its own module list and trace nodes.
 */
int trk_start(const struct trk_config *cfg) __attribute__((warn_unused_result));

/*
 * trk_stop - end the session: stop recording, flush every thread's buffer,
 * send WIRE_REC_END with reason (enum wire_end_reason), close the socket.
 * Safe to call more than once and from any thread (a no-op when no session
 * runs). Hooks still running in other threads pass through afterwards.
 */
void trk_stop(int reason);

/*
 * trk_after_fork_child - call in the child of fork() (pthread_atfork child
 * handler): the child stops recording for good and closes its copy of the
 * socket; the parent's session goes on untouched.
 */
void trk_after_fork_child(void);

/*
 * trk_connect - a connected unix stream socket (close-on-exec) to path, for
 * cfg->fd; -ENAMETOOLONG for an empty path or one that does not fit
 * sun_path, else -errno of socket()/connect(). EINTR is retried.
 */
int trk_connect(const char *path) __attribute__((warn_unused_result));

/*
 * trk_wait_drained - wait until heaptap has read everything sent so far
 * (SIOCOUTQ is 0), checking every millisecond, at most timeout_ms. 0, or
 * -ETIMEDOUT, or -EPIPE when the session ended meanwhile. inject/ calls it
 * between trk_start and patching: hooks that record before heaptap reads
 * would fill the socket and wait in the send.
 */
int trk_wait_drained(unsigned timeout_ms);

/*
 * trk_send_record - send one unordered record (type, payload of len bytes,
 * framed as track/wire.h says) on the session's socket, e.g. inject/'s
 * WIRE_REC_START or WIRE_REC_LOG. 0, or -EPIPE when no session runs, or
 * -errno of the send (which ends the session as any failed send does).
 */
int trk_send_record(uint8_t type, const void *payload, size_t len);

/* trk_active - nonzero while a session records. */
int trk_active(void);

/*
 * Foreign frames (track/wire.h "Foreign frames", docs/design.md): a
 * producer in the target adds Java or Python frames to the native stacks.
 *
 * trk_xframe_fn - the producer. Called inside the allocation hook of a
 * recorded allocation, in the allocating thread, after the native walk and
 * before the stack goes into the trace tree: ips[0, n) are the walked ips,
 * innermost first (call sites: return address - 1, the innermost maybe an
 * exact pc; the outermost maybe WIRE_IP_CUT), with room for cap entries.
 * It may insert, replace or remove entries (e.g. wire_xframe_ip(id) above
 * each interpreter frame, or Java frames in place of the cut) and returns
 * the new count (more than cap is taken as cap). It runs with the hook's
 * recursion guard set, possibly while the program holds any of its locks,
 * in any thread, maybe from a signal handler: no malloc or other libc call
 * that may allocate or lock, no lock, no blocking, no JVM or Python API;
 * bounded reads of memory it knows to be mapped (or checked like the native
 * walk); errno left as it was. It may call trk_xframe_define. While a producer
 * is set, every recorded stack is walked and given to it (the hooks' memo
 * of a call site's stack, which would skip the walk, is not used).
 */
typedef size_t (*trk_xframe_fn)(void *arg, uintptr_t *ips, size_t n, size_t cap);

/*
 * trk_xframe_set_producer - call fn(arg, ...) for every recorded stack
 * from now on; fn NULL: none (the default, and then the hooks cost one
 * load more). Any thread, not from a hook or signal handler; the stores
 * are atomic, a hook sees either the old producer or the new one, whole.
 * A hook may still be running the old one after this returns: its code and
 * arg must stay valid for the life of the process. Survives sessions.
 * Returns 0, or -ENOSPC after TRK_XFRAME_PRODUCERS distinct (fn, arg)
 * pairs (the same pair set again reuses its slot).
 */
#define TRK_XFRAME_PRODUCERS 64
int trk_xframe_set_producer(trk_xframe_fn fn, void *arg);

/*
 * trk_xframe_define - define foreign frame id (<= WIRE_XFRAME_ID_MAX) for
 * the current session: lang (enum wire_lang), kind (enum wire_xkind), line
 * (0 = unknown), name and file (bytes, not NUL-terminated; either may be
 * empty). A name longer than WIRE_XFRAME_MAX_NAME keeps its first bytes, a
 * file longer than WIRE_XFRAME_MAX_FILE its last ones after "...". From
 * any thread, also inside a hook or the producer: no malloc, no lock (a
 * lock-free queue the timer thread sends from within a tick; the first
 * call maps it). Returns 0, -EPIPE when no session records, -EAGAIN when
 * the queue is full (call again later), -ENOMEM when it cannot be mapped,
 * -EINVAL for a bad id or lang past 255. Definitions belong to a session:
 * define each id again in each session (trk_xframe_session says which).
 */
int trk_xframe_define(uint64_t id, unsigned lang, unsigned kind, uint32_t line, const char *name,
		      size_t name_len, const char *file, size_t file_len);

/*
 * trk_xframe_session - the number of the session now recording (1, 2, ...),
 * 0 when none: a producer remembers the session it defined an id in and
 * defines it again when the number changed.
 */
uint32_t trk_xframe_session(void);

/*
 * trk_xframe_set_producer_lang - trk_xframe_set_producer for a producer of
 * lang's frames only (enum wire_lang; 0 = any, which is what
 * trk_xframe_set_producer registers): while heaptap does not want lang's
 * frames (WIRE_CTL_XFRAMES), the hooks do not call it and capture stacks as
 * without a producer (the call site's memo included).
 */
int trk_xframe_set_producer_lang(trk_xframe_fn fn, void *arg, unsigned lang);

/*
 * trk_xframe_wanted - nonzero unless heaptap asked for no frames of lang
 * (enum wire_lang) with WIRE_CTL_XFRAMES (`heaptap attach
 * --no-python-frames`); every language is wanted at the start of a
 * session. One load.
 */
int trk_xframe_wanted(unsigned lang);

/*
 * trk_xframe_set_flush - fn(arg) is called when a session is about to end
 * in order (STOP, detach, the end of a recording), in the thread that ends
 * it, while trk_xframe_define is still taken: a producer that names its
 * frames outside the hooks (a thread of its own) defines the last ones
 * there. It must return soon (it delays the end; a bound of its own) and
 * must not end the session. fn NULL: none (the default). Any thread, not
 * from a hook; fn and arg must stay valid for the life of the process.
 */
void trk_xframe_set_flush(void (*fn)(void *arg), void *arg);

/*
 * For a producer inside heaptap's library (the JVM agent) that unwinds
 * the frames the native walk could not: the registers of a frame, as the
 * CFI walker keeps them (ra: the return address into the frame's code, sp
 * and rbp: the frame's own, as they were when it made the call).
 */
struct trk_xf_regs {
	uintptr_t ra, sp, rbp;
};

/*
 * trk_xframe_cut_regs - in the producer: the registers of the frame before
 * [frames cut] of the stack being recorded (the first frame in code
 * without unwind info), and the bounds [*lo, *hi) of the thread's stack.
 * 0, or -ENOENT when the CFI walker did not end at such a frame (libunwind
 * walked, or the stack was not cut).
 */
int trk_xframe_cut_regs(struct trk_xf_regs *r, uintptr_t *lo, uintptr_t *hi)
	__attribute__((visibility("hidden")));

/* How trk_xframe_walk_on ended. */
enum trk_xf_end {
	TRK_XF_OUTERMOST = 0, /* the outermost frame (thread start) was reached */
	TRK_XF_CUT = 1,	      /* at a frame without unwind info: r holds its registers */
	TRK_XF_FAIL = 2,      /* a frame the walker cannot step (bounds, rule) */
	TRK_XF_FULL = 3,      /* cap frames written */
};

/*
 * trk_xframe_walk_on - in the producer: go on with the native walk from r
 * (ra must lie in a module with unwind info), through the thread's own
 * stack: call sites (return address - 1) into out, at most cap, outward.
 * Stops at the outermost frame, or before a frame without unwind info
 * (not written; its registers left in r), or at a frame it cannot step.
 * Uses the thread's rule cache; reads only between sp and the stack top.
 * Returns the count, *end how it ended.
 */
size_t trk_xframe_walk_on(struct trk_xf_regs *r, uintptr_t *out, size_t cap, enum trk_xf_end *end)
	__attribute__((visibility("hidden")));

/*
 * How a producer outside heaptap's library finds these functions (a JVMTI
 * agent, a test program): libheaptap_preload.so and libheaptap_inject.so
 * export them with default visibility under versioned names,
 * heaptap_xframe_define_v1, heaptap_xframe_set_producer_v1 and
 * heaptap_xframe_session_v1 (same signatures). The preload library is in
 * the global scope (dlsym(RTLD_DEFAULT, ...)); the inject library is
 * dlopen'ed RTLD_LOCAL, so look in each loaded object: dl_iterate_phdr,
 * dlopen(dlpi_name, RTLD_NOLOAD | RTLD_NOW), dlsym(handle, ...).
 * track/xframe_find.h does exactly that. A later, incompatible contract
 * gets _v2 names beside these.
 */

/*
 * The hooks: exact libc signatures, callable directly (inject/ points GOT
 * slots at them). The return address of the hook is taken as the call site
 * of the allocation; every frame inside the hook is left out of the stack.
 * They preserve errno as the real function left it.
 */
void *trk_malloc(size_t size);
void trk_free(void *ptr);
void *trk_calloc(size_t nmemb, size_t size);
void *trk_realloc(void *ptr, size_t size);
void *trk_reallocarray(void *ptr, size_t nmemb, size_t size);
int trk_posix_memalign(void **memptr, size_t alignment, size_t size);
void *trk_aligned_alloc(size_t alignment, size_t size);
void *trk_memalign(size_t alignment, size_t size);
void *trk_valloc(size_t size);
void *trk_pvalloc(size_t size);

/*
 * The same hooks for a wrapper that adds a frame of its own (preload/'s
 * exported malloc calls these): ra is __builtin_return_address(0) of the
 * outermost wrapper, i.e. the return address into the allocating code.
 */
void *trk_malloc_ra(size_t size, const void *ra);
void trk_free_ra(void *ptr, const void *ra);
void *trk_calloc_ra(size_t nmemb, size_t size, const void *ra);
void *trk_realloc_ra(void *ptr, size_t size, const void *ra);
void *trk_reallocarray_ra(void *ptr, size_t nmemb, size_t size, const void *ra);
int trk_posix_memalign_ra(void **memptr, size_t alignment, size_t size, const void *ra);
void *trk_aligned_alloc_ra(size_t alignment, size_t size, const void *ra);
void *trk_memalign_ra(size_t alignment, size_t size, const void *ra);
void *trk_valloc_ra(size_t size, const void *ra);
void *trk_pvalloc_ra(size_t size, const void *ra);

#endif /* HEAPTAP_TRACK_H */
