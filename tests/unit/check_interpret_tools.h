/* tests/unit/check_interpret_tools.h - check_interpret's command-line tools beside its suite */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_CHECK_INTERPRET_TOOLS_H
#define HEAPTAP_CHECK_INTERPRET_TOOLS_H

#include <stdint.h>

/* --bench EVENTS (file NULL) / --bench-gen EVENTS FILE: a synthetic stream, timed or written */
int bench_stream(uint64_t nev, const char *file);
/* --bench-run FILE: time itp_run on a stream written by --bench-gen */
int bench_file(const char *file);
/* --write-seeds DIR: the fuzz seed corpus (tests/data/stream/) */
int write_seeds(const char *dir);

#endif
