/* track/xframe_find.h - how a foreign-frame producer outside heaptap's library finds the producer API */
/* SPDX-License-Identifier: MIT */
/*
 * Header-only, for code that is not linked into libheaptap_preload.so or
 * libheaptap_inject.so (a JVMTI agent, a test program) and runs in the same
 * process: track.h "How a producer outside heaptap's library finds these
 * functions". heaptap_xframe_find() looks for the versioned exports first
 * in the global scope (the preload library), then in every loaded object
 * (the inject library is dlopen'ed RTLD_LOCAL). Call it outside any
 * allocation hook (it calls dlopen); it finds nothing until heaptap's
 * library is loaded, so a producer that waits for an attach calls it again
 * later. Link with -ldl (glibc 2.34 and later have it in libc).
 */
#ifndef HEAPTAP_TRACK_XFRAME_FIND_H
#define HEAPTAP_TRACK_XFRAME_FIND_H

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "track/wire.h"

/* The producer callback: see trk_xframe_fn in track/track.h. */
typedef size_t (*heaptap_xframe_fn)(void *arg, uintptr_t *ips, size_t n, size_t cap);

/* The API, version 1 (track.h: trk_xframe_define, trk_xframe_set_producer, trk_xframe_session). */
struct heaptap_xframe_api {
	int (*define)(uint64_t id, unsigned lang, unsigned kind, uint32_t line, const char *name,
		      size_t name_len, const char *file, size_t file_len);
	int (*set_producer)(heaptap_xframe_fn fn, void *arg);
	uint32_t (*session)(void);
};

/* heaptap_xframe_take - the three functions from handle h (RTLD_DEFAULT or an object's); 0 or -1. */
static inline int heaptap_xframe_take(void *h, struct heaptap_xframe_api *api)
{
	void *d = dlsym(h, "heaptap_xframe_define_v1");
	void *p = dlsym(h, "heaptap_xframe_set_producer_v1");
	void *s = dlsym(h, "heaptap_xframe_session_v1");

	if (!d || !p || !s)
		return -1;
	memcpy(&api->define, &d, sizeof(d));
	memcpy(&api->set_producer, &p, sizeof(p));
	memcpy(&api->session, &s, sizeof(s));
	return 0;
}

struct heaptap_xframe_nth {
	size_t want, seen;
	char name[4096];
};

/* the name of the want-th loaded object, copied (dlopen is not called from inside the iteration) */
static inline int heaptap_xframe_nth_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct heaptap_xframe_nth *q = (struct heaptap_xframe_nth *)data;
	size_t len;

	(void)size;
	if (q->seen++ != q->want)
		return 0;
	len = info->dlpi_name ? strlen(info->dlpi_name) : 0;
	if (len >= sizeof(q->name))
		len = 0;
	memcpy(q->name, info->dlpi_name ? info->dlpi_name : "", len);
	q->name[len] = '\0';
	return 1;
}

/*
 * heaptap_xframe_find - fill *api from the loaded heaptap library: 0, or
 * -ENOENT when no loaded object exports the version 1 API.
 */
static inline int heaptap_xframe_find(struct heaptap_xframe_api *api)
{
	struct heaptap_xframe_nth q;

	if (heaptap_xframe_take(RTLD_DEFAULT, api) == 0)
		return 0;
	for (q.want = 0;; q.want++) {
		void *h;
		int ok;

		q.seen = 0;
		if (!dl_iterate_phdr(heaptap_xframe_nth_cb, &q))
			return -ENOENT; /* every object looked at */
		if (!q.name[0])
			continue; /* the main program, the vDSO */
		h = dlopen(q.name, RTLD_NOLOAD | RTLD_NOW);
		if (!h)
			continue;
		ok = heaptap_xframe_take(h, api) == 0;
		/* the object stays loaded: heaptap's library is never unloaded */
		dlclose(h);
		if (ok)
			return 0;
	}
}

#endif /* HEAPTAP_TRACK_XFRAME_FIND_H */
