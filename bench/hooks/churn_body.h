/* bench/hooks/churn_body.h - the session service's churn loop body, one copy for churn.c and count.c */
/* SPDX-License-Identifier: MIT */
/*
 * tests/session/service.c's churn() without its WORK steps: 8 mallocs of
 * 16-520 bytes, a realloc, 8 frees, a calloc and its free (10 allocation
 * and 10 free events). A macro, not a function: each program makes these
 * calls from its own churn frame, through the allocator functions it names
 * (libc's, or track/'s trk_malloc & co.), exactly as the service does, so
 * the hooks see the same call sites and stacks.
 */
#ifndef HEAPTAP_BENCH_HOOKS_CHURN_BODY_H
#define HEAPTAP_BENCH_HOOKS_CHURN_BODY_H

#define CHURN_BODY(k, MALLOC, REALLOC, FREE, CALLOC)                          \
	do {                                                                  \
		void *churn_a[8];                                             \
		unsigned churn_i;                                             \
									      \
		for (churn_i = 0; churn_i < 8; churn_i++)                     \
			churn_a[churn_i] = MALLOC(16 + (((k) + churn_i) % 64) * 8); \
		churn_a[3] = REALLOC(churn_a[3], 512);                        \
		for (churn_i = 0; churn_i < 8; churn_i++)                     \
			FREE(churn_a[churn_i]);                               \
		FREE(CALLOC(4, 32));                                          \
	} while (0)

#endif /* HEAPTAP_BENCH_HOOKS_CHURN_BODY_H */
