/* jvm/agent_internal.h - the JVMTI agent's parts inside the target: the frame table and the producer */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_JVM_AGENT_INTERNAL_H
#define HEAPTAP_JVM_AGENT_INTERNAL_H

#include <jni.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "track/track.h"

#define JVM_HIDDEN __attribute__((visibility("hidden")))

/* AsyncGetCallTrace's types (HotSpot's forte.cpp; no JDK header declares them). */
struct jvm_asgct_frame {
	jint lineno; /* the bytecode index, -3 for a native method */
	jmethodID method_id;
};
struct jvm_asgct_trace {
	JNIEnv *env_id;
	jint num_frames; /* the frames, or <= 0: why there are none */
	struct jvm_asgct_frame *frames;
};
typedef void (*jvm_asgct_fn)(struct jvm_asgct_trace *trace, jint depth, void *ucontext);

/* Java frames asked of AsyncGetCallTrace per stack, at most. */
#define JVM_JAVA_DEPTH 128
/* Slots of a session's frame table (a power of two); ids go up to half of it. */
#define JVM_TABLE_SLOTS (1u << 16)
#define JVM_TABLE_IDS (JVM_TABLE_SLOTS / 2)

/*
 * One (method, bytecode index) a stack showed, with the id its frames
 * carry. id 0: free; JVM_SLOT_BUSY: being filled by the hook that claimed
 * it (method and bci are written, then id with release order).
 */
#define JVM_SLOT_BUSY UINT32_MAX
struct jvm_slot {
	_Atomic uint64_t method;
	_Atomic int32_t bci;
	_Atomic uint32_t id;
};

/*
 * The frame table: one per process, mmap'ed at the first attach and never
 * freed (a hook may still be reading it after the producer was withdrawn);
 * ids keep their meaning for the life of the process, and each session
 * gets them defined again.
 */
struct jvm_table {
	struct jvm_slot slot[JVM_TABLE_SLOTS];
	_Atomic uint32_t by_id[JVM_TABLE_IDS]; /* id -> slot index + 1 (0: not yet) */
	_Atomic uint32_t next_id;	      /* ids handed out: 1 .. next_id - 1 */
	_Atomic uint64_t walks, walk_fail, full;
};

/* What the producer needs; set before it is first installed, the same afterwards. */
struct jvm_hook {
	JavaVM *vm;
	jvm_asgct_fn asgct;
	struct jvm_table *table;
};

/*
 * jvm_produce - track/'s producer (trk_xframe_set_producer): when the
 * native walk ended at [frames cut] in a thread the JVM knows, replace the
 * JIT frame before the cut and the marker by the thread's Java frames,
 * innermost first, as foreign ips. arg is a struct jvm_hook. Returns the
 * new count (n when nothing was added). Takes no lock, allocates nothing.
 */
size_t jvm_produce(void *arg, uintptr_t *ips, size_t n, size_t cap) JVM_HIDDEN;

/* jvm_table_id - the id of (method, bci), made if new; 0 when the table is full. */
uint32_t jvm_table_id(struct jvm_table *tb, uint64_t method, int32_t bci) JVM_HIDDEN;

#endif /* HEAPTAP_JVM_AGENT_INTERNAL_H */
