/* interpret/strerror.c - itp_strerror, itp_fail: reasons of an ended stream */
/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "interpret/internal.h"

static const char *const reasons[ITP_E_MAX] = {
    [ITP_OK] = "success",
    [ITP_E_IO] = "reading the event stream failed",
    [ITP_E_HEADER] = "no valid event stream header",
    [ITP_E_CORRUPT] = "corrupt event stream",
    [ITP_E_TRUNCATED] = "event stream cut short",
    [ITP_E_OUTPUT] = "writing the recording failed",
    [ITP_E_NOMEM] = "out of memory",
    [ITP_E_BUDGET] = "memory budget reached",
    [ITP_E_STOPPED] = "stopped at once on a second stop",
};

const char *itp_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= ITP_E_MAX || !reasons[err])
		return "unknown error";
	return reasons[err];
}

int itp_fail(struct itp_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	/* the first reason wins: later ones are consequences */
	if (!c->res->err) {
		c->res->err = err;
		va_start(ap, fmt);
		vsnprintf(c->res->detail, sizeof(c->res->detail), fmt, ap);
		va_end(ap);
	}
	return -err;
}

int itp_out_fail(struct itp_ctx *c, int rc, const char *what)
{
	if (!c->res->err)
		c->res->rec_error = rc < 0 ? -rc : rc;
	return itp_fail(c, ITP_E_OUTPUT, "writing %s to the recording: %s", what, rec_strerror(rc));
}
