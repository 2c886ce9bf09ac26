/* recfile/strerror.c - rec_strerror: a phrase for each enum rec_err */
/* SPDX-License-Identifier: MIT */
#include "recfile/recfile.h"

static const char *const rec_errs[REC_E_MAX] = {
	[REC_OK] = "success",
	[REC_E_IO] = "input/output error",
	[REC_E_EXISTS] = "output file exists",
	[REC_E_MAGIC] = "not a heaptap recording",
	[REC_E_VERSION] = "recording format version too new",
	[REC_E_TRUNCATED] = "recording cut short",
	[REC_E_CORRUPT] = "recording corrupt",
	[REC_E_ZSTD] = "chunk does not decompress",
	[REC_E_NOMEM] = "out of memory",
	[REC_E_RANGE] = "index or argument out of range",
};

/* Accepts both REC_E_X and -REC_E_X: the API returns the latter. */
const char *rec_strerror(int err)
{
	if (err < 0)
		err = err < -REC_E_MAX ? REC_E_MAX : -err;
	if (err >= REC_E_MAX || !rec_errs[err])
		return "unknown recording error";
	return rec_errs[err];
}
