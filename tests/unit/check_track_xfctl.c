/* tests/unit/check_track_xfctl.c - WIRE_CTL_XFRAMES: heaptap switches one language's foreign frames off */
/* SPDX-License-Identifier: MIT */
/*
 * A real session over a socketpair. Two producers take turns: one
 * registered for Python (trk_xframe_set_producer_lang), one for any
 * language (trk_xframe_set_producer); each counts its calls. After heaptap's
 * WIRE_CTL_XFRAMES with the Python bit the hooks no longer call the Python
 * producer (and trk_xframe_wanted says no for Python, yes for Java), the
 * other one still; a mask of 0 brings the Python producer back; a new
 * session starts with every language wanted.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/check_session.h"
#include "track/internal.h"
#include "track/track.h"
#include "track/wire.h"
#include "tests/lib/check_libc_real.h"

static _Atomic unsigned calls_py, calls_any;

static size_t prod_py(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	(void)arg, (void)ips, (void)cap;
	calls_py++;
	return n;
}

static size_t prod_any(void *arg, uintptr_t *ips, size_t n, size_t cap)
{
	(void)arg, (void)ips, (void)cap;
	calls_any++;
	return n;
}

static void allocs(unsigned n)
{
	while (n--) {
		void *volatile p = trk_malloc(100);

		trk_free(p);
	}
}

static void send_mask(int fd, uint8_t mask)
{
	const uint8_t msg[3] = { WIRE_CTL_XFRAMES, 1, mask };

	ck_assert_int_eq(write(fd, msg, sizeof(msg)), 3);
}

/* wait_wanted - until trk_xframe_wanted(WIRE_LANG_PYTHON) is want (the timer reads the record), 5 s at most */
static void wait_wanted(int want)
{
	for (int i = 0; i < 5000 && trk_xframe_wanted(WIRE_LANG_PYTHON) != want; i++)
		usleep(1000);
	ck_assert_int_eq(trk_xframe_wanted(WIRE_LANG_PYTHON), want);
}

static void start(struct ck_reader *r)
{
	struct trk_config cfg = { 0 };

	cfg.fd = ck_reader_start(r);
	ck_assert_int_eq(trk_start(&cfg), 0);
}

static void finish(struct ck_reader *r)
{
	trk_stop(WIRE_END_EXIT);
	ck_reader_join(r);
	free(r->buf);
	for (int i = 0; i < 1000 && atomic_load(&trk_g.started); i++)
		usleep(10000); /* the timer lets go of the session */
	ck_assert_int_eq(atomic_load(&trk_g.started), 0);
}

START_TEST(xframes_mask)
{
	struct ck_reader r;

	trk_set_real(&libc_real);
	start(&r);
	ck_assert_int_eq(trk_xframe_wanted(WIRE_LANG_PYTHON), 1);
	ck_assert_int_eq(trk_xframe_set_producer_lang(prod_py, NULL, WIRE_LANG_PYTHON), 0);
	allocs(10);
	ck_assert_uint_ge(calls_py, 10);

	send_mask(r.fd, 1u << WIRE_LANG_PYTHON);
	wait_wanted(0);
	ck_assert_int_eq(trk_xframe_wanted(WIRE_LANG_JAVA), 1);
	calls_py = 0;
	allocs(10);
	ck_assert_uint_eq(calls_py, 0);
	/* a producer of any language is not skipped */
	ck_assert_int_eq(trk_xframe_set_producer(prod_any, NULL), 0);
	allocs(10);
	ck_assert_uint_ge(calls_any, 10);
	ck_assert_uint_eq(calls_py, 0);

	ck_assert_int_eq(trk_xframe_set_producer_lang(prod_py, NULL, WIRE_LANG_PYTHON), 0);
	send_mask(r.fd, 0);
	wait_wanted(1);
	allocs(10);
	ck_assert_uint_ge(calls_py, 10);

	/* switched off again, then a new session: every language wanted again */
	send_mask(r.fd, 1u << WIRE_LANG_PYTHON);
	wait_wanted(0);
	finish(&r);
	start(&r);
	ck_assert_int_eq(trk_xframe_wanted(WIRE_LANG_PYTHON), 1);
	calls_py = 0;
	allocs(10);
	ck_assert_uint_ge(calls_py, 10);
	trk_xframe_set_producer(NULL, NULL);
	trk_stop(WIRE_END_EXIT);
	ck_reader_join(&r);
	free(r.buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("track_xfctl");
	TCase *tc = tcase_create("xfctl");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, xframes_mask);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
