/* tests/e2e/dlopen.c - allocations from a dlopen()ed module, before and after dlclose */
/* SPDX-License-Identifier: MIT */
/*
 * Target of dlopen.test: dlopen.c MODULE_PATH. Loads the module, calls
 * dlm_leak (3 x 1000 bytes, leaked) and dlm_temp (4 x 64 bytes, each freed
 * at once: temporary), dlclose()s it, loads it again (maybe at another
 * address) and calls dlm_again (calloc 777, leaked), then dlclose()s it
 * again. All symbolization happens after the module is gone, so the report
 * must have kept the module's path and ranges. The loader's own allocations
 * in dlopen/dlclose are "other" for check.py.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "expect.h"

typedef int leak_fn(size_t n, int count, int *line);
typedef void *again_fn(size_t n, int *line);

static void *load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		ex_printf("error dlopen %s: %s\n", path, dlerror());
		exit(2);
	}
	return h;
}

static void *sym(void *h, const char *name)
{
	void *f = dlsym(h, name);

	if (!f) {
		ex_printf("error dlsym %s\n", name);
		exit(2);
	}
	return f;
}

int main(int argc, char **argv)
{
	int leak_line = 0, temp_line = 0, again_line = 0, call_line, made;
	leak_fn *leak, *temp;
	again_fn *again;
	void *h, *p;

	if (argc != 2) {
		ex_printf("usage: dlopen MODULE\n");
		return 2;
	}
	h = load(argv[1]);
	leak = (leak_fn *)sym(h, "dlm_leak");
	temp = (leak_fn *)sym(h, "dlm_temp");
	call_line = __LINE__ + 1;
	made = leak(1000, 3, &leak_line);
	made += temp(64, 4, &temp_line);
	if (made != 7 || dlclose(h))
		return 3;

	h = load(argv[1]);
	again = (again_fn *)sym(h, "dlm_again");
	p = again(777, &again_line);
	if (!p || dlclose(h))
		return 3;

	ex_printf("site dlm_leak calls=3 bytes=3000 leaked=3000 temporary=0 file=dlmod.c line=%d "
		  "caller=main caller_line=%d\n", leak_line, call_line);
	ex_printf("frame dlm_leak module=libe2e_dlmod.so file=dlmod.c line=%d\n", leak_line);
	ex_printf("site dlm_temp calls=4 bytes=256 leaked=0 temporary=4 file=dlmod.c line=%d\n",
		  temp_line);
	ex_printf("site dlm_again calls=1 bytes=777 leaked=777 file=dlmod.c line=%d\n", again_line);
	ex_printf("frame dlm_again module=libe2e_dlmod.so file=dlmod.c line=%d\n", again_line);
	ex_printf("total calls=8 bytes=4033 leaked=3777 temporary=4\n");
	return 0;
}
