/*
 * Unit tests for lib/error.c: ps_comm_strerror gives a distinct, non-empty
 * message for every public code and a non-NULL "unknown" text for any
 * other value; psc_err_from_fi translates errno and libfabric codes into
 * PS_COMM_ERR_* values; and the numeric values of the public error enum
 * are the frozen ones, written here literally so that a renumbering fails.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rdma/fi_errno.h>

#include "util/err.h"
#include "provider.h"
#include "ps_comm.h"
#include "util/util.h"

/* The lowest (most negative) code include/ps_comm.h defines. */
#define LAST_CODE (-16)

START_TEST(test_strerror_known)
{
	int code = -_i;
	const char *msg = ps_comm_strerror(code);

	ck_assert_ptr_nonnull(msg);
	ck_assert_int_gt(strlen(msg), 0);
	ck_assert_ptr_null(strstr(msg, "unknown"));
	for (int other = 0; other >= LAST_CODE; other--) {
		if (other == code)
			continue;
		ck_assert_msg(strcmp(msg, ps_comm_strerror(other)) != 0,
			      "codes %d and %d share the message \"%s\"", code,
			      other, msg);
	}
}
END_TEST

static const int unknown_codes[] = {1, 2, LAST_CODE - 1, -1000, INT_MAX,
				    INT_MIN, INT_MIN + 1};

START_TEST(test_strerror_unknown)
{
	int code = unknown_codes[_i];
	const char *msg = ps_comm_strerror(code);

	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strstr(msg, "unknown") != NULL,
		      "ps_comm_strerror(%d) = \"%s\"", code, msg);
}
END_TEST

START_TEST(test_strerror_success)
{
	ck_assert_str_eq(ps_comm_strerror(PS_COMM_OK), "success");
}
END_TEST

static const struct {
	int in;
	int out;
} fi_map[] = {
	{-FI_ETRUNC, PS_COMM_ERR_TRUNCATE},
	{-ETIMEDOUT, PS_COMM_ERR_TIMEOUT},
	{-FI_ETIMEDOUT, PS_COMM_ERR_TIMEOUT},
	{-ECONNRESET, PS_COMM_ERR_PEER},
	{-ECONNREFUSED, PS_COMM_ERR_PEER},
	{-FI_ECANCELED, PS_COMM_ERR_CANCELED},
	{-EINVAL, PS_COMM_ERR_ARG},
	{-FI_ENOMEM, PS_COMM_ERR_NOMEM},
	{-FI_ENODATA, PS_COMM_ERR_PROVIDER},
	{-FI_EOTHER, PS_COMM_ERR_PROVIDER},
	{-EPROTO, PS_COMM_ERR_PROTO},
	{-FI_ENOSYS, PS_COMM_ERR_NOTSUP},
	{-EOPNOTSUPP, PS_COMM_ERR_NOTSUP},
	{-EBADF, PS_COMM_ERR_SYSTEM},
	{0, PS_COMM_OK},
	{5, PS_COMM_OK},
};

START_TEST(test_err_from_fi)
{
	ck_assert_msg(psc_err_from_fi(fi_map[_i].in) == fi_map[_i].out,
		      "psc_err_from_fi(%d) = %d, expected %d", fi_map[_i].in,
		      psc_err_from_fi(fi_map[_i].in), fi_map[_i].out);
}
END_TEST

/* Every translation lands on a code that has a message. */
START_TEST(test_err_from_fi_range)
{
	for (int e = -1; e > -FI_ERRNO_OFFSET - 300; e--) {
		int r = psc_err_from_fi(e);

		ck_assert_msg(r <= -1 && r >= LAST_CODE,
			      "psc_err_from_fi(%d) = %d", e, r);
	}
}
END_TEST

START_TEST(test_frozen_values)
{
	ck_assert_int_eq(PS_COMM_OK, 0);
	ck_assert_int_eq(PS_COMM_ERR_ARG, -1);
	ck_assert_int_eq(PS_COMM_ERR_NOMEM, -2);
	ck_assert_int_eq(PS_COMM_ERR_TRUNCATE, -3);
	ck_assert_int_eq(PS_COMM_ERR_TIMEOUT, -4);
	ck_assert_int_eq(PS_COMM_ERR_PEER, -5);
	ck_assert_int_eq(PS_COMM_ERR_PROVIDER, -6);
	ck_assert_int_eq(PS_COMM_ERR_BOOTSTRAP, -7);
	ck_assert_int_eq(PS_COMM_ERR_MISMATCH, -8);
	ck_assert_int_eq(PS_COMM_ERR_PROTO, -9);
	ck_assert_int_eq(PS_COMM_ERR_CANCELED, -10);
	ck_assert_int_eq(PS_COMM_ERR_VERSION, -11);
	ck_assert_int_eq(PS_COMM_ERR_CONFIG, -12);
	ck_assert_int_eq(PS_COMM_ERR_SYSTEM, -13);
	ck_assert_int_eq(PS_COMM_ERR_NOTSUP, -14);
	ck_assert_int_eq(PS_COMM_ERR_INTERNAL, -15);
	ck_assert_int_eq(PS_COMM_ERR_ABORTED, -16);
	ck_assert_int_eq(PS_COMM_ANY_SOURCE, -1);
	ck_assert_int_eq(PS_COMM_ANY_TAG, -1);
}
END_TEST

static Suite *error_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("strerror");

	tcase_add_loop_test(tc, test_strerror_known, 0, -LAST_CODE + 1);
	tcase_add_loop_test(tc, test_strerror_unknown, 0,
			    (int)PSC_ARRAY_SIZE(unknown_codes));
	tcase_add_test(tc, test_strerror_success);
	suite_add_tcase(s, tc);

	tc = tcase_create("translate");
	tcase_add_loop_test(tc, test_err_from_fi, 0,
			    (int)PSC_ARRAY_SIZE(fi_map));
	tcase_add_test(tc, test_err_from_fi_range);
	tcase_add_test(tc, test_frozen_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(error_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
