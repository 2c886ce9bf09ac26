/* track/tree_internal.h - the trace tree: whole-stack cache layout and tree.c functions */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TRACK_TREE_INTERNAL_H
#define HEAPTAP_TRACK_TREE_INTERNAL_H

#include "track/internal.h"

/*
 * The whole-stack cache (tree.c): a stack's 128-bit hash -> its leaf, so a
 * stack seen before costs one cache line instead of a tree walk (one miss
 * per level), and the session the leaf was announced in, so the leaf's
 * node need not be read either. Process-wide, 4-way buckets of one cache
 * line. An entry is two 64-bit words written without a lock; the check
 * covers 80 bits of the hash and the leaf itself, so a torn pair of words
 * from two different stacks never matches.
 */
struct trk_sc_ent {
	_Atomic uint64_t key; /* hash word 1 ^ mix(leaf); 0 = empty */
	_Atomic uint64_t val; /* top 16 bits of hash word 2 << 48 | session (16 bits) << 32 | leaf */
};

struct trk_sc_bucket {
	struct trk_sc_ent e[4];
} __attribute__((aligned(64)));

#define TRK_SC_BITS 15 /* 32768 buckets x 4 stacks, 2 MiB */

/* ---- tree.c --------------------------------------------------------------- */

/* trk_node_at - node by index (must exist). */
static inline struct trk_node *trk_node_at(uint32_t idx)
{
	if (idx == 0)
		return &trk_g.root;
	return &atomic_load_explicit(&trk_g.blocks[idx >> TRK_NODE_BLOCK_SHIFT],
				     memory_order_acquire)[idx & (TRK_NODE_BLOCK - 1)];
}

/*
 * trk_tree_child - the child of parent with this ip, added if missing (not
 * announced yet: see trk_tree_send). Returns its index, or 0 when no memory
 * is left for nodes.
 */
uint32_t trk_tree_child(struct trk_thr *t, uint32_t parent, uintptr_t ip) TRK_HIDDEN;

/*
 * trk_tree_leaf - walk/insert ips[n-1] (outermost) ... ips[0] (innermost)
 * from the root; returns the leaf index (0 for n == 0 or no memory).
 */
uint32_t trk_tree_leaf(struct trk_thr *t, const uintptr_t *ips, size_t n) TRK_HIDDEN;

/*
 * trk_tree_leaf_thr - the same for the stack in t->frames, reusing the
 * outer frames it shares with the thread's previous stack (t->prev) without
 * a tree lookup; then swaps frames and prev.
 */
uint32_t trk_tree_leaf_thr(struct trk_thr *t, size_t n) TRK_HIDDEN;

/*
 * trk_tree_trace - owner, outside enter/exit: the leaf of the stack in
 * t->frames (n frames), announced in the current session like
 * trk_tree_send does; *gen gets the session it made sure for. A stack seen
 * before is found in the whole-stack cache (struct trk_sc_bucket), which
 * also remembers the session the leaf was announced in; otherwise
 * trk_tree_leaf_thr and trk_tree_send. Returns 0 for n == 0 or no memory.
 */
uint32_t trk_tree_trace(struct trk_thr *t, size_t n, uint32_t *gen) TRK_HIDDEN;

/* trk_tree_send_slow - see trk_tree_send. */
uint32_t trk_tree_send_slow(struct trk_thr *t, uint32_t leaf, uint32_t gen) TRK_HIDDEN;

/*
 * trk_tree_send - owner, outside enter/exit: make sure leaf and its
 * ancestors have their WIRE_EV_NODE in the current session's stream
 * (parent first, each numbered before any event that can use it). Returns
 * the session it made sure for; an event numbered in another session (a
 * new one started meanwhile) must call it again.
 */
static inline uint32_t trk_tree_send(struct trk_thr *t, uint32_t leaf)
{
	uint32_t gen = atomic_load_explicit(&trk_g.sess_gen, memory_order_acquire);

	if (likely(leaf == 0 ||
		   atomic_load_explicit(&trk_node_at(leaf)->sent, memory_order_acquire) == gen))
		return gen;
	return trk_tree_send_slow(t, leaf, gen);
}

#endif /* HEAPTAP_TRACK_TREE_INTERNAL_H */
