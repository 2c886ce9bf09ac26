/* interpret/inq_internal.h - the input queue: a reader thread drains the socket */
/* SPDX-License-Identifier: MIT */
#ifndef HEAPTAP_INTERPRET_INQ_INTERNAL_H
#define HEAPTAP_INTERPRET_INQ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "interpret/interpret.h"

/* ---------------------------------------------------------------- */
/* the input queue: a reader thread drains the socket (inq.c)        */

#define ITP_INQ_LIMIT ((size_t)32 << 20) /* default bytes of queued blocks */
#define ITP_INQ_BLOCK ((size_t)128 << 10) /* bytes a block holds: the step of back-pressure */
#define ITP_INQ_MIN_READ ((size_t)16 << 10) /* a new block once the tail has less room */
#define ITP_INQ_IDLE_MS 100 /* a take that waited this long in vain frees the spare blocks */
#define ITP_INQ_STALL_MS 5000 /* interpreter took nothing this long, bytes waiting: stop reading */

struct itp_inq;

/*
 * itp_inq_start - start a reader thread that reads fd into at most limit
 * bytes of blocks (0 = ITP_INQ_LIMIT; at least two blocks). If the thread
 * cannot be created, itp_inq_take reads fd itself. 0, or -errno (no queue).
 */
int itp_inq_start(struct itp_inq **q, int fd, size_t limit);
/*
 * itp_inq_take - copy up to cap bytes, in stream order, into dst, waiting
 * at most timeout_ms for some. Returns the bytes copied (> 0), 0 at EOF
 * (after every byte was taken), -EAGAIN when nothing came in time, -EINTR
 * when a signal interrupted the wait, or -errno of a failed read (after
 * every byte read before it was taken).
 */
ssize_t itp_inq_take(struct itp_inq *q, void *dst, size_t cap, int timeout_ms);
/*
 * itp_inq_peek - the oldest bytes not taken yet, in place: *p and *len, the
 * rest of the oldest block (contiguous, at most ITP_INQ_BLOCK). With have ==
 * 0 it waits as itp_inq_take and returns 1 (bytes), 0 (EOF, all taken) or
 * -errno (-EAGAIN, -EINTR, a read error). With have > 0 (the caller looked
 * at that many bytes and needs more of the same block): 1 when the block
 * now holds more than have, else 2 at once, *len = have (copy them out
 * with itp_inq_take). The bytes stay in place until itp_inq_consume.
 */
int itp_inq_peek(struct itp_inq *q, const uint8_t **p, size_t *len, size_t have, int timeout_ms);
/* itp_inq_consume - n of the peeked bytes are taken (the block is reused once all are). */
void itp_inq_consume(struct itp_inq *q, size_t n);
/* itp_inq_full_ns - time the reader has waited for room so far, the current wait included. */
uint64_t itp_inq_full_ns(struct itp_inq *q);
/* itp_inq_set_stall - change ITP_INQ_STALL_MS for this queue (tests). */
void itp_inq_set_stall(struct itp_inq *q, unsigned ms);
/*
 * itp_inq_stopping - a stop was asked (the sender's last bytes and its end
 * come now): from here the reader may queue up to twice the limit and
 * reads on even when the interpreter takes nothing, so the sender can
 * finish while the interpreter lags (docs/stream.md, "Ending").
 */
void itp_inq_stopping(struct itp_inq *q);
/*
 * itp_inq_progress_ns - when the sender was last seen making progress, by
 * the monotonic clock: the reader's last read of some bytes; now when the
 * reader waits for room or the socket holds bytes it has not read yet
 * (the wait is heaptap's, not the sender's).
 */
uint64_t itp_inq_progress_ns(struct itp_inq *q, uint64_t now);
/* itp_inq_ended - 1 once the reader saw EOF or a failed read (the bytes before it may still wait). */
int itp_inq_ended(struct itp_inq *q);
/* itp_inq_stop - end the reader (it stops reading at once), free everything, give its numbers. */
void itp_inq_stop(struct itp_inq *q, struct itp_input *st);

#endif /* HEAPTAP_INTERPRET_INQ_INTERNAL_H */
