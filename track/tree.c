/* track/tree.c - the process-wide trace tree, lock-free lookup and insert */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, from every thread at once. A stack is a path from the
 * root (outermost frame) to a leaf (the allocation's call site); an
 * allocation event carries the leaf's index only.
 *
 *   root(0) -child-> A(7) -next-> B(3)        siblings: newest first
 *                    |child
 *                    v
 *                    C(9) ...
 *
 * Lookup reads the parent's "hit" (the child found last) first, so a hot
 * stack costs one load and one compare per frame; otherwise it walks the
 * sibling list. Insert takes a sequence number for WIRE_EV_NODE *before*
 * publishing the node with a CAS on the parent's child head: any thread
 * that then finds the node and records an allocation with it takes a
 * larger number, so the interpreter always knows the node first. If the
 * CAS finds that another thread added the same ip meanwhile, the number
 * becomes WIRE_EV_NOP and the prepared node is kept for the next insert.
 *
 * Nodes live in 65536-node blocks mapped on first use and never unmapped;
 * indices are never reused.
 */
#include <sys/mman.h>

#include "track/internal.h"

#define NODE_EV_MAX (2 + 3 * WIRE_VARINT_MAX + 2)

static uint32_t node_new(struct trk_thr *t)
{
	struct trk_node *blk, *exp = NULL;
	uint32_t idx, b;
	void *m;

	if (t->spare_node) {
		idx = t->spare_node;
		t->spare_node = 0;
		return idx;
	}
	idx = atomic_fetch_add_explicit(&trk_g.next_node, 1, memory_order_relaxed);
	b = idx >> TRK_NODE_BLOCK_SHIFT;
	if (b >= TRK_NODE_BLOCKS)
		return 0;
	blk = atomic_load_explicit(&trk_g.blocks[b], memory_order_acquire);
	if (blk)
		return idx;
	m = mmap(NULL, TRK_NODE_BLOCK * sizeof(struct trk_node), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0; /* this index is lost: a gap, allowed by the wire */
	if (!atomic_compare_exchange_strong_explicit(&trk_g.blocks[b], &exp, (struct trk_node *)m,
						     memory_order_acq_rel, memory_order_acquire))
		munmap(m, TRK_NODE_BLOCK * sizeof(struct trk_node));
	return idx;
}

/* find - the child with ip in the sibling list from c up to (not incl.) stop. */
static uint32_t find(uint32_t c, uint32_t stop, uintptr_t ip)
{
	while (c && c != stop) {
		struct trk_node *n = trk_node_at(c);

		if (n->ip == ip)
			return c;
		c = atomic_load_explicit(&n->next, memory_order_acquire);
	}
	return 0;
}

uint32_t trk_tree_child(struct trk_thr *t, uint32_t parent, uintptr_t ip)
{
	struct trk_node *p = trk_node_at(parent), *n;
	uint32_t hit, head, c, idx;
	uint8_t *q, *op;

	hit = atomic_load_explicit(&p->hit, memory_order_acquire);
	if (likely(hit != 0) && trk_node_at(hit)->ip == ip)
		return hit;
	head = atomic_load_explicit(&p->child, memory_order_acquire);
	c = find(head, 0, ip);
	if (c)
		goto found;

	/* the interpreter should know the module of a new ip before the node */
	if (!trk_mod_known(ip))
		trk_mod_check(t);
	idx = node_new(t);
	if (!idx)
		return 0;
	n = trk_node_at(idx);
	n->ip = ip;
	n->parent = parent;
	atomic_store_explicit(&n->child, 0, memory_order_relaxed);
	atomic_store_explicit(&n->hit, 0, memory_order_relaxed);

	trk_thr_lock(t);
	q = trk_ev_begin(t, NODE_EV_MAX, WIRE_EV_NODE, NULL);
	op = t->data + t->len;
	for (;;) {
		uint32_t prev = head;

		atomic_store_explicit(&n->next, prev, memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&p->child, &head, idx, memory_order_release,
							  memory_order_acquire))
			break;
		/* head is the new head now: look at the siblings that arrived since */
		c = find(head, prev, ip);
		if (c) {
			*op = WIRE_EV_NOP;
			trk_ev_end(t, q); /* a NOP is op and delta only */
			trk_thr_unlock(t);
			t->spare_node = idx;
			goto found;
		}
	}
	q += wire_put_varint(q, idx);
	q += wire_put_varint(q, parent);
	q += wire_put_varint(q, ip);
	trk_ev_end(t, q);
	trk_thr_unlock(t);
	c = idx;
found:
	if (hit != c)
		atomic_store_explicit(&p->hit, c, memory_order_release);
	return c;
}

uint32_t trk_tree_leaf(struct trk_thr *t, const uintptr_t *ips, size_t n)
{
	uint32_t node = 0;

	while (n > 0) {
		node = trk_tree_child(t, node, ips[--n]);
		if (unlikely(!node))
			return 0;
	}
	return node;
}
