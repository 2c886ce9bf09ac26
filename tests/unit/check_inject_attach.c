/* tests/unit/check_inject_attach.c - a real runtime attach: attach/ loads inject/ into a running
 * program */
/* SPDX-License-Identifier: MIT */
/*
 * unit.inject_attach (plain builds only). tests/inject/inject_victim runs
 * and allocates; this driver listens on a unix socket, seizes one of its
 * threads with attach/, remote-calls dlopen(libheaptap_inject.so) and
 * heaptap_inject_start(socket) in it, lets it go, interprets the stream
 * with itp_run and stops the session after a while. The victim must go on
 * answering and allocating during and after; the stream must say attached,
 * end with STOP, every slot restored and none left; the recording must
 * hold the victim's own allocations by function. Exit 77 (skip) when this
 * process may not ptrace its child.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "attach/attach.h"
#include "inject/inject.h"
#include "interpret/interpret.h"
#include "recfile/recfile.h"
#include "track/wire.h"

#define VICTIM_SZ 1234 /* tests/inject/victim.c */

static char *build_path(const char *rel)
{
	const char *b = getenv("HEAPTAP_BUILD_DIR");
	char *p;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_ge(asprintf(&p, "%s/%s", b, rel), 0);
	return p;
}

struct victim {
	pid_t pid;
	FILE *in, *out;
};

static unsigned long ping(struct victim *v)
{
	char line[64];
	unsigned long n = 0;

	fprintf(v->in, "ping\n");
	fflush(v->in);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), v->out));
	ck_assert_int_eq(sscanf(line, "pong %lu", &n), 1);
	return n;
}

static volatile sig_atomic_t stop;

static void *stop_later(void *arg)
{
	(void)arg;
	usleep(300000);
	stop = 1;
	return NULL;
}

/* victim_start - run the victim with pipes to its stdin and stdout, until it says "ready" */
static void victim_start(struct victim *v, const char *victim)
{
	char line[64];
	int in[2], outp[2];

	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(outp, O_CLOEXEC), 0);
	v->pid = fork();
	ck_assert_int_ge(v->pid, 0);
	if (v->pid == 0) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		execl(victim, victim, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	v->in = fdopen(in[1], "w");
	v->out = fdopen(outp[0], "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), v->out));
	ck_assert_str_eq(line, "ready\n");
}

/* attach_inject - seize pid, load lib and start it on socket sock in it, let it go */
static void attach_inject(pid_t pid, const char *lib, const char *sock)
{
	struct att_inject_result ir = {0};
	struct att_stats st;
	struct att_ctx *ctx;
	enum att_reason why;

	ctx = att_new(pid);
	ck_assert_ptr_nonnull(ctx);
	/*
	 * Generous deadlines: on a busy 2-core machine (load average ~20) a
	 * thread once took more than the default 1 s to stop.
	 */
	att_set_timeouts(ctx, 10000, 20000);
	why = att_preflight(ctx);
	ck_assert_msg(why == ATT_OK, "preflight: %s %s", att_strerror(why), att_detail(ctx));
	why = att_seize(ctx);
	ck_assert_msg(why == ATT_OK, "seize: %s %s", att_strerror(why), att_detail(ctx));
	why = att_inject(ctx, lib, INJ_START_SYMBOL, sock, &ir);
	att_release(ctx);
	att_get_stats(ctx, &st);
	ck_assert_msg(why == ATT_OK, "inject: %s %s", att_strerror(why), att_detail(ctx));
	ck_assert_int_eq(ir.start_ret, 0);
	fprintf(stderr, "attach: thread held %llu us, remote calls %llu us\n",
		(unsigned long long)st.pause_ns / 1000, (unsigned long long)st.call_ns / 1000);
	att_free(ctx);
}

/* victim_alloc_recorded - whether recording out holds a VICTIM_SZ allocation in victim_alloc */
static int victim_alloc_recorded(const char *out)
{
	size_t nai, nt, ni, nf;
	const struct rec_allocinfo *ai;
	const struct rec_trace *tr;
	const struct rec_ip *ip;
	const struct rec_frame *fr;
	struct rec_reader *r;
	int err, found = 0;

	r = rec_open(out, &err);
	ck_assert_msg(r != NULL, "rec_open: %s", rec_strerror(err));
	ck_assert_str_eq(rec_meta(r, "attached"), "1");
	ai = rec_allocinfos(r, &nai);
	tr = rec_traces(r, &nt);
	ip = rec_ips(r, &ni);
	fr = rec_frames(r, &nf);
	for (size_t i = 0; i < nai; i++) {
		uint32_t k = ai[i].trace;

		if (ai[i].size != VICTIM_SZ || k == 0 || k >= nt || tr[k].ip >= ni ||
		    ip[tr[k].ip].frame >= nf)
			continue;
		if (!strcmp(rec_string(r, fr[ip[tr[k].ip].frame].function), "victim_alloc"))
			found = 1;
	}
	rec_close(r);
	return found;
}

START_TEST(test_attach_session)
{
	char dir[] = "/tmp/heaptap-inject-attach-XXXXXX", sock[128], out[160];
	char *victim = build_path("tests/inject/inject_victim");
	char *lib = build_path("lib/" INJ_LIB_NAME);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct itp_options opt = {0};
	struct itp_result res;
	struct victim v;
	struct pollfd pfd;
	unsigned long n0, n1, n2;
	int lfd, cfd, status;
	pthread_t t;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(out, sizeof(out), "%s/rec.heaptap", dir);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	victim_start(&v, victim);
	usleep(50000); /* some blocks allocated before the attach */
	n0 = ping(&v);
	attach_inject(v.pid, lib, sock);

	pfd.fd = lfd;
	pfd.events = POLLIN;
	ck_assert_msg(poll(&pfd, 1, 10000) == 1, "the library did not connect");
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(cfd, 0);
	stop = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, stop_later, NULL), 0);
	opt.output = out;
	/* as heaptap attach does: the library installs no hook before heaptap's first CTL_SAMPLE */
	opt.sample_ctl = 1;
	opt.sample_bytes = 0;
	opt.stop = &stop;
	opt.stop_timeout_ms = 10000;
	memset(&res, 0, sizeof(res));
	ck_assert_msg(itp_run(cfd, &opt, &res) == 0, "itp_run: %s (%s)", itp_strerror(res.err),
		      res.detail);
	pthread_join(t, NULL);

	/* the victim noticed nothing: it answers and goes on allocating */
	n1 = ping(&v);
	usleep(20000);
	n2 = ping(&v);
	ck_assert_uint_gt(n1, n0);
	ck_assert_uint_gt(n2, n1);

	ck_assert(res.flags & WIRE_F_ATTACHED);
	ck_assert_int_eq(res.end_reason, WIRE_END_STOP);
	ck_assert_uint_ge(res.slots_restored, 3); /* the victim's malloc/free, libc's malloc/free */
	ck_assert_uint_eq(res.slots_left, 0);
	ck_assert_uint_gt(res.final.alloc_calls, 0);
	fprintf(stderr,
		"recorded %llu allocations, %llu frees (%llu of blocks from before), %llu "
		"slots restored\n",
		(unsigned long long)res.final.alloc_calls, (unsigned long long)res.final.free_calls,
		(unsigned long long)res.warn.unknown_frees, (unsigned long long)res.slots_restored);

	ck_assert_msg(victim_alloc_recorded(out), "no allocation of %d bytes in victim_alloc recorded",
		      VICTIM_SZ);

	fprintf(v.in, "exit\n");
	fclose(v.in);
	ck_assert_int_eq(waitpid(v.pid, &status, 0), v.pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fclose(v.out);
	close(cfd);
	close(lfd);
	unlink(out);
	unlink(sock);
	rmdir(dir);
	free(victim);
	free(lib);
}
END_TEST

/* ptrace_allowed - whether this process may PTRACE_SEIZE a child of its own. */
static int ptrace_allowed(void)
{
	pid_t pid = fork();
	int ok, status;

	if (pid < 0)
		return 0;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	ok = ptrace(PTRACE_SEIZE, pid, 0, 0) == 0;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return ok;
}

int main(void)
{
	Suite *s = suite_create("inject_attach");
	TCase *tc = tcase_create("attach");

	if (!ptrace_allowed()) {
		fprintf(stderr, "ptrace not allowed here: skipped\n");
		return 77;
	}
	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_attach_session);
	suite_add_tcase(s, tc);
	return ck_run_suite(s);
}
