/* interpret/xframe_internal.h - foreign-frame definitions (WIRE_REC_XFRAME) kept for the session */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_INTERPRET_XFRAME_INTERNAL_H
#define HEAPTAP_INTERPRET_XFRAME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "interpret/table_internal.h"

#define ITP_MAX_XFRAMES (1u << 22) /* definitions kept; more end the stream as corrupt */

/* One definition; its strings are NUL-terminated in the arena (offsets, so it can grow). */
struct itp_xframe {
	uint64_t id;
	uint32_t name, file; /* offsets into strs; the empty string is offset 0 */
	uint32_t line;
	uint8_t lang, kind;
};

struct itp_xframes {
	struct itp_map by_id;	/* id -> index in v + 1 (itp_map values must not be UINT32_MAX) */
	struct itp_xframe *v;
	size_t n, cap;
	char *strs;		/* arena: "" at 0, then the names and files */
	size_t nstrs, cap_strs;
	uint64_t redefs;	/* definitions of an id defined before (ignored) */
	uint64_t undefined;	/* foreign ips never defined */
};

struct itp_ctx;
struct rec_sym;

/*
 * itp_xframe_parse - one WIRE_REC_XFRAME payload [p, end): the first
 * definition of an id is kept (its bytes taken from the budget), later ones
 * counted and ignored. 0, or -ITP_E_CORRUPT (a bad record, with a detail),
 * -ITP_E_BUDGET, -ITP_E_NOMEM.
 */
int itp_xframe_parse(struct itp_ctx *c, const uint8_t *p, const uint8_t *end);

/*
 * itp_xframe_chain - the symbol chain of foreign ip (wire_is_xframe): one
 * link, the definition's name, file (NULL if empty) and line, or
 * "[LANG frame #ID]" / "[frame #ID]" (buf, 64 bytes) when it has no name or
 * no definition; *lang and *kind get its enum wire_lang and wire_xkind (0
 * when undefined). Returns 1 if it was defined.
 */
int itp_xframe_chain(const struct itp_xframes *x, uint64_t ip, struct rec_sym *out, char buf[64],
		     unsigned *lang, unsigned *kind);

/*
 * itp_xframe_put - write the foreign ip with recording index idx: its
 * symbol (module none) and its foreign-frame mark (rec_put_xframe);
 * counts an undefined one. 0 or -ITP_E_OUTPUT.
 */
int itp_xframe_put(struct itp_ctx *c, uint32_t idx, uint64_t ip);

void itp_xframes_free(struct itp_xframes *x);

#endif /* HEAPTAP_INTERPRET_XFRAME_INTERNAL_H */
