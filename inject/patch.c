/* inject/patch.c - point the GOT slots of malloc & co. of every loaded module at track's hooks */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the library's thread, inj_g.lock held, no allocation.
 *
 * A pass walks every module under the loader's lock (dl_iterate_phdr), so a
 * module seen there cannot be unmapped while its words are written. For
 * each module elf/ lists the slots of the ten names; each word is then
 *
 *   holding our hook         already patched (or patched by an earlier
 *                            session and left): left alone
 *   holding the real one     resolved: saved, rewritten
 *   holding a stub inside    lazily bound, never called yet: saved (the
 *   the module's own code    stub goes back at the end, so lazy binding
 *   (JUMP_SLOT only)         still works), rewritten
 *   pointing at other code   another definition (RTLD_DEEPBIND, a local
 *                            allocator): left alone, never mixed with ours
 *   anything else            not relocated yet: the module is half-loaded
 *
 * Half-loaded modules: dl_iterate_phdr lists a module as soon as dlopen
 * mapped it, before it is relocated and before PT_GNU_RELRO is made
 * read-only. Writing then could be undone by the relocation, and worse,
 * making a RELRO page writable and "back" while the loader is about to
 * protect it could make the loader's next store fault. So a module is
 * patched only when all its slots hold relocated values and its RELRO
 * pages are already read-only in /proc/self/maps; else it is pending and
 * looked at again next tick (at most INJ_PENDING_TRIES times).
 *
 * The maps snapshot is taken between reading dl_iterate_phdr's counters and
 * the walk; the walk gives up (-EAGAIN) if the counters moved, so every
 * module walked was mapped when the snapshot was taken.
 */
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#include "inject/internal.h"

#define PASS_RACE 1 /* dl_iterate_phdr return: counters moved */

struct pass {
	unsigned long long adds, subs;
};

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;

	(void)size;
	p->adds = info->dlpi_adds;
	p->subs = info->dlpi_subs;
	return 1; /* one module is enough */
}

void inj_counters(unsigned long long *adds, unsigned long long *subs)
{
	struct pass p = {0, 0};

	dl_iterate_phdr(counters_cb, &p);
	*adds = p.adds;
	*subs = p.subs;
}

static bool mod_contains(const struct elfr_mod *m, uintptr_t addr, uint32_t need_flags)
{
	for (size_t i = 0; i < m->nload; i++) {
		const struct elfr_seg *s = &m->load[i];

		if (addr >= s->start && addr < s->end && (s->flags & need_flags) == need_flags)
			return true;
	}
	return false;
}

static int skip_reason(const struct elfr_mod *m)
{
	if (inj_g.self_addr && mod_contains(m, inj_g.self_addr, 0))
		return INJ_SKIP_SELF;
	if (inj_g.ldso_base && m->bias == inj_g.ldso_base)
		return INJ_SKIP_LDSO;
	if (inj_g.vdso_addr && mod_contains(m, inj_g.vdso_addr, 0))
		return INJ_SKIP_VDSO;
	if (inj_g.unwind_addr && mod_contains(m, inj_g.unwind_addr, 0))
		return INJ_SKIP_UNWIND;
	return INJ_SKIP_NONE;
}

/* The module entry for (bias, phdr), added if new; NULL when the table is full. */
static struct inj_mod *mod_get(uintptr_t bias, const void *phdr, uint32_t *idx)
{
	struct inj_mod *e;

	for (size_t i = 0; i < inj_g.nmods; i++) {
		if (inj_g.mods[i].bias == bias && inj_g.mods[i].phdr == phdr) {
			*idx = (uint32_t)i;
			return &inj_g.mods[i];
		}
	}
	if (inj_g.nmods == INJ_MAX_MODS)
		return NULL;
	*idx = (uint32_t)inj_g.nmods;
	e = &inj_g.mods[inj_g.nmods++];
	memset(e, 0, sizeof(*e));
	e->bias = bias;
	e->phdr = phdr;
	e->pending = 1;
	return e;
}

static struct inj_slot *slot_find(uintptr_t addr)
{
	for (size_t i = 0; i < inj_g.nslots; i++)
		if (inj_g.slots[i].addr == addr)
			return &inj_g.slots[i];
	return NULL;
}

enum verdict { V_SKIP, V_OURS, V_PATCH, V_FOREIGN, V_UNRELOCATED };

static enum verdict judge(const struct elfr_mod *m, const struct elfr_slot *s, uintptr_t v)
{
	unsigned w = s->want;

	if (w >= INJ_NNAMES || !inj_g.realv[w] || s->addend != 0)
		return V_SKIP;
	if (v == inj_g.hookv[w])
		return V_OURS;
	if (v == inj_g.realv[w] || (inj_g.altv[w] && v == inj_g.altv[w]))
		return V_PATCH;
	if (s->kind == ELFR_SLOT_JUMP && mod_contains(m, v, PF_X))
		return V_PATCH; /* PLT stub: lazily bound, not called yet */
	{
		int prot = inj_maps_prot(v);

		if (prot >= 0 && (prot & PROT_EXEC))
			return V_FOREIGN;
	}
	return V_UNRELOCATED;
}

/* Why a module is not ready (ready()). */
enum not_ready { R_READY = 0, R_RELRO, R_UNMAPPED, R_UNRELOC };

/*
 * ready - whether module m may be written now (R_READY): its RELRO pages
 * (the part glibc protects: page-rounded down at both ends) are read-only,
 * and every slot's page has a known protection and holds a relocated
 * value. Else the first reason found.
 */
static enum not_ready ready(const struct elfr_mod *m, const struct elfr_slot *slots, size_t n)
{
	uintptr_t mask = ~((uintptr_t)inj_g.page - 1);
	uintptr_t lo = m->relro_start & mask, hi = m->relro_end & mask;

	if (hi > lo) {
		int a = inj_maps_prot(lo), b = inj_maps_prot(hi - 1);

		if (a < 0 || b < 0)
			return R_UNMAPPED;
		if ((a & PROT_WRITE) || (b & PROT_WRITE))
			return R_RELRO;
	}
	for (size_t i = 0; i < n; i++) {
		uintptr_t v = __atomic_load_n((uintptr_t *)slots[i].addr, __ATOMIC_ACQUIRE);

		if (inj_maps_prot(slots[i].addr) < 0)
			return R_UNMAPPED;
		if (judge(m, &slots[i], v) == V_UNRELOCATED)
			return R_UNRELOC;
	}
	return R_READY;
}

/* note_deferred - count module name put off for reason why in this pass's inj_g.defer. */
static void note_deferred(const char *name, enum not_ready why)
{
	struct inj_defer *d = &inj_g.defer;

	d->modules++;
	if (why == R_RELRO)
		d->relro++;
	else if (why == R_UNMAPPED)
		d->unmapped++;
	else
		d->unreloc++;
	if (!d->first[0]) {
		size_t n = name ? strlen(name) : 0;

		if (!n) {
			name = "(main program)";
			n = strlen(name);
		}
		if (n >= sizeof(d->first))
			n = sizeof(d->first) - 1;
		memcpy(d->first, name, n);
		d->first[n] = '\0';
	}
}

/* patch_one - judge and rewrite one word of module mi. */
static void patch_one(const struct elfr_mod *m, uint32_t mi, const struct elfr_slot *s)
{
	uintptr_t v = __atomic_load_n((uintptr_t *)s->addr, __ATOMIC_ACQUIRE);
	struct inj_slot *e = slot_find(s->addr);
	int prot = inj_maps_prot(s->addr);

	switch (judge(m, s, v)) {
	case V_SKIP:
		return;
	case V_OURS:
		/* one we did not write: what was there before is unknown */
		if (e)
			inj_g.st.already++;
		else
			inj_g.st.foreign++;
		return;
	case V_FOREIGN:
	case V_UNRELOCATED:
		inj_g.st.foreign++;
		return;
	case V_PATCH:
		break;
	}
	if (prot < 0) {
		inj_g.st.failed++;
		return;
	}
	if (!e) {
		if (inj_g.nslots == INJ_MAX_SLOTS) {
			inj_g.st.failed++;
			return;
		}
		e = &inj_g.slots[inj_g.nslots];
		e->addr = s->addr;
		e->mod = mi;
		e->want = (uint8_t)s->want;
		if (inj_poke(s->addr, v, inj_g.hookv[s->want], prot) < 0) {
			inj_g.st.failed++;
			return;
		}
		inj_g.nslots++;
	} else if (inj_poke(s->addr, v, inj_g.hookv[s->want], prot) < 0) {
		inj_g.st.failed++;
		return;
	}
	/* a known word that held something else again (the lazy binder won a race) saves that */
	e->saved = v;
	e->prot = (uint8_t)prot;
	inj_g.st.patched++;
}

static int pass_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;
	struct elfr_info ei;
	struct elfr_mod m;
	struct inj_mod *e;
	enum elfr_reason r;
	enum not_ready nr;
	uint32_t mi;
	size_t n;

	(void)size;
	if (info->dlpi_adds != p->adds || info->dlpi_subs != p->subs)
		return PASS_RACE;
	inj_g.defer.walked++;
	r = elfr_mod_init(&m, info->dlpi_name, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
			  elfr_read_self, NULL);
	e = mod_get(info->dlpi_addr, info->dlpi_phdr, &mi);
	if (!e) {
		inj_g.st.failed++;
		return 0;
	}
	e->seen = inj_g.pass;
	if (e->skip || !e->pending)
		return 0; /* left alone, or done (judged again after an unload) */
	if (r == ELFR_OK) {
		e->skip = (uint8_t)skip_reason(&m);
		if (e->skip) {
			e->pending = 0;
			return 0;
		}
		r = elfr_find_slots(&m, inj_names, INJ_NNAMES, inj_g.found, INJ_MAX_FOUND, &ei);
	}
	if (r == ELFR_E_NO_DYNAMIC) {
		e->pending = 0; /* static executable: nothing imported */
		return 0;
	}
	if (r != ELFR_OK && r != ELFR_E_NO_ROOM) {
		e->skip = INJ_SKIP_MALFORMED;
		e->why = (uint8_t)r;
		e->pending = 0;
		return 0;
	}
	n = ei.nslots < INJ_MAX_FOUND ? ei.nslots : INJ_MAX_FOUND;
	if (n == 0) {
		e->pending = 0; /* imports none of the names: nothing to wait for */
		return 0;
	}
	nr = ready(&m, inj_g.found, n);
	if (nr != R_READY) {
		inj_g.st.deferred++;
		if (++e->tries >= INJ_PENDING_TRIES) {
			e->pending = 0; /* give up: patch what can be, judge() leaves the rest */
		} else {
			note_deferred(info->dlpi_name, nr);
			return 0;
		}
	}
	for (size_t i = 0; i < n; i++)
		patch_one(&m, mi, &inj_g.found[i]);
	if (r == ELFR_E_NO_ROOM)
		inj_g.st.failed += ei.nslots - n;
	e->pending = 0;
	return 0;
}

/* forget - drop modules the last pass did not see (unloaded) and their slots. */
static void forget(void)
{
	uint32_t map[INJ_MAX_MODS];
	size_t nm = 0, ns = 0;

	for (size_t i = 0; i < inj_g.nmods; i++) {
		if (inj_g.mods[i].seen != inj_g.pass) {
			map[i] = UINT32_MAX;
			continue;
		}
		map[i] = (uint32_t)nm;
		inj_g.mods[nm++] = inj_g.mods[i];
	}
	for (size_t i = 0; i < inj_g.nslots; i++) {
		uint32_t to = map[inj_g.slots[i].mod];

		if (to == UINT32_MAX)
			continue; /* its memory is gone: nothing to restore */
		inj_g.slots[ns] = inj_g.slots[i];
		inj_g.slots[ns++].mod = to;
	}
	inj_g.nmods = nm;
	inj_g.nslots = ns;
}

int inj_patch_pass(void)
{
	struct pass p;
	int ret;

	inj_counters(&p.adds, &p.subs);
	ret = inj_maps_read();
	if (ret < 0)
		return ret;
	inj_g.pass++;
	inj_g.st.passes++;
	memset(&inj_g.defer, 0, sizeof(inj_g.defer));
	if (p.subs != inj_g.subs) {
		/*
		 * Something was unloaded: a module reloaded at the same place has
		 * the same identity (bias, phdr) as the copy we patched, so every
		 * module is judged again. Words still holding our hook are left
		 * alone; fresh words of a new copy are patched and saved anew.
		 */
		for (size_t i = 0; i < inj_g.nmods; i++)
			if (!inj_g.mods[i].skip)
				inj_g.mods[i].pending = 1;
	}
	if (dl_iterate_phdr(pass_cb, &p) == PASS_RACE)
		return -EAGAIN; /* modules seen so far keep their state; the next pass goes on */
	forget();
	inj_g.adds = p.adds;
	inj_g.subs = p.subs;
	inj_g.any_pending = false;
	for (size_t i = 0; i < inj_g.nmods; i++)
		if (inj_g.mods[i].pending)
			inj_g.any_pending = true;
	return 0;
}
