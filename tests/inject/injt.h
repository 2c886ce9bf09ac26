/* tests/inject/injt.h - the known allocation pattern of the inject test target */
/* SPDX-License-Identifier: MIT */
/*
 * Sizes are distinct so the driver (tests/unit/check_inject.c) can find
 * each group in the recording by size alone, then check its function.
 */
#ifndef HEAPTAP_TESTS_INJT_H
#define HEAPTAP_TESTS_INJT_H

#define INJT_PRE_N 10 /* allocated before the attach, freed after it */
#define INJT_PRE_SZ 5555

#define INJT_OWN_N 4 /* target's own code: 4 x malloc, 1 freed */
#define INJT_OWN_SZ 2222
#define INJT_OWN_VSZ 7777 /* one valloc: its slot was never bound before */

#define INJT_RELRO_N 3 /* -fno-plt / full RELRO library: 3 kept + 1 freed */
#define INJT_RELRO_SZ 1111
#define INJT_RELRO_CN 7 /* and calloc(7, 333), kept */
#define INJT_RELRO_CSZ 333

#define INJT_LATE_N 5 /* library dlopen'ed after the start: 5 x malloc */
#define INJT_LATE_SZ 3333
#define INJT_LATE_RSZ 4444 /* then the first one realloc'ed to this */

#define INJT_CHURN_SZ 48 /* two threads allocate and free this all the time */

void injt_relro_alloc(void);
void injt_relro_churn(void);
void injt_relro_warm(void);
void injt_late_alloc(void);

#endif /* HEAPTAP_TESTS_INJT_H */
