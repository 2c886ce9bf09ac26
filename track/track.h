/* track/track.h - the recording core that runs inside the target process */
/* SPDX-License-Identifier: MIT */
/*
 * Shared by preload/ (LD_PRELOAD) and, later, inject/ (runtime attach).
 * Hooks capture the call stack, find or add it in the process-wide trace
 * tree, and append events (track/wire.h) to a per-thread buffer that is
 * written to the socket. Everything here runs in the target: it never
 * prints, never aborts, preserves errno, never allocates through the hooked
 * allocator (own mmap-backed memory) and never raises SIGPIPE.
 *
 * (The track/preload helper completes this header: struct trk_real with the
 * real allocator functions, trk_start/trk_stop, and the trk_* hooks.)
 */
#ifndef HEAPTAP_TRACK_H
#define HEAPTAP_TRACK_H

#include "track/wire.h"

#endif /* HEAPTAP_TRACK_H */
