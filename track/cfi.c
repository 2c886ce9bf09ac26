/* track/cfi.c - the unwind rule of one return address, from .eh_frame_hdr / .eh_frame */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, inside hooks, on a cache miss of the fast unwinder
 * (unwind.c). It finds the module and its PT_GNU_EH_FRAME with
 * _dl_find_object (lock-free, no allocation), binary-searches the
 * .eh_frame_hdr table, and runs the FDE's call frame instructions up to the
 * address. Only the common x86-64 shapes are accepted:
 *
 *   CFA = rsp + off  or  rbp + off;  return address at CFA + ra_off;
 *   rbp saved at CFA + rbp_off, or unchanged
 *
 * Anything else (CFA expressions, realigned stacks with CFA in r10, signal
 * frames, 64-bit DWARF, unusual pointer encodings, registers saved in
 * registers) yields TRK_CFA_NONE and the capture falls back to libunwind.
 * An address with no unwind info at all (in no module: JIT code, other
 * anonymous executable memory; in a module without .eh_frame_hdr; covered
 * by no FDE) yields TRK_CFA_CUT: nobody can unwind through it reliably
 * (libunwind would guess with frame pointers), so the stack ends there.
 * Every read stays inside the FDE/CIE lengths.
 */
#include <dlfcn.h>
#include <string.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/unwind_internal.h"

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80

/* Call frame instructions (DWARF 5, 6.4.2; GNU extensions): high two bits, then the whole byte */
#define DW_CFA_advance_loc 0x40
#define DW_CFA_offset 0x80
#define DW_CFA_restore 0xc0
#define DW_CFA_nop 0x00
#define DW_CFA_advance_loc1 0x02
#define DW_CFA_advance_loc2 0x03
#define DW_CFA_advance_loc4 0x04
#define DW_CFA_offset_extended 0x05
#define DW_CFA_restore_extended 0x06
#define DW_CFA_undefined 0x07
#define DW_CFA_same_value 0x08
#define DW_CFA_register 0x09
#define DW_CFA_remember_state 0x0a
#define DW_CFA_restore_state 0x0b
#define DW_CFA_def_cfa 0x0c
#define DW_CFA_def_cfa_register 0x0d
#define DW_CFA_def_cfa_offset 0x0e
#define DW_CFA_def_cfa_expression 0x0f
#define DW_CFA_expression 0x10
#define DW_CFA_offset_extended_sf 0x11
#define DW_CFA_def_cfa_sf 0x12
#define DW_CFA_def_cfa_offset_sf 0x13
#define DW_CFA_val_offset 0x14
#define DW_CFA_val_offset_sf 0x15
#define DW_CFA_val_expression 0x16
#define DW_CFA_GNU_args_size 0x2e
#define DW_CFA_GNU_negative_offset_extended 0x2f

#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16
#define STACK_DEPTH 8 /* DW_CFA_remember_state nesting we follow */

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}

static int64_t sleb(struct rd *r)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	while (r->p < r->end) {
		b = *r->p++;
		if (shift < 64)
			v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				v |= -((int64_t)1 << shift);
			return v;
		}
	}
	r->bad = 1;
	return 0;
}

static uint64_t fixed(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, n); /* little-endian */
	r->p += n;
	return v;
}

/* enc_ptr - read a pointer in encoding enc; datarel relative to dbase. */
static uintptr_t enc_ptr(struct rd *r, uint8_t enc, uintptr_t dbase)
{
	const uint8_t *at = r->p;
	uintptr_t v;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect)) {
		r->bad = 1;
		return 0;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		v = (uintptr_t)fixed(r, 8);
		break;
	case DW_EH_PE_udata4:
		v = (uintptr_t)fixed(r, 4);
		break;
	case DW_EH_PE_sdata4:
		v = (uintptr_t)(int64_t)(int32_t)fixed(r, 4);
		break;
	case DW_EH_PE_udata2:
		v = (uintptr_t)fixed(r, 2);
		break;
	case DW_EH_PE_sdata2:
		v = (uintptr_t)(int64_t)(int16_t)fixed(r, 2);
		break;
	case DW_EH_PE_uleb128:
		v = (uintptr_t)uleb(r);
		break;
	case DW_EH_PE_sleb128:
		v = (uintptr_t)sleb(r);
		break;
	default:
		r->bad = 1;
		return 0;
	}
	switch (enc & 0x70) {
	case 0:
		break;
	case DW_EH_PE_pcrel:
		v += (uintptr_t)at;
		break;
	case DW_EH_PE_datarel:
		v += dbase;
		break;
	default:
		r->bad = 1;
	}
	return v;
}

/* enc_size - bytes of a fixed-size encoding (skipping a personality pointer). */
static int skip_enc(struct rd *r, uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		fixed(r, 8);
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		fixed(r, 4);
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		fixed(r, 2);
		break;
	case DW_EH_PE_uleb128:
		uleb(r);
		break;
	case DW_EH_PE_sleb128:
		sleb(r);
		break;
	default:
		r->bad = 1;
	}
	return r->bad ? -1 : 0;
}

/* The rule state the instructions change. */
struct state {
	int cfa_reg;	/* DW_RSP, DW_RBP, or -1: unsupported */
	int64_t cfa_off;
	int ra_how;	/* 0 undefined (end of stack), 1 at CFA + ra_off, -1 unsupported */
	int64_t ra_off;
	int rbp_how;	/* 0 unchanged, 1 at CFA + rbp_off, -1 unsupported */
	int64_t rbp_off;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int signal;
	const uint8_t *insn, *insn_end;
};

static int parse_cie(const uint8_t *cie, const uint8_t *limit, struct cie *c)
{
	struct rd r = { cie, limit, 0 };
	uint32_t len = (uint32_t)fixed(&r, 4);
	const char *aug;
	uint8_t version;
	int z = 0;

	if (r.bad || len == 0xffffffffu || len > (size_t)(limit - r.p) || len < 4)
		return -1;
	r.end = r.p + len;
	if (fixed(&r, 4) != 0) /* CIE id */
		return -1;
	version = (uint8_t)fixed(&r, 1);
	if (version != 1 && version != 3)
		return -1;
	aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p >= r.end)
		return -1;
	r.p++;
	c->code_align = uleb(&r);
	c->data_align = sleb(&r);
	c->ra_reg = version == 1 ? fixed(&r, 1) : uleb(&r);
	c->fde_enc = DW_EH_PE_absptr;
	c->signal = 0;
	if (aug[0] == 'z') {
		uint64_t alen = uleb(&r);
		const uint8_t *aend;

		if (r.bad || alen > (size_t)(r.end - r.p))
			return -1;
		aend = r.p + alen;
		z = 1;
		for (const char *a = aug + 1; *a; a++) {
			if (*a == 'R') {
				c->fde_enc = (uint8_t)fixed(&r, 1);
			} else if (*a == 'P') {
				uint8_t penc = (uint8_t)fixed(&r, 1);

				if (skip_enc(&r, penc) < 0)
					return -1;
			} else if (*a == 'L') {
				fixed(&r, 1);
			} else if (*a == 'S') {
				c->signal = 1;
			} else {
				break; /* unknown letter: the length tells where data ends */
			}
		}
		r.p = aend;
	} else if (aug[0] != '\0') {
		return -1;
	}
	(void)z;
	if (r.bad)
		return -1;
	c->insn = r.p;
	c->insn_end = r.end;
	return 0;
}

/* set_reg - a register saved at CFA + off (how = 1) or unsupported (how = -1). */
static void set_reg(struct state *s, uint64_t reg, int how, int64_t off)
{
	if (reg == DW_RA) {
		s->ra_how = how;
		s->ra_off = off;
	} else if (reg == DW_RBP) {
		s->rbp_how = how;
		s->rbp_off = off;
	}
}

/* restore_reg - a register's rule back to the CIE's (DW_CFA_restore). */
static void restore_reg(struct state *s, uint64_t reg, const struct state *init)
{
	if (reg == DW_RA)
		s->ra_how = init->ra_how, s->ra_off = init->ra_off;
	else if (reg == DW_RBP)
		s->rbp_how = init->rbp_how, s->rbp_off = init->rbp_off;
}

/* cfa_reg - DW_RSP or DW_RBP as given, any other register unsupported (-1) */
static int cfa_reg(uint64_t reg)
{
	return (reg == DW_RSP || reg == DW_RBP) ? (int)reg : -1;
}

/*
 * cfa_op - one instruction that defines the CFA (register and offset).
 * Returns 1 if op is one, else 0 (nothing read).
 */
static int cfa_op(struct rd *r, uint8_t op, const struct cie *c, struct state *s)
{
	switch (op) {
	case DW_CFA_def_cfa:
		s->cfa_reg = cfa_reg(uleb(r));
		s->cfa_off = (int64_t)uleb(r);
		return 1;
	case DW_CFA_def_cfa_register:
		s->cfa_reg = cfa_reg(uleb(r));
		return 1;
	case DW_CFA_def_cfa_offset:
		s->cfa_off = (int64_t)uleb(r);
		return 1;
	case DW_CFA_def_cfa_sf:
		s->cfa_reg = cfa_reg(uleb(r));
		s->cfa_off = sleb(r) * c->data_align;
		return 1;
	case DW_CFA_def_cfa_offset_sf:
		s->cfa_off = sleb(r) * c->data_align;
		return 1;
	default:
		return 0;
	}
}

/*
 * reg_op - one instruction that sets a register's rule (the extended
 * forms; the compact DW_CFA_offset and DW_CFA_restore are run's). Returns 1
 * if op is one, 0 if not (nothing read), -1 on bad input.
 */
static int reg_op(struct rd *r, uint8_t op, const struct cie *c, struct state *s,
		  const struct state *init)
{
	uint64_t reg, n;

	switch (op) {
	case DW_CFA_offset_extended:
		reg = uleb(r);
		set_reg(s, reg, 1, (int64_t)uleb(r) * c->data_align);
		return 1;
	case DW_CFA_offset_extended_sf:
		reg = uleb(r);
		set_reg(s, reg, 1, sleb(r) * c->data_align);
		return 1;
	case DW_CFA_GNU_negative_offset_extended:
		reg = uleb(r);
		set_reg(s, reg, 1, -(int64_t)uleb(r) * c->data_align);
		return 1;
	case DW_CFA_restore_extended:
		restore_reg(s, uleb(r), init);
		return 1;
	case DW_CFA_undefined:
		reg = uleb(r);
		if (reg == DW_RA)
			s->ra_how = 0;
		else if (reg == DW_RBP)
			s->rbp_how = -1;
		return 1;
	case DW_CFA_same_value:
		reg = uleb(r);
		if (reg == DW_RBP)
			s->rbp_how = 0;
		else if (reg == DW_RA)
			s->ra_how = -1;
		return 1;
	case DW_CFA_register:
		reg = uleb(r);
		uleb(r);
		set_reg(s, reg, -1, 0);
		return 1;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		reg = uleb(r);
		n = uleb(r);
		if (n > (uint64_t)(r->end - r->p))
			return -1;
		r->p += n;
		set_reg(s, reg, -1, 0);
		return 1;
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
		reg = uleb(r);
		if (op == DW_CFA_val_offset)
			uleb(r);
		else
			sleb(r);
		set_reg(s, reg, -1, 0);
		return 1;
	default:
		return 0;
	}
}

/*
 * run - execute instructions [p, end) from loc, stopping past pc. init is
 * the CIE's resulting state (for DW_CFA_restore). Returns 0, -1 on bad input.
 */
static int run(const uint8_t *p, const uint8_t *end, const struct cie *c, uintptr_t loc,
	       uintptr_t pc, struct state *s, const struct state *init)
{
	struct state stack[STACK_DEPTH];
	int depth = 0, rc;
	struct rd r = { p, end, 0 };

	while (r.p < r.end && !r.bad) {
		uint8_t op = *r.p++;
		uint64_t delta = 0;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			delta = (op & 0x3f) * c->code_align;
			goto advance;
		case DW_CFA_offset:
			set_reg(s, op & 0x3f, 1, (int64_t)uleb(&r) * c->data_align);
			continue;
		case DW_CFA_restore:
			restore_reg(s, op & 0x3f, init);
			continue;
		default:
			break;
		}
		switch (op) {
		case DW_CFA_nop:
			continue;
		case DW_CFA_GNU_args_size:
			uleb(&r);
			continue;
		case DW_CFA_advance_loc1:
			delta = fixed(&r, 1) * c->code_align;
			goto advance;
		case DW_CFA_advance_loc2:
			delta = fixed(&r, 2) * c->code_align;
			goto advance;
		case DW_CFA_advance_loc4:
			delta = fixed(&r, 4) * c->code_align;
			goto advance;
		case DW_CFA_remember_state:
			if (depth == STACK_DEPTH)
				return -1;
			stack[depth++] = *s;
			continue;
		case DW_CFA_restore_state:
			if (depth == 0)
				return -1;
			*s = stack[--depth]; /* the whole rule set, CFA included, as libgcc does */
			continue;
		case DW_CFA_def_cfa_expression: /* not followed */
			s->cfa_reg = -1;
			return 0;
		default:
			break;
		}
		rc = cfa_op(&r, op, c, s);
		if (!rc)
			rc = reg_op(&r, op, c, s, init);
		if (rc <= 0)
			return -1; /* bad input; or DW_CFA_set_loc and unknown: give up */
		continue;
advance:
		loc += delta;
		if (loc > pc)
			return 0;
	}
	return r.bad ? -1 : 0;
}

int trk_cfi_rule(uintptr_t pc, struct trk_rule *out)
{
	struct dl_find_object fo;
	const uint8_t *hdr, *table, *fde, *cie, *limit;
	uintptr_t lo_loc, loc, range;
	struct state init = { .cfa_reg = -1, .ra_how = -1, .rbp_how = 0 }, s;
	struct cie c;
	struct rd r;
	uint64_t count, lo, hi;
	uint32_t flen;
	int32_t cie_off;

	/* in no module (JIT code, anonymous memory) or a module without .eh_frame_hdr */
	out->cfa_reg = TRK_CFA_CUT;
	if (_dl_find_object((void *)pc, &fo) != 0 || !fo.dlfo_eh_frame)
		return 0;
	out->cfa_reg = TRK_CFA_NONE;
	hdr = fo.dlfo_eh_frame;
	/* version 1, eh_frame_ptr any, fde_count udata4, table datarel|sdata4 */
	if (hdr[0] != 1 || hdr[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return 0;
	r = (struct rd){ hdr + 4, hdr + 4 + 16, 0 };
	enc_ptr(&r, hdr[1], (uintptr_t)hdr);
	count = enc_ptr(&r, hdr[2], (uintptr_t)hdr);
	if (r.bad)
		return 0;
	if (count == 0)
		goto cut;
	table = r.p;
	/* last entry with initial location <= pc */
	lo = 0;
	hi = count;
	while (hi - lo > 1) {
		uint64_t mid = (lo + hi) / 2;
		int32_t l;

		memcpy(&l, table + mid * 8, 4);
		if ((uintptr_t)hdr + (intptr_t)l <= pc)
			lo = mid;
		else
			hi = mid;
	}
	{
		int32_t l, f;

		memcpy(&l, table + lo * 8, 4);
		memcpy(&f, table + lo * 8 + 4, 4);
		lo_loc = (uintptr_t)hdr + (intptr_t)l;
		fde = hdr + f;
	}
	if (lo_loc > pc)
		goto cut; /* before the first FDE */
	/* The FDE: length, CIE pointer, pc_begin, pc_range, [aug], instructions */
	memcpy(&flen, fde, 4);
	if (flen == 0 || flen == 0xffffffffu || flen > (1u << 24))
		return 0;
	limit = fde + 4 + flen;
	memcpy(&cie_off, fde + 4, 4);
	if (cie_off <= 0)
		return 0;
	cie = fde + 4 - cie_off;
	/* the CIE precedes its FDEs; its length bounds it */
	if (parse_cie(cie, fde, &c) < 0 || c.signal || c.ra_reg != DW_RA)
		return 0;
	r = (struct rd){ fde + 8, limit, 0 };
	loc = enc_ptr(&r, c.fde_enc, 0);
	range = enc_ptr(&r, c.fde_enc & 0x0f, 0);
	if (r.bad)
		return 0;
	if (pc < loc || pc - loc >= range)
		goto cut; /* between FDEs: code without unwind info */
	if (c.insn_end > fde) /* CIE data cannot overlap the FDE */
		return 0;
	/* augmentation data of the FDE ('z' in the CIE: a length first) */
	if (cie[9] == 'z') {
		uint64_t alen = uleb(&r);

		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return 0;
		r.p += alen;
	}
	if (run(c.insn, c.insn_end, &c, loc, UINTPTR_MAX, &init, &init) < 0)
		return 0;
	s = init;
	if (run(r.p, limit, &c, loc, pc, &s, &init) < 0)
		return 0;
	if (s.cfa_reg < 0 || s.ra_how < 0 || s.rbp_how < 0)
		return 0;
	if (s.cfa_off < 0 || s.cfa_off > (1 << 30))
		return 0;
	out->cfa_reg = s.cfa_reg == DW_RSP ? TRK_CFA_RSP : TRK_CFA_RBP;
	out->cfa_off = (int32_t)s.cfa_off;
	out->ra_off = s.ra_how == 0 ? 0 : (int32_t)s.ra_off; /* 0: end of the stack */
	out->rbp_off = s.rbp_how == 0 ? 0 : (int32_t)s.rbp_off;
	if (s.ra_how == 1 && (s.ra_off >= 0 || s.ra_off < -4096))
		out->cfa_reg = TRK_CFA_NONE;
	if (s.rbp_how == 1 && (s.rbp_off >= 0 || s.rbp_off < -4096))
		out->cfa_reg = TRK_CFA_NONE;
	return 0;
cut:
	out->cfa_reg = TRK_CFA_CUT;
	return 0;
}
