/* track/modules.c - announce loaded modules and notice loads and unloads */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. The module list comes from dl_iterate_phdr, whose
 * dlpi_adds / dlpi_subs counters tell cheaply whether anything was loaded
 * or unloaded since the last scan. The timer thread checks them every tick,
 * and a thread adding a trace node whose ip lies in no announced module
 * checks them before announcing the node, so a module reaches the stream
 * before the first node inside it. No dlopen/dlclose hooks are needed, which
 * keeps $ORIGIN and RPATH lookups of the caller intact and works the same
 * when attached.
 *
 * Locking: trk_g.mod_lock is only ever taken inside a dl_iterate_phdr
 * callback, i.e. with the loader's lock already held, so the order is
 * always loader lock -> mod_lock (a user callback of dl_iterate_phdr that
 * allocates, reaching our hooks with the loader lock held, cannot invert it).
 *
 * Lookups by address (trk_mod_known) read an immutable sorted snapshot of
 * the ranges published with an atomic pointer; old snapshots are leaked
 * (one page per module change) because a reader may still use them. A
 * re-read that finds the same ranges (each new session re-reads them)
 * keeps the published snapshot, so attach/detach cycles leak nothing.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"

#define BUILD_ID_MAX 64
#define NSEG_MAX 64
#define PATH_MAX_SENT 4096

struct scan {
	struct trk_thr *t;
	bool locked;	 /* mod_lock taken by the first callback */
	bool check_only; /* stop at once if the counters did not move */
	bool scanning;	 /* compare every module */
};

static char exe_path[PATH_MAX_SENT];
static size_t exe_len;

int trk_mod_init(void)
{
	ssize_t n;

	if (!trk_g.mods) {
		void *m = mmap(NULL, TRK_MODS_MAX * sizeof(struct trk_mod), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return -errno;
		trk_g.mods = m;
	}
	/* a new session: every module is announced again (the ranges stay for lookups) */
	pthread_mutex_lock(&trk_g.mod_lock);
	trk_g.nmods = 0;
	pthread_mutex_unlock(&trk_g.mod_lock);
	n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	exe_len = n > 0 ? (size_t)n : 0;
	return 0;
}

/* build_id - find NT_GNU_BUILD_ID in the module's PT_NOTE segments. */
static size_t build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name = (nh->n_namesz + 3u) & ~(size_t)3;
			size_t desc = (nh->n_descsz + 3u) & ~(size_t)3;
			size_t left = (size_t)(end - p) - sizeof(*nh);

			if (name > left || desc > left - name)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(p + sizeof(*nh), "GNU", 4) == 0) {
				*out = p + sizeof(*nh) + name;
				return nh->n_descsz > BUILD_ID_MAX ? BUILD_ID_MAX : nh->n_descsz;
			}
			p += sizeof(*nh) + name + desc;
		}
	}
	return 0;
}

static void mod_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = UINTPTR_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < *lo)
			*lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > *hi)
			*hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (*lo > *hi)
		*lo = *hi = 0;
}

static void send_module(struct trk_thr *t, const struct dl_phdr_info *info, bool first,
			uintptr_t lo, uintptr_t hi)
{
	const uint8_t *bid = NULL;
	size_t bid_len = build_id(info, &bid);
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	size_t path_len, nseg = 0, need;
	uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	uint8_t *q;
	int i;

	if (vdso && vdso >= lo && vdso < hi) {
		path = "[vdso]";
	} else if (first && path[0] == '\0') {
		path = exe_path; /* the main program: its real path */
		exe_path[exe_len] = '\0';
	}
	path_len = strnlen(path, PATH_MAX_SENT);
	for (i = 0; i < info->dlpi_phnum; i++)
		nseg += info->dlpi_phdr[i].p_type == PT_LOAD;
	if (nseg > NSEG_MAX)
		nseg = NSEG_MAX;
	/* op, delta, base, nseg, build-id length, path length; segments; bytes */
	need = 1 + 5 * WIRE_VARINT_MAX + nseg * 3 * WIRE_VARINT_MAX + bid_len + path_len;

	q = trk_ev_put(t, need, WIRE_EV_MODULE, trk_thr_enter_seq(t));
	q += wire_put_varint(q, info->dlpi_addr);
	q += wire_put_varint(q, nseg);
	for (i = 0; i < info->dlpi_phnum && nseg > 0; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		q += wire_put_varint(q, ph->p_vaddr);
		q += wire_put_varint(q, ph->p_memsz);
		q += wire_put_varint(q, ph->p_flags);
		nseg--;
	}
	q += wire_put_varint(q, bid_len);
	memcpy(q, bid, bid_len);
	q += bid_len;
	q += wire_put_varint(q, path_len);
	memcpy(q, path, path_len);
	q += path_len;
	trk_ev_end(t, q);
	trk_thr_exit(t);
}

static void send_del(struct trk_thr *t, uintptr_t base)
{
	uint8_t *q;

	q = trk_ev_put(t, 2 + 2 * WIRE_VARINT_MAX, WIRE_EV_MODULE_DEL, trk_thr_enter_seq(t));
	q += wire_put_varint(q, base);
	trk_ev_end(t, q);
	trk_thr_exit(t);
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	struct trk_mod *m;
	uintptr_t lo, hi;
	unsigned i;

	if (!s->locked) {
		unsigned long long adds = 0, subs = 0;

		pthread_mutex_lock(&trk_g.mod_lock);
		s->locked = true;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
			adds = info->dlpi_adds;
			subs = info->dlpi_subs;
		}
		if (s->check_only && adds == trk_g.dl_adds && subs == trk_g.dl_subs && trk_g.nmods)
			return 1;
		trk_g.dl_adds = adds;
		trk_g.dl_subs = subs;
		s->scanning = true;
		for (i = 0; i < trk_g.nmods; i++)
			trk_g.mods[i].seen = 0;
	}
	for (i = 0; i < trk_g.nmods; i++) {
		m = &trk_g.mods[i];
		if (m->base == info->dlpi_addr && m->phdr == info->dlpi_phdr) {
			m->seen = 1;
			return 0;
		}
	}
	if (trk_g.nmods >= TRK_MODS_MAX)
		return 0;
	mod_range(info, &lo, &hi);
	m = &trk_g.mods[trk_g.nmods++];
	m->base = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->lo = lo;
	m->hi = hi;
	m->seen = 1;
	send_module(s->t, info, trk_g.nmods == 1, lo, hi);
	return 0;
}

/* publish - a new sorted range snapshot for trk_mod_known; mod_lock held. */
static void publish(void)
{
	size_t n = trk_g.nmods, i, j;
	size_t size = sizeof(struct trk_range_set) + n * sizeof(((struct trk_range_set *)0)->r[0]);
	const struct trk_range_set *old;
	struct trk_range_set *rs;

	rs = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rs == MAP_FAILED)
		return;
	for (i = 0; i < n; i++) {
		/* insertion sort: a few hundred modules at most, on a rare path */
		uintptr_t lo = trk_g.mods[i].lo, hi = trk_g.mods[i].hi;

		for (j = i; j > 0 && rs->r[j - 1].lo > lo; j--)
			rs->r[j] = rs->r[j - 1];
		rs->r[j].lo = lo;
		rs->r[j].hi = hi;
	}
	rs->n = n;
	old = atomic_load_explicit(&trk_g.ranges, memory_order_relaxed);
	if (old && old->n == n && !memcmp(old->r, rs->r, n * sizeof(rs->r[0]))) {
		/* same modules (a new session re-reads them): keep the old
		 * table, so repeated attach sessions leak nothing */
		munmap(rs, size);
		return;
	}
	atomic_store_explicit(&trk_g.ranges, rs, memory_order_release);
}

static void scan(struct trk_thr *t, bool check_only)
{
	struct scan s = { .t = t, .check_only = check_only };
	unsigned i, k;

	dl_iterate_phdr(scan_cb, &s);
	if (!s.locked)
		return;
	if (s.scanning) {
		for (i = k = 0; i < trk_g.nmods; i++) {
			if (!trk_g.mods[i].seen) {
				/* cached unwind rules may point into it: drop them */
				atomic_fetch_add(&trk_g.code_gen, 1);
				send_del(t, trk_g.mods[i].base);
				continue;
			}
			trk_g.mods[k++] = trk_g.mods[i];
		}
		trk_g.nmods = k;
		publish();
	}
	pthread_mutex_unlock(&trk_g.mod_lock);
}

void trk_mod_scan(struct trk_thr *t, bool force)
{
	scan(t, !force);
}

void trk_mod_check(struct trk_thr *t)
{
	scan(t, true);
}

bool trk_mod_loaded(uintptr_t ip)
{
	struct dl_find_object fo;

	return _dl_find_object((void *)ip, &fo) == 0;
}

bool trk_mod_known(uintptr_t ip)
{
	const struct trk_range_set *rs = atomic_load_explicit(&trk_g.ranges, memory_order_acquire);
	size_t lo = 0, hi;

	if (!rs)
		return false;
	hi = rs->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ip < rs->r[mid].lo)
			hi = mid;
		else if (ip >= rs->r[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}
