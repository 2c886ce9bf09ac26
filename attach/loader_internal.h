/* attach/loader_internal.h - the loader thread's data page, shared by loader.c and its code */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_ATTACH_LOADER_INTERNAL_H
#define HEAPTAP_ATTACH_LOADER_INTERNAL_H

/*
 * The loader thread (loader.c, arch/x86_64_loader.c). The scratch mapping
 * is three pages then: [trampoline, stub | loader code (r-x) | loader data
 * (rw)]; the hijacked thread runs the stub (at ATT_LD_STUB_AT), which
 * saves errno into the frame, makes the data page writable and calls
 * pthread_create; the loader thread unmaps the pages. Offsets into the
 * data page (bare numbers: the assembler reads them too):
 */
#define ATT_LD_PAGES 3
#define ATT_LD_STUB_AT ATT_TRAMP_SPACE	/* the stub's offset in the first page */
#define ATT_LD_FN_DLOPEN 0	/* functions the loader calls */
#define ATT_LD_FN_DLSYM 8
#define ATT_LD_FN_DLERROR 16	/*   0: no dlerror (old glibc) */
#define ATT_LD_FN_MUNMAP 24
#define ATT_LD_FN_SELF 32	/*   pthread_self */
#define ATT_LD_FN_DETACH 40	/*   pthread_detach */
#define ATT_LD_BASE 48		/* what the loader unmaps at its end: code and data page */
#define ATT_LD_SIZE 56
#define ATT_LD_PATH 64		/* pointers to the strings below */
#define ATT_LD_SYM 72
#define ATT_LD_ARG 80
#define ATT_LD_FLAGS 88		/* u32 dlopen flags */
#define ATT_LD_WAITS 92		/* u32 polls of the ack word before giving up */
#define ATT_LD_TS 96		/* struct timespec: one poll's sleep */
#define ATT_LD_MASK 112		/* u64 signals the loader blocks */
#define ATT_LD_NAME 120		/* 16 bytes: its thread name */
#define ATT_LD_COOKIE 136	/* u64 heaptap's random tag: is this still our page? */
#define ATT_LD_PTHREAD 144	/* pthread_t that pthread_create stores */
#define ATT_LD_STATE 152	/* u32 outcome, written by the loader (ATT_LD_S_*) */
#define ATT_LD_TID 156		/* u32 its kernel tid, written first */
#define ATT_LD_RET 160		/* i32 the start function's return value */
#define ATT_LD_ACK 164		/* u32 set by heaptap once it read a failure */
#define ATT_LD_HANDLE 168	/* u64 dlopen's handle */
#define ATT_LD_START 176	/* u64 the start function's address */
#define ATT_LD_GO 184		/* u32 set by heaptap once the hijacked thread is released */
#define ATT_LD_GO_WAITS 188	/* u32 polls of the go word before starting anyway */
#define ATT_LD_GO_TS 192	/* struct timespec: one such poll's sleep */
#define ATT_LD_BASE_GO 208	/* what it unmaps when go was set: the trampoline page too */
#define ATT_LD_SIZE_GO 216
#define ATT_LD_FN_ERRNO 224	/* the stub's functions: __errno_location */
#define ATT_LD_FN_CREATE 232	/*   pthread_create */
#define ATT_LD_CODE 240		/* the loader's start routine (the code page) */
#define ATT_LD_MPROT 248	/* the page the stub makes writable (this one) */
#define ATT_LD_ERR 256		/* dlerror() text */
#define ATT_LD_ERRCAP 512
#define ATT_LD_STRINGS 768	/* path, symbol, argument */
#define ATT_LD_S_RUNNING 0
#define ATT_LD_S_OK 1
#define ATT_LD_S_DLOPEN 2
#define ATT_LD_S_DLSYM 3
#define ATT_LD_S_START 4
#define ATT_LD_WAIT_NS 2000000	/* the loader polls the ack every 2 ms ... */
#define ATT_LD_WAIT_POLLS 2500	/* ... 5 s at least, then ends anyway */
#define ATT_LD_ACK_MS 3000	/* heaptap writes the ack only this soon after the loader ran */
#define ATT_LD_GO_NS 100000	/* the loader polls the go word every 0.1 ms ... */
#define ATT_LD_GO_POLLS 1000	/* ... 100 ms at least, then starts anyway */

#endif
