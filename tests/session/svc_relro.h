/* tests/session/svc_relro.h - the service's own -fno-plt, full-RELRO library */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_TESTS_SVC_RELRO_H
#define HEAPTAP_TESTS_SVC_RELRO_H

#define SVC_RELRO_LEAK_SIZE 1234 /* bytes relro_leak_some() leaks per call */

/*
 * relro_leak_some - allocate SVC_RELRO_LEAK_SIZE bytes and return them. Built
 * with -fno-plt and -z relro -z now, so its malloc call goes through a
 * GLOB_DAT slot on a page that is read-only after relocation.
 */
void *relro_leak_some(void);

#endif /* HEAPTAP_TESTS_SVC_RELRO_H */
