/* tests/inject/target.c - a program that loads libheaptap_inject.so itself, as attach would */
/* SPDX-License-Identifier: MIT */
/*
 * Usage: inject_target SOCKET INJECT_LIB LATE_LIB [exit]
 *
 * Stands in for `heaptap attach` until the attacher drives the library:
 * it allocates (so some frees later are of memory from before the attach),
 * notes its GOT slots for malloc/free/calloc/realloc/valloc in every module
 * (elf/) and the protection of their pages, then dlopens the inject library
 * and calls its start function like a remote call would. It waits until
 * its slots were rewritten, allocates a known pattern (tests/inject/injt.h)
 * from its own code, from a -fno-plt full-RELRO library and from a library
 * it dlopens afterwards (twice: dlclose'd and loaded again), frees the early blocks, forks a child
 * that checks its slots were put back, prints READY and waits for a line on stdin (the driver sends
 * it once heaptap's stop made the session end). Then every slot and page protection must be what it
 * was before the start. Two threads call malloc/free through the main program's and the RELRO
 * library's slots all the time, while slots are rewritten and put back.
 *
 * With "exit" it returns from main right after the known pattern, while
 * the session runs: the library's destructor must end it (WIRE_END_EXIT).
 *
 * Prints "key value" lines on stdout (READY last before the wait, OK at
 * the end); each failed check prints "FAIL what" and makes the exit 1.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "elf/elfr.h"
#include "tests/inject/injt.h"
#include "util/clock.h"

#define MAX_SLOTS 256
#define NNAMES 5

static const char *const names[NNAMES] = {"malloc", "free", "calloc", "realloc", "valloc"};

struct snap_slot {
	uintptr_t addr, value;
	unsigned want;
	uintptr_t mod_lo, mod_hi; /* the module's PT_LOAD span */
	char module[128];
	char page_map[64]; /* "start-end perms" of the mapping holding the slot */
};

struct snap {
	size_t n;
	struct snap_slot s[MAX_SLOTS];
};

static struct snap before, after;
static int failures;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		printf("FAIL " __VA_ARGS__);                                                       \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
		failures++;                                                                        \
	} while (0)

/* page_map - the /proc/self/maps line part "start-end perms" covering addr. */
static void page_map(uintptr_t addr, char *out, size_t cap)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	snprintf(out, cap, "unmapped");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uintptr_t a, b;
		char perms[8];

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &a, &b, perms) != 3)
			continue;
		if (addr >= a && addr < b) {
			snprintf(out, cap, "%" PRIxPTR "-%" PRIxPTR " %s", a, b, perms);
			break;
		}
	}
	fclose(f);
}

static int snap_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		   const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	struct snap *sn = arg;

	(void)why;
	(void)info;
	if (m->name && strstr(m->name, "libheaptap_inject"))
		return 0;
	for (size_t i = 0; i < nslots && sn->n < MAX_SLOTS; i++) {
		struct snap_slot *s = &sn->s[sn->n++];

		s->addr = slots[i].addr;
		s->value = *(volatile uintptr_t *)slots[i].addr;
		s->want = slots[i].want;
		s->mod_lo = m->nload ? m->load[0].start : 0;
		s->mod_hi = m->nload ? m->load[m->nload - 1].end : 0;
		snprintf(s->module, sizeof(s->module), "%s",
			 m->name && *m->name ? m->name : "(main)");
	}
	return 0;
}

/* take - every slot's value now; page maps are read afterwards (fopen allocates). */
static void take(struct snap *sn)
{
	static struct elfr_slot buf[MAX_SLOTS];

	sn->n = 0;
	elfr_walk_self(names, NNAMES, buf, MAX_SLOTS, snap_cb, sn);
	for (size_t i = 0; i < sn->n; i++)
		page_map(sn->s[i].addr, sn->s[i].page_map, sizeof(sn->s[i].page_map));
}

/* slot_value - current value of the first slot of name want in the module whose path contains mod.
 */
struct find {
	const char *mod;
	unsigned want;
	uintptr_t value;
	int found;
};

static int find_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
		   const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	struct find *f = arg;
	const char *name = m->name && *m->name ? m->name : "(main)";

	(void)why;
	(void)info;
	if (!strstr(name, f->mod))
		return 0;
	for (size_t i = 0; i < nslots; i++) {
		if (slots[i].want == f->want) {
			f->value = *(volatile uintptr_t *)slots[i].addr;
			f->found = 1;
			return 1;
		}
	}
	return 0;
}

static int slot_value(const char *mod, unsigned want, uintptr_t *value)
{
	static struct elfr_slot buf[MAX_SLOTS];
	struct find f = {.mod = mod, .want = want};

	elfr_walk_self(names, NNAMES, buf, MAX_SLOTS, find_cb, &f);
	*value = f.value;
	return f.found;
}

/* wait_change - wait (at most 5 s) until the slot no longer holds old; ns waited or 0 on timeout.
 */
static uint64_t wait_change(const char *mod, unsigned want, uintptr_t old)
{
	uint64_t t0 = util_mono_ns();
	uintptr_t v;

	while (util_mono_ns() - t0 < 5000000000ull) {
		if (slot_value(mod, want, &v) && v != old)
			return util_mono_ns() - t0 ? util_mono_ns() - t0 : 1;
		usleep(200);
	}
	return 0;
}

static uintptr_t before_value(const char *mod, unsigned want)
{
	for (size_t i = 0; i < before.n; i++)
		if (before.s[i].want == want && strstr(before.s[i].module, mod))
			return before.s[i].value;
	return 0;
}

static _Atomic int churn_stop;
static _Atomic unsigned long churn_rounds;

static void *churn(void *arg)
{
	(void)arg;
	while (!churn_stop) {
		void *p = malloc(INJT_CHURN_SZ);

		if (!p)
			abort();
		free(p);
		injt_relro_churn();
		/*
		 * A short sleep now and then: the point is calls through the slots
		 * while they are rewritten, not two CPUs spinning (on a busy
		 * machine that starved the rest of the test for seconds).
		 */
		if (++churn_rounds % 64 == 0) {
			struct timespec ts = {0, 50000};

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

__attribute__((noinline)) static void own_allocs(void)
{
	static void *keep[INJT_OWN_N + 1];

	for (int i = 0; i < INJT_OWN_N; i++)
		keep[i] = malloc(INJT_OWN_SZ);
	free(keep[INJT_OWN_N - 1]);
	keep[INJT_OWN_N - 1] = NULL;
	keep[INJT_OWN_N] = valloc(INJT_OWN_VSZ);
	__asm__ volatile("" ::: "memory");
}

/*
 * same_value - the slot holds what it held before, or it held its module's
 * PLT stub (lazily bound, not called yet) and was bound since to the real
 * function: the program called it after the restore, as it may.
 */
static int same_value(const struct snap_slot *x, uintptr_t now)
{
	if (now == x->value)
		return 1;
	return x->value >= x->mod_lo && x->value < x->mod_hi &&
	       now == (uintptr_t)dlsym(RTLD_DEFAULT, names[x->want]);
}

/* compare - every slot noted before the start holds its old value, in the same mapping. */
static void compare(const struct snap *a, const struct snap *b, const char *when)
{
	size_t matched = 0;

	for (size_t i = 0; i < a->n; i++) {
		const struct snap_slot *x = &a->s[i];
		const struct snap_slot *y = NULL;

		for (size_t k = 0; k < b->n; k++)
			if (b->s[k].addr == x->addr)
				y = &b->s[k];
		if (!y) {
			FAIL("%s: slot %s@%" PRIxPTR " of %s gone", when, names[x->want], x->addr,
			     x->module);
			continue;
		}
		if (!same_value(x, y->value))
			FAIL("%s: slot %s@%" PRIxPTR " of %s holds %" PRIxPTR ", was %" PRIxPTR,
			     when, names[x->want], x->addr, x->module, y->value, x->value);
		else if (strcmp(x->page_map, y->page_map))
			FAIL("%s: mapping of slot %s@%" PRIxPTR " of %s is '%s', was '%s'", when,
			     names[x->want], x->addr, x->module, y->page_map, x->page_map);
		else
			matched++;
	}
	printf("%s_SLOTS_SAME %zu of %zu\n", when, matched, a->n);
}

typedef int (*start_fn)(const char *);
typedef int (*stop_fn)(void);

/* load_inject - dlopen the inject library, check its exports and its refusals; NULL: fatal */
static void *load_inject(const char *path, start_fn *start, stop_fn *stop)
{
	char longp[200];
	void *inj = dlopen(path, RTLD_NOW);

	if (!inj) {
		FAIL("dlopen %s: %s", path, dlerror());
		return NULL;
	}
	*start = (start_fn)dlsym(inj, "heaptap_inject_start");
	*stop = (stop_fn)dlsym(inj, "heaptap_inject_stop");
	if (!*start || !*stop || dlsym(inj, "trk_malloc") || dlsym(inj, "inj_patch_pass")) {
		FAIL("exports of the inject library are not exactly start and stop");
		return NULL;
	}
	if ((*start)(NULL) != -EINVAL || (*start)("") != -EINVAL)
		FAIL("start accepted a NULL or empty path");
	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	if ((*start)(longp) != -ENAMETOOLONG)
		FAIL("start accepted a path longer than sun_path");
	if ((*stop)() != -ENOENT)
		FAIL("stop without a session did not say ENOENT");
	return inj;
}

/* start_session - start on sock, timed; then main's, libc's and the RELRO library's slots patched */
static void start_session(start_fn start, const char *sock)
{
	uint64_t t0, t1, waited;
	struct timespec c0, c1;
	uintptr_t v;
	int rc;

	errno = 1234;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	t0 = util_mono_ns();
	rc = start(sock);
	t1 = util_mono_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	/* wall time may include waiting for a CPU on a busy machine; CPU time is the call's own */
	printf("START_NS %" PRIu64 "\n", t1 - t0);
	printf("START_CPU_NS %lld\n",
	       (long long)(c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec));
	if (rc != 0)
		FAIL("start returned %d", rc);
	if (errno != 1234)
		FAIL("start changed errno");
	if (start(sock) != -EBUSY)
		FAIL("a second start during the session was not refused with EBUSY");

	waited = wait_change("(main)", 0, before_value("(main)", 0));
	printf("PATCH_MAIN_NS %" PRIu64 "\n", waited);
	if (!waited)
		FAIL("main's malloc slot was not patched within 5 s");
	waited = wait_change("libc.so", 0, before_value("libc.so", 0));
	printf("PATCH_LIBC_NS %" PRIu64 "\n", waited);
	if (!waited)
		FAIL("libc's malloc slot was not patched within 5 s");
	if (!slot_value("injt_relro", 0, &v) || v == before_value("injt_relro", 0))
		FAIL("the -fno-plt RELRO library's malloc slot was not patched");
}

/*
 * late_library - dlopen the late library during the session, its slot
 * patched, allocate from it; unloaded and loaded again, most likely at the
 * same address: the new copy's slots hold malloc again and must be patched
 * anew. Returns the second handle; NULL: fatal.
 */
static void *late_library(const char *path, uintptr_t real_malloc)
{
	void (*late_alloc)(void);
	uint64_t waited;
	void *late = dlopen(path, RTLD_NOW);

	if (!late) {
		FAIL("dlopen %s: %s", path, dlerror());
		return NULL;
	}
	late_alloc = (void (*)(void))dlsym(late, "injt_late_alloc");
	waited = wait_change("injt_late", 0, real_malloc);
	printf("PATCH_LATE_NS %" PRIu64 "\n", waited);
	if (!waited)
		FAIL("the late library's malloc slot was not patched within 5 s");
	if (late_alloc)
		late_alloc();
	else
		FAIL("injt_late_alloc not found");
	dlclose(late);
	late = dlopen(path, RTLD_NOW);
	if (!late) {
		FAIL("dlopen %s again: %s", path, dlerror());
		return NULL;
	}
	late_alloc = (void (*)(void))dlsym(late, "injt_late_alloc");
	waited = wait_change("injt_late", 0, real_malloc);
	printf("PATCH_RELOAD_NS %" PRIu64 "\n", waited);
	if (!waited)
		FAIL("the reloaded late library's malloc slot was not patched within 5 s");
	if (late_alloc)
		late_alloc();
	return late;
}

/* fork_child - a forked child stops tracking: its slots are the ones from before the start */
static void fork_child(uintptr_t real_malloc)
{
	uintptr_t v;
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct snap *c = &after;
		int bad = 0;

		take(c);
		for (size_t i = 0; i < before.n; i++) {
			for (size_t k = 0; k < c->n; k++) {
				if (c->s[k].addr != before.s[i].addr ||
				    same_value(&before.s[i], c->s[k].value))
					continue;
				FAIL("child: slot %s@%" PRIxPTR " of %s holds %" PRIxPTR
				     ", was %" PRIxPTR,
				     names[before.s[i].want], before.s[i].addr, before.s[i].module,
				     c->s[k].value, before.s[i].value);
				bad++;
			}
		}
		if (!slot_value("injt_late", 0, &v) || v != real_malloc) {
			FAIL("child: the late library's malloc slot holds %" PRIxPTR, v);
			bad++;
		}
		free(malloc(100));
		_exit(bad ? 3 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		FAIL("forked child: slots not restored (status %d)", pid < 0 ? -1 : status);
	else
		printf("FORK_CHILD_OK\n");
}

/* after_session - the session ended: every slot and page as before the start, also after a restart */
static void after_session(start_fn start, stop_fn stop, uintptr_t real_malloc)
{
	uintptr_t v;
	int rc;

	take(&after);
	compare(&before, &after, "AFTER");
	if (!slot_value("injt_late", 0, &v) || v != real_malloc)
		FAIL("the late library's malloc slot does not hold malloc again");
	if (stop() != -ENOENT)
		FAIL("stop after the session did not say ENOENT");
	/*
	 * The library takes a new start call once its thread is gone (a moment
	 * after the session ended). Nobody listens at this path: the thread
	 * gives up and nothing changes.
	 */
	for (int i = 0; i < 1000 && (rc = start("/nonexistent-heaptap/sock")) == -EBUSY; i++)
		usleep(1000);
	if (rc != 0)
		FAIL("start after the session returned %d", rc);
	usleep(50000);
	take(&after);
	compare(&before, &after, "RESTART");
}

int main(int argc, char **argv)
{
	start_fn start;
	stop_fn stop;
	void *pre[INJT_PRE_N], *late;
	uintptr_t real_malloc;
	pthread_t churners[2];
	char line[64];

	if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "exit"))) {
		fprintf(stderr, "usage: inject_target SOCKET INJECT_LIB LATE_LIB [exit]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&churners[i], NULL, churn, NULL))
			FAIL("pthread_create");
	/* life before the attach: these blocks are freed after it */
	for (int i = 0; i < INJT_PRE_N; i++)
		pre[i] = malloc(INJT_PRE_SZ);
	free(realloc(calloc(1, 8), 16));
	injt_relro_warm();
	take(&before);
	printf("SLOTS_BEFORE %zu\n", before.n);
	if (!before_value("(main)", 0) || !before_value("injt_relro", 0) ||
	    !before_value("libc.so", 0))
		FAIL("malloc slots of main, libinjt_relro or libc not found");

	if (!load_inject(argv[2], &start, &stop))
		return 1;
	start_session(start, argv[1]);
	own_allocs();
	injt_relro_alloc();
	real_malloc = (uintptr_t)dlsym(RTLD_DEFAULT, "malloc");
	late = late_library(argv[3], real_malloc);
	if (!late)
		return 1;
	for (int i = 0; i < INJT_PRE_N; i++)
		free(pre[i]);
	if (argc == 5) {
		/* the churn threads are still running when exit() starts */
		printf(failures ? "FAILED\n" : "OK\n");
		return failures ? 1 : 0; /* exit() with the session running */
	}

	fork_child(real_malloc);
	printf("READY\n");
	if (!fgets(line, sizeof(line), stdin))
		FAIL("no go-ahead on stdin");
	after_session(start, stop, real_malloc);
	/* the program goes on working, lazy binding included */
	free(valloc(100));
	free(malloc(10));
	dlclose(late);
	churn_stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(churners[i], NULL);
	printf("CHURN_ROUNDS %lu\n", (unsigned long)churn_rounds);
	printf(failures ? "FAILED\n" : "OK\n");
	return failures ? 1 : 0;
}
