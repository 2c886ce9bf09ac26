/* tests/unit/check_inject.c - Check suite of inject/ (unit.inject) */
/* SPDX-License-Identifier: MIT */
/*
 * Internals (every build, ASan/UBSan included): the /proc/self/maps
 * snapshot, the word rewrite around a read-only page, the start function's
 * argument checks and its rollback when the socket cannot be reached.
 *
 * A whole session (INJECT_E2E, plain builds): this driver listens on a unix
 * socket, runs tests/inject/inject_target (which loads the library and
 * calls its start function like attach's remote call), interprets the
 * stream with itp_run into a recording, stops the session when the target
 * says READY, and checks the recording and the target's own verdict on its
 * GOT slots and page protections after the stop.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "inject/internal.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"
#include "tests/inject/injt.h"
#include "track/wire.h"
#include "util/clock.h"

/* ---- internals --------------------------------------------------------- */

START_TEST(test_maps_prot)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)page * 3, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(mprotect(p + page, (size_t)page, PROT_READ), 0);
	inj_g.page = page;
	ck_assert_int_eq(inj_maps_read(), 0);
	ck_assert_uint_gt(inj_g.nranges, 3);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)p), PROT_READ | PROT_WRITE);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)p + (uintptr_t)page + 100), PROT_READ);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)p + 2 * (uintptr_t)page), PROT_READ | PROT_WRITE);
	ck_assert_int_eq((inj_maps_prot((uintptr_t)inj_maps_read) & PROT_EXEC), PROT_EXEC);
	ck_assert_int_eq(inj_maps_prot(0), -1);
	/* sorted and non-overlapping, as the binary search assumes */
	for (size_t i = 1; i < inj_g.nranges; i++)
		ck_assert_uint_le(inj_g.ranges[i - 1].end, inj_g.ranges[i].start);
	ck_assert_int_eq(munmap(p + 2 * page, (size_t)page), 0);
	ck_assert_int_eq(inj_maps_read(), 0);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)p + (uintptr_t)page), PROT_READ);
	munmap(p, (size_t)page * 2);
}
END_TEST

START_TEST(test_poke_readonly)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t *w =
	    mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(w, MAP_FAILED);
	inj_g.page = page;
	w[3] = 0x1111;
	ck_assert_int_eq(mprotect(w, (size_t)page, PROT_READ), 0);
	ck_assert_int_eq(inj_maps_read(), 0);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)&w[3]), PROT_READ);
	/* written although read-only, and read-only again afterwards */
	ck_assert_int_eq(inj_poke((uintptr_t)&w[3], 0x1111, 0x2222, PROT_READ), 0);
	ck_assert_uint_eq(w[3], 0x2222);
	ck_assert_int_eq(inj_maps_read(), 0);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)&w[3]), PROT_READ);
	/* a word that no longer holds the expected value is left alone */
	ck_assert_int_eq(inj_poke((uintptr_t)&w[3], 0x1111, 0x3333, PROT_READ), -EAGAIN);
	ck_assert_uint_eq(w[3], 0x2222);
	ck_assert_int_eq(inj_poke((uintptr_t)&w[3] + 1, 0x2222, 0x3333, PROT_READ), -EINVAL);
	ck_assert_int_eq(inj_maps_read(), 0);
	ck_assert_int_eq(inj_maps_prot((uintptr_t)&w[3]), PROT_READ);
	munmap(w, (size_t)page);
}
END_TEST

START_TEST(test_start_arguments)
{
	char longp[200];
	int e;

	memset(longp, 'x', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	ck_assert_int_eq(heaptap_inject_start(NULL), -EINVAL);
	ck_assert_int_eq(heaptap_inject_start(""), -EINVAL);
	ck_assert_int_eq(heaptap_inject_start(longp), -ENAMETOOLONG);
	ck_assert_int_eq(heaptap_inject_stop(), -ENOENT);

	/* nobody listens: the thread gives up, nothing was patched, a new start is allowed */
	errno = 4321;
	ck_assert_int_eq(heaptap_inject_start("/nonexistent-heaptap-dir/sock"), 0);
	e = errno;
	ck_assert_int_eq(e, 4321);
	for (int i = 0; i < 2000 && atomic_load(&inj_g.run) != INJ_IDLE; i++)
		usleep(1000);
	ck_assert_int_eq(atomic_load(&inj_g.run), INJ_IDLE);
	ck_assert_uint_eq(inj_g.nslots, 0);
	ck_assert_uint_eq(inj_g.st.patched, 0);
}
END_TEST

/*
 * libc_malloc_slot - value of libc's malloc slot (GLOB_DAT, on a RELRO page),
 * 0 if none. Not the main program's: with inject/ linked statically into
 * this test, the main program is "the library itself" and left alone.
 */
static int libc_slot_cb(void *arg, const struct elfr_mod *m, enum elfr_reason why,
			const struct elfr_info *info, const struct elfr_slot *slots, size_t nslots)
{
	uintptr_t *v = arg;

	(void)why;
	(void)info;
	if (!m->name || !strstr(m->name, "/libc.so"))
		return 0;
	for (size_t i = 0; i < nslots; i++) {
		if (slots[i].want == 0) {
			*v = *(volatile uintptr_t *)slots[i].addr;
			return 1;
		}
	}
	return 1;
}

static uintptr_t libc_malloc_slot(void)
{
	static struct elfr_slot buf[64];
	const char *const names[] = {"malloc"};
	uintptr_t v = 0;

	elfr_walk_self(names, 1, buf, 64, libc_slot_cb, &v);
	return v;
}

/*
 * A pass over this very process without a session: the hooks pass
 * through, so the test goes on allocating through them. Patched words hold
 * the hooks, a second pass leaves them alone, and before_end puts every
 * one back.
 */
START_TEST(test_pass_in_process)
{
	uintptr_t before = libc_malloc_slot();
	uint64_t restored = 0, left = 0, t0, t1, patched;
	void *p;

	ck_assert_uint_ne(before, 0);
	inj_g.page = sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(inj_real_find(), 0);
	ck_assert_uint_eq(inj_g.realv[0], (uintptr_t)dlsym(RTLD_DEFAULT, "malloc"));
	trk_set_real(&inj_g.real);
	pthread_mutex_lock(&inj_g.lock);
	inj_g.closing = 0;
	t0 = util_mono_ns();
	ck_assert_int_eq(inj_patch_pass(), 0);
	t1 = util_mono_ns();
	pthread_mutex_unlock(&inj_g.lock);
	fprintf(stderr, "first pass over %zu modules: %llu us, %zu words patched\n", inj_g.nmods,
		(unsigned long long)(t1 - t0) / 1000, inj_g.nslots);
	patched = inj_g.st.patched;
	ck_assert_uint_ge(patched, 2); /* at least libc's malloc and free */
	ck_assert_uint_eq(inj_g.nslots, patched);
	ck_assert_uint_eq(libc_malloc_slot(), (uintptr_t)trk_malloc);
	for (size_t i = 0; i < inj_g.nslots; i++)
		ck_assert_uint_eq(*(volatile uintptr_t *)inj_g.slots[i].addr,
				  inj_g.hookv[inj_g.slots[i].want]);
	p = malloc(100); /* through trk_malloc, passing through */
	ck_assert_ptr_nonnull(p);
	free(p);

	/* idempotent: every module looked at again, nothing rewritten twice */
	pthread_mutex_lock(&inj_g.lock);
	for (size_t i = 0; i < inj_g.nmods; i++)
		inj_g.mods[i].pending = inj_g.mods[i].skip ? 0 : 1;
	inj_g.st.already = 0;
	ck_assert_int_eq(inj_patch_pass(), 0);
	pthread_mutex_unlock(&inj_g.lock);
	ck_assert_uint_eq(inj_g.st.patched, patched);
	ck_assert_uint_eq(inj_g.st.already, patched);

	inj_before_end(NULL, &restored, &left);
	ck_assert_uint_eq(restored, patched);
	ck_assert_uint_eq(left, 0);
	ck_assert_uint_eq(libc_malloc_slot(), before);
	ck_assert_uint_eq(inj_g.nslots, 0);
}
END_TEST

/* A word someone else rewrote after us is not restored, and counted as left. */
START_TEST(test_restore_leaves_foreign)
{
	uint64_t restored = 0, left = 0;
	uintptr_t before = libc_malloc_slot(), addr = 0, saved;
	size_t i;

	inj_g.page = sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(inj_real_find(), 0);
	trk_set_real(&inj_g.real);
	pthread_mutex_lock(&inj_g.lock);
	inj_g.closing = 0;
	ck_assert_int_eq(inj_patch_pass(), 0);
	pthread_mutex_unlock(&inj_g.lock);
	for (i = 0; i < inj_g.nslots; i++) {
		if (inj_g.slots[i].want == 0 && inj_g.slots[i].saved == before) {
			addr = inj_g.slots[i].addr;
			break;
		}
	}
	ck_assert_uint_ne(addr, 0);
	saved = inj_g.slots[i].saved;
	/* "someone else" puts the real malloc back */
	ck_assert_int_eq(inj_maps_read(), 0);
	ck_assert_int_eq(inj_poke(addr, (uintptr_t)trk_malloc, saved, inj_maps_prot(addr)), 0);
	inj_before_end(NULL, &restored, &left);
	ck_assert_uint_eq(left, 1);
	ck_assert_uint_ge(restored, 1);
	ck_assert_uint_eq(libc_malloc_slot(), before);
}
END_TEST

/* libc_relro_cb - libc's PT_GNU_RELRO, page-rounded down at both ends (as glibc protects it) */
static int libc_relro_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *r = arg, page = (uintptr_t)sysconf(_SC_PAGESIZE);

	(void)size;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libc.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_RELRO) {
			r[0] = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
			r[1] = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
		}
	}
	return 1;
}

/*
 * A module that is not ready (here libc, its RELRO made writable again, as
 * a module the loader has not protected yet) holds back nobody else: the
 * other modules (libdw, libelf, ... which import malloc) are patched in
 * the same pass, libc is counted as deferred with its reason (inj_g.defer:
 * what WIRE_REC_START sends), and the next pass after it became ready
 * patches it. (The test program itself is "this library" here: skipped.)
 */
START_TEST(test_pending_module_alone)
{
	uintptr_t relro[2] = {0, 0}, before = libc_malloc_slot();
	uint64_t restored = 0, left = 0, patched1;

	dl_iterate_phdr(libc_relro_cb, relro);
	ck_assert_msg(relro[1] > relro[0], "libc has no RELRO page");
	inj_g.page = sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(inj_real_find(), 0);
	trk_set_real(&inj_g.real);
	ck_assert_int_eq(mprotect((void *)relro[0], relro[1] - relro[0], PROT_READ | PROT_WRITE), 0);
	pthread_mutex_lock(&inj_g.lock);
	inj_g.closing = 0;
	ck_assert_int_eq(inj_patch_pass(), 0);
	pthread_mutex_unlock(&inj_g.lock);
	/* the others went ahead; libc waits, for its RELRO */
	ck_assert_uint_eq(libc_malloc_slot(), before);
	ck_assert_uint_eq(inj_g.defer.modules, 1);
	ck_assert_uint_eq(inj_g.defer.relro, 1);
	ck_assert_uint_eq(inj_g.defer.unmapped + inj_g.defer.unreloc, 0);
	ck_assert_ptr_nonnull(strstr(inj_g.defer.first, "/libc.so"));
	ck_assert(inj_g.any_pending);
	patched1 = inj_g.st.patched;
	ck_assert_uint_ge(patched1, 1);
	ck_assert_int_eq(mprotect((void *)relro[0], relro[1] - relro[0], PROT_READ), 0);
	pthread_mutex_lock(&inj_g.lock);
	ck_assert_int_eq(inj_patch_pass(), 0);
	pthread_mutex_unlock(&inj_g.lock);
	ck_assert_uint_eq(inj_g.defer.modules, 0);
	ck_assert(!inj_g.any_pending);
	ck_assert_uint_gt(inj_g.st.patched, patched1); /* libc's words now */
	ck_assert_uint_eq(libc_malloc_slot(), (uintptr_t)trk_malloc);
	inj_before_end(NULL, &restored, &left);
	ck_assert_uint_eq(restored, inj_g.st.patched);
	ck_assert_uint_eq(left, 0);
	ck_assert_uint_eq(libc_malloc_slot(), before);
}
END_TEST

#ifdef INJECT_E2E
/* ---- a whole session against tests/inject/inject_target ----------------- */

struct watch {
	int fd; /* target's stdout */
	volatile sig_atomic_t *stop;
	char log[16384];
	size_t len;
};

/* Collect the target's output; READY asks for the stop. */
static void *watch_main(void *arg)
{
	struct watch *w = arg;
	size_t scanned = 0;

	for (;;) {
		ssize_t n;

		if (w->len + 1 >= sizeof(w->log))
			break;
		n = read(w->fd, w->log + w->len, sizeof(w->log) - 1 - w->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		w->len += (size_t)n;
		w->log[w->len] = '\0';
		if (w->stop && strstr(w->log + (scanned > 8 ? scanned - 8 : 0), "READY\n"))
			*w->stop = 1;
		scanned = w->len;
	}
	if (w->stop)
		*w->stop = 1; /* target gone: end the session in any case */
	return NULL;
}

static unsigned long long log_value(const char *log, const char *key)
{
	const char *p = strstr(log, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

struct group {
	uint64_t size;
	uint32_t kind;
	const char *fn;
	uint64_t allocs, frees;
	const char *fn_seen;
};

static const char *innermost_function(const struct rec_reader *r, uint32_t trace)
{
	size_t nt, ni, nf;
	const struct rec_trace *t = rec_traces(r, &nt);
	const struct rec_ip *ip = rec_ips(r, &ni);
	const struct rec_frame *f = rec_frames(r, &nf);

	if (trace == 0 || trace >= nt || t[trace].ip >= ni)
		return "";
	if (ip[t[trace].ip].frame >= nf)
		return "";
	return rec_string(r, f[ip[t[trace].ip].frame].function);
}

static void count_groups(const struct rec_reader *r, struct group *g, size_t ng)
{
	size_t ninfo;
	const struct rec_allocinfo *ai = rec_allocinfos(r, &ninfo);

	for (size_t c = 0; c < rec_nevent_chunks(r); c++) {
		struct rec_event *ev = NULL;
		size_t n = 0;
		uint64_t first;

		ck_assert_int_eq(rec_event_chunk(r, c, &ev, &n, &first), 0);
		for (size_t i = 0; i < n; i++) {
			const struct rec_allocinfo *a = &ai[ev[i].info];

			for (size_t k = 0; k < ng; k++) {
				if (a->size != g[k].size || a->kind != g[k].kind)
					continue;
				if (ev[i].op == REC_EV_ALLOC)
					g[k].allocs++;
				else
					g[k].frees++;
				g[k].fn_seen = innermost_function(r, a->trace);
			}
		}
		free(ev);
	}
}

static char *build_path(const char *rel)
{
	const char *b = getenv("HEAPTAP_BUILD_DIR");
	char *p;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_ge(asprintf(&p, "%s/%s", b, rel), 0);
	return p;
}

/*
 * run_session - run the target (mode NULL: stop from heaptap when it says
 * READY; "exit": it exits with the session running), interpret its stream
 * into dir/rec.heaptap. Returns the recording's path (caller frees) and
 * fills res, the target's output and exit status.
 */
static void run_session(const char *mode, char *dir, struct itp_result *res, struct watch *w,
			int *status, char *out, size_t outlen)
{
	char sock[128];
	char *target = build_path("tests/inject/inject_target");
	char *lib = build_path("lib/libheaptap_inject.so");
	char *late = build_path("tests/inject/libinjt_late.so");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	static volatile sig_atomic_t stop;
	struct itp_options opt = {0};
	struct pollfd pfd;
	pthread_t wt;
	int lfd, cfd, in[2], outp[2], rc;
	pid_t pid;

	stop = 0;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(out, outlen, "%s/rec.heaptap", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(outp, O_CLOEXEC), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		execl(target, target, sock, lib, late, mode, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	memset(w, 0, sizeof(*w));
	w->fd = outp[0];
	w->stop = mode ? NULL : &stop;
	ck_assert_int_eq(pthread_create(&wt, NULL, watch_main, w), 0);

	pfd.fd = lfd;
	pfd.events = POLLIN;
	ck_assert_msg(poll(&pfd, 1, 10000) == 1, "target did not connect; its output: %s", w->log);
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(cfd, 0);

	opt.output = out;
	opt.stop = &stop;
	opt.stop_timeout_ms = 10000;
	memset(res, 0, sizeof(*res));
	rc = itp_run(cfd, &opt, res);

	/* the session is over: let the target check its slots and finish */
	if (write(in[1], "go\n", 3) != 3 && !mode)
		ck_abort_msg("cannot write to the target");
	close(in[1]);
	ck_assert_int_eq(waitpid(pid, status, 0), pid);
	pthread_join(wt, NULL);
	fprintf(stderr, "inject_target %s said:\n%s", mode ? mode : "", w->log);
	ck_assert_msg(rc == 0, "itp_run: %s (%s)", itp_strerror(res->err), res->detail);
	unlink(sock);
	close(cfd);
	close(lfd);
	close(outp[0]);
	free(target);
	free(lib);
	free(late);
}

/* A session that ends by the target exiting: the destructor sends END (EXIT) after restoring. */
START_TEST(test_session_exit)
{
	char dir[] = "/tmp/heaptap-inject-XXXXXX", out[160];
	static struct watch w;
	struct itp_result res;
	int status;

	signal(SIGPIPE, SIG_IGN);
	run_session("exit", dir, &res, &w, &status, out, sizeof(out));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "target failed (status %d): %s", status, w.log);
	ck_assert(res.flags & WIRE_F_ATTACHED);
	ck_assert_int_eq(res.end_reason, WIRE_END_EXIT);
	ck_assert_uint_ge(res.slots_restored, 5);
	ck_assert_uint_eq(res.slots_left, 0);
	ck_assert_uint_ge(res.final.alloc_calls, INJT_OWN_N + INJT_RELRO_N + INJT_LATE_N);
	unlink(out);
	rmdir(dir);
}
END_TEST

START_TEST(test_session)
{
	char dir[] = "/tmp/heaptap-inject-XXXXXX", out[160];
	static struct watch w;
	struct itp_result res;
	struct rec_reader *r;
	int status, err;

	run_session(NULL, dir, &res, &w, &status, out, sizeof(out));
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "target failed (status %d): %s", status, w.log);
	ck_assert_ptr_nonnull(strstr(w.log, "FORK_CHILD_OK\n"));
	ck_assert_ptr_nonnull(strstr(w.log, "\nOK\n"));
	ck_assert_ptr_null(strstr(w.log, "FAIL"));
	fprintf(stderr,
		"start call held the caller %llu ns (%llu ns CPU); main patched after %llu ns, "
		"libc after %llu ns more, late library after %llu ns\n",
		log_value(w.log, "START_NS "), log_value(w.log, "START_CPU_NS "),
		log_value(w.log, "PATCH_MAIN_NS "), log_value(w.log, "PATCH_LIBC_NS "),
		log_value(w.log, "PATCH_LATE_NS "));

	/* what the stream said */
	ck_assert(res.flags & WIRE_F_ATTACHED);
	ck_assert_int_eq(res.end_reason, WIRE_END_STOP);
	ck_assert_uint_ge(res.slots_restored, 5); /* main, RELRO lib, libc, late lib at least */
	ck_assert_uint_eq(res.slots_left, 0);
	ck_assert_uint_ge(res.warn.unknown_frees, 10); /* the blocks from before the attach */
	ck_assert_uint_eq(res.events_dropped, 0);

	/* what the recording holds */
	r = rec_open(out, &err);
	ck_assert_msg(r != NULL, "rec_open: %s", rec_strerror(err));
	ck_assert_int_eq(rec_truncated(r), 0);
	ck_assert_str_eq(rec_meta(r, "attached"), "1");
	ck_assert_uint_ge(strtoull(rec_meta(r, "unknown_frees"), NULL, 10), 10);
	{
		struct group g[] = {
		    {INJT_OWN_SZ, WIRE_KIND_MALLOC, "own_allocs", 0, 0, NULL},
		    {INJT_OWN_VSZ, WIRE_KIND_VALLOC, "own_allocs", 0, 0, NULL},
		    {INJT_RELRO_SZ, WIRE_KIND_MALLOC, "injt_relro_alloc", 0, 0, NULL},
		    {INJT_RELRO_CN * INJT_RELRO_CSZ, WIRE_KIND_CALLOC, "injt_relro_alloc", 0, 0,
		     NULL},
		    {INJT_LATE_SZ, WIRE_KIND_MALLOC, "injt_late_alloc", 0, 0, NULL},
		    {INJT_LATE_RSZ, WIRE_KIND_REALLOC, "injt_late_alloc", 0, 0, NULL},
		    {INJT_PRE_SZ, WIRE_KIND_MALLOC, NULL, 0, 0, NULL},
		};
		/* calls and frees per group: leaked = calls - frees */
		/* the late library runs twice (loaded, unloaded, loaded again) */
		const uint64_t allocs[] = {INJT_OWN_N, 1, INJT_RELRO_N + 1, 1, 2 * INJT_LATE_N,
					   2,	       0};
		const uint64_t frees[] = {1, 0, 1, 0, 2, 0, 0};

		count_groups(r, g, sizeof(g) / sizeof(g[0]));
		for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
			ck_assert_msg(
			    g[k].allocs == allocs[k] && g[k].frees == frees[k],
			    "size %llu kind %u: %llu calls %llu frees, want %llu and %llu",
			    (unsigned long long)g[k].size, g[k].kind,
			    (unsigned long long)g[k].allocs, (unsigned long long)g[k].frees,
			    (unsigned long long)allocs[k], (unsigned long long)frees[k]);
			if (g[k].fn)
				ck_assert_msg(g[k].fn_seen && !strcmp(g[k].fn_seen, g[k].fn),
					      "size %llu allocated in '%s', want '%s'",
					      (unsigned long long)g[k].size,
					      g[k].fn_seen ? g[k].fn_seen : "(none)", g[k].fn);
		}
	}
	rec_close(r);
	unlink(out);
	rmdir(dir);
}
END_TEST
#endif

static Suite *inject_suite(void)
{
	Suite *s = suite_create("inject");
	TCase *tc = tcase_create("internals");

	tcase_add_test(tc, test_maps_prot);
	tcase_add_test(tc, test_poke_readonly);
	tcase_add_test(tc, test_start_arguments);
	tcase_add_test(tc, test_pass_in_process);
	tcase_add_test(tc, test_restore_leaves_foreign);
	tcase_add_test(tc, test_pending_module_alone);
	suite_add_tcase(s, tc);
#ifdef INJECT_E2E
	tc = tcase_create("session");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_session);
	tcase_add_test(tc, test_session_exit);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int main(void)
{
	return ck_run_suite(inject_suite());
}
