/* tests/unit/check_jvm_walk.c - Check suite for jvm/walk.c: HotSpot's physical frames on a made-up JVM */
/* SPDX-License-Identifier: MIT */
/*
 * A code heap with its segment map and one nmethod (two scopes: a method
 * inlined into the nmethod's own), an interpreter range, a call stub, and
 * a thread stack laid out as HotSpot lays it out: the compiled frame the
 * native walk was cut at, an interpreted caller, the call stub. The layout
 * offsets are this file's own (jvm_walk takes them from struct jvm_vm, as
 * vmstructs.c fills it from the JVM). With every frame matching, the
 * Java frames come out with their kinds and the stack ends where the
 * native frames outer to the call stub cannot be walked; with any one
 * thing wrong, jvm_walk writes nothing and returns 0.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/lib/check_fixture.h"
#include "jvm/agent_internal.h"
#include "track/buf_internal.h"
#include "track/internal.h"

/* The made-up CodeBlob/nmethod: the walker reads it through the offsets in struct jvm_vm. */
struct fblob {
	int32_t size, frame_size;
	uintptr_t code_begin, code_end;
	const char *name;
	uintptr_t method, scopes_data;
	int32_t comp_level, pcs, deps, metadata;
};
struct fpc {
	int32_t pc_offset, scope, obj, flags;
};

#define HEAP (1u << 16)
#define LOG2_SEG 6
#define M_INNER 0x1000u
#define M_OUTER 0x2000u
#define M_CALLER 0x3000u
#define INTERP 0x70000000u
#define CALL_STUB_RA 0x71000000u

static char names[64] = "nmethod";
static uint8_t *heap;
static uintptr_t heap_high;
static uint8_t segmap[HEAP >> LOG2_SEG];
static struct fblob *blob;
static uintptr_t stk[512] __attribute__((aligned(16)));
static uintptr_t jm_inner = M_INNER, jm_outer = M_OUTER, jm_caller = M_CALLER; /* what jmethodIDs point to */
static struct jvm_asgct_frame fr[4];
static struct jvm_hook hook;
static struct trk_thr *thr;
static uintptr_t ra_c; /* the return address into the nmethod */

static void setup(void)
{
	struct jvm_vm *vm = &hook.layout;
	uint8_t *b, *sd;
	struct fpc *pc;

	heap = mmap(NULL, HEAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(heap, MAP_FAILED);
	heap_high = (uintptr_t)heap + HEAP;
	memset(segmap, 0xff, sizeof(segmap));
	/* one block of 1 KiB from segment 0: the map says how far back each segment's block starts */
	for (unsigned i = 0; i < 1024 >> LOG2_SEG; i++)
		segmap[i] = (uint8_t)i;
	heap[8] = 1; /* HeapBlock::_header._used */
	b = heap + 16;
	blob = (struct fblob *)b;
	*blob = (struct fblob){ .size = 1000, .frame_size = 4, .code_begin = (uintptr_t)b + 128,
				.code_end = (uintptr_t)b + 256, .name = names, .method = M_OUTER,
				.scopes_data = (uintptr_t)b + 272, .comp_level = 4, .pcs = 320, .deps = 368,
				.metadata = 256 };
	((uintptr_t *)(b + 256))[0] = M_OUTER; /* metadata index 1 */
	((uintptr_t *)(b + 256))[1] = M_INNER; /* index 2 */
	sd = b + 272;
	/* offset 0 is the null scope; at 1 the outer one (sender 0, method 1, bci), at 4 the inner one */
	memcpy(sd, (const uint8_t[]){ 0, 0, 1, 6, 1, 2, 4 }, 7);
	pc = (struct fpc *)(b + 320);
	pc[0] = (struct fpc){ -1, 0, 0, 0 };
	pc[1] = (struct fpc){ 0x20, 4, 0, 0 };
	pc[2] = (struct fpc){ 0x40, 1, 0, 0 };
	ra_c = blob->code_begin + 0x20;

	memset(vm, 0, sizeof(*vm));
	vm->ok = 1;
	vm->nheaps = 1;
	vm->heap[0] = (struct jvm_heap){ .high_at = (uintptr_t)&heap_high, .low = (uintptr_t)heap,
					 .segmap = (uintptr_t)segmap, .log2_seg = LOG2_SEG };
	vm->cc_lo = (uintptr_t)heap;
	vm->cc_hi = (uintptr_t)heap + HEAP;
	vm->interp_lo = INTERP;
	vm->interp_hi = INTERP + 0x1000;
	vm->call_stub_ra = CALL_STUB_RA;
	vm->nsegs = 1;
	vm->seg[0].lo = (uintptr_t)names;
	vm->seg[0].hi = (uintptr_t)names + sizeof(names);
	vm->hb_size = 16;
	vm->hb_used = 8;
	vm->cb_size = offsetof(struct fblob, size);
	vm->cb_frame_size = offsetof(struct fblob, frame_size);
	vm->cb_code_begin = offsetof(struct fblob, code_begin);
	vm->cb_code_end = offsetof(struct fblob, code_end);
	vm->cb_name = offsetof(struct fblob, name);
	vm->cm_method = offsetof(struct fblob, method);
	vm->cm_scopes_data = offsetof(struct fblob, scopes_data);
	vm->nm_comp_level = offsetof(struct fblob, comp_level);
	vm->nm_pcs = offsetof(struct fblob, pcs);
	vm->nm_deps = offsetof(struct fblob, deps);
	vm->nm_metadata = offsetof(struct fblob, metadata);
	vm->nm_size = sizeof(struct fblob);
	vm->pc_size = sizeof(struct fpc);
	vm->pc_offset = offsetof(struct fpc, pc_offset);
	vm->pc_scope = offsetof(struct fpc, scope);
	hook.table = mmap(NULL, sizeof(*hook.table), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(hook.table, MAP_FAILED);
	atomic_store(&hook.table->next_id, 1);

	/* the stack: the nmethod's frame at stk[16] (4 words), the interpreted caller on rbp stk[40], the call stub on stk[60] */
	memset(stk, 0, sizeof(stk));
	stk[19] = INTERP + 0x100;	   /* the nmethod's return address: into the interpreter */
	stk[18] = (uintptr_t)&stk[40];	   /* its saved rbp: the interpreted frame's */
	stk[37] = M_CALLER;		   /* Method* at rbp - 3 words */
	stk[39] = (uintptr_t)&stk[44];	   /* the caller's sp at rbp - 1 word */
	stk[40] = (uintptr_t)&stk[60];	   /* saved rbp: the call stub's */
	stk[41] = CALL_STUB_RA;		   /* return address */
	stk[60] = 0;			   /* past the call stub: nothing the native walk can step */
	stk[61] = 0;
	fr[0] = (struct jvm_asgct_frame){ 3, (jmethodID)&jm_inner };
	fr[1] = (struct jvm_asgct_frame){ 5, (jmethodID)&jm_outer };
	fr[2] = (struct jvm_asgct_frame){ 7, (jmethodID)&jm_caller };
	fr[3] = (struct jvm_asgct_frame){ 9, (jmethodID)&jm_caller };

	thr = calloc(1, sizeof(*thr));
	ck_assert_ptr_nonnull(thr);
	thr->cut_ok = 1;
	thr->cut_ra = ra_c;
	thr->cut_sp = (uintptr_t)&stk[16];
	thr->cut_rbp = 0x5a5a; /* compiled code keeps what it likes in rbp */
	thr->stack_lo = (uintptr_t)stk;
	thr->stack_hi = (uintptr_t)&stk[512];
	trk_tls_thr = thr;
}

static void teardown(void)
{
	trk_tls_thr = NULL;
	free(thr);
	munmap(hook.table, sizeof(*hook.table));
	munmap(heap, HEAP);
}

/* The kind (enum wire_xkind) and method of the frame at ip, from the table. */
static unsigned kind_of(uintptr_t ip, uintptr_t *method)
{
	uint32_t id = (uint32_t)(ip & ~WIRE_XFRAME_BIT), at;

	ck_assert(ip & WIRE_XFRAME_BIT);
	at = atomic_load(&hook.table->by_id[id]);
	ck_assert_uint_ne(at, 0);
	*method = (uintptr_t)atomic_load(&hook.table->slot[at - 1].method);
	return jvm_key_kind(atomic_load(&hook.table->slot[at - 1].key));
}

static void doubt_n(int nfr);

/* jvm_walk on the cut stack [0x11, 0x22, ra_c - 1, CUT]: its count, the stack in ips. */
static size_t walk(int nfr, int truncated, uintptr_t *ips)
{
	thr->cut_ra = ra_c;
	ips[0] = 0x11;
	ips[1] = 0x22;
	ips[2] = ra_c - 1;
	ips[3] = WIRE_IP_CUT;
	return jvm_walk(&hook, fr, nfr, truncated, ips, 4, 64);
}

START_TEST(kinds_and_end)
{
	uintptr_t ips[64], m;
	size_t n = walk(3, 0, ips);

	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(ips[0], 0x11);
	ck_assert_uint_eq(ips[1], 0x22);
	ck_assert_uint_eq(kind_of(ips[2], &m), WIRE_XKIND_INLINED_C2);
	ck_assert_uint_eq(m, (uintptr_t)&jm_inner);
	ck_assert_uint_eq(kind_of(ips[3], &m), WIRE_XKIND_COMPILED_C2);
	ck_assert_uint_eq(m, (uintptr_t)&jm_outer);
	ck_assert_uint_eq(kind_of(ips[4], &m), WIRE_XKIND_INTERPRETED);
	ck_assert_uint_eq(m, (uintptr_t)&jm_caller);
	/* past the call stub the native walk could not go on: the stack says it is cut */
	ck_assert_uint_eq(ips[5], WIRE_IP_CUT);
	/* C1 code: the same frames, the C1 kinds (new ids) */
	blob->comp_level = 3;
	ck_assert_uint_eq(walk(3, 0, ips), 6);
	ck_assert_uint_eq(kind_of(ips[2], &m), WIRE_XKIND_INLINED_C1);
	ck_assert_uint_eq(kind_of(ips[3], &m), WIRE_XKIND_COMPILED_C1);
}
END_TEST

START_TEST(truncated_trace)
{
	uintptr_t ips[64], m;

	/* AsyncGetCallTrace had room for two frames only: cut after them */
	ck_assert_uint_eq(walk(2, 1, ips), 5);
	ck_assert_uint_eq(kind_of(ips[3], &m), WIRE_XKIND_COMPILED_C2);
	ck_assert_uint_eq(ips[4], WIRE_IP_CUT);
}
END_TEST

START_TEST(stub_first)
{
	uintptr_t ips[64], m;

	/* a runtime stub the JVM called through: stepped over by its frame size, no Java frame of its own */
	memcpy(names, "RuntimeStub", 12);
	fr[0] = fr[2];
	ck_assert_uint_eq(walk(1, 0, ips), 4);
	ck_assert_uint_eq(kind_of(ips[2], &m), WIRE_XKIND_INTERPRETED);
	ck_assert_uint_eq(m, (uintptr_t)&jm_caller);
	ck_assert_uint_eq(ips[3], WIRE_IP_CUT);
	/* but not between Java frames: the stub's "frame" after the interpreted one */
	stk[41] = ra_c;
	stk[40] = 0x5a5a;
	fr[1] = fr[2];
	doubt_n(2);
}
END_TEST

/* Each case: one thing wrong, nothing written. */
static void doubt(int nfr)
{
	doubt_n(nfr);
}

static void doubt_n(int nfr)
{
	uintptr_t ips[64];

	ck_assert_uint_eq(walk(nfr, 0, ips), 0);
	ck_assert_uint_eq(ips[2], ra_c - 1);
	ck_assert_uint_eq(ips[3], WIRE_IP_CUT);
}

START_TEST(doubts)
{
	doubt(4); /* a Java frame more than the physical frames hold */
	doubt(2); /* one fewer */
	stk[37] = M_OUTER; /* the interpreted frame's Method* is not its vframe's */
	doubt(3);
	stk[37] = M_CALLER;
	jm_inner = M_CALLER; /* the inlined scope's method is not the vframe's */
	doubt(3);
	jm_inner = M_INNER;
	blob->method = M_INNER; /* the outermost scope is not the nmethod's own method */
	doubt(3);
	blob->method = M_OUTER;
	ra_c += 8; /* no PcDesc at the return address */
	doubt(3);
	ra_c -= 8;
	blob->frame_size = 1 << 12; /* the caller's sp past the stack's top */
	doubt(3);
	blob->frame_size = 4;
	stk[18] = (uintptr_t)&stk[8]; /* the interpreted frame's rbp below the sp */
	doubt(3);
	stk[18] = (uintptr_t)&stk[40];
	segmap[0] = 0xff; /* a free segment */
	doubt(3);
	segmap[0] = 0;
	heap[8] = 0; /* a free block */
	doubt(3);
	heap[8] = 1;
	hook.layout.ok = 0; /* no layout */
	doubt(3);
	hook.layout.ok = 1;
	thr->cut_ok = 0; /* the native walk did not stop at JIT code */
	doubt(3);
	thr->cut_ok = 1;
	/* and all set right again, the walk works */
	{
		uintptr_t ips[64];

		ck_assert_uint_eq(walk(3, 0, ips), 6);
	}
}
END_TEST

static Suite *walk_suite(void)
{
	Suite *s = suite_create("jvm_walk");
	TCase *tc = tcase_create("walk");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, kinds_and_end);
	tcase_add_test(tc, truncated_trace);
	tcase_add_test(tc, stub_first);
	tcase_add_test(tc, doubts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(walk_suite());
}
