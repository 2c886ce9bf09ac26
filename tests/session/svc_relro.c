/* tests/session/svc_relro.c - libsvc_relro.so: an allocation through a GLOB_DAT slot on a RELRO page */
/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "tests/session/svc_relro.h"

__attribute__((noinline, visibility("default"))) void *relro_leak_some(void)
{
	char *p = malloc(SVC_RELRO_LEAK_SIZE);

	if (p)
		p[0] = 2;
	return p;
}
