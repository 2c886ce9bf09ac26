/* tests/e2e/jitcut.c - allocations from code without unwind info (a stand-in for JIT code) */
/* SPDX-License-Identifier: MIT */
/*
 * Copies a few bytes of machine code into an anonymous PROT_EXEC mapping,
 * as a JIT compiler would: no module, no .eh_frame. The code calls the
 * function it is given, so the allocating stacks run through it:
 *
 *   main -> run_jit -> [anonymous code] -> jit_callee -> malloc  (cut after the anonymous frame)
 *   main -> run_jit -> [anonymous code] -> malloc               (cut after the anonymous frame)
 *   main -> plain_site -> malloc                                 (not cut)
 *
 * Prints "expect NAME calls=N bytes=N" per group and "jit_lo=0x.. jit_hi=0x.." for
 * jitcut.test. x86-64 only (prints "skip ..." elsewhere).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CALLEE_CALLS 7
#define CALLEE_SIZE 4321
#define DIRECT_CALLS 5
#define DIRECT_SIZE 1234
#define PLAIN_CALLS 3
#define PLAIN_SIZE 777

typedef void *(*alloc_fn)(size_t);
typedef void *(*jit_fn)(alloc_fn fn, size_t n);

static void *keep[CALLEE_CALLS + DIRECT_CALLS + PLAIN_CALLS];
static size_t nkeep;

/* called from the anonymous code */
__attribute__((noinline)) static void *jit_callee(size_t n)
{
	void *p = malloc(n);

	__asm__ volatile("" ::: "memory"); /* no tail call */
	return p;
}

__attribute__((noinline)) static void plain_site(size_t n)
{
	keep[nkeep++] = malloc(n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void run_jit(jit_fn code, alloc_fn fn, size_t n)
{
	keep[nkeep++] = code(fn, n);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
#if defined(__x86_64__)
	/*
	 * void *code(alloc_fn fn, size_t n) { return fn(n); }, not as a tail
	 * call, with no frame pointer set up (as JIT code often does not):
	 *   sub $8,%rsp; mov %rdi,%rax; mov %rsi,%rdi; call *%rax; add $8,%rsp; ret
	 */
	static const unsigned char bytes[] = {
		0x48, 0x83, 0xec, 0x08, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7,
		0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3,
	};
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	jit_fn code;
	int i;

	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(m, bytes, sizeof(bytes));
	if (mprotect(m, 4096, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	code = (jit_fn)m;
	for (i = 0; i < CALLEE_CALLS; i++)
		run_jit(code, jit_callee, CALLEE_SIZE);
	for (i = 0; i < DIRECT_CALLS; i++)
		run_jit(code, malloc, DIRECT_SIZE);
	for (i = 0; i < PLAIN_CALLS; i++)
		plain_site(PLAIN_SIZE);
	printf("jit_lo=0x%" PRIxPTR " jit_hi=0x%" PRIxPTR "\n", (uintptr_t)m,
	       (uintptr_t)m + sizeof(bytes));
	printf("expect callee calls=%d bytes=%d\n", CALLEE_CALLS, CALLEE_CALLS * CALLEE_SIZE);
	printf("expect direct calls=%d bytes=%d\n", DIRECT_CALLS, DIRECT_CALLS * DIRECT_SIZE);
	printf("expect plain calls=%d bytes=%d\n", PLAIN_CALLS, PLAIN_CALLS * PLAIN_SIZE);
	for (size_t k = 0; k < nkeep; k++)
		free(keep[k]);
	return 0;
#else
	printf("skip not x86-64\n");
	return 0;
#endif
}
