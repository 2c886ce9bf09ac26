/* attach/arch/x86_64_loader.c - the loader thread's start routine, copied into the target */
/* SPDX-License-Identifier: MIT */
/*
 * The hijacked thread only calls the stub below, which calls
 * pthread_create(&t, NULL, code, data) (attach/loader.c); this is `code`. It runs in the new thread, reads
 * everything from its data page (rbx; layout ATT_LD_* in attach/internal.h)
 * and uses no absolute address of its own, so its bytes can be copied
 * anywhere:
 *
 *   block every asynchronous signal (rt_sigprocmask; the synchronous ones
 *   stay open, see att_mask_block)
 *   wait, at most ATT_LD_GO_WAITS polls of ATT_LD_GO_TS, for heaptap's go
 *   word: heaptap sets it once the hijacked thread is released, so that
 *   the loader's CPU-heavy dlopen does not compete with the last remote
 *   calls of the stopped thread on a busy machine
 *   name itself (PR_SET_NAME), store its tid, pthread_detach(pthread_self())
 *   dlopen(path, flags) -> dlsym(handle, symbol) -> start(arg)
 *   success (start returned 0): state = 1
 *   failure: copy dlerror()'s text into the page, state = 2 (dlopen),
 *            3 (dlsym) or 4 (start returned nonzero)
 *   wait, at most ATT_LD_WAITS polls of ATT_LD_TS, for heaptap to set the
 *   ack word once it has read the outcome (heaptap polls every 0.2 ms)
 *   tail call munmap of its pages, with the trampoline page before them if
 *   heaptap's go came (the hijacked thread is released and never returns
 *   there; without go, heaptap may have died mid-call and the page must
 *   stay), with the stack as at entry, so
 *   munmap returns straight into libc's thread start code, which ends the
 *   thread as if the routine had returned (value 0): nothing of ours runs
 *   after the pages are gone.
 *
 * It is assembled by the C compiler's assembler into .rodata: heaptap
 * never executes it, it only copies the bytes between the two labels.
 */
#include "attach/internal.h"
#include "attach/loader_internal.h"

#define S_(x) #x
#define S(x) S_(x)

__asm__(".pushsection .rodata.att_loader,\"a\"\n"
	".globl att_loader_code\n"
	".hidden att_loader_code\n"
	".globl att_loader_code_end\n"
	".hidden att_loader_code_end\n"
	"att_loader_code:\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	sub $8, %rsp\n"			/* calls below see a 16-aligned stack */
	"	mov %rdi, %rbx\n"
	"	mov $14, %eax\n"		/* rt_sigprocmask(SIG_BLOCK, &mask, NULL, 8) */
	"	xor %edi, %edi\n"
	"	lea " S(ATT_LD_MASK) "(%rbx), %rsi\n"
	"	xor %edx, %edx\n"
	"	mov $8, %r10d\n"
	"	syscall\n"
	"	mov " S(ATT_LD_GO_WAITS) "(%rbx), %r12d\n"	/* wait for go: the hijacked thread is out */
	"11:	mov " S(ATT_LD_GO) "(%rbx), %eax\n"
	"	test %eax, %eax\n"
	"	jnz 12f\n"
	"	test %r12d, %r12d\n"
	"	jz 12f\n"
	"	dec %r12d\n"
	"	mov $35, %eax\n"
	"	lea " S(ATT_LD_GO_TS) "(%rbx), %rdi\n"
	"	xor %esi, %esi\n"
	"	syscall\n"
	"	jmp 11b\n"
	"12:	mov $157, %eax\n"		/* prctl(PR_SET_NAME, name) */
	"	mov $15, %edi\n"
	"	lea " S(ATT_LD_NAME) "(%rbx), %rsi\n"
	"	syscall\n"
	"	mov $186, %eax\n"		/* gettid */
	"	syscall\n"
	"	mov %eax, " S(ATT_LD_TID) "(%rbx)\n"
	"	call *" S(ATT_LD_FN_SELF) "(%rbx)\n"
	"	mov %rax, %rdi\n"
	"	call *" S(ATT_LD_FN_DETACH) "(%rbx)\n"
	"	mov " S(ATT_LD_PATH) "(%rbx), %rdi\n"
	"	mov " S(ATT_LD_FLAGS) "(%rbx), %esi\n"
	"	call *" S(ATT_LD_FN_DLOPEN) "(%rbx)\n"
	"	mov %rax, " S(ATT_LD_HANDLE) "(%rbx)\n"
	"	mov $" S(ATT_LD_S_DLOPEN) ", %r12d\n"
	"	test %rax, %rax\n"
	"	jz 5f\n"
	"	mov %rax, %rdi\n"
	"	mov " S(ATT_LD_SYM) "(%rbx), %rsi\n"
	"	call *" S(ATT_LD_FN_DLSYM) "(%rbx)\n"
	"	mov %rax, " S(ATT_LD_START) "(%rbx)\n"
	"	mov $" S(ATT_LD_S_DLSYM) ", %r12d\n"
	"	test %rax, %rax\n"
	"	jz 5f\n"
	"	mov " S(ATT_LD_ARG) "(%rbx), %rdi\n"
	"	call *%rax\n"
	"	mov %eax, " S(ATT_LD_RET) "(%rbx)\n"
	"	mov $" S(ATT_LD_S_START) ", %r12d\n"
	"	test %eax, %eax\n"
	"	jnz 6f\n"
	"	mov $" S(ATT_LD_S_OK) ", %r12d\n"
	"	jmp 6f\n"
	"5:	mov " S(ATT_LD_FN_DLERROR) "(%rbx), %rax\n"	/* dlerror text, if any */
	"	test %rax, %rax\n"
	"	jz 6f\n"
	"	call *%rax\n"
	"	test %rax, %rax\n"
	"	jz 6f\n"
	"	lea " S(ATT_LD_ERR) "(%rbx), %rdi\n"
	"	mov $" S(ATT_LD_ERRCAP) " - 1, %ecx\n"
	"7:	movzbl (%rax), %edx\n"
	"	test %dl, %dl\n"
	"	jz 8f\n"
	"	mov %dl, (%rdi)\n"
	"	inc %rax\n"
	"	inc %rdi\n"
	"	dec %ecx\n"
	"	jnz 7b\n"
	"8:	movb $0, (%rdi)\n"
	"6:	mov %r12d, " S(ATT_LD_STATE) "(%rbx)\n"	/* publish the outcome (after the text) */
	"	mov " S(ATT_LD_WAITS) "(%rbx), %r12d\n"
	"10:	mov " S(ATT_LD_ACK) "(%rbx), %eax\n"
	"	test %eax, %eax\n"
	"	jnz 9f\n"
	"	test %r12d, %r12d\n"
	"	jz 9f\n"
	"	dec %r12d\n"
	"	mov $35, %eax\n"		/* nanosleep(&ts, NULL): this thread's own */
	"	lea " S(ATT_LD_TS) "(%rbx), %rdi\n"
	"	xor %esi, %esi\n"
	"	syscall\n"
	"	jmp 10b\n"
	"9:	mov " S(ATT_LD_BASE) "(%rbx), %rdi\n"
	"	mov " S(ATT_LD_SIZE) "(%rbx), %rsi\n"
	"	mov " S(ATT_LD_GO) "(%rbx), %eax\n"	/* released: the trampoline page goes too */
	"	test %eax, %eax\n"
	"	jz 13f\n"
	"	mov " S(ATT_LD_BASE_GO) "(%rbx), %rdi\n"
	"	mov " S(ATT_LD_SIZE_GO) "(%rbx), %rsi\n"
	"13:\n"
	"	mov " S(ATT_LD_FN_MUNMAP) "(%rbx), %rax\n"
	"	add $8, %rsp\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	jmp *%rax\n"			/* munmap returns for us */
	"att_loader_code_end:\n"
	".popsection\n");

/*
 * The stub the hijacked thread calls (the only call after the mmap), at
 * ATT_LD_STUB_AT in the trampoline's page, with the data page in rdi and
 * the frame's return address pointing at the trampoline. rsp is the
 * frame's address at entry (frame + 8 is 16-aligned), so after the push
 * the frame's slots are at their offset + 8 from rsp:
 *
 *   errno's address and value -> ATT_FRAME_ERRNO_ADDR/VAL (the trampoline
 *     puts errno back from them after the return, or rt_sigreturn's path
 *     does if heaptap is gone; att_call_end when the stub did not return)
 *   mprotect(ATT_LD_MPROT, 4096, PROT_READ | PROT_WRITE), a bare syscall
 *     (no errno): failure returns its -errno, no thread is made
 *   ATT_FRAME_STAGE = 1: from here a loader thread may exist
 *   pthread_create(&ATT_LD_PTHREAD, NULL, ATT_LD_CODE, data): its value,
 *     zero-extended
 *
 * It lives in the trampoline's page, not the loader's code page: the
 * loader never unmaps that page without heaptap's go, so a hijacked
 * thread left alone by a dead heaptap always has its code to return to.
 */
__asm__(".pushsection .rodata.att_loader,\"a\"\n"
	".globl att_stub_code\n"
	".hidden att_stub_code\n"
	".globl att_stub_code_end\n"
	".hidden att_stub_code_end\n"
	"att_stub_code:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	call *" S(ATT_LD_FN_ERRNO) "(%rbx)\n"
	"	mov %rax, " S(ATT_FRAME_ERRNO_ADDR) "+8(%rsp)\n"
	"	mov (%rax), %ecx\n"
	"	mov %ecx, " S(ATT_FRAME_ERRNO_VAL) "+8(%rsp)\n"
	"	mov $10, %eax\n"		/* mprotect */
	"	mov " S(ATT_LD_MPROT) "(%rbx), %rdi\n"
	"	mov $4096, %esi\n"
	"	mov $3, %edx\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	movl $1, " S(ATT_FRAME_STAGE) "+8(%rsp)\n"
	"	lea " S(ATT_LD_PTHREAD) "(%rbx), %rdi\n"
	"	xor %esi, %esi\n"
	"	mov " S(ATT_LD_CODE) "(%rbx), %rdx\n"
	"	mov %rbx, %rcx\n"
	"	call *" S(ATT_LD_FN_CREATE) "(%rbx)\n"
	"	mov %eax, %eax\n"
	"1:	pop %rbx\n"
	"	ret\n"
	"att_stub_code_end:\n"
	".popsection\n");

extern const unsigned char att_loader_code[], att_loader_code_end[];
extern const unsigned char att_stub_code[], att_stub_code_end[];

const unsigned char *att_arch_loader_stub(size_t *len)
{
	*len = (size_t)(att_stub_code_end - att_stub_code);
	return att_stub_code;
}

const unsigned char *att_arch_loader(size_t *len)
{
	*len = (size_t)(att_loader_code_end - att_loader_code);
	return att_loader_code;
}
