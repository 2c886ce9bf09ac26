/* tests/unit/check_attach.c - Check suite for attach/: parsers, reasons, preflight, a real remote call */
/* SPDX-License-Identifier: MIT */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/check_fixture.h"
#include "attach/internal.h"

START_TEST(reasons_have_text_and_distinct_codes)
{
	int seen[256] = { 0 };
	unsigned i;

	ck_assert_int_eq(att_exit_code(ATT_OK), 0);
	for (i = 1; i < ATT_E_COUNT; i++) {
		int code = att_exit_code(i);

		ck_assert_str_ne(att_strerror(i), "unknown reason");
		ck_assert_msg(code >= 10 && code <= 63, "reason %u code %d", i, code);
		ck_assert_msg(!seen[code], "exit code %d used twice", code);
		seen[code] = 1;
	}
	ck_assert_str_eq(att_strerror(ATT_E_COUNT), "unknown reason");
	ck_assert_str_eq(att_strerror((enum att_reason)-1), "unknown reason");
}
END_TEST

START_TEST(syscall_line_parsing)
{
	unsigned long a[6];
	long nr;
	bool running;

	ck_assert_int_eq(att_parse_syscall("running\n", &nr, a, &running), 0);
	ck_assert(running);
	ck_assert_int_eq(nr, -1);
	ck_assert_int_eq(att_parse_syscall("-1 0x7ffd0 0x401000\n", &nr, a, &running), 0);
	ck_assert(!running);
	ck_assert_int_eq(nr, -1);
	ck_assert_int_eq(att_parse_syscall("202 0x55d0 0x80 0x2 0x0 0x0 0x0 0x7ffd 0x7f12\n", &nr,
					   a, &running), 0);
	ck_assert_int_eq(nr, 202);
	ck_assert_uint_eq(a[0], 0x55d0);
	ck_assert_uint_eq(a[1], 0x80);
	ck_assert_uint_eq(a[2], 2);
	ck_assert_int_eq(att_parse_syscall("", &nr, a, &running), -EINVAL);
	ck_assert_int_eq(att_parse_syscall("garbage", &nr, a, &running), -EINVAL);
	ck_assert_int_eq(att_parse_syscall("7 0x1 0x2", &nr, a, &running), -EINVAL);
}
END_TEST

START_TEST(syscall_classes)
{
	unsigned long none[6] = { 0 }, masked[6] = { 1, 2, 3, 0x7ff000, 8, 0 };

	ck_assert_int_eq(att_arch_sysclass(-1, none), ATT_SC_USER);
	ck_assert_int_eq(att_arch_sysclass(SYS_read, none), ATT_SC_RESTART);
	ck_assert_int_eq(att_arch_sysclass(SYS_futex, none), ATT_SC_RESTART);
	ck_assert_int_eq(att_arch_sysclass(SYS_nanosleep, none), ATT_SC_RESTART);
	ck_assert_int_eq(att_arch_sysclass(SYS_clock_nanosleep, none), ATT_SC_RESTART);
	ck_assert_int_eq(att_arch_sysclass(SYS_wait4, none), ATT_SC_RESTART);
	unsigned long ep_masked[6] = { 3, 0x7ff000, 4, 30, 0x7ff100, 8 };
	unsigned long ps_masked[6] = { 1, 0x7ff000, 0, 0, 0, 0x7ff100 };
	int targ, tkind, marg;

	ck_assert_int_eq(att_arch_sysclass(SYS_epoll_wait, none), ATT_SC_REENTER);
	ck_assert_int_eq(att_arch_sysclass(SYS_epoll_pwait, none), ATT_SC_REENTER);
	ck_assert_int_eq(att_arch_sysclass(SYS_epoll_pwait, ep_masked), ATT_SC_PROBE);
	ck_assert_int_eq(att_arch_sysclass(SYS_rt_sigtimedwait, none), ATT_SC_REENTER);
	ck_assert_int_eq(att_arch_sysclass(SYS_pselect6, none), ATT_SC_RESTART);
	ck_assert_int_eq(att_arch_sysclass(SYS_pselect6, ps_masked), ATT_SC_PROBE);
	ck_assert_int_eq(att_arch_sysclass(SYS_ppoll, none), ATT_SC_RESTART);
	ck_assert_int_eq(att_arch_sysclass(SYS_ppoll, masked), ATT_SC_PROBE);
	ck_assert_int_eq(att_arch_sysclass(SYS_rt_sigsuspend, none), ATT_SC_MASKSWAP);
	ck_assert_int_eq(att_arch_sysclass(SYS_io_getevents, none), ATT_SC_EINTR);
	/* where each waiting call keeps its timeout and mask (reenter.c rewrites them) */
	ck_assert(att_arch_wait_args(SYS_epoll_wait, &targ, &tkind, &marg));
	ck_assert(targ == 3 && tkind == 0 && marg == -1);
	ck_assert(att_arch_wait_args(SYS_pselect6, &targ, &tkind, &marg));
	ck_assert(targ == 4 && tkind == 1 && marg == 5);
	ck_assert(att_arch_wait_args(SYS_select, &targ, &tkind, &marg));
	ck_assert(targ == 4 && tkind == 2 && marg == -1);
	ck_assert(att_arch_wait_args(SYS_ppoll, &targ, &tkind, &marg));
	ck_assert(targ == 2 && tkind == 1 && marg == 3);
	ck_assert(!att_arch_wait_args(SYS_read, &targ, &tkind, &marg));
	ck_assert_int_eq(att_arch_sysclass(SYS_connect, none), ATT_SC_EINTR);
	ck_assert_int_eq(att_arch_sysclass(99999, none), ATT_SC_UNKNOWN);
}
END_TEST

START_TEST(restart_block_users)
{
	unsigned long rel[6] = { 1, 0, 0x7ff0, 0, 0, 0 }, abs[6] = { 1, 1, 0x7ff0, 0, 0, 0 };
	unsigned long fwait[6] = { 0x55d0, 128, 2, 0, 0, 0 }, fwait_to[6] = { 0x55d0, 128, 2, 0x7ff0, 0, 0 };
	unsigned long fbitset_to[6] = { 0x55d0, 9 | 128 | 256, 2, 0x7ff0, 0, 0 };
	unsigned long fwake[6] = { 0x55d0, 1 | 128, 1, 0x7ff0, 0, 0 };

	ck_assert(att_arch_uses_restart_block(SYS_nanosleep, rel));
	ck_assert(att_arch_uses_restart_block(SYS_clock_nanosleep, rel));
	ck_assert(!att_arch_uses_restart_block(SYS_clock_nanosleep, abs));
	ck_assert(att_arch_uses_restart_block(SYS_poll, rel));
	ck_assert(!att_arch_uses_restart_block(SYS_futex, fwait));
	ck_assert(att_arch_uses_restart_block(SYS_futex, fwait_to));
	ck_assert(att_arch_uses_restart_block(SYS_futex, fbitset_to));
	ck_assert(!att_arch_uses_restart_block(SYS_futex, fwake));
	ck_assert(!att_arch_uses_restart_block(SYS_read, rel));
}
END_TEST

START_TEST(stat_and_status_parsing)
{
	char state;
	unsigned long flags;
	pid_t ppid;
	const char *st = "Name:\tvictim\nState:\tS (sleeping)\nTgid:\t42\nTracerPid:\t7\n";

	ck_assert_int_eq(att_parse_stat("42 (a) b) (c) T 1 42 42 0 -1 4194560 0 0", &state, &flags,
					&ppid), 0);
	ck_assert_int_eq(state, 'T');
	ck_assert_int_eq(ppid, 1);
	ck_assert_uint_eq(flags, 4194560);
	ck_assert_int_eq(att_parse_stat("42 no paren", &state, &flags, &ppid), -EINVAL);
	ck_assert_int_eq(att_parse_stat("42 (x) S", &state, &flags, &ppid), -EINVAL);
	ck_assert_int_eq(atoi(att_status_field(st, "Tgid")), 42);
	ck_assert_int_eq(atoi(att_status_field(st, "TracerPid")), 7);
	ck_assert_ptr_null(att_status_field(st, "Tracer"));
	ck_assert_ptr_null(att_status_field(st, "Uid"));
}
END_TEST

START_TEST(yama_scopes)
{
	ck_assert_int_eq(att_yama_check(0, false, false), ATT_OK);
	ck_assert_int_eq(att_yama_check(1, false, false), ATT_E_YAMA);
	ck_assert_int_eq(att_yama_check(1, true, false), ATT_OK);
	ck_assert_int_eq(att_yama_check(1, false, true), ATT_OK);
	ck_assert_int_eq(att_yama_check(2, true, false), ATT_E_YAMA);
	ck_assert_int_eq(att_yama_check(2, false, true), ATT_OK);
	ck_assert_int_eq(att_yama_check(3, true, true), ATT_E_YAMA);
}
END_TEST

/* Copy /proc/self/exe to a temporary file, patching e_machine when machine >= 0. */
static void copy_self(const char *to, int machine)
{
	char buf[65536];
	ssize_t n;
	int in = open("/proc/self/exe", O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	bool first = true;

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (first && machine >= 0) {
			buf[18] = (char)(machine & 0xff);
			buf[19] = (char)(machine >> 8);
		}
		first = false;
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	}
	close(in);
	close(out);
}

START_TEST(exe_check)
{
	char path[64], what[256];
	int err, fd;

	ck_assert_int_eq(att_check_exe("/proc/self/exe", what, sizeof(what), &err), ATT_OK);
	snprintf(path, sizeof(path), "/tmp/check_attach_exe_%d", (int)getpid());
	copy_self(path, EM_AARCH64);
	ck_assert_int_eq(att_check_exe(path, what, sizeof(what), &err), ATT_E_ARCH);
	ck_assert_msg(strstr(what, "64-bit") != NULL, "%s", what);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
	close(fd);
	ck_assert_int_eq(att_check_exe(path, what, sizeof(what), &err), ATT_E_EXE);
	unlink(path);
	ck_assert_int_eq(att_check_exe(path, what, sizeof(what), &err), ATT_E_EXE);
	ck_assert_int_eq(err, ENOENT);
}
END_TEST

START_TEST(maps_of_self)
{
	struct att_maps m;
	const struct att_map *libc, *hit;

	ck_assert_int_eq(att_maps_read(getpid(), &m), 0);
	ck_assert_uint_gt(m.n, 3);
	libc = att_maps_module(&m, "libc.so");
	ck_assert_ptr_nonnull(libc);
	ck_assert_uint_eq(libc->offset, 0);
	/* getpid: not intercepted by the sanitizers, so really libc's */
	hit = att_maps_find(&m, (uint64_t)(uintptr_t)&getpid);
	ck_assert_ptr_nonnull(hit);
	ck_assert_ptr_nonnull(strstr(hit->path, "libc.so"));
	ck_assert_ptr_null(att_maps_find(&m, 0));
	att_maps_free(&m);
	ck_assert_int_lt(att_maps_read(0x7ffffff0, &m), 0);
}
END_TEST

/* The libc lookup must agree with our own dynamic linker for our own process. */
START_TEST(libc_symbol_matches_dlsym)
{
	struct att_ctx *ctx = att_new(getpid());
	uint64_t addr = 0;

	ck_assert_ptr_nonnull(ctx);
	ck_assert_int_eq(att_libc_symbol(ctx, "getpid", &addr), ATT_OK);
	ck_assert_uint_eq(addr, (uint64_t)(uintptr_t)&getpid);
	ck_assert_int_eq(att_libc_symbol(ctx, "dlopen", &addr), ATT_OK);
	ck_assert_int_eq(att_libc_symbol(ctx, "no_such_symbol_here", &addr), ATT_E_NO_SYMBOL);
	ck_assert_ptr_nonnull(strstr(att_detail(ctx), "no_such_symbol_here"));
	att_free(ctx);
}
END_TEST

START_TEST(preflight_refusals)
{
	struct att_ctx *ctx;
	pid_t gone;

	ctx = att_new(0);
	ck_assert_int_eq(att_preflight(ctx), ATT_E_BAD_PID);
	att_free(ctx);
	ctx = att_new(getpid());
	ck_assert_int_eq(att_preflight(ctx), ATT_E_SELF);
	ck_assert_int_eq(att_seize(ctx), ATT_E_STATE);
	att_free(ctx);
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	ctx = att_new(gone);
	ck_assert_int_eq(att_preflight(ctx), ATT_E_NO_PROCESS);
	att_free(ctx);
	att_free(NULL);
}
END_TEST

/* Find a kernel thread: PF_KTHREAD in /proc/PID/stat flags. */
static pid_t find_kthread(void)
{
	char path[64], buf[1024], state;
	unsigned long flags;
	pid_t p;

	for (p = 2; p < 200; p++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
		if (att_read_file(path, buf, sizeof(buf)) > 0 &&
		    att_parse_stat(buf, &state, &flags, NULL) == 0 && (flags & 0x00200000))
			return p;
	}
	return 0;
}

START_TEST(preflight_kernel_thread)
{
	struct att_ctx *ctx;
	pid_t k = find_kthread();

	if (!k)
		return;	/* pid namespace without kernel threads: nothing to test */
	ctx = att_new(k);
	ck_assert_int_eq(att_preflight(ctx), ATT_E_KERNEL_THREAD);
	att_free(ctx);
}
END_TEST

static pid_t child_sleeper(int fd_out)
{
	pid_t p = fork();
	struct timespec ts = { 0, 1000000 };
	int eintr = 0, i;

	if (p)
		return p;
	/* Check's SIGTERM handler (inherited) would kill the whole test group */
	signal(SIGTERM, SIG_DFL);
	/* beats on fd_out every 1 ms; exits 1 if nanosleep ever saw EINTR */
	for (i = 0; i < 100000; i++) {
		if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
			eintr++;
		if (write(fd_out, eintr ? "E" : ".", 1) < 0)
			_exit(eintr ? 1 : 0);
	}
	_exit(eintr ? 1 : 0);
}

START_TEST(preflight_stopped_child)
{
	struct att_ctx *ctx;
	int fds[2], st;
	pid_t c;

	ck_assert_int_eq(pipe(fds), 0);
	c = child_sleeper(fds[1]);
	kill(c, SIGSTOP);
	ck_assert_int_eq(waitpid(c, &st, WUNTRACED), c);
	ctx = att_new(c);
	ck_assert_int_eq(att_preflight(ctx), ATT_E_STOPPED);
	ck_assert_int_eq(att_exit_code(ATT_E_STOPPED), 16);
	att_free(ctx);
	kill(c, SIGKILL);
	waitpid(c, &st, 0);
}
END_TEST

/* As an unprivileged user: another user's process, and a non-dumpable own one. */
START_TEST(preflight_other_user_and_dumpable)
{
	int go[2], st;
	pid_t victim, prober;
	char c;

	if (geteuid() != 0)
		return;	/* needs root to play two users */
	ck_assert_int_eq(pipe(go), 0);
	victim = fork();
	if (victim == 0) {
		/* nobody, non-dumpable */
		if (setgid(65534) || setuid(65534))
			_exit(2);
		prctl(PR_SET_DUMPABLE, 0);
		(void)!write(go[1], "r", 1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(go[0], &c, 1), 1);
	prober = fork();
	if (prober == 0) {
		struct att_ctx *ctx;
		enum att_reason a, b;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		ctx = att_new(victim);
		a = att_preflight(ctx);
		att_free(ctx);
		ctx = att_new(getppid());	/* root's process */
		b = att_preflight(ctx);
		att_free(ctx);
		_exit(a == ATT_E_NOT_DUMPABLE && b == ATT_E_OTHER_USER ? 0 : 10 + a);
	}
	ck_assert_int_eq(waitpid(prober, &st, 0), prober);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "prober status %#x", st);
}
END_TEST

/* Seize a child sleeping in nanosleep, call getpid() in it, let it go. */
START_TEST(remote_call_in_child)
{
	struct att_ctx *ctx;
	struct att_stats s;
	uint64_t fn = 0, ret = 0;
	int fds[2], st, n;
	char buf[64];
	pid_t c;
	enum att_reason why;

	ck_assert_int_eq(pipe(fds), 0);
	c = child_sleeper(fds[1]);
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], buf, 1), 1);
	ctx = att_new(c);
	why = att_preflight(ctx);
	ck_assert_msg(why == ATT_OK, "%s: %s", att_strerror(why), att_detail(ctx));
	why = att_seize(ctx);
	if (why == ATT_E_PTRACE && att_errno(ctx) == EPERM) {
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
		att_free(ctx);
		return;	/* ptrace not permitted in this environment */
	}
	ck_assert_msg(why == ATT_OK, "%s: %s", att_strerror(why), att_detail(ctx));
	ck_assert_int_eq(att_libc_symbol(ctx, "getpid", &fn), ATT_OK);
	why = att_call(ctx, fn, NULL, 0, &ret);
	ck_assert_msg(why == ATT_OK, "%s: %s", att_strerror(why), att_detail(ctx));
	ck_assert_int_eq((pid_t)ret, c);
	ck_assert_int_eq(att_call(ctx, fn, NULL, 7, &ret), ATT_E_STATE);
	att_release(ctx);
	att_get_stats(ctx, &s);
	ck_assert_int_eq(s.tid, c);
	/* mostly caught sleeping; on a loaded machine also in its write() or running */
	ck_assert_msg(s.syscall == SYS_nanosleep || s.syscall == SYS_clock_nanosleep ||
		      s.syscall == SYS_write || s.syscall == -1, "syscall %ld", s.syscall);
	ck_assert_uint_gt(s.pause_ns, 0);
	ck_assert_uint_ge(s.calls, 2);	/* __errno_location, getpid */
	att_free(ctx);
	/* it beats on, without EINTR */
	for (n = 0; n < 20; n++)
		ck_assert_int_eq(read(fds[0], buf, 1), 1);
	ck_assert_int_eq(buf[0], '.');
	kill(c, SIGTERM);
	ck_assert_int_eq(waitpid(c, &st, 0), c);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	close(fds[0]);
}
END_TEST

/*
 * HEAPTAP_FAULT and HEAPTAP_HANG: every step of the tables has a name, the
 * names docs/attach.md lists parse, and a misspelt one is refused with a
 * line naming the variable and the steps, by att_env_check and att_new.
 */
START_TEST(test_knob_names)
{
	static const char *const faults[] = { "seize", "interrupt", "choose", "ident", "regs",
					      "mask", "errno", "scratch", "write", "stage",
					      "dlopen", "dlsym", "start", "fixed", "stub",
					      "stubcrash", "symbolizer" };
	static const char *const hangs[] = { "preflighted", "stopped", "saved", "callregs",
					     "masked", "sent", "resumed", "sysstop", "end",
					     "errno", "restore-fp", "restored", "session-bound",
					     "session-owned" };
	struct att_hang_spec h;
	enum att_fault_step f;
	struct att_ctx *ctx;
	char err[512];
	size_t i;
	int k;

	for (k = ATT_F_NONE + 1; k < ATT_F_COUNT; k++)
		ck_assert_ptr_nonnull(att_fault_name((enum att_fault_step)k));
	for (k = ATT_H_NONE + 1; k < ATT_H_COUNT; k++)
		ck_assert_ptr_nonnull(att_hang_name((enum att_hang_step)k));
	ck_assert_int_eq(ATT_F_COUNT - 1, sizeof(faults) / sizeof(faults[0]));
	ck_assert_int_eq(ATT_H_COUNT - 1, sizeof(hangs) / sizeof(hangs[0]));
	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		ck_assert_int_eq(att_fault_parse(faults[i], &f, err, sizeof(err)), 0);
		ck_assert_str_eq(att_fault_name(f), faults[i]);
	}
	for (i = 0; i < sizeof(hangs) / sizeof(hangs[0]); i++) {
		ck_assert_int_eq(att_hang_parse(hangs[i], &h, err, sizeof(err)), 0);
		ck_assert_str_eq(att_hang_name(h.step), hangs[i]);
		ck_assert_uint_eq(h.nth, 1);
		ck_assert(!h.kill_self);
	}
	ck_assert_int_eq(att_fault_parse(NULL, &f, err, sizeof(err)), 0);
	ck_assert_int_eq(f, ATT_F_NONE);
	ck_assert_int_eq(att_hang_parse("", &h, err, sizeof(err)), 0);
	ck_assert_int_eq(h.step, ATT_H_NONE);
	ck_assert_int_eq(att_hang_parse("resumed@12:kill", &h, err, sizeof(err)), 0);
	ck_assert_int_eq(h.step, ATT_H_RESUMED);
	ck_assert_uint_eq(h.nth, 12);
	ck_assert(h.kill_self);

	/* misspelt: refused, the line names the variable, the value and the steps */
	ck_assert_int_eq(att_fault_parse("sieze", &f, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "HEAPTAP_FAULT=sieze: no such step (seize, interrupt, choose, ident, "
			      "regs, mask, errno, scratch, write, stage, dlopen, dlsym, start, "
			      "fixed, stub, stubcrash, symbolizer)");
	ck_assert_int_eq(att_hang_parse("stoped", &h, err, sizeof(err)), -EINVAL);
	ck_assert_msg(!strncmp(err, "HEAPTAP_HANG=stoped: no such step (preflighted, stopped, ",
			       strlen("HEAPTAP_HANG=stoped: no such step (preflighted, stopped, ")),
		      "%s", err);
	ck_assert_msg(strstr(err, ", session-owned)"), "%s", err);
	ck_assert_int_eq(att_hang_parse("end@0", &h, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "HEAPTAP_HANG=end@0: @N wants a count from 1");
	ck_assert_int_eq(att_hang_parse("end@", &h, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(att_hang_parse("end@2x", &h, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(att_hang_parse("end:kil", &h, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "HEAPTAP_HANG=end:kil: ':kil' is not ':kill'");
	ck_assert_int_eq(att_hang_parse("stopped@2:kill:kill", &h, err, sizeof(err)), -EINVAL);
	/* a short buffer gets a truncated line, never an overrun */
	ck_assert_int_eq(att_fault_parse("sieze", &f, err, 20), -EINVAL);
	ck_assert_uint_eq(strlen(err), 19);

	/* att_env_check and att_new refuse the same */
	setenv("HEAPTAP_FAULT", "sieze", 1);
	ck_assert_int_eq(att_env_check(err, sizeof(err)), -EINVAL);
	errno = 0;
	ctx = att_new(getpid());
	ck_assert_ptr_null(ctx);
	ck_assert_int_eq(errno, EINVAL);
	unsetenv("HEAPTAP_FAULT");
	setenv("HEAPTAP_HANG", "end@x", 1);
	ck_assert_int_eq(att_env_check(err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "HEAPTAP_HANG=end@x: @N wants a count from 1");
	ck_assert_ptr_null(att_new(getpid()));
	setenv("HEAPTAP_HANG", "end@2:kill", 1);
	setenv("HEAPTAP_FAULT", "stubcrash", 1);
	ck_assert_int_eq(att_env_check(err, sizeof(err)), 0);
	ctx = att_new(getpid());
	ck_assert_ptr_nonnull(ctx);
	att_free(ctx);
	unsetenv("HEAPTAP_HANG");
	unsetenv("HEAPTAP_FAULT");
}
END_TEST

static Suite *attach_suite(void)
{
	Suite *s = suite_create("attach");
	TCase *t = tcase_create("parse");

	tcase_add_test(t, reasons_have_text_and_distinct_codes);
	tcase_add_test(t, syscall_line_parsing);
	tcase_add_test(t, syscall_classes);
	tcase_add_test(t, restart_block_users);
	tcase_add_test(t, stat_and_status_parsing);
	tcase_add_test(t, yama_scopes);
	tcase_add_test(t, exe_check);
	tcase_add_test(t, maps_of_self);
	tcase_add_test(t, libc_symbol_matches_dlsym);
	tcase_add_test(t, test_knob_names);
	suite_add_tcase(s, t);
	t = tcase_create("process");
	tcase_add_test(t, preflight_refusals);
	tcase_add_test(t, preflight_kernel_thread);
	tcase_add_test(t, preflight_stopped_child);
	tcase_add_test(t, preflight_other_user_and_dumpable);
	tcase_add_test(t, remote_call_in_child);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return ck_run_suite(attach_suite());
}
