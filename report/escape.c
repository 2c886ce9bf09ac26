/* report/escape.c - bytes from a recording, a process or a peer made safe for a terminal */
/* SPDX-License-Identifier: MIT */
/*
 * Everything heaptap prints that another party chose (a target's comm,
 * command line, module paths, symbol names, dlerror() text, a control
 * socket peer's reply) goes through rpt_escape: cli_msg() escapes every
 * message, the text report every string from the recording. Printable
 * ASCII and well-formed UTF-8 pass; a control byte (ESC, CR, BS, ...), DEL,
 * a byte of a malformed or overlong UTF-8 sequence, a C1 control (U+0080 ..
 * U+009F: 8-bit CSI and friends) and the bidirectional controls (U+200E,
 * U+200F, U+202A .. U+202E, U+2066 .. U+2069) are shown as \xNN per byte,
 * and a backslash as \\, so what is shown is unambiguous.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report/report.h"

/* Length of the well-formed UTF-8 sequence at s (at most n bytes) that may be shown, else 0. */
static size_t utf8_ok(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1fu;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0fu;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07u;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0; /* overlong, out of range or a surrogate */
	if (cp <= 0x9f || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069))
		return 0; /* C1 controls, bidirectional controls */
	return len;
}

size_t rpt_escape(char *out, size_t cap, const char *in, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0, i = 0, k;

	if (!cap)
		return 0;
	while (i < len) {
		unsigned char c = s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (1 > cap - 1 - o)
				break;
			out[o++] = (char)c;
			i++;
		} else if (c >= 0x80 && (k = utf8_ok(s + i, len - i)) != 0) {
			if (k > cap - 1 - o)
				break;
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		} else if (c == '\\') {
			if (2 > cap - 1 - o)
				break;
			out[o++] = '\\';
			out[o++] = '\\';
			i++;
		} else {
			if (4 > cap - 1 - o)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
			i++;
		}
	}
	out[o] = '\0';
	return o;
}

void rpt_fputs_escaped(const char *s, FILE *f)
{
	char buf[1024];
	size_t len = strlen(s), chunk;

	/* in pieces that cannot cut a UTF-8 sequence or an escape: 250 bytes give at most 1000 */
	while (len) {
		chunk = len > 250 ? 250 : len;
		while (chunk < len && chunk > 246 && ((unsigned char)s[chunk] & 0xc0) == 0x80)
			chunk--;
		rpt_escape(buf, sizeof(buf), s, chunk);
		fputs(buf, f);
		s += chunk;
		len -= chunk;
	}
}
