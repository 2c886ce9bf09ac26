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
 * One (method, bytecode index, kind) a stack showed, with the id its
 * frames carry. id 0: free; JVM_SLOT_BUSY: being filled by the hook that
 * claimed it (method and key are written, then id with release order).
 * key: the kind (enum wire_xkind) in the top 8 bits, the bci's low 24 bits
 * below (jvm_key, jvm_key_bci, jvm_key_kind).
 */
#define JVM_SLOT_BUSY UINT32_MAX
struct jvm_slot {
	_Atomic uint64_t method;
	_Atomic int32_t key;
	_Atomic uint32_t id;
};

static inline int32_t jvm_key(int32_t bci, unsigned kind)
{
	return (int32_t)(((uint32_t)kind << 24) | ((uint32_t)bci & 0xffffffu));
}
static inline int32_t jvm_key_bci(int32_t key)
{
	return (int32_t)((uint32_t)key << 8) >> 8;
}
static inline unsigned jvm_key_kind(int32_t key)
{
	return (uint32_t)key >> 24;
}

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

/*
 * HotSpot's layout, from the tables libjvm.so exports for its
 * serviceability agent (gHotSpotVMStructs, gHotSpotVMTypes): the offsets
 * and addresses the frame walker (walk.c) reads. Filled once, outside the
 * hooks (jvm_vm_read); ok 0: the walker is off.
 */
#define JVM_HEAPS_MAX 8
#define JVM_SEGS_MAX 8
struct jvm_vm {
	int ok;
	unsigned nheaps;
	struct jvm_heap {
		uintptr_t high_at;    /* &heap->_memory._high (the committed end grows) */
		uintptr_t low;	      /* heap->_memory._low */
		uintptr_t segmap;     /* heap->_segmap._low */
		unsigned log2_seg;    /* heap->_log2_segment_size */
	} heap[JVM_HEAPS_MAX];
	uintptr_t cc_lo, cc_hi;		/* CodeCache::_low_bound, _high_bound */
	uintptr_t interp_lo, interp_hi; /* the template interpreter's code */
	uintptr_t call_stub_ra;		/* StubRoutines::_call_stub_return_address */
	unsigned nsegs;			/* libjvm.so's readable segments (blob names) */
	struct { uintptr_t lo, hi; } seg[JVM_SEGS_MAX];
	/* offsets */
	size_t hb_size, hb_used;	   /* HeapBlock, its _header._used */
	size_t cb_size, cb_frame_size, cb_code_begin, cb_code_end, cb_name;
	size_t cm_method, cm_scopes_data;  /* CompiledMethod */
	size_t nm_comp_level, nm_pcs, nm_deps, nm_metadata, nm_size; /* nmethod */
	size_t pc_size, pc_offset, pc_scope; /* PcDesc */
};

/*
 * jvm_vm_read - fill vm from the libjvm.so whose dlopen handle is h (its
 * base address for the segments). 0, or -ENOENT with the first missing
 * entry's name in why. Outside the hooks (reads the JVM's tables, calls
 * dl_iterate_phdr).
 */
int jvm_vm_read(void *h, struct jvm_vm *vm, char *why, size_t whylen) JVM_HIDDEN;

/* What the producer needs; set before it is first installed, the same afterwards. */
struct jvm_hook {
	JavaVM *vm;
	jvm_asgct_fn asgct;
	struct jvm_table *table;
	struct jvm_vm layout; /* layout.ok 0: no physical walk (kinds unknown, no outer frames) */
};

/*
 * jvm_walk - in the producer, after AsyncGetCallTrace gave fr[0 .. nfr)
 * for a stack cut at ips[n - 2] (the JIT frame) with room for cap: walk
 * HotSpot's physical frames from the cut (the registers the native walk
 * left, trk_xframe_cut_regs), give each of fr its kind (interpreted,
 * compiled with its tier, inlined, native) from the frame it lies in, and
 * go on through the call stub into the native frames outer to the Java
 * ones, section after section (JNI upcalls), to the thread's start. Writes
 * the whole stack into ips and returns its count when every Java frame
 * matched the physical frame it lies in; 0 (ips untouched) on any doubt.
 * truncated: AsyncGetCallTrace filled all the room it was given.
 */
size_t jvm_walk(struct jvm_hook *h, const struct jvm_asgct_frame *fr, int nfr, int truncated,
		uintptr_t *ips, size_t n, size_t cap) JVM_HIDDEN;

/*
 * jvm_produce - track/'s producer (trk_xframe_set_producer): when the
 * native walk ended at [frames cut] in a thread the JVM knows, replace the
 * JIT frame before the cut and the marker by the thread's Java frames,
 * innermost first, as foreign ips, and the native frames outer to them
 * (jvm_walk; without it, the stack ends after the Java frames). arg is a struct jvm_hook. Returns the
 * new count (n when nothing was added). Takes no lock, allocates nothing.
 */
size_t jvm_produce(void *arg, uintptr_t *ips, size_t n, size_t cap) JVM_HIDDEN;

/* jvm_table_id - the id of (method, key: jvm_key), made if new; 0 when the table is full. */
uint32_t jvm_table_id(struct jvm_table *tb, uint64_t method, int32_t key) JVM_HIDDEN;

#endif /* HEAPTAP_JVM_AGENT_INTERNAL_H */
