/* attach/deps.c - the shared libraries the injected library needs, as the host's loader finds them */
/* SPDX-License-Identifier: MIT */
/*
 * att_deps_find() walks the DT_NEEDED closure of the library breadth
 * first, like the loader does, and notes for each name where this host has
 * the file: the needing object's DT_RPATH/DT_RUNPATH ($ORIGIN expanded),
 * the library's own DT_RPATH (inherited by its dependencies' lookups, as
 * glibc does for DT_RPATH), then the multiarch and default directories.
 * LD_LIBRARY_PATH and ld.so.cache are not read: what is searched is where
 * a Debian-like system keeps its libraries, and a name found nowhere is
 * left with an empty host path (then nothing can be staged for it; the
 * target's dlopen reports it).
 *
 * Parts of the C library (libc.so.6, libm.so.6, ld-linux, ...) are noted
 * but not followed: they must be the target's own (they need GLIBC_PRIVATE
 * from each other), so attach/stage.c only checks that the target has them.
 *
 * Only files of this host are read (the library and what it needs), with
 * libelf; nothing of the target's.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attach/internal.h"

/* Where the host's loader looks after the RPATHs (Debian's ld.so.conf.d and the built-in list). */
static const char *const default_dirs[] = {
	"/usr/local/lib/x86_64-linux-gnu",
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/usr/local/lib",
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
};

/* sonames glibc ships (the ld-linux* and libnss_* families are matched by prefix) */
static const char *const libc_sonames[] = {
	"libc.so.6", "libm.so.6", "libmvec.so.1", "libpthread.so.0", "libdl.so.2", "librt.so.1",
	"libresolv.so.2", "libutil.so.1", "libanl.so.1", "libnsl.so.1", "libBrokenLocale.so.1",
	"libthread_db.so.1", "libc_malloc_debug.so.0",
};

bool att_dep_is_libc(const char *name)
{
	size_t i;

	if (!strncmp(name, "ld-linux", 8) || !strncmp(name, "libnss_", 7))
		return true;
	for (i = 0; i < sizeof(libc_sonames) / sizeof(libc_sonames[0]); i++)
		if (!strcmp(name, libc_sonames[i]))
			return true;
	return false;
}

/* What one object says: its DT_NEEDED names (appended to d, unless known) and its DT_RPATH/DT_RUNPATH. */
struct obj_dyn {
	char rpath[1024];	/* DT_RPATH or DT_RUNPATH, "" if none */
	unsigned machine;
};

static int read_dyn(const char *path, struct att_deps *d, struct obj_dyn *o)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Ehdr eh;
	GElf_Dyn dyn;
	Elf_Data *data;
	const char *s;
	size_t i, k, cnt;
	int fd, ret = -ENOEXEC;
	Elf *e;

	o->rpath[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		goto out;
	o->machine = eh.e_machine;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			break;
		cnt = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < cnt && gelf_getdyn(data, (int)i, &dyn); i++) {
			if (dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag != DT_NEEDED) {
				snprintf(o->rpath, sizeof(o->rpath), "%s", s);
				continue;
			}
			if (strlen(s) >= sizeof(d->v[0].name) || strchr(s, '/'))
				continue;	/* not a plain soname: left to the target's loader */
			for (k = 0; k < d->n && strcmp(d->v[k].name, s); k++)
				;
			if (k < d->n)
				continue;
			if (d->n == ATT_MAX_DEPS) {
				ret = -E2BIG;
				goto out;
			}
			memset(&d->v[d->n], 0, sizeof(d->v[0]));
			snprintf(d->v[d->n].name, sizeof(d->v[0].name), "%s", s);
			d->v[d->n].libc_part = att_dep_is_libc(s);
			d->n++;
		}
		break;
	}
	ret = 0;
out:
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

/* An ELF file of this machine at dir/name: path gets it. Returns true if so. */
static bool try_dir(const char *dir, size_t dlen, const char *name, unsigned machine, char *path,
		    size_t cap)
{
	GElf_Ehdr eh;
	bool ok = false;
	struct stat st;
	int fd;
	Elf *e;

	if ((size_t)snprintf(path, cap, "%.*s/%s", (int)dlen, dir, name) >= cap)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		ok = e && elf_kind(e) == ELF_K_ELF && gelf_getehdr(e, &eh) && eh.e_machine == machine;
		if (e)
			elf_end(e);
	}
	close(fd);
	return ok;
}

/* Search a colon-separated RPATH list, $ORIGIN being origin. */
static bool try_rpath(const char *rpath, const char *origin, const char *name, unsigned machine,
		      char *path, size_t cap)
{
	char dir[PATH_MAX];
	const char *p = rpath, *end;
	size_t len;

	while (*p) {
		end = strchr(p, ':');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len >= 7 && !strncmp(p, "$ORIGIN", 7) && (len == 7 || p[7] == '/'))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 7), p + 7);
		else if (len >= 9 && !strncmp(p, "${ORIGIN}", 9) && (len == 9 || p[9] == '/'))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)(len - 9), p + 9);
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)len, p);
		if (dir[0] == '/' && try_dir(dir, strlen(dir), name, machine, path, cap))
			return true;
		p += len + (end ? 1 : 0);
	}
	return false;
}

/* The directory of the file path (symlinks resolved), into out. */
static void origin_of(const char *path, char *out, size_t cap)
{
	char real[PATH_MAX];

	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	snprintf(out, cap, "%s", dirname(real));
}

/* Resolve the names d->v[*done..n) added by an object with this RPATH and origin. */
static void resolve_new(struct att_deps *d, size_t *done, const struct obj_dyn *o, const char *origin,
			const char *lib_rpath, const char *lib_origin, unsigned machine)
{
	size_t i, k;

	for (i = *done; i < d->n; i++) {
		struct att_dep *dep = &d->v[i];
		bool found = false;

		if (dep->libc_part)
			continue;
		if (o->rpath[0])
			found = try_rpath(o->rpath, origin, dep->name, machine, dep->host, sizeof(dep->host));
		if (!found && lib_rpath[0])
			found = try_rpath(lib_rpath, lib_origin, dep->name, machine, dep->host,
					  sizeof(dep->host));
		for (k = 0; !found && k < sizeof(default_dirs) / sizeof(default_dirs[0]); k++)
			found = try_dir(default_dirs[k], strlen(default_dirs[k]), dep->name, machine,
					dep->host, sizeof(dep->host));
		if (!found)
			dep->host[0] = '\0';
	}
	*done = d->n;
}

int att_deps_find(const char *lib, struct att_deps *d)
{
	char lib_rpath[1024], lib_origin[PATH_MAX], origin[PATH_MAX];
	size_t done = 0, q;
	struct obj_dyn o;
	unsigned machine;
	int ret;

	memset(d, 0, sizeof(*d));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	ret = read_dyn(lib, d, &o);
	if (ret)
		return ret;
	machine = o.machine;
	snprintf(lib_rpath, sizeof(lib_rpath), "%s", o.rpath);
	origin_of(lib, lib_origin, sizeof(lib_origin));
	resolve_new(d, &done, &o, lib_origin, lib_rpath, lib_origin, machine);
	/* breadth first, as the loader maps them: d->v grows while q walks it */
	for (q = 0; q < d->n; q++) {
		if (d->v[q].libc_part || !d->v[q].host[0])
			continue;
		ret = read_dyn(d->v[q].host, d, &o);
		if (ret == -E2BIG)
			return ret;
		if (ret)
			o.rpath[0] = '\0';
		origin_of(d->v[q].host, origin, sizeof(origin));
		resolve_new(d, &done, &o, origin, lib_rpath, lib_origin, machine);
	}
	return 0;
}
