/* track/session.c - start and end of a recording session, the stream header */
/* SPDX-License-Identifier: MIT */
/*
 * Runs in the target. trk_g, defined here, is the per-process state (see
 * internal.h). A session starts: header, module list (sequence numbers
 * 0 ...), timer thread, then the hooks record. It ends once, by whoever
 * gets there first: the process exiting (preload's destructor), heaptap's
 * STOP or EOF (timer thread), trk_stop from inject/, or a failed write (the
 * socket is then dead and no END can go out). Once it has fully ended (the
 * timer thread closed the socket and is gone) another session may start in
 * the same process (a second attach): it gets the next session number
 * (trk_g.sess_gen), its own numbering from 0, the module list again, and
 * the trace nodes it uses announced again (tree.c); the trace tree and the
 * thread buffers stay.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "track/buf_internal.h"
#include "track/internal.h"
#include "track/xframe_internal.h"
#include "track/sample_internal.h"
#include "track/unwind_internal.h"

struct trk_global trk_g = {
	/* until trk_set_real: the embedder's bootstrap, if any (track.h) */
	.real = {
		.malloc = trk_boot_malloc,
		.free = trk_boot_free,
		.calloc = trk_boot_calloc,
		.realloc = trk_boot_realloc,
	},
	.state = TRK_OFF,
	.fd = -1,
	.next_node = 1,
	.flush_lock = PTHREAD_MUTEX_INITIALIZER,
	.free_lock = PTHREAD_MUTEX_INITIALIZER,
	.sock_lock = PTHREAD_MUTEX_INITIALIZER,
	.mod_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* The header is built here, not on the stack: it may be 64 KiB. */
static uint8_t hdr_buf[WIRE_MAX_HEADER];

void trk_set_real(const struct trk_real *real)
{
	trk_g.real = *real;
}

int trk_active(void)
{
	return atomic_load_explicit(&trk_g.state, memory_order_relaxed) == TRK_ON;
}

/* read_file - up to cap bytes of a /proc file with plain syscalls; length or -errno. */
static ssize_t read_file(const char *path, uint8_t *buf, size_t cap)
{
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (got < cap) {
		ssize_t r = read(fd, buf + got, cap - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	return (ssize_t)got;
}

/* build_header - the stream header in hdr_buf; returns its length. */
static size_t build_header(uint64_t realtime_ns)
{
	struct wire_header h = { 0 };
	uint8_t exe[4096];
	ssize_t exe_len, cmd_len;
	size_t off = WIRE_HDR_FIXED, room;

	exe_len = readlink("/proc/self/exe", (char *)exe, sizeof(exe));
	if (exe_len < 0)
		exe_len = 0;
	off += wire_put_varint(hdr_buf + off, (uint64_t)exe_len);
	memcpy(hdr_buf + off, exe, (size_t)exe_len);
	off += (size_t)exe_len;
	/* the command line gets what is left, its length as a 3-byte varint at most */
	room = sizeof(hdr_buf) - off - 3;
	cmd_len = read_file("/proc/self/cmdline", hdr_buf + off + 3, room);
	if (cmd_len < 0)
		cmd_len = 0;
	{
		uint8_t v[WIRE_VARINT_MAX];
		size_t vl = wire_put_varint(v, (uint64_t)cmd_len);

		memmove(hdr_buf + off + vl, hdr_buf + off + 3, (size_t)cmd_len);
		memcpy(hdr_buf + off, v, vl);
		off += vl + (size_t)cmd_len;
	}

	memcpy(h.magic, WIRE_MAGIC, sizeof(h.magic));
	h.version = WIRE_VERSION;
	h.header_len = (uint32_t)off;
	h.flags = trk_g.flags;
	h.pid = (uint32_t)getpid();
	h.page_size = (uint32_t)trk_g.page_size;
	h.start_realtime_ns = realtime_ns;
	h.start_mono_ns = trk_g.start_mono_ns;
	h.sample_bytes = 0;
	memcpy(hdr_buf, &h, sizeof(h));
	return off;
}

/*
 * begin - the new session's socket, numbering and header, in one go under
 * the socket lock: a late hook of an earlier session may flush at any
 * time, and must find either the old session's closed socket or the new
 * one with its header already written. 0 or -errno.
 */
static int begin(int fd, uint64_t realtime)
{
	size_t len = build_header(realtime);
	uint32_t gen;
	int ret;

	pthread_mutex_lock(&trk_g.sock_lock);
	gen = atomic_load(&trk_g.sess_gen) + 1;
	/* the counter first: who sees the new session number gets its numbers */
	atomic_store(&trk_g.seq, (uint64_t)gen << TRK_SEQ_BITS);
	atomic_store(&trk_g.sess_gen, gen);
	atomic_store(&trk_g.dropped, 0);
	trk_g.fd = fd;
	trk_g.ended = 0;
	ret = trk_sock_write_raw_locked(hdr_buf, len);
	pthread_mutex_unlock(&trk_g.sock_lock);
	return ret;
}

/* timer_thr_get - the timer's buffer: the last session's (its timer is gone) or a new one. */
static int timer_thr_get(void)
{
	struct trk_thr *t = trk_g.timer_thr;

	if (!t) {
		trk_g.timer_thr = trk_thr_new(trk_gettid());
		return trk_g.timer_thr ? 0 : -ENOMEM;
	}
	/* nobody else touches it between sessions; its old events are stale */
	t->tid = trk_gettid();
	t->len = 0;
	t->nev = 0;
	t->skip = 0;
	return 0;
}

int trk_start(const struct trk_config *cfg)
{
	int expected = 0, saved_guard = trk_tls_guard, ret, fd;
	uint64_t realtime;

	/* one session at a time: the previous one must have fully ended */
	if (!atomic_compare_exchange_strong(&trk_g.started, &expected, 1)) {
		close(cfg->fd);
		return -EALREADY;
	}
	if (atomic_load(&trk_g.sess_gen) >= TRK_GEN_MAX) {
		close(cfg->fd);
		return -EALREADY; /* numbers for sessions used up (65535 attaches) */
	}
	trk_tls_guard = 1; /* whatever libc allocates for us is not recorded */
	ret = trk_sock_adopt(cfg->fd);
	if (ret < 0) {
		atomic_store(&trk_g.state, TRK_DONE);
		atomic_store(&trk_g.started, 0);
		goto out;
	}
	fd = ret;
	trk_g.depth = cfg->depth ? cfg->depth : TRK_DEPTH_DEFAULT;
	if (trk_g.depth > TRK_DEPTH_MAX)
		trk_g.depth = TRK_DEPTH_MAX;
	trk_g.flags = cfg->flags;
	trk_g.before_end = cfg->before_end;
	trk_g.before_end_arg = cfg->before_end_arg;
	atomic_store(&trk_g.before_end_ran, 0);
	trk_g.timer_ok = 0;
	trk_g.page_size = sysconf(_SC_PAGESIZE);
	trk_g.pid = getpid();
	realtime = util_clock_ns(CLOCK_REALTIME);
	trk_g.start_mono_ns = util_mono_ns();
	trk_unwind_init(cfg->libunwind_only);

	ret = trk_thr_key_init();
	if (ret < 0)
		goto out_close_fd;
	ret = timer_thr_get();
	if (ret < 0)
		goto out_close_fd;
	ret = begin(fd, realtime);
	if (ret < 0)
		goto out_close;
	/* after the new numbering began: a late scan of the old session announces in this one */
	ret = trk_mod_init();
	if (ret < 0)
		goto out_close;
	trk_mod_scan(trk_g.timer_thr, true);
	trk_thr_flush_one(trk_g.timer_thr);
	if (trk_g.ended) {
		ret = -EPIPE;
		goto out_close;
	}
	atomic_store(&trk_xf_off, 0); /* until heaptap's WIRE_CTL_XFRAMES says otherwise */
	trk_smp_start(fd, cfg); /* sampling asked for from the start: before the first hook records */
	atomic_store(&trk_g.state, TRK_ON);
	ret = trk_timer_start(cfg->timerless);
	if (ret < 0) {
		trk_end(WIRE_END_ERROR); /* no timer: closes the socket itself */
		atomic_store(&trk_g.started, 0);
		goto out;
	}
	ret = 0;
	goto out;

out_close_fd:
	pthread_mutex_lock(&trk_g.sock_lock);
	trk_g.fd = fd;
	pthread_mutex_unlock(&trk_g.sock_lock);
out_close:
	pthread_mutex_lock(&trk_g.sock_lock);
	trk_g.ended = 1;
	trk_sock_close_locked();
	pthread_mutex_unlock(&trk_g.sock_lock);
	atomic_store(&trk_g.state, TRK_DONE);
	atomic_store(&trk_g.started, 0);
out:
	trk_tls_guard = saved_guard;
	return ret;
}

void trk_end(int reason)
{
	int expected = TRK_ON, saved_guard = trk_tls_guard, saved_errno = errno;
	uint64_t restored = 0, left = 0, total;
	uint8_t p[5 * WIRE_VARINT_MAX];
	size_t n = 0;

	/* a vfork child shares our memory: it must not end its parent's session */
	if (getpid() != trk_g.pid)
		return;
	trk_xf_flush(); /* the producer's last definitions, while they are still taken */
	if (!atomic_compare_exchange_strong(&trk_g.state, &expected, TRK_DONE))
		return;
	trk_smp_stop(); /* the sampled hot paths do not look at the state */
	trk_tls_guard = 1;
	trk_run_before_end(&restored, &left);
	trk_thr_flush_all();
	trk_xf_drain(false);
	trk_smp_send_sites();
	/* a last RSS sample: a run shorter than one tick has one too */
	trk_send_tick(false);
	total = atomic_load(&trk_g.seq) & TRK_SEQ_MASK;
	n += wire_put_varint(p + n, total);
	n += wire_put_varint(p + n, (uint64_t)reason);
	n += wire_put_varint(p + n, restored);
	n += wire_put_varint(p + n, left);
	n += wire_put_varint(p + n, atomic_load(&trk_g.dropped));

	trk_sock_lock_room(n + 1 + WIRE_VARINT_MAX);
	{
		struct iovec v = { .iov_base = p, .iov_len = n };

		trk_sock_send_locked(WIRE_REC_END, &v, 1);
	}
	trk_g.ended = 1;
	if (trk_g.timer_ok) {
		/* the timer thread polls the fd: it closes it when it sees EOF */
		if (trk_sock_ours())
			shutdown(trk_g.fd, SHUT_RDWR);
	} else {
		trk_sock_close_locked();
	}
	pthread_mutex_unlock(&trk_g.sock_lock);
	atomic_store(&trk_tl_on, 0);
	if (!trk_g.timer_ok)
		atomic_store(&trk_g.started, 0); /* no timer thread (timerless): fully ended */
	trk_tls_guard = saved_guard;
	errno = saved_errno;
}

void trk_run_before_end(uint64_t *restored, uint64_t *left)
{
	int expected = 0;

	if (!trk_g.before_end ||
	    !atomic_compare_exchange_strong(&trk_g.before_end_ran, &expected, 1))
		return;
	trk_g.before_end(trk_g.before_end_arg, restored, left);
}

void trk_stop(int reason)
{
	trk_end(reason);
}

void trk_after_fork_child(void)
{
	int saved_errno = errno;

	/*
	 * Only the forking thread exists here (it is not inside a hook); the
	 * parent's timer thread was not copied. A lock some other parent
	 * thread held at fork() stays held in the child, but with the state
	 * DONE nothing takes our locks any more. Drop out, let go of the
	 * socket.
	 */
	atomic_store(&trk_g.state, TRK_DONE);
	trk_smp_stop(); /* the sampled hot paths do not look at the state */
	trk_g.ended = 1;
	trk_g.timer_ok = 0;
	trk_sock_close_locked(); /* our lock may be held by a vanished thread: not taken */
	errno = saved_errno;
}
