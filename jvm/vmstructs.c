/* jvm/vmstructs.c - HotSpot's layout from the tables libjvm.so exports for the serviceability agent */
/* SPDX-License-Identifier: MIT */
/*
 * libjvm.so exports gHotSpotVMStructs (type, field, static or not, offset
 * or address) and gHotSpotVMTypes (type, size), with the strides and
 * member offsets of their entries in gHotSpotVMStruct*Offset variables;
 * each table ends with an entry whose type name is NULL. They are what the
 * JDK's own serviceability agent reads, and what make the frame walker
 * (walk.c) independent of one JDK build's offsets. Read once per attach,
 * in the Attach Listener thread (never in a hook); the static fields read
 * here (code heaps, interpreter, call stub) are set while the JVM starts
 * and keep their values afterwards. Any entry missing: the walker stays
 * off and the stacks are those of AsyncGetCallTrace alone.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "jvm/agent_internal.h"

/* The entry layout of gHotSpotVMStructs and gHotSpotVMTypes, from libjvm.so itself. */
struct tables {
	const char *structs, *types;
	size_t s_type, s_field, s_static, s_offset, s_address, s_stride;
	size_t t_type, t_size, t_stride;
};

static int sym_size(void *h, const char *name, size_t *out)
{
	const uint64_t *p = dlsym(h, name);

	if (!p)
		return -ENOENT;
	*out = (size_t)*p;
	return 0;
}

static int tables_of(void *h, struct tables *t)
{
	const char *const *ps = dlsym(h, "gHotSpotVMStructs"), *const *pt = dlsym(h, "gHotSpotVMTypes");

	if (!ps || !pt || !*ps || !*pt)
		return -ENOENT;
	t->structs = *ps;
	t->types = *pt;
	if (sym_size(h, "gHotSpotVMStructEntryTypeNameOffset", &t->s_type) ||
	    sym_size(h, "gHotSpotVMStructEntryFieldNameOffset", &t->s_field) ||
	    sym_size(h, "gHotSpotVMStructEntryIsStaticOffset", &t->s_static) ||
	    sym_size(h, "gHotSpotVMStructEntryOffsetOffset", &t->s_offset) ||
	    sym_size(h, "gHotSpotVMStructEntryAddressOffset", &t->s_address) ||
	    sym_size(h, "gHotSpotVMStructEntryArrayStride", &t->s_stride) ||
	    sym_size(h, "gHotSpotVMTypeEntryTypeNameOffset", &t->t_type) ||
	    sym_size(h, "gHotSpotVMTypeEntrySizeOffset", &t->t_size) ||
	    sym_size(h, "gHotSpotVMTypeEntryArrayStride", &t->t_stride) || !t->s_stride || !t->t_stride)
		return -ENOENT;
	return 0;
}

/*
 * The first entry of a table (entries stride bytes apart from e, ended by
 * one whose type name is NULL; the type name's pointer at type_at) whose
 * type name is type and, unless name is NULL, whose field name (its
 * pointer at name_at) is name; NULL when there is none.
 */
static const char *entry(const char *e, size_t stride, size_t type_at, const char *type, size_t name_at,
			 const char *name)
{
	for (;; e += stride) {
		const char *ty = *(const char *const *)(e + type_at);
		const char *fi = name ? *(const char *const *)(e + name_at) : NULL;

		if (!ty)
			return NULL;
		if (!strcmp(ty, type) && (!name || (fi && !strcmp(fi, name))))
			return e;
	}
}

/* The entry of type.field: its offset (non-static) or address (static) into *out. */
static int field(const struct tables *t, const char *type, const char *name, uintptr_t *out)
{
	const char *e = entry(t->structs, t->s_stride, t->s_type, type, t->s_field, name);

	if (!e)
		return -ENOENT;
	if (*(const int32_t *)(e + t->s_static))
		*out = (uintptr_t) * (void *const *)(e + t->s_address);
	else
		*out = (uintptr_t) * (const uint64_t *)(e + t->s_offset);
	return 0;
}

/* The size of type into *out. */
static int type_size(const struct tables *t, const char *type, size_t *out)
{
	const char *e = entry(t->types, t->t_stride, t->t_type, type, 0, NULL);

	if (!e)
		return -ENOENT;
	*out = (size_t) * (const uint64_t *)(e + t->t_size);
	return 0;
}

struct seg_arg {
	uintptr_t in; /* an address of libjvm.so */
	struct jvm_vm *vm;
};

/* The readable PT_LOAD segments (file-backed part) of the object that holds a->in. */
static int seg_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct seg_arg *a = arg;
	int mine = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a->in >= lo && a->in - lo < ph->p_memsz)
			mine = 1;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && a->vm->nsegs < JVM_SEGS_MAX; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		a->vm->seg[a->vm->nsegs].lo = info->dlpi_addr + ph->p_vaddr;
		a->vm->seg[a->vm->nsegs].hi = info->dlpi_addr + ph->p_vaddr + ph->p_filesz;
		a->vm->nsegs++;
	}
	return 1;
}

/* One name per needed entry, so that a miss says which. */
#define NEED(expr, what)                                                                               \
	do {                                                                                           \
		if ((expr) != 0) {                                                                     \
			snprintf(why, whylen, "%s", what);                                             \
			return -ENOENT;                                                                \
		}                                                                                      \
	} while (0)

static int offsets(const struct tables *t, struct jvm_vm *vm, char *why, size_t whylen)
{
	uintptr_t v;

	NEED(type_size(t, "HeapBlock", &vm->hb_size), "HeapBlock");
	NEED(field(t, "HeapBlock::Header", "_used", &v), "HeapBlock::Header::_used");
	vm->hb_used = v;
	NEED(field(t, "HeapBlock", "_header", &v), "HeapBlock::_header");
	vm->hb_used += v;
#define OFF(ty, fi, dst)                                                                               \
	do {                                                                                           \
		NEED(field(t, ty, fi, &v), ty "::" fi);                                                \
		(dst) = v;                                                                             \
	} while (0)
	OFF("CodeBlob", "_size", vm->cb_size);
	OFF("CodeBlob", "_frame_size", vm->cb_frame_size);
	OFF("CodeBlob", "_code_begin", vm->cb_code_begin);
	OFF("CodeBlob", "_code_end", vm->cb_code_end);
	OFF("CodeBlob", "_name", vm->cb_name);
	OFF("CompiledMethod", "_method", vm->cm_method);
	OFF("CompiledMethod", "_scopes_data_begin", vm->cm_scopes_data);
	OFF("nmethod", "_comp_level", vm->nm_comp_level);
	OFF("nmethod", "_scopes_pcs_offset", vm->nm_pcs);
	OFF("nmethod", "_dependencies_offset", vm->nm_deps);
	OFF("nmethod", "_metadata_offset", vm->nm_metadata);
	OFF("PcDesc", "_pc_offset", vm->pc_offset);
	OFF("PcDesc", "_scope_decode_offset", vm->pc_scope);
#undef OFF
	NEED(type_size(t, "nmethod", &vm->nm_size), "nmethod");
	NEED(type_size(t, "PcDesc", &vm->pc_size), "PcDesc");
	return vm->pc_size >= 8 && vm->hb_size ? 0 : -ENOENT;
}

/* The code heaps (CodeCache::_heaps), the interpreter and the call stub. */
static int places(const struct tables *t, struct jvm_vm *vm, char *why, size_t whylen)
{
	uintptr_t heaps_at, len_off, data_off, mem, segmap, log2, vs_low, vs_high, a, q, buf, lim;
	const uint8_t *arr;
	int len;

	NEED(field(t, "CodeCache", "_heaps", &heaps_at), "CodeCache::_heaps");
	NEED(field(t, "GrowableArrayBase", "_len", &len_off), "GrowableArrayBase::_len");
	NEED(field(t, "GrowableArray<int>", "_data", &data_off), "GrowableArray<int>::_data");
	NEED(field(t, "CodeHeap", "_memory", &mem), "CodeHeap::_memory");
	NEED(field(t, "CodeHeap", "_segmap", &segmap), "CodeHeap::_segmap");
	NEED(field(t, "CodeHeap", "_log2_segment_size", &log2), "CodeHeap::_log2_segment_size");
	NEED(field(t, "VirtualSpace", "_low", &vs_low), "VirtualSpace::_low");
	NEED(field(t, "VirtualSpace", "_high", &vs_high), "VirtualSpace::_high");
	arr = *(const uint8_t *const *)heaps_at;
	if (!arr)
		NEED(-1, "CodeCache::_heaps (empty)");
	len = *(const int *)(arr + len_off);
	for (int i = 0; i < len && vm->nheaps < JVM_HEAPS_MAX; i++) {
		const uint8_t *hp = (*(const uint8_t *const *const *)(arr + data_off))[i];
		struct jvm_heap *x = &vm->heap[vm->nheaps];

		if (!hp)
			continue;
		x->high_at = (uintptr_t)(hp + mem + vs_high);
		x->low = *(const uintptr_t *)(hp + mem + vs_low);
		x->segmap = *(const uintptr_t *)(hp + segmap + vs_low);
		x->log2_seg = (unsigned)*(const int *)(hp + log2);
		if (x->low && x->segmap && x->log2_seg >= 4 && x->log2_seg < 16)
			vm->nheaps++;
	}
	NEED(field(t, "CodeCache", "_low_bound", &a), "CodeCache::_low_bound");
	vm->cc_lo = *(const uintptr_t *)a;
	NEED(field(t, "CodeCache", "_high_bound", &a), "CodeCache::_high_bound");
	vm->cc_hi = *(const uintptr_t *)a;
	NEED(field(t, "StubRoutines", "_call_stub_return_address", &a),
	     "StubRoutines::_call_stub_return_address");
	vm->call_stub_ra = *(const uintptr_t *)a;
	NEED(field(t, "AbstractInterpreter", "_code", &a), "AbstractInterpreter::_code");
	NEED(field(t, "StubQueue", "_stub_buffer", &buf), "StubQueue::_stub_buffer");
	NEED(field(t, "StubQueue", "_buffer_limit", &lim), "StubQueue::_buffer_limit");
	q = *(const uintptr_t *)a;
	if (!q)
		NEED(-1, "AbstractInterpreter::_code (none)");
	vm->interp_lo = *(const uintptr_t *)(q + buf);
	vm->interp_hi = vm->interp_lo + (uintptr_t)*(const int *)(q + lim);
	if (!vm->nheaps || !vm->cc_lo || vm->cc_hi <= vm->cc_lo || !vm->call_stub_ra || !vm->interp_lo)
		NEED(-1, "the code cache (not set up)");
	return 0;
}

int jvm_vm_read(void *h, struct jvm_vm *vm, char *why, size_t whylen)
{
	struct tables t;
	struct seg_arg sa;
	void *sym;
	int ret;

	memset(vm, 0, sizeof(*vm));
	if (tables_of(h, &t) < 0) {
		snprintf(why, whylen, "gHotSpotVMStructs");
		return -ENOENT;
	}
	ret = offsets(&t, vm, why, whylen);
	if (ret == 0)
		ret = places(&t, vm, why, whylen);
	if (ret < 0)
		return ret;
	sym = dlsym(h, "gHotSpotVMStructs");
	sa.in = (uintptr_t)sym;
	sa.vm = vm;
	if (sym)
		dl_iterate_phdr(seg_cb, &sa);
	if (!vm->nsegs) {
		snprintf(why, whylen, "libjvm.so's segments");
		return -ENOENT;
	}
	vm->ok = 1;
	return 0;
}
