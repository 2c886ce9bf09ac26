/* pyframes/pyframes.h - Python frames in the native stacks of a running CPython */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target, linked into libheaptap_preload.so and
 * libheaptap_inject.so beside track/. pyf_start looks for a CPython in the
 * process and, when its version has a layout in this build (layout.h) and
 * the running binary agrees with it, registers a foreign-frame producer
 * with track/ (trk_xframe_set_producer): for every recorded stack that
 * passes through the interpreter's evaluation loop, the producer reads the
 * calling thread's own frame chain (no Python API, no GIL, no allocation,
 * no lock) and puts the Python frames it ran (function, file, line) in
 * front of each `_PyEval_EvalFrameDefault` frame of the native stack.
 * docs/python.md says how it works and what it costs.
 */
#ifndef HEAPTAP_PYFRAMES_PYFRAMES_H
#define HEAPTAP_PYFRAMES_PYFRAMES_H

#include <stdbool.h>

/* pyf_start flags */
#define PYF_OFF 1u	     /* Python frames not wanted (heaptap --no-python-frames) */
#define PYF_FAKE_VERSION 2u /* fault injection (tests): take the interpreter as CPython 3.99 */

/*
 * pyf_start - after trk_start, in the thread that started the session (not
 * a hook): find CPython, check it, register the producer (once per
 * process; it stays for later sessions). A CPython this build cannot read
 * gets one WIRE_REC_LOG warning ("python frames: CPython X.Y not
 * supported, native stacks only") and native stacks; a process without
 * CPython gets nothing at all. Returns whether Python frames are recorded.
 */
bool pyf_start(unsigned flags);

#endif /* HEAPTAP_PYFRAMES_PYFRAMES_H */
