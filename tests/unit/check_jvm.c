/* tests/unit/check_jvm.c - Check suite for jvm/hotspot.c: HotSpot's answer to "load", read as hostile input */
/* SPDX-License-Identifier: MIT */
/*
 * The JVM's answer decides whether heaptap says Java frames are on, and
 * goes into the one line heaptap prints when they are not: a done command
 * whose agent returned 0 is the only success, in the JDK 17 form ("0\n0\n")
 * and the later one ("0\nreturn code: 0\n"); anything else is a refusal
 * or not the protocol, and its bytes reach the line escaped.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <string.h>

#include "tests/lib/check_fixture.h"
#include "jvm/jvm.h"

static int parse(const char *s, size_t n, char *why, size_t cap)
{
	return jvm_reply_parse(s, n, why, cap);
}

START_TEST(success_forms)
{
	char why[256];

	ck_assert_int_eq(parse("0\n0\n", 4, why, sizeof(why)), 0);
	ck_assert_int_eq(parse("0\n0", 3, why, sizeof(why)), 0);
	ck_assert_int_eq(parse("0\nreturn code: 0\n", 17, why, sizeof(why)), 0);
}
END_TEST

START_TEST(agent_failed)
{
	char why[256];

	ck_assert_int_eq(parse("0\n-1\n", 5, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "Agent_OnAttach returned -1"));
	ck_assert_int_eq(parse("0\nreturn code: 100\n", 19, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "returned 100"));
}
END_TEST

START_TEST(refused_escaped)
{
	static const char r[] = "100\nAgent_OnAttach not found\x1b[31m\n";
	char why[256];

	ck_assert_int_eq(parse(r, sizeof(r) - 1, why, sizeof(why)), -EPROTO);
	ck_assert_ptr_nonnull(strstr(why, "status 100"));
	ck_assert_ptr_nonnull(strstr(why, "Agent_OnAttach not found\\x1b[31m"));
	ck_assert_ptr_null(strchr(why, '\x1b'));
	ck_assert_ptr_null(strchr(why, '\n'));
}
END_TEST

START_TEST(not_the_protocol)
{
	static const char nul[] = "0\n\0\n";
	char why[64], big[4096];

	ck_assert_int_eq(parse("", 0, why, sizeof(why)), -EPROTO);
	ck_assert_int_eq(parse("0", 1, why, sizeof(why)), -EPROTO);
	ck_assert_int_eq(parse("0\n", 2, why, sizeof(why)), -EPROTO);
	ck_assert_int_eq(parse("x\n0\n", 4, why, sizeof(why)), -EPROTO);
	ck_assert_int_eq(parse(nul, sizeof(nul) - 1, why, sizeof(why)), -EPROTO);
	ck_assert_int_eq(parse("0\nok\n", 5, why, sizeof(why)), -EPROTO);
	/* a flood: the line stays within its buffer, terminated */
	memset(big, 0xff, sizeof(big));
	ck_assert_int_eq(parse(big, sizeof(big), why, sizeof(why)), -EPROTO);
	ck_assert_uint_lt(strlen(why), sizeof(why));
	ck_assert_ptr_null(strchr(why, '\xff'));
}
END_TEST

static Suite *jvm_suite(void)
{
	Suite *s = suite_create("jvm");
	TCase *tc = tcase_create("reply");

	tcase_add_test(tc, success_forms);
	tcase_add_test(tc, agent_failed);
	tcase_add_test(tc, refused_escaped);
	tcase_add_test(tc, not_the_protocol);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run_suite(jvm_suite());
}
