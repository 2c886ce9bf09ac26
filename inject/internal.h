/* inject/internal.h - state and internal functions of libheaptap_inject.so */
/* SPDX-License-Identifier: MIT */
/*
 * Per-process state (the exception of docs/design.md "Globals", like track/'s trk_g): the
 * library runs inside the target and its entry points (start function,
 * before_end callback, fork handlers) cannot be handed a context.
 *
 * Tables are static (bss: only pages touched become resident), so nothing
 * here allocates through the allocator it redirects.
 *
 *   inj_g.mods[]   one entry per loaded module seen (identity: load bias +
 *                  program header address), with why it is skipped or
 *                  whether it waits to be patched (pending)
 *   inj_g.slots[]  one entry per word we rewrote: its address, the value it
 *                  held before our first write, the page protection then
 *   inj_g.ranges[] snapshot of /proc/self/maps (start, end, PROT_*),
 *                  adjacent entries of equal protection merged
 *
 * Locking: inj_g.lock guards all of it. Order: inj_g.lock -> loader lock
 * (dl_iterate_phdr) -> track's locks. Holders: the library's thread during a
 * patch pass, the before_end callback (timer thread or a trk_stop caller,
 * neither holds the loader lock then), the fork prepare handler (released
 * in the parent, re-created in the child).
 */
#ifndef HEAPTAP_INJECT_INTERNAL_H
#define HEAPTAP_INJECT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#include "elf/elfr.h"
#include "inject/inject.h"
#include "track/track.h"
#include "util/clock.h"

#define INJ_HIDDEN __attribute__((visibility("hidden")))

#define INJ_NNAMES 10	      /* allocator functions redirected */
#define INJ_MAX_MODS 2048     /* modules remembered at once */
#define INJ_MAX_SLOTS 8192    /* words rewritten at once */
#define INJ_MAX_FOUND 512     /* slots of one module per walk */
#define INJ_MAX_RANGES 16384  /* merged /proc/self/maps entries */
#define INJ_POLL_MS 20	      /* how often dl_iterate_phdr's counters are read */
#define INJ_PENDING_TRIES 100 /* passes a half-loaded module is waited for (2 s) */
#define INJ_STACK (256 * 1024)
#define INJ_DRAIN_MS 3000     /* longest wait for heaptap to read the header before patching */

/* Where a session of the library is (inj_g.run). */
enum inj_run {
	INJ_IDLE = 0,	  /* no thread: a start call may begin a session */
	INJ_STARTING = 1, /* thread created, connecting / starting track */
	INJ_RUNNING = 2,  /* session on, thread polls for new modules */
};

/* Why a module is left alone (struct inj_mod.skip). */
enum inj_skip {
	INJ_SKIP_NONE = 0,
	INJ_SKIP_SELF,	    /* this library: its calls are track's own */
	INJ_SKIP_LDSO,	    /* the dynamic loader: has its own minimal malloc */
	INJ_SKIP_VDSO,	    /* kernel's vDSO: imports nothing */
	INJ_SKIP_UNWIND,    /* the libunwind track unwinds with: would recurse */
	INJ_SKIP_MALFORMED, /* elf/ refused it (reason kept in why) */
};

struct inj_mod {
	uintptr_t bias;	  /* dlpi_addr */
	const void *phdr; /* dlpi_phdr: with bias, tells a reload at the same place apart */
	uint32_t seen;	  /* number of the last pass that saw it */
	uint16_t tries;	  /* passes it was found half-loaded */
	uint8_t skip;	  /* enum inj_skip */
	uint8_t pending;  /* not (fully) patched yet: look again next tick */
	uint8_t why;	  /* enum elfr_reason for INJ_SKIP_MALFORMED */
};

struct inj_slot {
	uintptr_t addr;	 /* the word */
	uintptr_t saved; /* what it held before our first write: put back at the end */
	uint32_t mod;	 /* index into inj_g.mods */
	uint8_t want;	 /* index into inj_names */
	uint8_t prot;	 /* PROT_* of its page when written: restored exactly */
};

struct inj_range {
	uintptr_t start, end;
	int prot;
};

/* Counters of the current session (docs/inject.md). */
struct inj_stats {
	uint64_t passes;	/* patch passes run */
	uint64_t patched;	/* words rewritten to a hook */
	uint64_t already;	/* words found holding our hook already (idempotent) */
	uint64_t foreign;	/* words holding another function: left alone */
	uint64_t deferred;	/* times a half-loaded module was put off */
	uint64_t failed;	/* mprotect failed, table full, value changed under us */
	uint64_t restored;	/* words put back by before_end */
	uint64_t left;		/* words not holding our hook any more at the end */
	uint64_t start_ns;	/* start call to first pass done (monotonic) */
	uint64_t first_pass_ns; /* duration of the first pass */
	uint64_t drain_ns;	/* waited for heaptap to read the header before the first pass */
	/* start-up, sent once as WIRE_REC_START (inject/startrec.c); ns since t_start */
	uint64_t connect_ns;	/* connected */
	uint64_t rate_ns;	/* heaptap's sampling rate there (or waited out) */
	uint64_t session_ns;	/* trk_start returned */
	uint32_t rate_got;	/* the rate came within TRK_SAMPLE_WAIT_MS */
	uint32_t first_passes;	/* passes until the first complete one */
};

/* Modules the last pass put off, and why (reset at each pass; inject/patch.c). */
struct inj_defer {
	uint32_t modules;   /* modules pending after the pass */
	uint32_t relro;	    /* RELRO pages still writable */
	uint32_t unmapped;  /* a slot's page not in the maps snapshot */
	uint32_t unreloc;   /* a slot holding no relocated value yet */
	uint32_t walked;    /* modules the pass saw */
	char first[256];    /* path of the first module put off ("" = none) */
};

struct inj_global {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* before_end wakes the thread's poll wait (CLOCK_MONOTONIC waits) */
	_Atomic int run;     /* enum inj_run */
	_Atomic int detach_req; /* heaptap_inject_detach asked the thread to end the session */
	int closing;	     /* before_end ran: no more patching (under lock) */
	int atfork_done;     /* pthread_atfork registered (once per process) */
	long page;	     /* page size */
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint64_t t_start; /* CLOCK_MONOTONIC of the start call */

	struct trk_real real;
	uintptr_t realv[INJ_NNAMES]; /* real functions, 0 = not in the process */
	uintptr_t altv[INJ_NNAMES];  /* a canonical PLT entry slots hold instead, or 0 */
	uintptr_t hookv[INJ_NNAMES]; /* track's hooks, same order */
	uintptr_t self_addr, ldso_base, vdso_addr, unwind_addr;

	unsigned long long adds, subs; /* dl_iterate_phdr counters of the last full pass */
	uint32_t pass;
	bool any_pending;
	size_t nmods, nslots;
	struct inj_mod mods[INJ_MAX_MODS];
	struct inj_slot slots[INJ_MAX_SLOTS];
	struct elfr_slot found[INJ_MAX_FOUND];
	size_t nranges;
	struct inj_range ranges[INJ_MAX_RANGES];
	struct inj_stats st;
	struct inj_defer defer; /* of the last pass */
	struct inj_defer defer0; /* of the first complete pass: sent in WIRE_REC_START */
};

extern struct inj_global inj_g INJ_HIDDEN;
extern const char *const inj_names[INJ_NNAMES] INJ_HIDDEN;

/*
 * real.c: find the real functions (dlsym RTLD_DEFAULT) and the modules to
 * leave alone. Returns 0 or -ENOENT.
 */
int inj_real_find(void) INJ_HIDDEN __attribute__((warn_unused_result));

/* maps.c: snapshot /proc/self/maps into inj_g.ranges. Returns 0 or -errno. */
int inj_maps_read(void) INJ_HIDDEN __attribute__((warn_unused_result));
/* maps.c: PROT_* of the page at addr per the last snapshot, -1 when not mapped or not known. */
int inj_maps_prot(uintptr_t addr) INJ_HIDDEN;

/*
 * poke.c: replace the word at addr by val if it still holds expect (one
 * aligned 8-byte compare-and-swap), making its page writable around the
 * store when prot (its current protection) lacks PROT_WRITE and putting
 * exactly prot back. Returns 0, -EAGAIN when the word held something else
 * (nothing written) or -errno of mprotect (nothing written).
 */
int inj_poke(uintptr_t addr, uintptr_t expect, uintptr_t val, int prot) INJ_HIDDEN;

/* patch.c: dl_iterate_phdr's counters now. */
void inj_counters(unsigned long long *adds, unsigned long long *subs) INJ_HIDDEN;
/*
 * patch.c: one pass over every loaded module (lock held): patch new
 * modules, retry pending ones, forget unloaded ones. Returns 0, or -EAGAIN
 * when a module was loaded or unloaded during the pass (try again).
 */
int inj_patch_pass(void) INJ_HIDDEN;

/* restore.c: track's before_end callback: put every slot back (takes the lock). */
void inj_before_end(void *arg, uint64_t *restored, uint64_t *left) INJ_HIDDEN;
/* restore.c: pthread_atfork handlers. */
void inj_fork_prepare(void) INJ_HIDDEN;
void inj_fork_parent(void) INJ_HIDDEN;
void inj_fork_child(void) INJ_HIDDEN;

/*
 * startrec.c: send WIRE_REC_START from inj_g.st and inj_g.defer0 (after the
 * first pass; lock held or not, it only reads). Returns 0 or -errno of the send.
 */
int inj_send_start_record(void) INJ_HIDDEN;
/* startrec.c: the WIRE_REC_START payload into buf; returns its length. */
#define INJ_START_REC_MAX (WIRE_VARINT_MAX * (WIRE_START_NFIELDS + 2) + 256)
size_t inj_start_record_build(uint8_t buf[INJ_START_REC_MAX]) INJ_HIDDEN;
/*
 * startrec.c: send a WIRE_LOG_ERROR record "what: errno N (NAME)" saying why
 * the library ends the session on its own, before trk_stop(WIRE_END_ERROR).
 */
void inj_send_error(const char *what, int err) INJ_HIDDEN;

/* thread.c: body of the library's thread. */
void *inj_thread_main(void *arg) INJ_HIDDEN;


#endif /* HEAPTAP_INJECT_INTERNAL_H */
