/* tests/oldlibc/oldlib.c - a test library that needs no libc at all, loadable into any glibc */
/* SPDX-License-Identifier: MIT */
/*
 * Built with -nostdlib: no DT_NEEDED, no symbol version, so glibc 2.31's
 * dlopen takes it (libheaptap_inject.so, linked against the build host's
 * glibc, needs GLIBC_2.34). Its start function proves it was loaded and
 * run, and by which thread: it appends "ran tid=T pid=P arg=A" to the file
 * named by its argument, with raw system calls only. Built again with
 * OLDLIB_UNDEF, it calls a function nobody defines, so dlopen(RTLD_NOW)
 * fails with "undefined symbol: heaptap_oldlibc_absent": a known dlerror()
 * text for the test to find in heaptap's detail.
 */
#define SYS_WRITE 1
#define SYS_OPEN 2
#define SYS_CLOSE 3
#define SYS_GETPID 39
#define SYS_GETTID 186
#define O_WRONLY 01
#define O_CREAT 0100
#define O_APPEND 02000
#define O_CLOEXEC 02000000

#define EXPORT __attribute__((visibility("default")))

static long sys3(long n, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

static unsigned put_str(char *buf, unsigned at, unsigned cap, const char *s)
{
	while (*s && at < cap)
		buf[at++] = *s++;
	return at;
}

static unsigned put_num(char *buf, unsigned at, unsigned cap, long v)
{
	char tmp[24];
	unsigned n = 0;

	if (v < 0) {
		v = -v;
		if (at < cap)
			buf[at++] = '-';
	}
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(tmp));
	while (n && at < cap)
		buf[at++] = tmp[--n];
	return at;
}

#ifdef OLDLIB_UNDEF
void heaptap_oldlibc_absent(void);
#endif

EXPORT int oldlibc_start(const char *path)
{
	char line[512];
	unsigned n = 0, cap = sizeof(line) - 1;
	long fd, w;

#ifdef OLDLIB_UNDEF
	heaptap_oldlibc_absent();
#endif
	n = put_str(line, n, cap, "ran tid=");
	n = put_num(line, n, cap, sys3(SYS_GETTID, 0, 0, 0));
	n = put_str(line, n, cap, " pid=");
	n = put_num(line, n, cap, sys3(SYS_GETPID, 0, 0, 0));
	n = put_str(line, n, cap, " arg=");
	n = put_str(line, n, cap, path);
	line[n++] = '\n';
	fd = sys3(SYS_OPEN, (long)path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	w = sys3(SYS_WRITE, fd, (long)line, n);
	sys3(SYS_CLOSE, fd, 0, 0);
	return w == (long)n ? 0 : 2;
}
