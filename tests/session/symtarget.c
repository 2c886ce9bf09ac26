/* tests/session/symtarget.c - a target that lies about its modules (symfiles.test) */
/* SPDX-License-Identifier: MIT */
/*
 * symtarget LIB:FN:HOW ...  loads each LIB, looks up FN and then, by HOW:
 *   keep         nothing more
 *   unlink       deletes LIB from disk (it stays mapped)
 *   name=PATH    rewrites its link_map l_name to PATH (what dl_iterate_phdr,
 *                and so heaptap's library, reports as its path)
 * then prints "ready pid=N" and calls every FN (malloc 64, free) each
 * millisecond until killed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIBS 16

typedef void *(*alloc_fn)(size_t);

int main(int argc, char **argv)
{
	alloc_fn fn[MAX_LIBS];
	int n = 0, i;

	for (i = 1; i < argc && n < MAX_LIBS; i++) {
		char *lib = strdup(argv[i]), *name = strchr(lib, ':'), *how;
		struct link_map *lm;
		void *h;

		if (!name || !(how = strchr(name + 1, ':'))) {
			fprintf(stderr, "symtarget: bad spec %s\n", argv[i]);
			return 2;
		}
		*name++ = '\0';
		*how++ = '\0';
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h || !(fn[n] = (alloc_fn)dlsym(h, name)) || dlinfo(h, RTLD_DI_LINKMAP, &lm)) {
			fprintf(stderr, "symtarget: %s: %s\n", lib, dlerror());
			return 1;
		}
		n++;
		if (!strcmp(how, "unlink") && unlink(lib)) {
			perror("symtarget: unlink");
			return 1;
		}
		if (!strncmp(how, "name=", 5))
			lm->l_name = strdup(how + 5);
	}
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		for (i = 0; i < n; i++)
			free(fn[i](64));
		usleep(1000);
	}
}
