/* interpret/module_internal.h - modules of the stream, the module index and the pinned module files */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_INTERPRET_MODULE_INTERNAL_H
#define HEAPTAP_INTERPRET_MODULE_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "interpret/table_internal.h"

#define ITP_MAX_SEGS 256		      /* PT_LOAD entries of one module */
#define ITP_MAX_BUILD_ID 255
#define ITP_MAX_PATH 4096

/* ---------------------------------------------------------------- */
/* modules (modules.c)                                               */

struct itp_seg {
	uint64_t vaddr, memsz, flags;
};

struct itp_module {
	char *path;	  /* as the target named it: shown, never opened (symbolize.c) */
	uint8_t *build_id;
	size_t build_id_len;
	uint64_t base;	 /* load bias */
	uint64_t lo, hi; /* [lo, hi): runtime addresses covered by PT_LOAD */
	struct itp_seg *seg;
	size_t nseg;
	uint64_t seq_add; /* sequence number of its MODULE event */
	uint64_t seq_del; /* of its MODULE_DEL, UINT64_MAX while loaded */
	uint32_t rec_idx; /* recording module index */
	uint32_t next_same_base; /* index + 1 of the next older loaded module at base, 0 = none */
	uint32_t pin;	  /* index + 1 of its file in itp_ctx.pins, 0 = not pinned */
};

struct itp_modules {
	struct itp_module **v;
	size_t n, cap;
	struct itp_map by_base; /* base -> newest module announced at it (modules.c) */
};

/* itp_module_free - free one decoded module. Accepts NULL. */
void itp_module_free(struct itp_module *m);
/* itp_modules_add - append m (owned from then on); 0, -ENOMEM or -E2BIG. */
int itp_modules_add(struct itp_modules *t, struct itp_module *m);
/*
 * itp_modules_del - mark the newest loaded module at base, loaded at or
 * before seq, removed at seq; 0 or -ENOENT. Looks at a bounded number of
 * modules whatever the stream sent.
 */
int itp_modules_del(struct itp_modules *t, uint64_t base, uint64_t seq);
void itp_modules_free(struct itp_modules *t);

/*
 * Which module held an ip when it was first seen, for a batch of ips at
 * once (modules.c): built from the modules, then one sweep in sequence
 * order answers every query in O(log n) each, however the ranges overlap.
 */
struct itp_modindex {
	uint64_t *pts;	/* the distinct bounds of all module ranges, sorted */
	size_t npts;
	size_t leaves;	/* power of two >= npts */
	uint64_t *live; /* per tree node: (stamp << 32) | module + 1 assigned last (0 = none) */
	uint32_t *ever; /* per tree node: module + 1 with the newest seq_add covering it */
};

struct itp_modq {
	uint64_t ip, seq; /* the ip and the sequence number of its first trace node */
	uint32_t idx;	  /* the caller's */
	long mod;	  /* out: index in itp_modules.v, -1 = none */
};

/* itp_modindex_build - index t's module ranges; 0 or -ENOMEM (x then empty). */
int itp_modindex_build(struct itp_modindex *x, const struct itp_modules *t);
/*
 * itp_modindex_resolve - set q[i].mod for each query: the module loaded at
 * q[i].seq that covers q[i].ip, else the newest module that ever covered
 * it, else -1. Sorts q by seq. Stops early (the rest -1) once *stop >= 2.
 * 0 or -ENOMEM.
 */
int itp_modindex_resolve(struct itp_modindex *x, const struct itp_modules *t, struct itp_modq *q,
			 size_t nq, volatile sig_atomic_t *stop);
void itp_modindex_free(struct itp_modindex *x);

struct itp_ctx;

/* ---------------------------------------------------------------- */
/* module files pinned while the session runs (pin.c)               */

/*
 * A module is what the target maps, not what its stream says: when a
 * MODULE event is applied, the mapping at the module's first segment in
 * /proc/PID/maps is opened through /proc/PID/map_files (the mapped inode:
 * no path is resolved, so no FIFO, device or symlink), and symbolization
 * reads that fd. One fd per distinct (dev, inode).
 */
#define ITP_MAX_PINS 4096
#define ITP_MAX_MODULE_FILE ((uint64_t)4 << 30) /* bytes of a module or debug file read */

struct itp_pin {
	int fd;
	uint64_t dev, ino; /* as /proc/PID/maps shows them */
};

struct itp_maps_ent {
	uint64_t start, end, dev, ino;
	uint32_t path_off; /* into itp_pins.paths, UINT32_MAX = none */
};

struct itp_pins {
	struct itp_pin *v;
	size_t n, cap;
	struct itp_map by_file;	   /* hash of (dev, inode) -> index in v (a collision: not shared) */
	struct itp_maps_ent *maps; /* the last read of /proc/PID/maps, sorted by start */
	size_t nmaps, cap_maps;
	char *paths;		   /* NUL-terminated paths of maps entries */
	size_t paths_len, paths_cap;
	uint64_t read_at_ns, read_ns; /* when maps was last read, and how long it took */
	uint32_t *retry;	   /* module indices left unpinned because maps was read recently */
	size_t nretry;
	int denied;		   /* map_files refused us (not root): the verified path instead */
	uint64_t pinned, failed;   /* modules pinned, modules that could not be */
};

/*
 * itp_pin_module - pin module k of c->mods (opt->pid > 0, else nothing);
 * a module that cannot be pinned keeps pin 0. Never fails the session.
 */
void itp_pin_module(struct itp_ctx *c, uint32_t k);
/* itp_pin_retry - pin the modules put off because maps was read moments ago. */
void itp_pin_retry(struct itp_ctx *c);
void itp_pins_free(struct itp_pins *p);
/*
 * itp_elf_fd_ok - check that fd is a regular file of at most
 * ITP_MAX_MODULE_FILE bytes that starts with the ELF magic (libdwfl would
 * otherwise decompress gzip, bzip2, xz or zstd images). 0 or -errno; fd
 * is left open either way.
 */
int itp_elf_fd_ok(int fd);
/*
 * itp_open_debug - the separate debug file of build-id under /usr/lib/debug
 * (and, given a root directory fd, under that root's /usr/lib/debug,
 * resolved inside it), checked as itp_elf_fd_ok; an fd or -errno.
 */
int itp_open_debug(int root_fd, const uint8_t *id, size_t len, const char *suffix);
/* itp_reopen_regular - an O_RDONLY fd on what O_PATH fd pfd names, if a regular file; or -errno. */
int itp_reopen_regular(int pfd);

#endif /* HEAPTAP_INTERPRET_MODULE_INTERNAL_H */
