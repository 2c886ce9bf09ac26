/* jvm/xframes.c - inside the allocation hook: the Java frames of a stack, as foreign frame ids */
/* SPDX-License-Identifier: MIT */
/*
 * A native allocation made from Java is walked by track/ up to the first
 * frame in JIT code (the native method's wrapper, or the interpreter after
 * a call into libjvm.so), which ends the stack with [frames cut]. The
 * JVM knows the rest: AsyncGetCallTrace, given the thread's JNIEnv,
 * walks from the thread's last Java frame (the anchor HotSpot sets when
 * Java calls native code or the VM) through interpreted, compiled and
 * inlined frames and gives a jmethodID and bytecode index for each. It is
 * async-signal-safe and takes no lock; it needs method ids to exist for
 * the classes on the stack (agent.c makes them) and JVMTI's ClassLoad
 * event enabled, which agent.c does. For a thread in Java code it would
 * read the registers of ucontext: the context given is this function's,
 * not in Java code, which AsyncGetCallTrace then declines.
 *
 * walk.c then walks HotSpot's physical frames from the cut to tell each
 * Java frame's kind and to go on into the native frames outer to them.
 * Each (method, bci, kind) gets a small id from a lock-free table (open
 * addressing; a slot is claimed with one compare-and-swap); agent.c's
 * thread names new ids outside the hook.
 */
#include <string.h>
#include <ucontext.h>

#include "jvm/agent_internal.h"

static inline uint32_t slot_hash(uint64_t method, int32_t key)
{
	uint64_t h = (method ^ ((uint64_t)(uint32_t)key << 32) ^ (uint64_t)(uint32_t)key) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 40);
}

uint32_t jvm_table_id(struct jvm_table *tb, uint64_t method, int32_t key)
{
	uint32_t i = slot_hash(method, key) & (JVM_TABLE_SLOTS - 1);

	for (unsigned probe = 0; probe < 128; probe++, i = (i + 1) & (JVM_TABLE_SLOTS - 1)) {
		struct jvm_slot *s = &tb->slot[i];
		uint32_t id = atomic_load_explicit(&s->id, memory_order_acquire), zero = 0, n;

		if (id == 0) {
			if (!atomic_compare_exchange_strong(&s->id, &zero, JVM_SLOT_BUSY)) {
				id = zero;
				goto claimed; /* another hook took it meanwhile */
			}
			n = atomic_fetch_add(&tb->next_id, 1);
			atomic_store_explicit(&s->method, method, memory_order_relaxed);
			atomic_store_explicit(&s->key, key, memory_order_relaxed);
			if (n >= JVM_TABLE_IDS) {
				/* full: the slot stays taken by an id nobody names (never matched) */
				atomic_store_explicit(&s->id, JVM_TABLE_IDS, memory_order_release);
				atomic_fetch_add(&tb->full, 1);
				return 0;
			}
			atomic_store_explicit(&s->id, n, memory_order_release);
			atomic_store_explicit(&tb->by_id[n], i + 1, memory_order_release);
			return n;
		}
claimed:
		for (unsigned spin = 0; id == JVM_SLOT_BUSY; spin++) {
			if (spin > 100000)
				return 0; /* its hook was stopped mid-way: not worth waiting for */
			__builtin_ia32_pause();
			id = atomic_load_explicit(&s->id, memory_order_acquire);
		}
		if (id < JVM_TABLE_IDS && atomic_load_explicit(&s->method, memory_order_relaxed) == method &&
		    atomic_load_explicit(&s->key, memory_order_relaxed) == key)
			return id;
	}
	atomic_fetch_add(&tb->full, 1);
	return 0;
}

size_t jvm_produce(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	struct jvm_hook *h = arg;
	struct jvm_asgct_frame fr[JVM_JAVA_DEPTH];
	struct jvm_asgct_trace tr;
	ucontext_t uc;
	JNIEnv *env;
	size_t at, room;
	uint32_t id;

	if (n < 2 || ips[n - 1] != WIRE_IP_CUT || !h || !h->table)
		return n;
	/* GetEnv reads the thread's own JavaThread (thread-local): no lock, no transition */
	if ((*h->vm)->GetEnv(h->vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK)
		return n; /* not a thread of the JVM */
	at = n - 2; /* the JIT frame before the marker is the first Java frame */
	room = cap - at;
	if (room > JVM_JAVA_DEPTH)
		room = JVM_JAVA_DEPTH;
	memset(&uc, 0, sizeof(uc));
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)jvm_produce;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)__builtin_frame_address(0);
	uc.uc_mcontext.gregs[REG_RBP] = (greg_t)(uintptr_t)__builtin_frame_address(0);
	tr.env_id = env;
	tr.num_frames = 0;
	tr.frames = fr;
	h->asgct(&tr, (jint)room, &uc);
	atomic_fetch_add_explicit(&h->table->walks, 1, memory_order_relaxed);
	if (tr.num_frames <= 0) {
		atomic_fetch_add_explicit(&h->table->walk_fail, 1, memory_order_relaxed);
		return n;
	}
	/* the physical frames: kinds, and the native frames outer to the Java ones */
	if (h->layout.ok) {
		size_t m = jvm_walk(h, fr, tr.num_frames, (size_t)tr.num_frames == room, ips, n, cap);

		if (m)
			return m;
	}
	/* AsyncGetCallTrace's frames alone: the kind is known for native methods only */
	for (jint i = 0; i < tr.num_frames && at < cap; i++) {
		unsigned kind = fr[i].lineno == -3 ? WIRE_XKIND_NATIVE : WIRE_XKIND_UNKNOWN;

		id = jvm_table_id(h->table, (uint64_t)(uintptr_t)fr[i].method_id, jvm_key(fr[i].lineno, kind));
		if (!id)
			break;
		ips[at++] = (uintptr_t)(WIRE_XFRAME_BIT | id);
	}
	if (at == n - 2)
		return n;
	if (at < cap && (size_t)tr.num_frames == room)
		ips[at++] = WIRE_IP_CUT; /* there may be more */
	return at;
}
