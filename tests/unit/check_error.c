/*
 * Unit tests for lib/util/error.c: ps_comm_strerror gives a distinct,
 * non-empty message for every public code and a non-NULL "unknown" text
 * for any other value; psc_err_public translates errno and libfabric
 * codes into PS_COMM_ERR_* values at each stage (the table in
 * util/err.h), "no usable provider" apart from "the provider failed";
 * and the numeric values of the public error enum are the frozen ones,
 * written here literally so that a renumbering fails.
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
#define LAST_CODE (-18)

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
	{-ENOMEM, PS_COMM_ERR_NOMEM},
	{-FI_ENODATA, PS_COMM_ERR_FABRIC},
	{-ENODEV, PS_COMM_ERR_FABRIC},
	{-FI_EOTHER, PS_COMM_ERR_FABRIC},
	{-FI_EAVAIL, PS_COMM_ERR_FABRIC},
	{-EMSGSIZE, PS_COMM_ERR_TRUNCATE},
	{-ESHUTDOWN, PS_COMM_ERR_ABORTED},
	{-EKEYREVOKED, PS_COMM_ERR_REVOKED},
	{-EBADE, PS_COMM_ERR_MISMATCH},
	{-ENOTRECOVERABLE, PS_COMM_ERR_INTERNAL},
	{-EPIPE, PS_COMM_ERR_PEER},
	{-EIO, PS_COMM_ERR_SYSTEM},
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

/* The stages of util/err.h, and what each makes of a code. */
static const struct {
	int in;
	enum psc_err_stage stage;
	int out;
} stage_map[] = {
	/* Choosing and opening a provider: none usable, or it failed. */
	{-ENODATA, PSC_ERR_OPEN, PS_COMM_ERR_PROVIDER},
	{-FI_ENODATA, PSC_ERR_OPEN, PS_COMM_ERR_PROVIDER},
	{-ENOMEM, PSC_ERR_OPEN, PS_COMM_ERR_NOMEM},
	{-EINVAL, PSC_ERR_OPEN, PS_COMM_ERR_FABRIC},
	{-EBUSY, PSC_ERR_OPEN, PS_COMM_ERR_FABRIC},
	{-ENODEV, PSC_ERR_OPEN, PS_COMM_ERR_FABRIC},
	{-FI_EOTHER, PSC_ERR_OPEN, PS_COMM_ERR_FABRIC},
	{-ETIMEDOUT, PSC_ERR_OPEN, PS_COMM_ERR_FABRIC},
	/* Bootstrap: a rank that never came is no timeout. */
	{-ETIMEDOUT, PSC_ERR_BOOT, PS_COMM_ERR_BOOTSTRAP},
	{-ECONNREFUSED, PSC_ERR_BOOT, PS_COMM_ERR_BOOTSTRAP},
	{-EIO, PSC_ERR_BOOT, PS_COMM_ERR_BOOTSTRAP},
	{-EINVAL, PSC_ERR_BOOT, PS_COMM_ERR_CONFIG},
	{-ENOTDIR, PSC_ERR_BOOT, PS_COMM_ERR_CONFIG},
	{-EBADE, PSC_ERR_BOOT, PS_COMM_ERR_MISMATCH},
	{-EPROTO, PSC_ERR_BOOT, PS_COMM_ERR_PROTO},
	{-ENOSYS, PSC_ERR_BOOT, PS_COMM_ERR_NOTSUP},
	{-ENOMEM, PSC_ERR_BOOT, PS_COMM_ERR_NOMEM},
	{-ENODATA, PSC_ERR_BOOT, PS_COMM_ERR_PROVIDER},
	{-ENODEV, PSC_ERR_BOOT, PS_COMM_ERR_FABRIC},
	/* Reaching one peer (the van): out of memory is no peer failure. */
	{-ENOMEM, PSC_ERR_CONNECT, PS_COMM_ERR_NOMEM},
	{-ETIMEDOUT, PSC_ERR_CONNECT, PS_COMM_ERR_TIMEOUT},
	{-EBADE, PSC_ERR_CONNECT, PS_COMM_ERR_MISMATCH},
	{-EPROTO, PSC_ERR_CONNECT, PS_COMM_ERR_PROTO},
	{-EINVAL, PSC_ERR_CONNECT, PS_COMM_ERR_ARG},
	{-ECONNREFUSED, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	{-EHOSTDOWN, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	{-ENOENT, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	{-EACCES, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	{-EMSGSIZE, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	{-ECANCELED, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	{-FI_EOTHER, PSC_ERR_CONNECT, PS_COMM_ERR_PEER},
	/* A local facility. */
	{-ENOMEM, PSC_ERR_LOCAL, PS_COMM_ERR_NOMEM},
	{-EADDRINUSE, PSC_ERR_LOCAL, PS_COMM_ERR_SYSTEM},
	{-EADDRNOTAVAIL, PSC_ERR_LOCAL, PS_COMM_ERR_SYSTEM},
	{-EMFILE, PSC_ERR_LOCAL, PS_COMM_ERR_SYSTEM},
	/* Success at every stage. */
	{0, PSC_ERR_OPEN, PS_COMM_OK},
	{0, PSC_ERR_BOOT, PS_COMM_OK},
	{0, PSC_ERR_CONNECT, PS_COMM_OK},
	{0, PSC_ERR_LOCAL, PS_COMM_OK},
};

START_TEST(test_err_stage)
{
	int got = psc_err_public(stage_map[_i].in, stage_map[_i].stage);

	ck_assert_msg(got == stage_map[_i].out,
		      "psc_err_public(%d, stage %d) = %d, expected %d",
		      stage_map[_i].in, (int)stage_map[_i].stage, got,
		      stage_map[_i].out);
}
END_TEST

/* psc_err_from_fi is the operation stage. */
START_TEST(test_err_from_fi_is_op)
{
	for (int e = 0; e > -FI_ERRNO_OFFSET - 300; e--)
		ck_assert_int_eq(psc_err_from_fi(e),
				 psc_err_public(e, PSC_ERR_OP));
}
END_TEST

/* Every translation, at every stage, lands on a code with a message. */
START_TEST(test_err_range)
{
	for (int e = -1; e > -FI_ERRNO_OFFSET - 300; e--) {
		int r = psc_err_public(e, (enum psc_err_stage)_i);

		ck_assert_msg(r <= -1 && r >= LAST_CODE,
			      "psc_err_public(%d, %d) = %d", e, _i, r);
		ck_assert_ptr_null(strstr(ps_comm_strerror(r), "unknown"));
	}
}
END_TEST

/* ENOMEM is out of memory wherever it arose. */
START_TEST(test_nomem_everywhere)
{
	ck_assert_int_eq(psc_err_public(-ENOMEM, (enum psc_err_stage)_i),
			 PS_COMM_ERR_NOMEM);
	ck_assert_int_eq(psc_err_public(-FI_ENOMEM, (enum psc_err_stage)_i),
			 PS_COMM_ERR_NOMEM);
}
END_TEST

/* The two provider codes say different things. */
START_TEST(test_provider_vs_fabric)
{
	const char *none = ps_comm_strerror(PS_COMM_ERR_PROVIDER);
	const char *failed = ps_comm_strerror(PS_COMM_ERR_FABRIC);

	ck_assert_int_ne(PS_COMM_ERR_PROVIDER, PS_COMM_ERR_FABRIC);
	ck_assert_str_ne(none, failed);
	ck_assert_ptr_nonnull(strstr(none, "no usable"));
	ck_assert_ptr_nonnull(strstr(failed, "failed"));
	ck_assert_int_eq(PSC_ERR_LAST, LAST_CODE);
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
	ck_assert_int_eq(PS_COMM_ERR_FABRIC, -17);
	ck_assert_int_eq(PS_COMM_ERR_REVOKED, -18);
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
	tcase_add_loop_test(tc, test_err_stage, 0,
			    (int)PSC_ARRAY_SIZE(stage_map));
	tcase_add_test(tc, test_err_from_fi_is_op);
	tcase_add_loop_test(tc, test_err_range, PSC_ERR_OP,
			    PSC_ERR_LOCAL + 1);
	tcase_add_loop_test(tc, test_nomem_everywhere, PSC_ERR_OP,
			    PSC_ERR_LOCAL + 1);
	tcase_add_test(tc, test_provider_vs_fabric);
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
