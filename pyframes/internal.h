/* pyframes/internal.h - the frame reader's state, its reads and its code table */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_PYFRAMES_INTERNAL_H
#define HEAPTAP_PYFRAMES_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pyframes/layout.h"
#include "pyframes/pyframes.h"

#define PYF_HIDDEN __attribute__((visibility("hidden")))

#define PYF_FRAMES_MAX 128	 /* Python frames put into one stack, at most */
#define PYF_SEGMENT_MAX 256	 /* frames followed for one evaluation-loop frame */
#define PYF_SEGMENTS_MAX 64	 /* evaluation-loop frames of one stack given Python frames */
#define PYF_CHUNKS_MAX 8	 /* frame-stack chunks of a thread looked at */
#define PYF_INTERPS_MAX 64	 /* interpreters looked at for a thread's state */
#define PYF_TSTATES_MAX 1024	 /* thread states of one interpreter looked at */
#define PYF_UNITS_MAX (1u << 20) /* code units of a code object (2 MiB of bytecode) */
#define PYF_LINETABLE_MAX (1u << 20)
#define PYF_NAME_MAX 512	 /* bytes kept of a qualified name */
#define PYF_FILE_MAX 1024	 /* bytes kept of a file name */

/* What pyf_start found; written before the producer is registered, then read only. */
struct pyf_global {
	const struct pyf_layout *L;
	uintptr_t runtime;	    /* &_PyRuntime */
	uintptr_t code_type;	    /* &PyCode_Type */
	uintptr_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault's code */
	int pid;
	_Atomic int on;		    /* pyf_start said yes and PYF_OFF was not given */
	_Atomic uint64_t dropped;   /* frames left out: code table full, unreadable code */
};
extern struct pyf_global pyf_g PYF_HIDDEN;

/* ---- read.c: reads of the interpreter's memory ----------------------------- */

/*
 * pyf_read - len bytes at src into dst through process_vm_readv on the
 * process itself: unmapped memory is an error (-EFAULT), never a fault;
 * -EPERM or -ENOSYS when the call is not allowed (a seccomp filter).
 * About a microsecond: the cold paths only (a code object's first use).
 */
int pyf_read(void *dst, uintptr_t src, size_t len) PYF_HIDDEN;

/* pyf_ptr_ok - a plausible user-space address of an aligned 8-byte word. */
static inline bool pyf_ptr_ok(uintptr_t p)
{
	return p >= 4096 && p < (1ull << 47) - 4096 && !(p & 7);
}

/* pyf_arena_alloc - len bytes (8-aligned) of the reader's own memory; NULL when used up. Lock-free. */
void *pyf_arena_alloc(size_t len) PYF_HIDDEN;
/* pyf_arena_init - map the arena and the code table (not from a hook); 0 or -errno. */
int pyf_arena_init(void) PYF_HIDDEN;

/* ---- intern.c: code objects and lines -> frame ids ------------------------- */

/*
 * pyf_frame_id - the foreign frame id of (code, prev_instr, owner) of a live
 * frame of the calling thread, defined for the current session; 0 when the
 * frame is to be left out (an incomplete frame: created, not yet started),
 * UINT64_MAX when it cannot be named (unreadable code, table full). direct:
 * the frame lies in the thread's frame stack, so code is alive and its
 * fields may be read directly; else only through pyf_read.
 */
uint64_t pyf_frame_id(uintptr_t code, uintptr_t prev_instr, uint8_t owner, bool direct) PYF_HIDDEN;
/* pyf_intern_init - map the code table; 0 or -errno. */
int pyf_intern_init(void) PYF_HIDDEN;

/*
 * pyf_unicode - the UTF-8 bytes of a Python str at obj (compact: ASCII,
 * latin-1, UCS-2, UCS-4), read with pyf_read, at most cap bytes into out
 * (a longer name keeps its first bytes). The length, or -errno.
 */
int pyf_unicode(uintptr_t obj, char *out, size_t cap) PYF_HIDDEN;

/*
 * pyf_line_table - decode CPython 3.11's location table (co_linetable) of a
 * code of nunits code units starting at firstlineno: line[u] for every unit
 * (0 where the table says "no location" or ends early). Returns 0, or
 * -EINVAL for a malformed table (the units covered so far are kept).
 */
int pyf_line_table(const uint8_t *t, size_t len, int32_t firstlineno, int32_t *line, uint32_t nunits)
	PYF_HIDDEN;

/* ---- producer.c ------------------------------------------------------------ */

/* pyf_produce - the trk_xframe_fn: Python frames spliced into ips[0, n). */
size_t pyf_produce(void *arg, uintptr_t *ips, size_t n, size_t cap) PYF_HIDDEN;

#endif /* HEAPTAP_PYFRAMES_INTERNAL_H */
