/* pyframes/detect.c - find CPython in the process, check its layout, register the producer */
/* SPDX-License-Identifier: MIT */
/*
 * A program named python* or one with a libpython* loaded is looked at
 * (nothing else: a failed dlsym allocates). The interpreter is found
 * through its exported symbols (dlsym in the global scope: the python3
 * executable, or the libpython it links):
 * Py_Initialize says a CPython is there, Py_Version (3.11 and later) which
 * one. Its layout must be one this build has (layout.h) and agree with
 * the running binary: _PyRuntime's symbol size is sizeof(_PyRuntimeState)
 * and PyCode_Type.tp_basicsize is sizeof(PyCodeObject) of the headers.
 * _PyEval_EvalFrameDefault's symbol gives the address range of the
 * evaluation loop. Anything else: one warning and native stacks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pyframes/internal.h"
#include "track/track.h"

struct pyf_global pyf_g;

static int registered;

/* warn - one WIRE_REC_LOG warning to heaptap, which prints it. */
__attribute__((format(printf, 1, 2))) static void warn(const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	int n;

	msg[0] = WIRE_LOG_WARN;
	va_start(ap, fmt);
	n = vsnprintf(msg + 1, sizeof(msg) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(msg) - 2)
		n = (int)sizeof(msg) - 2;
	(void)trk_send_record(WIRE_REC_LOG, msg, (size_t)n + 1);
}

/* starts - whether the last path component of path begins with prefix. */
static bool starts(const char *path, const char *prefix)
{
	const char *b = strrchr(path, '/');

	return strncmp(b ? b + 1 : path, prefix, strlen(prefix)) == 0;
}

static int find_libpython(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	return info->dlpi_name && starts(info->dlpi_name, "libpython");
}

/*
 * python_here - whether a CPython may be in the process: the program is
 * python* or a libpython* is loaded. Asked before dlsym, whose failure
 * allocates (the error message): a program without Python must not see an
 * allocation of ours in its recording.
 */
static bool python_here(void)
{
	char exe[512];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = '\0';
		if (starts(exe, "python"))
			return true;
	}
	return dl_iterate_phdr(find_libpython, NULL) != 0;
}

/* sym - address and size of an exported symbol, 0 when absent. */
static uintptr_t sym(const char *name, uint64_t *size)
{
	const ElfW(Sym) *s = NULL;
	Dl_info info;
	void *p = dlsym(RTLD_DEFAULT, name);

	*size = 0;
	if (!p)
		return 0;
	if (dladdr1(p, &info, (void **)&s, RTLD_DL_SYMENT) && s)
		*size = s->st_size;
	return (uintptr_t)p;
}

/* check - whether the running CPython has layout L (0, fills pyf_g), -EINVAL, or -errno of pyf_read. */
static int check(const struct pyf_layout *L)
{
	uint64_t rt_size, code_size, eval_size;
	uintptr_t rt = sym("_PyRuntime", &rt_size), ct = sym("PyCode_Type", &code_size);
	uintptr_t ev = sym("_PyEval_EvalFrameDefault", &eval_size);
	int64_t basicsize;
	int ret;

	if (!rt || !ct || !ev || !eval_size || rt_size != L->runtime_size)
		return -EINVAL;
	ret = pyf_read(&basicsize, ct + L->tp_basicsize, sizeof(basicsize));
	if (ret < 0)
		return ret == -EFAULT ? -EINVAL : ret;
	if (basicsize != (int64_t)L->code_basicsize)
		return -EINVAL;
	pyf_g.runtime = rt;
	pyf_g.code_type = ct;
	pyf_g.eval_lo = ev;
	pyf_g.eval_hi = ev + eval_size;
	return 0;
}

bool pyf_start(unsigned flags)
{
	const struct pyf_layout *L;
	uint64_t size;
	uintptr_t ver;
	unsigned long v;
	unsigned major, minor;
	int ret;

	atomic_store(&pyf_g.on, 0);
	if (!python_here() || !sym("Py_Initialize", &size))
		return false; /* no CPython here */
	pyf_g.pid = getpid();
	ver = sym("Py_Version", &size);
	if (!ver) {
		warn("python frames: CPython older than %u.%u not supported, native stacks only", 3, 11);
		return false;
	}
	v = *(const unsigned long *)ver;
	major = (unsigned)(v >> 24) & 0xff;
	minor = (unsigned)(v >> 16) & 0xff;
	if (flags & PYF_FAKE_VERSION)
		minor = 99;
	L = pyf_layout_find(major, minor);
	if (!L) {
		warn("python frames: CPython %u.%u not supported, native stacks only", major, minor);
		return false;
	}
	if (!pyf_g.L)
		pyf_g.L = L;
	ret = check(L);
	if (ret == -EINVAL) {
		warn("python frames: CPython %u.%u not supported (its layout differs from this build's), "
		     "native stacks only", major, minor);
		return false;
	}
	if (ret < 0) {
		warn("python frames: process_vm_readv: %s, native stacks only", strerror(-ret));
		return false;
	}
	if (pyf_arena_init() < 0 || pyf_intern_init() < 0)
		return false;
	if (flags & PYF_OFF)
		return false; /* not registered (a later session may): the hooks keep their call-site memo */
	if (!registered) {
		if (trk_xframe_set_producer_lang(pyf_produce, NULL, WIRE_LANG_PYTHON) < 0)
			return false;
		registered = 1;
	}
	atomic_store(&pyf_g.on, 1);
	return true;
}
