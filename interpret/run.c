/* interpret/run.c - itp_run: take the stream from the input queue, feed the parser, finish the recording */
/* SPDX-License-Identifier: MIT */
/*
 * A reader thread (inq.c) drains the socket into memory, so the target's
 * threads do not wait while this one interprets (docs/stream.md,
 * "Reading"). The loop parses the queue's blocks where they are
 * (in_place); a record cut by the end of what a block holds is copied into
 * one buffer and completed there with just the bytes it lacks (missing),
 * then parsing goes back to the blocks. The stream header, and whatever
 * follows a record whose length is bad, go through the buffer too
 * (records are at most WIRE_MAX_RECORD, the buffer grows to hold several).
 * The wait for input wakes at least every
 * 250 ms while the stream is idle, to call the status callback, flush the
 * writer about once a second (so a crash of heaptap leaves a readable file)
 * and notice opt->stop; a signal interrupts it at once.
 *
 * Whatever ends the stream (END, EOF, an error), the end is the same: drain
 * the reorder window skipping gaps, symbolize, write the final metadata and
 * close the recording, so it holds everything applied up to that point.
 *
 * Reaching the memory budget ends the session as a stop does: STOP is sent,
 * the records that follow are skipped unread (discard) until END or the
 * stop timeout, so the library restores the process and says so. A second
 * stop (*opt->stop >= 2) ends everything at once: no more reading, no
 * drain, no symbolization; the recording is closed as cut short.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "interpret/inq_internal.h"
#include "interpret/order_internal.h"
#include "interpret/sym_internal.h"

#define ITP_BUF_MIN (128u << 10) /* input buffer at first: holds a block's rest */
#define ITP_BUF_SIZE (4u << 20)	 /* at most: > 2 records + a block */
_Static_assert(ITP_INQ_BLOCK <= ITP_BUF_MIN, "the rest of a block is copied into the buffer");

#define TICK_MS 250
#define FLUSH_NS 1000000000ull
/*
 * Bytes taken into the buffer at a time when how many are needed is not
 * known (the header): each take frees blocks for the reader, so the target
 * gets room in steps of this much interpreting, not of a whole 4 MiB
 * buffer. Parsing in place frees each block as soon as it is parsed.
 */
#define TAKE_MAX ((size_t)256 << 10)

/* a time namespace or a bogus header could make the difference absurd */
#define MAX_PLAUSIBLE_NS (366ull * 24 * 3600 * 1000000000ull)

/*
 * clock_elapsed - raise st.elapsed_ns to the time since the header's
 * start_mono_ns by our clock at mono (CLOCK_MONOTONIC is system-wide), when
 * that is plausible; ticks alone miss the end of a short run.
 */
static void clock_elapsed(struct itp_ctx *c, uint64_t mono)
{
	uint64_t start = c->hdr.start_mono_ns;

	if (!c->have_header || !start || mono <= start || mono - start > MAX_PLAUSIBLE_NS)
		return;
	if (mono - start > c->st.elapsed_ns)
		c->st.elapsed_ns = mono - start;
}

static void report_status(struct itp_ctx *c)
{
	struct stat sb;

	if (!c->ended)
		clock_elapsed(c, util_mono_ns());
	if (c->opt->output && !stat(c->opt->output, &sb))
		c->st.output_bytes = (uint64_t)sb.st_size;
	if (c->opt->status)
		c->opt->status(&c->st, c->opt->status_arg);
}

/* 1 = sent or hopeless (a pipe in tests, a closed peer); 0 = try again later */
static int send_stop(int fd)
{
	uint8_t msg[2] = {WIRE_CTL_STOP, 0};
	ssize_t n;

	do
		n = send(fd, msg, sizeof(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

/*
 * itp_send_sample - WIRE_CTL_SAMPLE (rate, seed) to the library; 0, or -errno
 * (EAGAIN: the socket buffer is full, the library is not reading).
 */
int itp_send_sample(int fd, uint64_t rate, uint64_t seed)
{
	uint8_t msg[2 + 2 * WIRE_VARINT_MAX];
	size_t n = 2;
	ssize_t w;

	msg[0] = WIRE_CTL_SAMPLE;
	n += wire_put_varint(msg + n, rate);
	n += wire_put_varint(msg + n, seed);
	msg[1] = (uint8_t)(n - 2); /* at most 20: a one-byte varint */
	do
		w = send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	return w == (ssize_t)n ? 0 : -EAGAIN;
}

/*
 * missing - bytes still to come of the record that starts at p (n bytes of
 * it here), so the copy path takes just that much and the loop goes back
 * to parsing in place; TAKE_MAX when the header is not parsed yet or the
 * length is bad (itp_parse then says what is wrong).
 */
static size_t missing(const struct itp_ctx *c, const uint8_t *p, size_t n)
{
	const uint8_t *q = p + 1;
	uint64_t rlen;
	size_t whole;

	if (!c->have_header || !n)
		return TAKE_MAX;
	if (wire_get_varint(&q, p + n, &rlen))
		return n < 1 + WIRE_VARINT_MAX ? 1 + WIRE_VARINT_MAX - n : TAKE_MAX;
	if (rlen > WIRE_MAX_RECORD)
		return TAKE_MAX;
	whole = (size_t)(q - p) + (size_t)rlen;
	return whole > n ? whole - n : TAKE_MAX;
}

/*
 * in_place - parse the queue's oldest block where it is (no copy): the
 * usual path once the header is parsed and buf holds nothing. A record cut
 * by the end of what the block holds is copied into buf (*len), unless the
 * reader has meanwhile added to the block. 1 = parsed, 0 = EOF, or the
 * negative value of itp_inq_peek; *ret gets itp_parse's.
 */
static int in_place(struct itp_ctx *c, struct itp_inq *q, uint8_t *buf, size_t *len,
		    uint64_t *total, int timeout, int *ret)
{
	const uint8_t *p;
	size_t plen, used, have = 0;
	ssize_t n;
	int rc;

	*ret = 0;
	for (;;) {
		rc = itp_inq_peek(q, &p, &plen, have, timeout);
		if (rc <= 0)
			return rc;
		if (rc == 2)
			break;
		*ret = itp_parse(c, p, plen, &used);
		itp_inq_consume(q, used);
		*total += used;
		if (*ret || used == plen || c->ended)
			return 1;
		have = plen - used;
	}
	/* have <= ITP_INQ_BLOCK <= ITP_BUF_MIN <= the buffer's size */
	n = itp_inq_take(q, buf, have, 0);
	if (n < 0)
		return (int)n;
	*len = (size_t)n;
	return 1;
}

/*
 * A library that keeps streaming after STOP is always "making progress":
 * the wait for END ends at the latest this many stop timeouts after the
 * request (60 s by default), END or not.
 */
#define STOP_BOUND_FACTOR 12u

/* where a stop request stands (read_loop) */
struct stop_state {
	unsigned ms;	  /* the library's time to send something after STOP, and then END */
	int asked, sent;  /* a stop was asked; STOP went out */
	uint64_t t_asked; /* when */
};

static void shorten(int *timeout, uint64_t left_ns)
{
	if (left_ns / 1000000ull < (uint64_t)*timeout)
		*timeout = (int)(left_ns / 1000000ull) + 1;
}

/*
 * stopping - a second stop ends the session at once; a first one (or the
 * budget) sends STOP, and then the wait for END runs on as long as the
 * library makes progress: it ends on END or EOF (read_loop), when the
 * reader got no byte for stop_timeout_ms although it could read (time it
 * waited for room in our queue, or bytes it has not read yet, are
 * heaptap's lateness, not the library's), or STOP_BOUND_FACTOR timeouts
 * after the request. *timeout is shortened to the next of these limits.
 * 0, or the negative enum itp_err that ends the loop.
 */
static int stopping(struct itp_ctx *c, int fd, struct itp_inq *q, struct stop_state *st, uint64_t t,
		    int *timeout)
{
	const struct itp_options *opt = c->opt;
	uint64_t ms = (uint64_t)st->ms * 1000000ull, bound = STOP_BOUND_FACTOR * ms, since;

	if (opt->stop && *opt->stop >= 2)
		return itp_fail(c, ITP_E_STOPPED,
				"stopped a second time: the rest of the stream was not read");
	if (((opt->stop && *opt->stop) || c->discard) && !st->asked) {
		st->asked = 1;
		st->t_asked = t;
		/* before STOP goes out: the library's last bytes must never wait for the interpreter */
		itp_inq_stopping(q);
	}
	if (!st->asked)
		return 0;
	/* a full socket buffer (the target not reading) retries next round */
	if (!st->sent)
		st->sent = send_stop(fd);
	/* once the reader saw the connection close, everything is here: no limit */
	if (itp_inq_ended(q))
		return 0;
	/* a read since t is later than t: progress now */
	since = itp_inq_progress_ns(q, t);
	if (since > t)
		since = t;
	if (since < st->t_asked)
		since = st->t_asked;
	if (t - since >= ms || t - st->t_asked >= bound)
		c->res->stop_gave_up = 1;
	if (t - since >= ms)
		return itp_fail(c, ITP_E_TRUNCATED,
				"no end record: nothing came for %u ms after asking to stop", st->ms);
	if (t - st->t_asked >= bound)
		return itp_fail(c, ITP_E_TRUNCATED,
				"no end record within %llu ms after asking to stop, though "
				"the stream went on", (unsigned long long)(bound / 1000000ull));
	shorten(timeout, ms - (t - since));
	shorten(timeout, bound - (t - st->t_asked));
	return 0;
}

/* when the timed work of read_loop was last done (snap: when the next snapshot is due) */
struct timers {
	uint64_t status, flush, snap;
};

/*
 * snapshot_due - the snapshot due at *next (once the header is in), on a
 * fixed schedule: a snapshot taken late (a busy or starved loop) does not
 * push the next ones back; more than a period behind, the schedule starts
 * again now. *timeout is shortened to the next one, so a quiet stream does
 * not hold it back.
 */
static void snapshot_due(struct itp_ctx *c, uint64_t t, uint64_t *next, int *timeout)
{
	uint64_t period = c->opt->snapshot_ns;

	if (c->have_header && t >= *next) {
		clock_elapsed(c, t);
		itp_agg_snapshot(c, t);
		*next += period;
		if (t >= *next)
			*next = t + period;
	}
	if (*next > t && (*next - t) / 1000000ull < (uint64_t)*timeout)
		*timeout = (int)((*next - t) / 1000000ull) + 1;
}

/*
 * periodic - the timed work: status and pin retries, snapshots, flushes; 0
 * or -ITP_E_OUTPUT. *timeout: the read's wait, shortened to the next snapshot.
 * ending: a stop was asked or the stream has ended; no periodic snapshot
 * then: what is left (the library's last events and site counts, which
 * come just before its end record) goes into the last one, which would
 * otherwise cover only what came after a snapshot cut in between, often
 * nothing.
 */
static int periodic(struct itp_ctx *c, struct timers *last, uint64_t t, int ending, int *timeout)
{
	const struct itp_options *opt = c->opt;
	int rc;

	if (t - last->status >= (uint64_t)TICK_MS * 1000000ull) {
		report_status(c);
		itp_pin_retry(c);
		last->status = t;
	}
	if (opt->snapshot && opt->snapshot_ns && !ending)
		snapshot_due(c, t, &last->snap, timeout);
	if (c->w && !opt->no_timed_flush && t - last->flush >= FLUSH_NS) {
		rc = rec_writer_flush(c->w);
		if (rc)
			return itp_out_fail(c, rc, "a periodic flush");
		last->flush = t;
	}
	return 0;
}

/*
 * ended_early - the stream ended (after total bytes parsed, left unparsed):
 * an error if the header or a record was incomplete, else 0.
 */
static int ended_early(struct itp_ctx *c, uint64_t total, size_t left)
{
	if (!c->have_header)
		return itp_fail(c, ITP_E_HEADER,
				"stream ended after %llu bytes, before its header was complete",
				(unsigned long long)(total + left));
	if (left)
		return itp_fail(c, ITP_E_TRUNCATED,
				"stream ended inside a record (%zu bytes left over)", left);
	return 0;
}

static int read_loop(struct itp_ctx *c, int fd, struct itp_inq *q)
{
	const struct itp_options *opt = c->opt;
	size_t cap = ITP_BUF_MIN, off = 0, len = 0, used, want;
	uint8_t *buf = malloc(cap);
	uint64_t t, total = 0;
	struct timers due;
	struct stop_state st = {.ms = opt->stop_timeout_ms ? opt->stop_timeout_ms : 5000};
	int ret = 0, rc;

	if (!buf)
		return itp_fail(c, ITP_E_NOMEM, "out of memory for the input buffer");
	/*
	 * The library waits a moment in its start for this (even for full
	 * tracing), so it never records in the wrong mode. A full socket
	 * buffer cannot happen this early.
	 */
	if (opt->sample_ctl)
		(void)itp_send_sample(fd, opt->sample_bytes, opt->sample_seed);
	due.status = due.flush = util_mono_ns();
	due.snap = due.status + (opt->snapshot_first_ns ? opt->snapshot_first_ns : opt->snapshot_ns);
	for (;;) {
		int timeout = TICK_MS;
		ssize_t n;

		t = util_mono_ns();
		ret = stopping(c, fd, q, &st, t, &timeout);
		if (ret)
			break;
		ret = periodic(c, &due, t, st.asked || itp_inq_ended(q), &timeout);
		if (ret)
			break;
		if (off == len && c->have_header) {
			/* nothing waits in buf: parse in the queue's blocks */
			off = len = 0;
			rc = in_place(c, q, buf, &len, &total, timeout, &ret);
			if (rc == -EINTR || rc == -EAGAIN)
				continue;
			if (rc < 0) {
				c->res->sys_errno = -rc;
				ret = itp_fail(c, ITP_E_IO, "reading the event socket: %s",
					       strerror(-rc));
				break;
			}
			if (ret == -ITP_E_BUDGET && !c->discard) {
				c->discard = 1;
				ret = 0;
				continue;
			}
			if (!rc || ret || c->ended)
				break;
			continue;
		}
		/* buf[off, len) holds unparsed bytes: make room at the end */
		if (cap - len < cap / 4) {
			memmove(buf, buf + off, len - off);
			len -= off;
			off = 0;
		}
		want = missing(c, buf + off, len - off);
		if (want > cap - len)
			want = cap - len;
		n = itp_inq_take(q, buf + len, want, timeout);
		if (n < 0) {
			if (n == -EINTR || n == -EAGAIN)
				continue;
			c->res->sys_errno = (int)-n;
			ret = itp_fail(c, ITP_E_IO, "reading the event socket: %s", strerror((int)-n));
			break;
		}
		if (!n) {
			ret = ended_early(c, total, len - off);
			break;
		}
		len += (size_t)n;
		ret = itp_parse(c, buf + off, len - off, &used);
		if (ret == -ITP_E_BUDGET && !c->discard) {
			/* the rest of buf is skipped record by record from here */
			c->discard = 1;
			ret = 0;
		}
		if (ret)
			break;
		off += used;
		total += used;
		/*
		 * A take that filled the buffer means a busy stream (or a record
		 * bigger than what is left): grow, up to room for a whole record
		 * of WIRE_MAX_RECORD plus a block.
		 */
		if (len == cap && cap < ITP_BUF_SIZE) {
			uint8_t *nb = realloc(buf, cap * 2);

			if (!nb) {
				ret =
				    itp_fail(c, ITP_E_NOMEM, "out of memory for the input buffer");
				break;
			}
			buf = nb;
			cap *= 2;
		}
		if (off == len)
			off = len = 0;
		if (c->ended)
			break;
	}
	free(buf);
	return ret;
}

/* the end, whatever ended the stream */
static void finish(struct itp_ctx *c)
{
	uint64_t t0;
	int rc;

	int again = c->opt->stop && *c->opt->stop >= 2;

	if (c->res->err == ITP_E_OUTPUT || !c->w)
		return;
	/* after the budget or a second stop, the events still parked are dropped */
	if (!c->discard && !again && itp_order_drain(c, 1))
		return;
	if (c->ended && c->total_seq > c->next_seq) {
		/* numbers taken but never sent (lost events) */
		c->res->warn.skipped_seqs += c->total_seq - c->next_seq;
		c->next_seq = c->total_seq;
	}
	if (c->have_header && !c->ended)
		itp_fail(c, ITP_E_TRUNCATED, "stream ended without an end record");
	if (!again)
		itp_pin_retry(c);
	clock_elapsed(c, c->ended ? c->end_mono_ns : util_mono_ns());
	if (c->sites.n && itp_sites_write(c) && c->res->err == ITP_E_OUTPUT)
		return;
	itp_agg_snapshot(c, util_mono_ns()); /* the last one, at the end of the session */
	/* snapshots only: no recording to name the ips in (the snapshots have their own names) */
	if (c->opt->output) {
		t0 = util_mono_ns();
		rc = itp_symbolize(c);
		c->res->symbolize_ns = util_mono_ns() - t0;
		if (rc && c->res->err == ITP_E_OUTPUT)
			return;
	}
	if (c->have_header)
		itp_meta_end(c);
}

int itp_run(int fd, const struct itp_options *opt, struct itp_result *res)
{
	struct itp_result dummy;
	struct itp_ctx c;
	struct itp_inq *q = NULL;
	uint64_t tables;
	size_t input_limit;
	int rerr = 0, rc;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	if (!opt || (!opt->output && !opt->snapshot)) {
		res->err = ITP_E_OUTPUT;
		res->rec_error = REC_E_RANGE;
		strcpy(res->detail, "no output path given");
		return -ITP_E_OUTPUT;
	}
	itp_ctx_init(&c, opt, res);
	/* snapshots without a recording: the writer takes the records and keeps nothing */
	c.w = opt->output ? rec_writer_create(opt->output, &rerr) : rec_writer_discard(&rerr);
	if (!c.w) {
		res->rec_error = rerr < 0 ? -rerr : rerr;
		itp_fail(&c, ITP_E_OUTPUT, "cannot create %s: %s",
			 opt->output ? opt->output : "the discarding writer", rec_strerror(rerr));
		goto out_free;
	}
	/* the recording's encoder and zstd off this thread (without it, written here) */
	(void)rec_writer_thread(c.w);
	itp_budget(opt, &tables, NULL, &input_limit);
	rc = itp_inq_start(&q, fd, input_limit);
	if (rc < 0) {
		res->sys_errno = -rc;
		itp_fail(&c, ITP_E_NOMEM, "cannot start reading the stream: %s", strerror(-rc));
	} else {
		read_loop(&c, fd, q);
		/* stop reading before the slow part: the library has sent END, or we gave up */
		itp_inq_stop(q, &res->input);
	}
	finish(&c);
	rc = rec_writer_close(c.w);
	c.w = NULL;
	if (rc)
		itp_out_fail(&c, rc, "the end of the recording");
	res->final = c.st;
	res->ips = c.nips;
	res->site_calls = c.sites.calls;
	res->site_bytes = c.sites.bytes;
	res->site_records = c.sites.records;
	res->snap_ips = c.snapsym.nent;
	res->snap_named = c.snapsym.named;
	res->snap_sym_bytes = itp_snapsym_bytes(&c.snapsym);
	res->snap_symbolize_ns = c.snapsym.ns;
	res->peak_table_bytes = c.mem.peak;
	res->warn.unpinned_modules = c.pins.failed;
	report_status(&c);
	res->final.output_bytes = c.st.output_bytes;
out_free:
	itp_ctx_free(&c);
	return res->err ? -res->err : 0;
}
