/* report/units.c - sizes in human units, names of languages and frame kinds */
/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "report/report.h"
#include "track/wire.h"

char *rpt_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	v /= 1024.0;
	/* Move up a unit when one decimal would round to 1024.0. */
	while (v >= 1023.95 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

const char *rpt_lang_name(unsigned lang)
{
	switch (lang) {
	case WIRE_LANG_PYTHON:
		return "python";
	case WIRE_LANG_JAVA:
		return "java";
	default:
		return "foreign";
	}
}

const char *rpt_xkind_name(unsigned kind)
{
	switch (kind) {
	case WIRE_XKIND_INTERPRETED:
		return "interpreted";
	case WIRE_XKIND_COMPILED:
	case WIRE_XKIND_COMPILED_C1:
	case WIRE_XKIND_COMPILED_C2:
		return "compiled";
	case WIRE_XKIND_INLINED:
	case WIRE_XKIND_INLINED_C1:
	case WIRE_XKIND_INLINED_C2:
		return "inlined";
	case WIRE_XKIND_NATIVE:
		return "native";
	default:
		return NULL;
	}
}

const char *rpt_xkind_tier(unsigned kind)
{
	switch (kind) {
	case WIRE_XKIND_COMPILED_C1:
	case WIRE_XKIND_INLINED_C1:
		return "C1";
	case WIRE_XKIND_COMPILED_C2:
	case WIRE_XKIND_INLINED_C2:
		return "C2";
	default:
		return NULL;
	}
}

const char *rpt_xkind_mark(unsigned kind)
{
	switch (kind) {
	case WIRE_XKIND_INLINED:
		return "compiled, inlined";
	case WIRE_XKIND_COMPILED_C1:
		return "compiled C1";
	case WIRE_XKIND_COMPILED_C2:
		return "compiled C2";
	case WIRE_XKIND_INLINED_C1:
		return "compiled C1, inlined";
	case WIRE_XKIND_INLINED_C2:
		return "compiled C2, inlined";
	default:
		return rpt_xkind_name(kind);
	}
}
