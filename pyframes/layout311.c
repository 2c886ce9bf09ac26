/* pyframes/layout311.c - CPython 3.11's layout, from python3.11-dev's own headers */
/* SPDX-License-Identifier: MIT */
/*
 * Built with -isystem <python3.11 include dir> when CMake found
 * internal/pycore_frame.h there (HEAPTAP_PY311); without it the table is
 * empty and every interpreter gets native stacks only.
 */
#include "pyframes/layout.h"

#ifdef HEAPTAP_PY311
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION != 11
#error "layout311.c needs CPython 3.11's headers"
#endif

static struct pyf_layout layout311 = {
	.version_hex = PY_VERSION_HEX,
	.runtime_size = sizeof(_PyRuntimeState),
	.code_basicsize = offsetof(PyCodeObject, co_code_adaptive), /* PyCode_Type.tp_basicsize */
	.rt_tss_init = offsetof(_PyRuntimeState, gilstate.autoTSSkey._is_initialized),
	.rt_tss_key = offsetof(_PyRuntimeState, gilstate.autoTSSkey._key),
	.rt_tstate_current = offsetof(_PyRuntimeState, gilstate.tstate_current),
	.rt_interp_head = offsetof(_PyRuntimeState, interpreters.head),
	.rt_interp_main = offsetof(_PyRuntimeState, interpreters.main),
	.is_next = offsetof(PyInterpreterState, next),
	.is_threads_head = offsetof(PyInterpreterState, threads.head),
	.ts_next = offsetof(PyThreadState, next),
	.ts_cframe = offsetof(PyThreadState, cframe),
	.ts_chunk = offsetof(PyThreadState, datastack_chunk),
	.ts_top = offsetof(PyThreadState, datastack_top),
	.ts_thread_id = offsetof(PyThreadState, thread_id),
	.ts_root_cframe = offsetof(PyThreadState, root_cframe),
	.cf_current_frame = offsetof(_PyCFrame, current_frame),
	.ch_previous = offsetof(_PyStackChunk, previous),
	.ch_size = offsetof(_PyStackChunk, size),
	.ch_top = offsetof(_PyStackChunk, top),
	.ch_data = offsetof(_PyStackChunk, data),
	.fr_code = offsetof(_PyInterpreterFrame, f_code),
	.fr_previous = offsetof(_PyInterpreterFrame, previous),
	.fr_prev_instr = offsetof(_PyInterpreterFrame, prev_instr),
	.fr_is_entry = offsetof(_PyInterpreterFrame, is_entry),
	.fr_owner = offsetof(_PyInterpreterFrame, owner),
	.fr_head = offsetof(_PyInterpreterFrame, localsplus),
	.owned_by_generator = FRAME_OWNED_BY_GENERATOR,
	.ob_type = offsetof(PyObject, ob_type),
	.ob_size = offsetof(PyVarObject, ob_size),
	.tp_basicsize = offsetof(PyTypeObject, tp_basicsize),
	.co_filename = offsetof(PyCodeObject, co_filename),
	.co_qualname = offsetof(PyCodeObject, co_qualname),
	.co_linetable = offsetof(PyCodeObject, co_linetable),
	.co_firstlineno = offsetof(PyCodeObject, co_firstlineno),
	.co_firsttraceable = offsetof(PyCodeObject, _co_firsttraceable),
	.co_code = offsetof(PyCodeObject, co_code_adaptive),
	.by_sval = offsetof(PyBytesObject, ob_sval),
	.u_length = offsetof(PyASCIIObject, length),
	.u_state = offsetof(PyASCIIObject, state),
	.u_ascii_size = sizeof(PyASCIIObject),
	.u_compact_size = sizeof(PyCompactUnicodeObject),
};

/* state_word - PyASCIIObject.state with one bit-field set, as the 32-bit word it is in memory. */
#define STATE_WORD(field, val)                                                                    \
	(__extension__({                                                                          \
		union {                                                                           \
			__typeof__(((PyASCIIObject *)0)->state) s;                                \
			uint32_t w;                                                               \
		} u_ = { .w = 0 };                                                                \
		u_.s.field = (val);                                                               \
		u_.w;                                                                             \
	}))

const struct pyf_layout *pyf_layout_find(unsigned major, unsigned minor)
{
	if (major != PY_MAJOR_VERSION || minor != PY_MINOR_VERSION)
		return NULL;
	/* the bit-fields' masks: no constant expression gives them */
	layout311.st_kind_mask = STATE_WORD(kind, 7);
	layout311.st_kind_shift = (uint32_t)__builtin_ctz(layout311.st_kind_mask);
	layout311.st_compact_bit = STATE_WORD(compact, 1);
	layout311.st_ascii_bit = STATE_WORD(ascii, 1);
	layout311.st_ready_bit = STATE_WORD(ready, 1);
	return &layout311;
}

_Static_assert(sizeof(((PyASCIIObject *)0)->state) == 4, "PyASCIIObject.state is one 32-bit word");
_Static_assert(sizeof(((PyCodeObject *)0)->co_firstlineno) == 4, "co_firstlineno is an int");
_Static_assert(sizeof(((PyCodeObject *)0)->_co_firsttraceable) == 4, "_co_firsttraceable is an int");
_Static_assert(sizeof(_Py_CODEUNIT) == 2, "a code unit is 2 bytes");
_Static_assert(sizeof(Py_tss_t) == 8 && sizeof(pthread_key_t) == 4, "Py_tss_t: int + pthread_key_t");

#else
const struct pyf_layout *pyf_layout_find(unsigned major, unsigned minor)
{
	(void)major;
	(void)minor;
	return NULL;
}
#endif
