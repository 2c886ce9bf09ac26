/* pyframes/intern.c - code objects and lines to foreign frame ids, defined once per session */
/* SPDX-License-Identifier: MIT */
/*
 * Each distinct (code object, line) is one foreign frame id. The first time
 * a code object is met its header, qualified name, file name and location
 * table are read (pyf_read: fault-safe) and decoded once into one small
 * number per code unit (the line's slot); each line slot has its id
 * (allocated in a block per code object) and the session it was last
 * defined in. Afterwards a frame costs a hash probe, four loads from the
 * live code object to check its identity, and one load of its unit.
 *
 * Identity: code objects die and their addresses are reused. An entry
 * matches only when the code's address, its location table, file name and
 * qualified name objects and its first line are all the same as when the
 * entry was made; a new code object at an old address has new such objects
 * (the old ones died with it, or it is the same function's code). An entry
 * that no longer matches is left alone and the probe goes on.
 *
 * The table is lock-free: a slot is claimed by CAS (EMPTY -> BUSY), filled,
 * and published (READY, release); readers take READY slots only. A thread
 * that meets the code it looks for being filled by another leaves that
 * frame out rather than filling a second entry (which would give the same
 * line two ids). A failed fill gives the slot back (EMPTY).
 */
#include <errno.h>

#include "pyframes/internal.h"
#include "track/track.h"

#define TABLE_SIZE (1u << 16) /* code objects */
#define TABLE_PROBES 32
#define SPAN_MAX 65534 /* lines of one code object with an id of their own */

enum { EMPTY, BUSY, READY };

struct line_slot {
	int32_t line; /* 0 = unknown */
	_Atomic uint32_t sess;
};

struct code_ent {
	_Atomic uint32_t state;
	_Atomic uintptr_t filling; /* the code a BUSY entry is being filled for */
	uint32_t nunits, nslots;
	int32_t firstlineno, firsttraceable, minline;
	uintptr_t code, linetable, filename, qualname;
	uint64_t id0; /* id of slot 0; slot i is id0 + i */
	uint16_t *unit_slot;
	struct line_slot *slots;
	const char *name, *file;
	uint32_t name_len, file_len;
};

static struct code_ent *table;
static _Atomic uint64_t next_id = 1;

/*
 * The recent frames: (code, instruction) -> id, direct-mapped, written
 * without a lock. An entry counts only when its check word matches the
 * other words mixed with the code's identity and the session, so a torn
 * entry (two writers), a code object that died and left its address to
 * another, or an id not yet defined in this session is a miss: the table
 * above answers then. Spares the table's probe, the unit's and the line's
 * loads (cache misses in a big program) for the frames seen again and again.
 */
#define MEMO_SIZE 4096
struct memo {
	_Atomic uint64_t code, pc, id, check;
};
static struct memo *memo;

int pyf_intern_init(void)
{
	if (!table)
		table = pyf_arena_alloc(TABLE_SIZE * sizeof(*table));
	if (!memo)
		memo = pyf_arena_alloc(MEMO_SIZE * sizeof(*memo));
	return table && memo ? 0 : -ENOMEM;
}


static inline uint32_t hash_ptr(uintptr_t p)
{
	return (uint32_t)(((p >> 4) * 0x9e3779b97f4a7c15ull) >> 48);
}

/* Identity fields of a code object, as read (code_head). */
struct code_id {
	uintptr_t type, linetable, filename, qualname;
	int64_t nunits;
	int32_t firstlineno, firsttraceable;
};

static inline uintptr_t at_ptr(const uint8_t *b, uint32_t off)
{
	uintptr_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline int32_t at_i32(const uint8_t *b, uint32_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

/* memo_check - the check word of (code, pc, id) for a code of identity ident in session sess */
static inline uint64_t memo_check(uint64_t code, uint64_t pc, uint64_t id, const struct code_id *ident,
				  uint32_t sess)
{
	uint64_t h = mix(mix(mix(code, pc), id), ident->linetable);

	h = mix(mix(h, ident->filename), ident->qualname);
	return mix(h, (uint64_t)(uint32_t)ident->firstlineno << 32 | sess) | 1; /* never 0: an empty entry */
}

/* code_head - read a code object's identity; direct: it is alive and mapped. 0 or -EFAULT. */
static int code_head(uintptr_t code, bool direct, struct code_id *id)
{
	const struct pyf_layout *L = pyf_g.L;
	uint8_t buf[512];
	const uint8_t *b = buf;

	if (direct) {
		b = (const uint8_t *)code;
	} else {
		if (L->co_code > sizeof(buf) || pyf_read(buf, code, L->co_code) < 0)
			return -EFAULT;
	}
	id->type = at_ptr(b, L->ob_type);
	id->nunits = (int64_t)at_ptr(b, L->ob_size);
	id->linetable = at_ptr(b, L->co_linetable);
	id->filename = at_ptr(b, L->co_filename);
	id->qualname = at_ptr(b, L->co_qualname);
	id->firstlineno = at_i32(b, L->co_firstlineno);
	id->firsttraceable = at_i32(b, L->co_firsttraceable);
	return 0;
}

static inline bool same_code(const struct code_ent *e, const struct code_id *id)
{
	return e->linetable == id->linetable && e->filename == id->filename &&
	       e->qualname == id->qualname && e->firstlineno == id->firstlineno;
}

/* read_name - a str object as UTF-8 into the arena; *len its length. NULL when unreadable. */
static const char *read_name(uintptr_t obj, size_t cap, uint32_t *len)
{
	char buf[PYF_FILE_MAX];
	char *out;
	int n;

	if (cap > sizeof(buf))
		cap = sizeof(buf);
	n = pyf_unicode(obj, buf, cap);
	if (n < 0)
		return NULL;
	out = pyf_arena_alloc((size_t)n + 1);
	if (!out)
		return NULL;
	memcpy(out, buf, (size_t)n);
	out[n] = '\0';
	*len = (uint32_t)n;
	return out;
}

/* build - fill claimed entry e for code (identity id): names, lines, ids. 0 or -errno. */
static int build(struct code_ent *e, uintptr_t code, const struct code_id *id)
{
	const struct pyf_layout *L = pyf_g.L;
	int32_t *line, minl = INT32_MAX, maxl = INT32_MIN;
	uint8_t *lt;
	int64_t ltlen;
	uint32_t u, nunits = (uint32_t)id->nunits;

	if (id->type != pyf_g.code_type || id->nunits <= 0 || id->nunits > PYF_UNITS_MAX ||
	    !pyf_ptr_ok(id->linetable))
		return -EINVAL;
	if (pyf_read(&ltlen, id->linetable + L->ob_size, sizeof(ltlen)) < 0)
		return -EFAULT;
	if (ltlen < 0 || ltlen > PYF_LINETABLE_MAX)
		return -EINVAL;
	lt = pyf_arena_alloc((size_t)ltlen + 1);
	line = pyf_arena_alloc(nunits * sizeof(*line));
	e->unit_slot = pyf_arena_alloc(nunits * sizeof(*e->unit_slot));
	if (!lt || !line || !e->unit_slot)
		return -ENOMEM;
	if (pyf_read(lt, id->linetable + L->by_sval, (size_t)ltlen) < 0)
		return -EFAULT;
	(void)pyf_line_table(lt, (size_t)ltlen, id->firstlineno, line, nunits);
	for (u = 0; u < nunits; u++) {
		if (line[u] <= 0)
			continue;
		if (line[u] < minl)
			minl = line[u];
		if (line[u] > maxl)
			maxl = line[u];
	}
	if (minl > maxl)
		minl = maxl = 1;
	if (maxl - minl > SPAN_MAX - 1)
		maxl = minl + SPAN_MAX - 1;
	e->nslots = (uint32_t)(maxl - minl) + 2; /* slot 0: line unknown */
	e->slots = pyf_arena_alloc(e->nslots * sizeof(*e->slots));
	if (!e->slots)
		return -ENOMEM;
	for (u = 1; u < e->nslots; u++)
		e->slots[u].line = minl + (int32_t)u - 1;
	for (u = 0; u < nunits; u++)
		e->unit_slot[u] = (uint16_t)(line[u] >= minl && line[u] <= maxl ? line[u] - minl + 1 : 0);
	e->name = read_name(id->qualname, PYF_NAME_MAX, &e->name_len);
	e->file = read_name(id->filename, PYF_FILE_MAX, &e->file_len);
	if (!e->name) {
		e->name = "?";
		e->name_len = 1;
	}
	if (!e->file) {
		e->file = "";
		e->file_len = 0;
	}
	e->nunits = nunits;
	e->minline = minl;
	e->firstlineno = id->firstlineno;
	e->firsttraceable = id->firsttraceable;
	e->linetable = id->linetable;
	e->filename = id->filename;
	e->qualname = id->qualname;
	e->code = code;
	e->id0 = atomic_fetch_add(&next_id, e->nslots);
	return 0;
}

/* lookup - the READY entry of code with identity id, made now if new; NULL if none can be. */
static struct code_ent *lookup(uintptr_t code, const struct code_id *id)
{
	uint32_t h = hash_ptr(code), k;

	for (k = 0; k < TABLE_PROBES; k++) {
		struct code_ent *e = &table[(h + k) & (TABLE_SIZE - 1)];
		uint32_t st = atomic_load_explicit(&e->state, memory_order_acquire);

		if (st == READY) {
			if (e->code == code && same_code(e, id))
				return e;
			continue;
		}
		if (st == BUSY) {
			if (atomic_load_explicit(&e->filling, memory_order_relaxed) == code)
				return NULL; /* another thread names this very code: left out this time */
			continue;
		}
		if (!atomic_compare_exchange_strong(&e->state, &st, BUSY))
			continue;
		atomic_store_explicit(&e->filling, code, memory_order_relaxed);
		if (build(e, code, id) < 0) {
			atomic_store_explicit(&e->state, EMPTY, memory_order_release);
			return NULL;
		}
		atomic_store_explicit(&e->state, READY, memory_order_release);
		return e;
	}
	return NULL;
}

uint64_t pyf_frame_id(uintptr_t code, uintptr_t prev_instr, uint8_t owner, bool direct)
{
	const struct pyf_layout *L = pyf_g.L;
	struct code_id id;
	struct code_ent *e;
	struct line_slot *s;
	struct memo *m;
	uintptr_t start;
	int64_t unit;
	uint32_t sess, slot;

	if (!table || !pyf_ptr_ok(code) || code_head(code, direct, &id) < 0)
		return UINT64_MAX;
	start = code + L->co_code;
	/* created and not started yet (its prologue): Python's own tracebacks leave it out too */
	if (owner != L->owned_by_generator && prev_instr < start + 2 * (uintptr_t)(uint32_t)id.firsttraceable)
		return 0;
	sess = trk_xframe_session();
	m = &memo[mix(code, prev_instr) & (MEMO_SIZE - 1)];
	if (atomic_load_explicit(&m->code, memory_order_relaxed) == code &&
	    atomic_load_explicit(&m->pc, memory_order_relaxed) == prev_instr) {
		uint64_t mid = atomic_load_explicit(&m->id, memory_order_relaxed);

		if (atomic_load_explicit(&m->check, memory_order_relaxed) ==
		    memo_check(code, prev_instr, mid, &id, sess))
			return mid;
	}
	e = lookup(code, &id);
	if (!e)
		return UINT64_MAX;
	unit = (int64_t)(prev_instr - start) / 2;
	slot = unit >= 0 && unit < (int64_t)e->nunits ? e->unit_slot[unit] : 0;
	s = &e->slots[slot];
	if (atomic_load_explicit(&s->sess, memory_order_relaxed) != sess &&
	    trk_xframe_define(e->id0 + slot, WIRE_LANG_PYTHON, WIRE_XKIND_UNKNOWN, (uint32_t)s->line,
			      e->name, e->name_len, e->file, e->file_len) == 0)
		atomic_store_explicit(&s->sess, sess, memory_order_relaxed);
	if (atomic_load_explicit(&s->sess, memory_order_relaxed) == sess) {
		/* defined in this session: remembered (a torn or raced entry fails its check) */
		atomic_store_explicit(&m->code, code, memory_order_relaxed);
		atomic_store_explicit(&m->pc, prev_instr, memory_order_relaxed);
		atomic_store_explicit(&m->id, e->id0 + slot, memory_order_relaxed);
		atomic_store_explicit(&m->check, memo_check(code, prev_instr, e->id0 + slot, &id, sess),
				      memory_order_relaxed);
	}
	return e->id0 + slot;
}

int pyf_line_table(const uint8_t *t, size_t len, int32_t firstlineno, int32_t *line, uint32_t nunits)
{
	size_t p = 0;
	uint32_t u = 0;
	int64_t cur = firstlineno;

	while (p < len && u < nunits) {
		uint8_t b = t[p++];
		unsigned code = (b >> 3) & 15, n = (b & 7) + 1, k;
		int64_t delta = 0;

		if (!(b & 0x80))
			goto bad;
		if (code == 14 || code == 13) {
			/* signed varint: 6-bit groups, bit 6 continues, low bit the sign */
			uint64_t v = 0;
			unsigned shift = 0;
			uint8_t c;

			do {
				if (p >= len || shift > 30)
					goto bad;
				c = t[p++];
				v |= (uint64_t)(c & 63) << shift;
				shift += 6;
			} while (c & 64);
			delta = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		cur += delta;
		for (k = 0; k < n && u < nunits; k++)
			line[u++] = code == 15 || cur <= 0 || cur > INT32_MAX ? 0 : (int32_t)cur;
		while (p < len && !(t[p] & 0x80))
			p++; /* the rest of the entry (columns) */
	}
	while (u < nunits)
		line[u++] = 0;
	return 0;
bad:
	while (u < nunits)
		line[u++] = 0;
	return -EINVAL;
}
