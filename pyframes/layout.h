/* pyframes/layout.h - where CPython keeps what the frame reader reads, per supported version */
/* SPDX-License-Identifier: MIT */
/*
 * Offsets and sizes taken from the interpreter's own headers at build time
 * (layout311.c includes python3.11-dev's internal headers with
 * Py_BUILD_CORE). The reader never includes Python.h itself: it reads the
 * running interpreter's memory through these numbers only, after the
 * checks in detect.c said the running binary has this layout.
 */
#ifndef HEAPTAP_PYFRAMES_LAYOUT_H
#define HEAPTAP_PYFRAMES_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

struct pyf_layout {
	uint32_t version_hex;	 /* PY_VERSION_HEX of the headers (major.minor must match) */
	uint64_t runtime_size;	 /* sizeof(_PyRuntimeState): the symbol's st_size */
	uint64_t code_basicsize; /* PyCode_Type.tp_basicsize: the code object up to its bytecode */

	/* _PyRuntimeState */
	uint32_t rt_tss_init, rt_tss_key; /* gilstate.autoTSSkey: _is_initialized, _key */
	uint32_t rt_tstate_current;	  /* gilstate.tstate_current (the GIL holder's) */
	uint32_t rt_interp_head, rt_interp_main;
	/* PyInterpreterState */
	uint32_t is_next, is_threads_head;
	/* PyThreadState */
	uint32_t ts_next, ts_cframe, ts_chunk, ts_top, ts_thread_id, ts_root_cframe;
	/* _PyCFrame */
	uint32_t cf_current_frame;
	/* _PyStackChunk */
	uint32_t ch_previous, ch_size, ch_top, ch_data;
	/* _PyInterpreterFrame: the fields read, and the size of the part read */
	uint32_t fr_code, fr_previous, fr_prev_instr, fr_is_entry, fr_owner, fr_head;
	uint8_t owned_by_generator;
	/* PyObject / PyVarObject */
	uint32_t ob_type, ob_size;
	/* PyTypeObject */
	uint32_t tp_basicsize;
	/* PyCodeObject */
	uint32_t co_filename, co_qualname, co_linetable, co_firstlineno, co_firsttraceable, co_code;
	/* PyBytesObject */
	uint32_t by_sval;
	/* PyASCIIObject, PyCompactUnicodeObject */
	uint32_t u_length, u_state, u_ascii_size, u_compact_size;
	uint32_t st_kind_mask, st_kind_shift, st_compact_bit, st_ascii_bit, st_ready_bit;
};

/*
 * pyf_layout_find - the layout of CPython major.minor, or NULL when this
 * build has none (its headers were not there at build time). Not from a
 * hook: the first call fills in the bit-field masks.
 */
const struct pyf_layout *pyf_layout_find(unsigned major, unsigned minor)
	__attribute__((visibility("hidden")));

#endif /* HEAPTAP_PYFRAMES_LAYOUT_H */
