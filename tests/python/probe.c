/* tests/python/probe.c - the Python frame reader inside a real python3, without track/ */
/* SPDX-License-Identifier: MIT */
/*
 * A library probe_check.py loads with ctypes into /usr/bin/python3. It
 * stands in for track/'s side of the foreign-frame contract (the producer
 * it is given, the definitions it is sent) and gives Python one function,
 * probe(): the calling thread's native stack (backtrace), spliced by the
 * reader, one frame a line: "py NAME FILE LINE" or "c SYMBOL".
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <string.h>

#include "pyframes/pyframes.h"
#include "track/track.h"

#define DEFS 65536

static struct def {
	uint64_t id;
	uint32_t line;
	char name[128], file[256];
} defs[DEFS];
static trk_xframe_fn producer;
static void *producer_arg;
static int wanted = 1;
static unsigned ndefs;

int trk_xframe_set_producer(trk_xframe_fn fn, void *arg)
{
	producer = fn;
	producer_arg = arg;
	return 0;
}

int trk_xframe_define(uint64_t id, unsigned lang, unsigned kind, uint32_t line, const char *name,
		      size_t name_len, const char *file, size_t file_len)
{
	struct def *d = &defs[id % DEFS];

	if (lang != WIRE_LANG_PYTHON || kind != WIRE_XKIND_UNKNOWN)
		return -22;
	d->id = id;
	d->line = line;
	snprintf(d->name, sizeof(d->name), "%.*s", (int)name_len, name);
	snprintf(d->file, sizeof(d->file), "%.*s", (int)file_len, file);
	__atomic_fetch_add(&ndefs, 1, __ATOMIC_RELAXED);
	return 0;
}

uint32_t trk_xframe_session(void)
{
	return 1;
}

int trk_xframe_set_producer_lang(trk_xframe_fn fn, void *arg, unsigned lang)
{
	if (lang != WIRE_LANG_PYTHON)
		return -22;
	return trk_xframe_set_producer(fn, arg);
}

int trk_xframe_wanted(unsigned lang)
{
	return lang != WIRE_LANG_PYTHON || wanted;
}

int trk_send_record(uint8_t type, const void *payload, size_t len)
{
	if (type == WIRE_REC_LOG && len > 0)
		fprintf(stderr, "LOG %.*s\n", (int)len - 1, (const char *)payload + 1);
	return 0;
}

int probe_start(unsigned flags)
{
	return pyf_start(flags) ? 1 : 0;
}

void probe_wanted(int on)
{
	wanted = on;
}

unsigned probe_ndefs(void)
{
	return __atomic_load_n(&ndefs, __ATOMIC_RELAXED);
}

int probe(char *buf, int cap)
{
	void *bt[256];
	uintptr_t ips[256];
	size_t n, i, off = 0;
	int got = backtrace(bt, 128);

	for (i = 0; i < (size_t)got; i++)
		ips[i] = (uintptr_t)bt[i] - 1;
	n = (size_t)got;
	if (producer)
		n = producer(producer_arg, ips, n, 256);
	buf[0] = '\0';
	for (i = 0; i < n && off + 400 < (size_t)cap; i++) {
		if (wire_is_xframe(ips[i])) {
			struct def *d = &defs[wire_xframe_id(ips[i]) % DEFS];

			if (d->id != wire_xframe_id(ips[i]))
				off += (size_t)snprintf(buf + off, (size_t)cap - off, "py ? ? 0\n");
			else
				off += (size_t)snprintf(buf + off, (size_t)cap - off, "py %s %s %u\n",
							d->name, d->file, d->line);
		} else {
			Dl_info info;

			if (dladdr((void *)ips[i], &info) && info.dli_sname)
				off += (size_t)snprintf(buf + off, (size_t)cap - off, "c %s\n", info.dli_sname);
			else
				off += (size_t)snprintf(buf + off, (size_t)cap - off, "c ?\n");
		}
	}
	return (int)n;
}
