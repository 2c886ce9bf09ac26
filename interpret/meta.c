/* interpret/meta.c - the recording's metadata (rec_put_meta keys) */
/* SPDX-License-Identifier: MIT */
/*
 * Keys written at the start (from the stream header) and at the end (totals
 * and how the session ended). A later rec_put_meta of a key replaces the
 * earlier value, so a recording cut short still has the start keys.
 *
 *   exe command pid attached sampled start_realtime_ns page_size sample_bytes
 *   heaptap_version                                        (start)
 *   duration_ns peak_rss peak_heap unknown_frees end_reason events_dropped
 *   slots_restored slots_left skipped_seqs late_events warnings   (end)
 *   attach_startup (attach mode: WIRE_REC_START's fields as name=value, ns)
 */
#include <inttypes.h>
#include <stdio.h>

#include "interpret/internal.h"

#ifndef HEAPTAP_VERSION
#define HEAPTAP_VERSION "unknown"
#endif

static int put_u64(struct itp_ctx *c, const char *key, uint64_t v)
{
	char buf[24];
	int rc;

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	rc = rec_put_meta(c->w, key, buf);
	return rc ? itp_out_fail(c, rc, "metadata") : 0;
}

static int put_str(struct itp_ctx *c, const char *key, const char *v)
{
	int rc = rec_put_meta(c->w, key, v);

	return rc ? itp_out_fail(c, rc, "metadata") : 0;
}

int itp_meta_start(struct itp_ctx *c)
{
	const struct wire_header *h = &c->hdr;
	int rc = 0;

	rc = rc ? rc : put_str(c, "exe", c->exe);
	rc = rc ? rc : put_str(c, "command", c->cmdline);
	rc = rc ? rc : put_u64(c, "pid", h->pid);
	rc = rc ? rc : put_u64(c, "attached", !!(h->flags & WIRE_F_ATTACHED));
	rc = rc ? rc : put_u64(c, "sampled", !!(h->flags & WIRE_F_SAMPLED));
	rc = rc ? rc : put_u64(c, "start_realtime_ns", h->start_realtime_ns);
	rc = rc ? rc : put_u64(c, "page_size", h->page_size);
	rc = rc ? rc : put_u64(c, "sample_bytes", h->sample_bytes);
	rc = rc ? rc : put_str(c, "heaptap_version", HEAPTAP_VERSION);
	return rc;
}

static const char *end_name(const struct itp_ctx *c)
{
	static const char *const by_end[] = {
	    [WIRE_END_EXIT] = "exit",
	    [WIRE_END_STOP] = "stop",
	    [WIRE_END_ERROR] = "error",
	};
	static const char *const by_err[ITP_E_MAX] = {
	    [ITP_OK] = "eof",
	    [ITP_E_IO] = "io_error",
	    [ITP_E_HEADER] = "bad_header",
	    [ITP_E_CORRUPT] = "corrupt",
	    [ITP_E_TRUNCATED] = "truncated",
	    [ITP_E_OUTPUT] = "output_error",
	    [ITP_E_NOMEM] = "out_of_memory",
	    [ITP_E_BUDGET] = "truncated",
	    [ITP_E_STOPPED] = "truncated",
	};
	int err = c->res->err;

	if (err > 0 && err < ITP_E_MAX && err != ITP_E_TRUNCATED)
		return by_err[err];
	if (c->ended && c->res->end_reason >= WIRE_END_EXIT && c->res->end_reason <= WIRE_END_ERROR)
		return by_end[c->res->end_reason];
	return by_err[ITP_E_TRUNCATED];
}

/* put_startup - attach_startup: "connect_ns=N rate_ns=N ... deferred=PATH". */
static int put_startup(struct itp_ctx *c, const struct itp_start *s)
{
	static const char *const names[WIRE_START_NFIELDS] = {
	    [WIRE_START_CONNECT_NS] = "connect_ns",
	    [WIRE_START_RATE_NS] = "rate_ns",
	    [WIRE_START_RATE_GOT] = "rate_got",
	    [WIRE_START_SESSION_NS] = "session_ns",
	    [WIRE_START_DRAIN_NS] = "drain_ns",
	    [WIRE_START_PASS_DONE_NS] = "first_pass_done_ns",
	    [WIRE_START_PASS_NS] = "first_pass_ns",
	    [WIRE_START_PASSES] = "passes",
	    [WIRE_START_MODULES] = "modules",
	    [WIRE_START_PATCHED] = "patched",
	    [WIRE_START_DEFERRED] = "deferred",
	    [WIRE_START_DEF_RELRO] = "deferred_relro",
	    [WIRE_START_DEF_UNMAPPED] = "deferred_unmapped",
	    [WIRE_START_DEF_UNRELOC] = "deferred_unrelocated",
	    [WIRE_START_CALL_MONO_NS] = "start_call_mono_ns",
	};
	char buf[1024];
	size_t off = 0;

	for (size_t i = 0; i < WIRE_START_NFIELDS && off < sizeof(buf); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s=%" PRIu64, i ? " " : "",
					names[i], s->f[i]);
	if (s->deferred[0] && off < sizeof(buf))
		snprintf(buf + off, sizeof(buf) - off, " deferred_first=%s", s->deferred);
	return put_str(c, "attach_startup", buf);
}

int itp_meta_end(struct itp_ctx *c)
{
	const struct itp_counters *w = &c->res->warn;
	uint64_t warnings = w->unknown_traces + w->unknown_parents + w->bad_nodes + w->reused_ptrs +
			    w->null_allocs + w->bad_kinds + w->unknown_module_dels +
			    w->late_events + w->skipped_seqs + w->unknown_records;
	int rc = 0;

	rc = rc ? rc : put_u64(c, "duration_ns", c->st.elapsed_ns);
	rc = rc ? rc : put_u64(c, "peak_rss", c->peak_rss);
	rc = rc ? rc : put_u64(c, "peak_heap", c->st.peak_bytes);
	rc = rc ? rc : put_u64(c, "unknown_frees", w->unknown_frees);
	rc = rc ? rc : put_str(c, "end_reason", end_name(c));
	if (c->res->detail[0])
		rc = rc ? rc : put_str(c, "end_detail", c->res->detail);
	rc = rc ? rc : put_u64(c, "events_dropped", c->res->events_dropped);
	rc = rc ? rc : put_u64(c, "slots_restored", c->res->slots_restored);
	rc = rc ? rc : put_u64(c, "slots_left", c->res->slots_left);
	rc = rc ? rc : put_u64(c, "skipped_seqs", w->skipped_seqs);
	rc = rc ? rc : put_u64(c, "late_events", w->late_events);
	rc = rc ? rc : put_u64(c, "warnings", warnings);
	if (c->xf.n || c->xf.undefined) {
		/* foreign frames (xframe.c): defined, used but never defined, defined again */
		rc = rc ? rc : put_u64(c, "xframes_defined", c->xf.n);
		rc = rc ? rc : put_u64(c, "xframes_undefined", c->xf.undefined);
		rc = rc ? rc : put_u64(c, "xframes_redefined", c->xf.redefs);
	}
	if (c->res->start.have)
		rc = rc ? rc : put_startup(c, &c->res->start);
	return rc;
}
