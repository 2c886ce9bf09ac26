/* tests/session/svc_slots.c - the test service's GOT slots: the walk, the watcher, the forked child's report */
/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "elf/elfr.h"
#include "tests/session/service.h"
#include "util/clock.h"

/* The slots noted at start, for the forked child (no dl_iterate_phdr there). */
struct noted_slot {
	uintptr_t addr;
	uintptr_t lo, hi; /* its module's mapped range: a value inside is its PLT stub */
	int want;
};
static struct noted_slot noted[SLOT_CAP];
static size_t nnoted;

const char *const slot_names[4] = { "malloc", "free", "calloc", "realloc" };

uintptr_t real_fn[4];
static uintptr_t start_mods[SLOT_CAP]; /* load biases of the modules at start */
static size_t nstart_mods;

static int slot_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		   const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	struct slot_acc *a = arg;
	size_t i;

	(void)why;
	(void)info;
	/*
	 * Only the modules loaded at start: heaptap's library and what it
	 * pulled in (libunwind, ...) stay loaded after a session.
	 */
	if (!a->noting) {
		size_t k;

		for (k = 0; k < nstart_mods && start_mods[k] != m->bias; k++)
			;
		if (k == nstart_mods) {
			a->mod++;
			return 0;
		}
	}
	if (a->noting && nstart_mods < SLOT_CAP)
		start_mods[nstart_mods++] = m->bias;
	for (i = 0; i < nslots; i++) {
		uintptr_t v = *(volatile uintptr_t *)slots[i].addr;
		size_t k;

		/*
		 * A lazily bound slot not called yet points into its own
		 * module (the PLT stub); the loader may resolve it at any
		 * time (libc's own calloc slot is resolved by dlopen, for
		 * one). Both mean "the real function": hash them alike.
		 */
		for (k = 0; k < m->nload; k++)
			if (v >= m->load[k].start && v < m->load[k].end && v != real_fn[slots[i].want])
				v = real_fn[slots[i].want];

		if (a->noting && nnoted < SLOT_CAP) {
			struct noted_slot *ns = &noted[nnoted++];

			ns->addr = slots[i].addr;
			ns->want = (int)slots[i].want;
			ns->lo = m->nload ? m->load[0].start : 0;
			ns->hi = m->nload ? m->load[m->nload - 1].end : 0;
		}
		if (a->dump)
			fprintf(stderr, "slot %s %s %#lx %#lx\n", m->name && *m->name ? m->name : "(main)",
				slot_names[slots[i].want], (unsigned long)slots[i].addr, (unsigned long)v);
		a->hash = (a->hash ^ slots[i].addr) * 1099511628211ull;
		a->hash = (a->hash ^ v) * 1099511628211ull;
		a->n++;
		if (a->mod == 0 && slots[i].want == 0 && !a->main_malloc)
			a->main_malloc = (volatile uintptr_t *)slots[i].addr;
		if (m->name && strstr(m->name, "libsvc_relro") && slots[i].want == 0 && !a->relro_malloc)
			a->relro_malloc = (volatile uintptr_t *)slots[i].addr;
	}
	a->mod++;
	return 0;
}

void slots_now(struct slot_acc *a, int noting, int dump)
{
	static struct elfr_slot buf[SLOT_CAP];

	memset(a, 0, sizeof(*a));
	a->dump = dump;
	a->noting = noting;
	a->hash = 14695981039346656037ull;
	(void)elfr_walk_self(slot_names, 4, buf, SLOT_CAP, slot_cb, a);
}

_Atomic int main_changed, relro_changed;

void *watcher(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	uint64_t last = util_mono_ns(), t_main = 0;
	int was_patched = 0;

	(void)arg;
	for (;;) {
		int pm = *malloc_slot != malloc_slot_value;
		int pr = *relro_slot != relro_slot_value;
		uint64_t t = util_mono_ns();

		atomic_store(&main_changed, pm);
		atomic_store(&relro_changed, pr);
		/* t_main: when the main program's slot took the state awaited */
		if (pm == was_patched)
			t_main = 0;
		else if (!t_main)
			t_main = t;
		if (!was_patched && pm && pr) {
			atomic_store(&patched_ns, t_main);
			was_patched = 1;
			t_main = 0;
		} else if (was_patched && !pm && !pr) {
			atomic_store(&restored_ns, t_main);
			was_patched = 0;
			t_main = 0;
		}
		if (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == EINTR)
			atomic_fetch_add(&eintr, 1);
		turn(G_WATCHER, &last);
	}
	return NULL;
}

/* In the forked child: what it finds in itself, as one line on fd. */
void child_report(int fd)
{
	uint64_t hash = 14695981039346656037ull;
	char buf[512], path[300], link[64];
	int tasks = 0, named = 0, socks = 0, i;
	struct dirent *e;
	size_t k;
	DIR *d;

	for (k = 0; k < nnoted; k++) {
		uintptr_t v = *(volatile uintptr_t *)noted[k].addr;

		if (v >= noted[k].lo && v < noted[k].hi && v != real_fn[noted[k].want])
			v = real_fn[noted[k].want];
		hash = (hash ^ noted[k].addr) * 1099511628211ull;
		hash = (hash ^ v) * 1099511628211ull;
	}
	d = opendir("/proc/self/task");
	while (d && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		tasks++;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f) {
			if (fgets(buf, sizeof(buf), f) && !strncmp(buf, "heaptap-inject", 14))
				named++;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			socks += !strncmp(link, "socket:", 7);
		}
	}
	if (d)
		closedir(d);
	for (i = 0; i < 5; i++)
		(void)child_alloc();
	snprintf(buf, sizeof(buf), "slots n=%zu hash=%016" PRIx64 " malloc=%s tasks=%d heaptap=%d sockets=%d",
		 nnoted, hash, *malloc_slot == malloc_slot_value ? "same" : "changed", tasks, named, socks);
	if (write(fd, buf, strlen(buf)) < 0)
		_exit(2);
}
