/* track/tree.c - the process-wide trace tree, lock-free lookup and insert */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, from every thread at once. A stack is a path from the
 * root (outermost frame) to a leaf (the allocation's call site); an
 * allocation event carries the leaf's index only.
 *
 *   node: | ip | parent | more | next | kid[0..2] | kip[0..2] |
 *                          |             inline children (index, ip)
 *                          v
 *         overflow children: newest -> next -> next ... (CAS at the head)
 *
 * Lookup, fastest first: the thread's private (parent, ip) -> child cache;
 * the parent's inline slots (same cache lines as the parent, which the
 * walk just visited); the overflow list. Each thread also reuses the nodes
 * of the outer frames its previous stack shared (trk_tree_leaf_thr).
 *
 * Inline slots fill in order 0, 1, 2: a slot is reserved by CAS 0 -> BUSY,
 * its ip written, then the index stored (release); a reader that meets
 * BUSY waits the few instructions until the index is there. Only when all
 * slots hold other ips does an insert go to the list. So two threads
 * adding the same ip meet in the same slot or in the list, and one of them
 * sees the other's node: it uses that node and keeps its prepared node for
 * the next insert. No (parent, ip) pair is ever added twice.
 *
 * Announcing is separate from inserting, because the tree outlives a
 * session and every session's stream must define the nodes it uses
 * (docs/design.md: a second attach). Before an event uses a leaf,
 * trk_tree_send makes sure the leaf's node->sent is the current session;
 * if not, the topmost unsent ancestor is announced first, and so on down.
 * Announcing takes a sequence number *before* it marks the node sent (CAS
 * of node->sent), so any thread that then sees the mark and records an
 * allocation takes a larger number: the interpreter always knows the node
 * first. A thread that loses the CAS turns its number into WIRE_EV_NOP.
 *
 * Nodes live in 65536-node blocks mapped on first use and never unmapped;
 * indices are never reused.
 */
#include <sched.h>
#include <sys/mman.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/tree_internal.h"
#include "util/hash.h"

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

/* slot_load - a published inline child index (waits out a reservation); 0 = free. */
static inline uint32_t slot_load(struct trk_node *p, int i)
{
	uint32_t k = atomic_load_explicit(&p->kid[i], memory_order_acquire);
	unsigned spins = 0;

	while (unlikely(k == TRK_KID_BUSY)) {
		/* the reserving thread may have been preempted: do not burn its slice */
		if (++spins > 64)
			sched_yield();
		else
			__builtin_ia32_pause();
		k = atomic_load_explicit(&p->kid[i], memory_order_acquire);
	}
	return k;
}

/* find_list - the child with ip in the overflow list from c up to (not incl.) stop. */
static uint32_t find_list(uint32_t c, uint32_t stop, uintptr_t ip)
{
	while (c && c != stop) {
		struct trk_node *n = trk_node_at(c);

		if (n->ip == ip)
			return c;
		c = atomic_load_explicit(&n->next, memory_order_acquire);
	}
	return 0;
}

/* lookup - the child of p with ip, or 0. */
static inline uint32_t lookup(struct trk_node *p, uintptr_t ip)
{
	for (int i = 0; i < TRK_NODE_KIDS; i++) {
		uint32_t k = slot_load(p, i);

		if (!k)
			return 0; /* slots fill in order: nothing further */
		if (p->kip[i] == ip)
			return k;
	}
	return find_list(atomic_load_explicit(&p->more, memory_order_acquire), 0, ip);
}

/*
 * publish - make idx (ip) a child of p unless a racing thread made one for
 * ip first. Returns idx, or the racing thread's node.
 */
static uint32_t publish(struct trk_node *p, struct trk_node *n, uint32_t idx, uintptr_t ip)
{
	uint32_t head, c;

	for (int i = 0; i < TRK_NODE_KIDS; i++) {
		uint32_t k = 0;

		if (atomic_compare_exchange_strong_explicit(&p->kid[i], &k, TRK_KID_BUSY,
							    memory_order_acquire,
							    memory_order_acquire)) {
			p->kip[i] = ip;
			atomic_store_explicit(&p->kid[i], idx, memory_order_release);
			return idx;
		}
		k = slot_load(p, i);
		if (p->kip[i] == ip)
			return k;
	}
	head = atomic_load_explicit(&p->more, memory_order_acquire);
	c = find_list(head, 0, ip);
	if (c)
		return c;
	for (;;) {
		uint32_t prev = head;

		atomic_store_explicit(&n->next, prev, memory_order_relaxed);
		if (atomic_compare_exchange_weak_explicit(&p->more, &head, idx, memory_order_release,
							  memory_order_acquire))
			return idx;
		/* head is the new head now: look at the siblings that arrived since */
		c = find_list(head, prev, ip);
		if (c)
			return c;
	}
}

uint32_t trk_tree_child(struct trk_thr *t, uint32_t parent, uintptr_t ip)
{
	struct trk_node *p = trk_node_at(parent), *n;
	struct trk_tcache *tc;
	uint32_t c, idx;

	tc = &t->tcache[((ip * 0x9E3779B97F4A7C15ull) ^ parent) >> 32 & (TRK_TCACHE - 1)];
	if (likely(tc->ip == ip && tc->parent == parent && tc->child))
		return tc->child;
	c = lookup(p, ip);
	if (c)
		goto out;

	/*
	 * the interpreter should know the module of a new ip before the node;
	 * an ip in no module at all (JIT code, the cut marker) has none to announce
	 */
	if (ip != (uintptr_t)WIRE_IP_CUT && !trk_mod_known(ip) && trk_mod_loaded(ip))
		trk_mod_check(t);
	idx = node_new(t);
	if (!idx)
		return 0;
	n = trk_node_at(idx);
	n->ip = ip;
	n->parent = parent;
	atomic_store_explicit(&n->more, 0, memory_order_relaxed);
	atomic_store_explicit(&n->next, 0, memory_order_relaxed);
	for (int i = 0; i < TRK_NODE_KIDS; i++)
		atomic_store_explicit(&n->kid[i], 0, memory_order_relaxed);
	atomic_store_explicit(&n->sent, 0, memory_order_relaxed);

	c = publish(p, n, idx, ip);
	if (c != idx)
		t->spare_node = idx;
out:
	tc->ip = ip;
	tc->parent = parent;
	tc->child = c;
	return c;
}

/*
 * send_one - announce node idx (its parent is announced in gen) unless
 * someone did. Returns the session its number belongs to.
 */
static uint32_t send_one(struct trk_thr *t, uint32_t idx, uint32_t gen)
{
	struct trk_node *n = trk_node_at(idx);
	uint64_t seq = trk_thr_enter_seq(t);
	uint32_t sgen = trk_seq_gen(seq), old = atomic_load(&n->sent);
	bool mine = sgen == gen && old < gen &&
		    atomic_compare_exchange_strong(&n->sent, &old, gen);
	uint8_t *q = trk_ev_put(t, NODE_EV_MAX, mine ? WIRE_EV_NODE : WIRE_EV_NOP, seq);

	if (mine) {
		q += wire_put_varint(q, idx);
		q += wire_put_varint(q, n->parent);
		q += wire_put_varint(q, n->ip);
	}
	trk_ev_end(t, q);
	trk_thr_exit(t);
	return sgen;
}

uint32_t trk_tree_send_slow(struct trk_thr *t, uint32_t leaf, uint32_t gen)
{
	for (;;) {
		uint32_t top = leaf, c, sgen, sent = atomic_load(&trk_node_at(leaf)->sent);

		if (sent == gen)
			return gen;
		if (sent > gen) {
			/* a newer session began: make sure for that one */
			gen = atomic_load(&trk_g.sess_gen);
			continue;
		}
		/* the topmost ancestor not yet announced in gen goes first */
		for (c = trk_node_at(leaf)->parent; c; c = trk_node_at(c)->parent) {
			if (atomic_load(&trk_node_at(c)->sent) == gen)
				break;
			top = c;
		}
		sgen = send_one(t, top, gen);
		if (sgen > gen)
			gen = sgen;
	}
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

/* ---- the whole-stack cache (struct trk_sc_bucket) ---- */

static _Atomic int sc_failed; /* no memory for the table: do without */

static struct trk_sc_bucket *sc_map(void)
{
	size_t size = sizeof(struct trk_sc_bucket) << TRK_SC_BITS;
	struct trk_sc_bucket *exp = NULL;
	void *m;

	if (atomic_load_explicit(&sc_failed, memory_order_relaxed))
		return NULL;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		atomic_store(&sc_failed, 1);
		return NULL;
	}
	if (!atomic_compare_exchange_strong_explicit(&trk_g.scache, &exp, (struct trk_sc_bucket *)m,
						     memory_order_acq_rel, memory_order_acquire)) {
		munmap(m, size);
		return exp;
	}
	return m;
}

static inline struct trk_sc_bucket *sc_table(void)
{
	struct trk_sc_bucket *b = atomic_load_explicit(&trk_g.scache, memory_order_acquire);

	return likely(b != NULL) ? b : sc_map();
}

/* sc_leaf_mix - the leaf's share of the key (never 0 for a leaf). */
static inline uint64_t sc_leaf_mix(uint32_t leaf)
{
	return ((uint64_t)leaf + 1) * 0x9E3779B97F4A7C15ull;
}

/*
 * sc_hash - two independent 64-bit hashes of ips[0..n) and n. Each step
 * is a bijection of the state for a given ip, so two stacks of the same
 * length that differ in one frame always hash differently. Even and odd
 * frames go to separate chains (four in all), which halves the latency of
 * the multiply chains on a deep stack.
 */
static inline void sc_hash(const uintptr_t *ips, size_t n, uint64_t *h1, uint64_t *h2)
{
	uint64_t a = 0x243F6A8885A308D3ull ^ n, b = 0x13198A2E03707344ull + n;
	uint64_t c = 0x082EFA98EC4E6C89ull, d = 0x452821E638D01377ull;
	size_t i;

	for (i = 0; i + 1 < n; i += 2) {
		a = (a ^ ips[i]) * 0x9E3779B97F4A7C15ull;
		c = (c ^ ips[i + 1]) * 0x9E3779B97F4A7C15ull;
		b = (b + ips[i]) * 0xD6E8FEB86659FD93ull;
		d = (d + ips[i + 1]) * 0xD6E8FEB86659FD93ull;
		a ^= a >> 29;
		c ^= c >> 29;
		b ^= b >> 32;
		d ^= d >> 32;
	}
	if (i < n) {
		a = (a ^ ips[i]) * 0x9E3779B97F4A7C15ull;
		b = (b + ips[i]) * 0xD6E8FEB86659FD93ull;
	}
	*h1 = util_fmix64(a ^ util_fmix64(c));
	*h2 = util_fmix64(b ^ 0xA4093822299F31D0ull) + util_fmix64(d);
}

/* The fields of an entry's val word. */
#define SC_H2(v) ((v) >> 48)
#define SC_GEN(v) ((uint32_t)((v) >> 32) & 0xffffu)
#define SC_LEAF(v) ((uint32_t)(v))

/* sc_find - the way holding the stack with hashes (h1, h2), its val in *val; -1 if none. */
static inline int sc_find(struct trk_sc_bucket *b, uint64_t h1, uint64_t h2, uint64_t *val)
{
	for (int w = 0; w < 4; w++) {
		uint64_t v = atomic_load_explicit(&b->e[w].val, memory_order_acquire);
		uint64_t k = atomic_load_explicit(&b->e[w].key, memory_order_relaxed);

		if (SC_H2(v) == (h2 >> 48) && SC_LEAF(v) && k == (h1 ^ sc_leaf_mix(SC_LEAF(v)))) {
			*val = v;
			return w;
		}
	}
	return -1;
}

/*
 * sc_put - remember leaf (announced in session gen) for the stack, in way w
 * if it is there already, else in a free way, else in one the hash picks.
 */
static inline void sc_put(struct trk_sc_bucket *b, int w, uint64_t h1, uint64_t h2, uint32_t leaf,
			  uint32_t gen)
{
	if (w < 0) {
		for (w = 0; w < 4; w++)
			if (!atomic_load_explicit(&b->e[w].key, memory_order_relaxed))
				break;
		if (w == 4)
			w = (int)(h2 & 3);
	}
	atomic_store_explicit(&b->e[w].val,
			      (h2 >> 48) << 48 | (uint64_t)(gen & 0xffffu) << 32 | leaf,
			      memory_order_release);
	atomic_store_explicit(&b->e[w].key, h1 ^ sc_leaf_mix(leaf), memory_order_release);
}

/* ---- the recent-stack cache (struct trk_rstack) ---- */

/* rs_slot - the entry for a stack: by its innermost two frames and its depth (n >= 1). */
static inline struct trk_rstack *rs_slot(struct trk_thr *t, const uintptr_t *ips, size_t n)
{
	uint64_t k = ips[0] * 0x9E3779B97F4A7C15ull + (n > 1 ? ips[1] : 0) * 0xC2B2AE3D27D4EB4Full +
		     n;

	return &t->rstack[k >> (64 - TRK_RS_BITS)];
}

/* rs_same - whether e holds exactly the stack ips[0 .. n) (n <= TRK_RS_FRAMES). */
static inline bool rs_same(const struct trk_rstack *e, const uintptr_t *ips, size_t n)
{
	uintptr_t diff = 0;

	if (e->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= e->f[i] ^ ips[i];
	return diff == 0;
}

static uint32_t trace_shared(struct trk_thr *t, size_t n, uint32_t cur, uint32_t *gen);

/*
 * trk_tree_trace - first the thread's recent stacks (an exact compare of the
 * frames; the entry's session must be the current one), then the shared
 * whole-stack cache and the tree (trace_shared).
 */
uint32_t trk_tree_trace(struct trk_thr *t, size_t n, uint32_t *gen)
{
	uint32_t cur = atomic_load_explicit(&trk_g.sess_gen, memory_order_acquire), leaf;
	const uintptr_t *ips;
	struct trk_rstack *e;

	if (unlikely(n == 0 || n > TRK_RS_FRAMES))
		return trace_shared(t, n, cur, gen);
	e = rs_slot(t, t->frames, n);
	if (likely(e->gen == cur && rs_same(e, t->frames, n))) {
		*gen = cur;
		return e->leaf;
	}
	/* the array, not t->frames: the tree walk swaps t->frames and t->prev */
	ips = t->frames;
	leaf = trace_shared(t, n, cur, gen);
	if (leaf && *gen == cur) {
		e->n = (uint32_t)n;
		e->leaf = leaf;
		e->gen = cur;
		for (size_t i = 0; i < n; i++)
			e->f[i] = ips[i];
	}
	return leaf;
}

/* trace_shared - the shared whole-stack cache, else the tree walk (see trk_tree_trace). */
static uint32_t trace_shared(struct trk_thr *t, size_t n, uint32_t cur, uint32_t *gen)
{
	uint32_t leaf = 0;
	struct trk_sc_bucket *tab = n ? sc_table() : NULL, *bucket = NULL;
	uint64_t h1 = 0, h2 = 0, v = 0;
	int w = -1;

	if (likely(tab != NULL)) {
		sc_hash(t->frames, n, &h1, &h2);
		bucket = &tab[h1 >> (64 - TRK_SC_BITS)];
		w = sc_find(bucket, h1, h2, &v);
		if (likely(w >= 0)) {
			leaf = SC_LEAF(v);
			/* announced in this session already: not even the leaf is touched */
			if (likely(SC_GEN(v) == (cur & 0xffffu))) {
				*gen = cur;
				return leaf;
			}
		}
	}
	if (!leaf)
		leaf = trk_tree_leaf_thr(t, n); /* t->prev stays the last walked stack otherwise */
	*gen = trk_tree_send(t, leaf);
	if (bucket && leaf)
		sc_put(bucket, w, h1, h2, leaf, *gen);
	return leaf;
}

uint32_t trk_tree_leaf_thr(struct trk_thr *t, size_t n)
{
	const uintptr_t *ips = t->frames, *prev = t->prev;
	size_t pn = t->prev_n, j = 0, i;
	uint32_t node = 0, *nodes = t->nodes;
	void *swap;


	/* the outer frames shared with the previous stack keep their nodes */
	while (j < n && j < pn && ips[n - 1 - j] == prev[pn - 1 - j]) {
		nodes[n - 1 - j] = t->prev_nodes[pn - 1 - j];
		j++;
	}
	if (j)
		node = nodes[n - j];
	for (i = n - j; i > 0; i--) {
		node = trk_tree_child(t, node, ips[i - 1]);
		if (unlikely(!node)) {
			t->prev_n = 0;
			return 0;
		}
		nodes[i - 1] = node;
	}
	swap = t->frames;
	t->frames = t->prev;
	t->prev = swap;
	swap = t->nodes;
	t->nodes = t->prev_nodes;
	t->prev_nodes = swap;
	t->prev_n = n;
	return node;
}
