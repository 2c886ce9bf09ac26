/* tests/unit/check_track_xframe.c - Check suite for track/'s foreign frames: producer, splice, define queue */
/* SPDX-License-Identifier: MIT */
/*
 * A real session over a socketpair in the test process (Check forks each
 * test; tests/lib/check_session.h), the hooks called directly, the stream
 * decoded with the independent reader of tests/lib/check_decode.h plus a scan
 * of the WIRE_REC_XFRAME records done here with wire.h alone.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/check_decode.h"
#include "tests/lib/check_fixture.h"
#include "tests/lib/check_session.h"
#include "track/internal.h"
#include "track/track.h"
#include "tests/lib/check_libc_real.h"

/* ---- the session ------------------------------------------------------------ */

static void session_start(struct ck_reader *r)
{
	struct trk_config cfg = { 0 };

	cfg.fd = ck_reader_start(r);
	trk_set_real(&libc_real);
	cfg.sample_given = 1; /* full tracing at once */
	ck_assert_int_eq(trk_start(&cfg), 0);
}

/* The definitions a stream carried, in order. */
struct xdef {
	uint64_t id, line;
	uint8_t lang, kind;
	char name[WIRE_XFRAME_MAX_NAME + 1], file[WIRE_XFRAME_MAX_FILE + 1];
};

/* scan_xframes - the XFRAME records of a whole stream (header skipped by its length) into v (cap). */
static size_t scan_xframes(const uint8_t *buf, size_t len, struct xdef *v, size_t cap)
{
	struct wire_header h;
	const uint8_t *p, *end = buf + len;
	size_t n = 0;

	ck_assert_uint_ge(len, WIRE_HDR_FIXED);
	memcpy(&h, buf, sizeof(h));
	p = buf + h.header_len;
	while (p < end) {
		uint8_t type = *p++;
		uint64_t rl, nl, fl;
		const uint8_t *q, *e;

		ck_assert_int_eq(wire_get_varint(&p, end, &rl), 0);
		ck_assert_uint_le(rl, (uint64_t)(end - p));
		q = p;
		e = p + rl;
		p = e;
		if (type != WIRE_REC_XFRAME)
			continue;
		ck_assert_uint_lt(n, cap);
		memset(&v[n], 0, sizeof(v[n]));
		ck_assert_int_eq(wire_get_varint(&q, e, &v[n].id), 0);
		ck_assert_int_ge(e - q, 2);
		v[n].lang = *q++;
		v[n].kind = *q++;
		ck_assert_int_eq(wire_get_varint(&q, e, &v[n].line), 0);
		ck_assert_int_eq(wire_get_varint(&q, e, &nl), 0);
		ck_assert_uint_le(nl, WIRE_XFRAME_MAX_NAME);
		memcpy(v[n].name, q, nl);
		q += nl;
		ck_assert_int_eq(wire_get_varint(&q, e, &fl), 0);
		ck_assert_uint_le(fl, WIRE_XFRAME_MAX_FILE);
		ck_assert_uint_eq(fl, (uint64_t)(e - q));
		memcpy(v[n].file, q, fl);
		n++;
	}
	return n;
}

/* session_end - stop, wait for the reader, decode the events. */
static void session_end(struct ck_reader *r, struct ck_dec *s)
{
	trk_stop(WIRE_END_STOP);
	ck_reader_join(r);
	ck_assert_msg(ck_decode(r->buf, r->len, s) == 0, "malformed stream at byte %zu: %s",
		      s->error_at, s->error);
}

/* ---- definitions ------------------------------------------------------------ */

START_TEST(define_needs_a_session_and_a_valid_id)
{
	struct ck_reader r;
	struct ck_dec s;
	struct xdef *v = calloc(4, sizeof(*v));

	ck_assert_int_eq(trk_xframe_session(), 0);
	ck_assert_int_eq(trk_xframe_define(1, WIRE_LANG_JAVA, 0, 0, "a", 1, "b", 1), -EPIPE);
	session_start(&r);
	ck_assert_uint_ne(trk_xframe_session(), 0);
	ck_assert_int_eq(trk_xframe_define(WIRE_XFRAME_ID_MAX + 1, 1, 0, 0, "a", 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(trk_xframe_define(1, 256, 0, 0, "a", 1, NULL, 0), -EINVAL);
	ck_assert_int_eq(trk_xframe_define(1, 1, 0, 0, NULL, 3, NULL, 0), -EINVAL);
	ck_assert_int_eq(trk_xframe_define(WIRE_XFRAME_ID_MAX, WIRE_LANG_PYTHON, 0, 9, "f", 1, "", 0), 0);
	session_end(&r, &s);
	ck_assert_int_eq(trk_xframe_session(), 0);
	ck_assert_int_eq(trk_xframe_define(2, WIRE_LANG_JAVA, 0, 0, "a", 1, "b", 1), -EPIPE);
	ck_assert_uint_eq(scan_xframes(r.buf, r.len, v, 4), 1);
	ck_assert_uint_eq(v[0].id, WIRE_XFRAME_ID_MAX);
	ck_assert_uint_eq(v[0].line, 9);
	ck_assert_str_eq(v[0].name, "f");
	ck_assert_str_eq(v[0].file, "");
	ck_dec_free(&s);
	free(r.buf);
	free(v);
}
END_TEST

START_TEST(define_cuts_long_names)
{
	static char name[3000], file[5000];
	struct ck_reader r;
	struct ck_dec s;
	struct xdef *v = calloc(4, sizeof(*v));

	for (size_t i = 0; i < sizeof(name); i++)
		name[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < sizeof(file); i++)
		file[i] = (char)('A' + i % 26);
	session_start(&r);
	ck_assert_int_eq(trk_xframe_define(7, WIRE_LANG_JAVA, WIRE_XKIND_INLINED, 216, name,
					   sizeof(name), file, sizeof(file)), 0);
	session_end(&r, &s);
	ck_assert_uint_eq(scan_xframes(r.buf, r.len, v, 4), 1);
	ck_assert_uint_eq(v[0].kind, WIRE_XKIND_INLINED);
	/* the name keeps its start, the file its end after "..." */
	ck_assert_uint_eq(strlen(v[0].name), WIRE_XFRAME_MAX_NAME);
	ck_assert_int_eq(memcmp(v[0].name, name, WIRE_XFRAME_MAX_NAME), 0);
	ck_assert_uint_eq(strlen(v[0].file), WIRE_XFRAME_MAX_FILE);
	ck_assert_int_eq(memcmp(v[0].file, "...", 3), 0);
	ck_assert_int_eq(memcmp(v[0].file + 3, file + sizeof(file) - (WIRE_XFRAME_MAX_FILE - 3),
				WIRE_XFRAME_MAX_FILE - 3), 0);
	ck_dec_free(&s);
	free(r.buf);
	free(v);
}
END_TEST

#define FLOOD 20000

/*
 * Defining faster than the timer sends fills the queue: -EAGAIN, and the
 * call works again once a tick has sent it. Every accepted definition
 * arrives once, in order; no refused one does.
 */
START_TEST(define_queue_full_and_drained)
{
	struct ck_reader r;
	struct ck_dec s;
	struct xdef *v = calloc(FLOOD, sizeof(*v));
	uint8_t *ok = calloc(FLOOD, 1);
	size_t n, k = 0, refused = 0, after = 0;

	session_start(&r);
	for (uint64_t id = 0; id < FLOOD; id++) {
		int rc = trk_xframe_define(id, WIRE_LANG_PYTHON, 0, (uint32_t)id, "f", 1, "x.py", 4);

		ck_assert_msg(rc == 0 || rc == -EAGAIN, "define returned %d", rc);
		refused += rc != 0;
		/* the first refusal: the same id again until a tick has made room (10 s at most) */
		for (int k = 0; rc && refused == 1 && k < 1000; k++) {
			usleep(10000);
			rc = trk_xframe_define(id, WIRE_LANG_PYTHON, 0, (uint32_t)id, "f", 1, "x.py", 4);
			after += rc == 0;
		}
		ok[id] = rc == 0;
	}
	ck_assert_msg(refused > 0, "20000 definitions never filled the queue");
	ck_assert_msg(after == 1, "the queue was never drained");
	session_end(&r, &s);
	n = scan_xframes(r.buf, r.len, v, FLOOD);
	for (uint64_t id = 0; id < FLOOD; id++) {
		if (!ok[id])
			continue;
		ck_assert_uint_lt(k, n);
		ck_assert_uint_eq(v[k].id, id);
		ck_assert_uint_eq(v[k].line, id);
		k++;
	}
	ck_assert_uint_eq(k, n);
	ck_dec_free(&s);
	free(r.buf);
	free(v);
	free(ok);
}
END_TEST

/* ---- the producer ------------------------------------------------------------ */

static __thread uint64_t splice_id; /* 0: the producer leaves the stack alone */
static _Atomic int produced;

/* put wire_xframe_ip(splice_id) innermost, above the allocating frame */
static size_t producer(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	ck_assert_ptr_eq(arg, &produced);
	atomic_fetch_add(&produced, 1);
	if (!splice_id || n >= cap)
		return n;
	memmove(ips + 1, ips, n * sizeof(*ips));
	ips[0] = wire_xframe_ip(splice_id);
	return n + 1;
}

static size_t other_producer(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	(void)arg;
	(void)ips;
	(void)cap;
	return n;
}

static void *volatile keep;
static void *kept[32]; /* every block call_site made, freed at the end of its test */
static size_t nkept;

static void hold(void *p)
{
	keep = p;
	if (nkept < sizeof(kept) / sizeof(kept[0]))
		kept[nkept++] = p;
}

static void release_all(void)
{
	while (nkept)
		free(kept[--nkept]);
}

__attribute__((noinline)) static void *call_site(size_t n)
{
	void *p = trk_malloc(n);

	__asm__ volatile("" ::: "memory"); /* no tail call */
	return p;
}

/* leaf_ips - per ALLOC of the stream (in sequence order), the ip of its leaf node */
static size_t leaf_ips(const struct ck_dec *s, uint64_t *out, size_t cap)
{
	struct ck_ev *v = ck_dec_by_seq(s);
	struct ck_nodes t;
	size_t n = 0;

	ck_dec_nodes(s, &t);
	for (size_t i = 0; i < s->nev; i++)
		if (v[i].op == WIRE_EV_ALLOC && n < cap)
			out[n++] = v[i].trace < t.n ? t.ip[v[i].trace] : 0;
	ck_nodes_free(&t);
	free(v);
	return n;
}

/*
 * One call site, the same native stack every time: before a producer
 * (its stack memoised by the hooks), with a producer splicing a different
 * foreign frame each time, and after it is removed. Each allocation's leaf
 * must be what was spliced at that moment, never a cached stack of another.
 */
START_TEST(producer_splices_and_caches_stay_right)
{
	struct ck_reader r;
	struct ck_dec s;
	uint64_t leaf[16];
	size_t n;
	int i;

	session_start(&r);
	for (i = 0; i < 3; i++)
		hold(call_site(100 + (size_t)i)); /* native; the call site gets memoised */
	ck_assert_int_eq(trk_xframe_set_producer(producer, &produced), 0);
	for (i = 0; i < 6; i++) {
		splice_id = 1 + (uint64_t)(i % 3); /* 1 2 3 1 2 3 */
		hold(call_site(200 + (size_t)i));
	}
	splice_id = 0;
	hold(call_site(300)); /* producer set, nothing spliced */
	ck_assert_int_eq(trk_xframe_set_producer(NULL, NULL), 0);
	hold(call_site(400));
	ck_assert_int_eq(atomic_load(&produced), 7);
	session_end(&r, &s);
	n = leaf_ips(&s, leaf, 16);
	ck_assert_uint_eq(n, 11);
	for (i = 0; i < 3; i++)
		ck_assert(!wire_is_xframe(leaf[i]));
	for (i = 0; i < 6; i++)
		ck_assert_uint_eq(leaf[3 + i], wire_xframe_ip(1 + (uint64_t)(i % 3)));
	/* the native leaf again, the same node as before the producer */
	ck_assert_uint_eq(leaf[9], leaf[0]);
	ck_assert_uint_eq(leaf[10], leaf[0]);
	release_all();
	ck_dec_free(&s);
	free(r.buf);
}
END_TEST

/* put wire_xframe_ip(splice_id) below the two innermost frames: an outer frame, as Java and Python do */
static size_t outer_producer(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	size_t at = n < 2 ? n : 2;

	(void)arg;
	atomic_fetch_add(&produced, 1);
	if (n >= cap)
		return n;
	memmove(ips + at + 1, ips + at, (n - at) * sizeof(*ips));
	ips[at] = wire_xframe_ip(splice_id);
	return n + 1;
}

/* xframe_ids - per ALLOC of the stream (in sequence order), the foreign frame id on its stack, 0 if none */
static size_t xframe_ids(const struct ck_dec *s, uint64_t *out, size_t cap)
{
	struct ck_ev *v = ck_dec_by_seq(s);
	struct ck_nodes t;
	size_t n = 0;

	ck_dec_nodes(s, &t);
	for (size_t i = 0; i < s->nev; i++) {
		uint64_t id = 0;

		if (v[i].op != WIRE_EV_ALLOC || n == cap)
			continue;
		for (uint64_t k = v[i].trace, d = 0; k && k < t.n && d < 256; k = t.parent[k], d++)
			if (wire_is_xframe(t.ip[k]))
				id = wire_xframe_id(t.ip[k]);
		out[n++] = id;
	}
	ck_nodes_free(&t);
	free(v);
	return n;
}

/* out of the loop's body, so that the compiler makes no second copy of the call for i == 3 */
__attribute__((noipa)) static void before_call(int i)
{
	if (i == 3)
		ck_assert_int_eq(trk_xframe_set_producer(outer_producer, NULL), 0);
	splice_id = 1 + (uint64_t)(i % 2);
}

/*
 * The hooks' per-call-site memo answers from the native state alone, so
 * it must not answer while a producer is set: the same native call site
 * (one loop, so the same stack in memory each time) memoised before the
 * producer, then under a producer whose answer changes every time. A memo
 * asked there would give the native stack, or the previous answer's.
 */
START_TEST(memo_not_taken_under_a_producer)
{
	struct ck_reader r;
	struct ck_dec s;
	uint64_t id[16];
	size_t n;
	int i;

	session_start(&r);
	for (i = 0; i < 8; i++) {
		before_call(i);
		hold(call_site(64));
	}
	ck_assert_int_eq(trk_xframe_set_producer(NULL, NULL), 0);
	session_end(&r, &s);
	n = xframe_ids(&s, id, 16);
	ck_assert_uint_eq(n, 8);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(id[i], 0);
	for (i = 3; i < 8; i++)
		ck_assert_msg(id[i] == 1 + (uint64_t)(i % 2), "allocation %d: frame %llu, not %d", i,
			      (unsigned long long)id[i], 1 + i % 2);
	ck_assert_int_eq(atomic_load(&produced), 5);
	release_all();
	ck_dec_free(&s);
	free(r.buf);
}
END_TEST

START_TEST(producer_slots)
{
	static char args[TRK_XFRAME_PRODUCERS + 1];

	/* the same pair again takes no new slot */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(trk_xframe_set_producer(other_producer, &args[0]), 0);
	for (int i = 1; i < TRK_XFRAME_PRODUCERS; i++)
		ck_assert_int_eq(trk_xframe_set_producer(other_producer, &args[i]), 0);
	ck_assert_int_eq(trk_xframe_set_producer(other_producer, &args[TRK_XFRAME_PRODUCERS]),
			 -ENOSPC);
	ck_assert_int_eq(trk_xframe_set_producer(other_producer, &args[5]), 0);
	ck_assert_int_eq(trk_xframe_set_producer(NULL, NULL), 0);
}
END_TEST

static Suite *track_xframe_suite(void)
{
	Suite *s = suite_create("track_xframe");
	TCase *tc = tcase_create("xframe");

	tcase_add_test(tc, define_needs_a_session_and_a_valid_id);
	tcase_add_test(tc, define_cuts_long_names);
	tcase_add_test(tc, define_queue_full_and_drained);
	tcase_add_test(tc, producer_splices_and_caches_stay_right);
	tcase_add_test(tc, memo_not_taken_under_a_producer);
	tcase_add_test(tc, producer_slots);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(track_xframe_suite());
}
