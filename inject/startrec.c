/* inject/startrec.c - tell heaptap how the library's start went: WIRE_REC_START, error reasons */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the library's thread (or in track's caller of before_end: never).
 * Stack buffers only, no allocation, no stdio: the records are built by
 * hand. Both records are unordered (no sequence number), so they may be
 * sent at any time the session runs.
 *
 * WIRE_REC_START (track/wire.h):
 *
 *   varint n | n x varint (enum wire_start_field order) | varint path_len | path
 *
 * The count in front lets a later library add fields at the end and an
 * older heaptap skip them; a heaptap that knows more fields than a library
 * sends treats the missing ones as 0.
 */
#include <errno.h>
#include <string.h>

#include "inject/internal.h"

size_t inj_start_record_build(uint8_t buf[INJ_START_REC_MAX])
{
	uint64_t f[WIRE_START_NFIELDS];
	const struct inj_stats *st = &inj_g.st;
	const struct inj_defer *d = &inj_g.defer0;
	size_t off = 0, plen = strnlen(d->first, sizeof(d->first) - 1);

	memset(f, 0, sizeof(f));
	f[WIRE_START_CONNECT_NS] = st->connect_ns;
	f[WIRE_START_RATE_NS] = st->rate_ns;
	f[WIRE_START_RATE_GOT] = st->rate_got;
	f[WIRE_START_SESSION_NS] = st->session_ns;
	f[WIRE_START_DRAIN_NS] = st->drain_ns;
	f[WIRE_START_PASS_DONE_NS] = st->start_ns;
	f[WIRE_START_PASS_NS] = st->first_pass_ns;
	f[WIRE_START_PASSES] = st->first_passes;
	f[WIRE_START_MODULES] = d->walked;
	f[WIRE_START_PATCHED] = st->patched;
	f[WIRE_START_DEFERRED] = d->modules;
	f[WIRE_START_DEF_RELRO] = d->relro;
	f[WIRE_START_DEF_UNMAPPED] = d->unmapped;
	f[WIRE_START_DEF_UNRELOC] = d->unreloc;
	f[WIRE_START_CALL_MONO_NS] = inj_g.t_start;
	off += wire_put_varint(buf + off, WIRE_START_NFIELDS);
	for (size_t i = 0; i < WIRE_START_NFIELDS; i++)
		off += wire_put_varint(buf + off, f[i]);
	off += wire_put_varint(buf + off, plen);
	memcpy(buf + off, d->first, plen);
	off += plen;
	return off;
}

int inj_send_start_record(void)
{
	uint8_t buf[INJ_START_REC_MAX];
	size_t len = inj_start_record_build(buf);

	return trk_send_record(WIRE_REC_START, buf, len);
}

/* The errno values a start can end with; others go by number only. */
static const char *errno_name(int err)
{
	switch (err) {
	case ENOENT: return "ENOENT";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case ENOMEM: return "ENOMEM";
	case EMFILE: return "EMFILE";
	case ENFILE: return "ENFILE";
	case EIO: return "EIO";
	case ENOSPC: return "ENOSPC";
	case E2BIG: return "E2BIG";
	default: return NULL;
	}
}

static size_t put_str(char *b, size_t off, size_t cap, const char *s)
{
	size_t n = strlen(s);

	if (n > cap - off)
		n = cap - off;
	memcpy(b + off, s, n);
	return off + n;
}

static size_t put_uint(char *b, size_t off, size_t cap, unsigned v)
{
	char d[12];
	size_t n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(d));
	while (n && off < cap)
		b[off++] = d[--n];
	return off;
}

void inj_send_error(const char *what, int err)
{
	char b[1 + 200];
	const char *name;
	size_t off = 1;
	int saved = errno;

	if (err < 0)
		err = -err;
	b[0] = WIRE_LOG_ERROR;
	off = put_str(b, off, sizeof(b), what);
	if (err) {
		name = errno_name(err);
		off = put_str(b, off, sizeof(b), ": ");
		if (name) {
			off = put_str(b, off, sizeof(b), name);
			off = put_str(b, off, sizeof(b), " ");
		}
		off = put_str(b, off, sizeof(b), "(errno ");
		off = put_uint(b, off, sizeof(b), (unsigned)err);
		off = put_str(b, off, sizeof(b), ")");
	}
	(void)trk_send_record(WIRE_REC_LOG, b, off);
	errno = saved;
}
