/*
 * Misuse of the public API, through the public calls only: init
 * attributes and environment values that cannot be (ps_comm_init fails
 * with PS_COMM_ERR_ARG for an attribute and PS_COMM_ERR_CONFIG for a
 * variable, before anything opens, and its log names the field or the
 * variable; a van's bind the same, with PS_COMM_ERR_CONFIG for a bad
 * PS_COMM_INTRA), and handles used after ps_comm_finalize or completion
 * (PS_COMM_ERR_ARG, not a crash: the best-effort check of ps_comm.h),
 * and van handles that are NULL or destroyed, the same way.
 * The stale-handle tests read freed memory on purpose, so they are left
 * out under AddressSanitizer, which reports that use itself.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "ps_comm.h"
#include "ps_comm/van.h"
#include "util/param.h"
#include "util/util.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Where ps_comm_init logs (PS_COMM_LOG_FILE), read back by the tests. */
static char log_path[] = "/tmp/check_misuse.XXXXXX";

static const char *const launcher_vars[] = {
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
	"PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "RANK",
	"WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
};

/* A singleton's environment, logging to log_path, emptied. */
static void clean_env(void)
{
	for (size_t i = 0; i < psc_param_count; i++)
		unsetenv(psc_param_table[i].name);
	for (size_t i = 0; i < PSC_ARRAY_SIZE(launcher_vars); i++)
		unsetenv(launcher_vars[i]);
	setenv("PS_COMM_LOG_FILE", log_path, 1);
	ck_assert_int_eq(truncate(log_path, 0), 0);
}

/* Whether the log holds word. */
static bool logged(const char *word)
{
	char buf[8192];
	FILE *f = fopen(log_path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, word) != NULL;
}

/* ------------------------------------------------------- init attributes */

static const struct {
	int rank, size;
	const char *bootstrap;
	const char *names; /* what the log must name */
} attrs_bad[] = {
	{-1, 0, NULL, "attr.size"},
	{-1, -2, NULL, "attr.size"},
	{0, -5, NULL, "attr.size"},
	{-2, -1, NULL, "attr.rank"},
	{-7, 1, NULL, "attr.rank"},
	{-1, -1, "bogus", "attr.bootstrap"},
	{0, 1, "file:", "attr.bootstrap"},
	{0, 1, "", "attr.bootstrap"},
};

START_TEST(test_attr_refused)
{
	ps_comm_attr_t attr;
	ps_comm_t c = (ps_comm_t)&attr;

	ck_assert_int_eq(ps_comm_attr_init(&attr), 0);
	attr.rank = attrs_bad[_i].rank;
	attr.size = attrs_bad[_i].size;
	attr.bootstrap = attrs_bad[_i].bootstrap;
	ck_assert_int_eq(ps_comm_init(&c, &attr), PS_COMM_ERR_ARG);
	ck_assert_ptr_null(c);
	ck_assert_msg(logged(attrs_bad[_i].names), "the log does not name %s",
		      attrs_bad[_i].names);
}
END_TEST

/* ------------------------------------------------- environment values */

static const struct {
	const char *name, *value;
} env_bad[] = {
	{"PS_COMM_SIZE", "0"},
	{"PS_COMM_SIZE", "-2"},
	/* A size, but no rank: not a silent job of one rank. */
	{"PS_COMM_SIZE", "4"},
	{"PS_COMM_RANK", "-3"},
	{"PS_COMM_BOOTSTRAP", "bogus"},
	{"PS_COMM_BOOTSTRAP", "file:"},
	{"PS_COMM_TIMEOUT", "-1"},
	{"PS_COMM_OP_TIMEOUT", "-1"},
	{"PS_COMM_PEER_TIMEOUT", "-1"},
	{"PS_COMM_PEER_TIMEOUT", "99999999999999999999"},
	{"PS_COMM_OP_TIMEOUT", "1e300"},
	{"PS_COMM_SPIN_US", "1e12"},
	{"PS_COMM_BARRIER_ALGO", "abc"},
	{"PS_COMM_BCAST_ALGO", "abc"},
	{"PS_COMM_REDUCE_ALGO", "abc"},
	{"PS_COMM_ALLREDUCE_ALGO", "abc"},
	{"PS_COMM_ALLGATHER_ALGO", "abc"},
	{"PS_COMM_REDUCE_SCATTER_ALGO", "abc"},
	{"PS_COMM_JOIN", "abc"},
	{"PS_COMM_JOIN", "127.0.0.1:0"},
};

START_TEST(test_env_refused)
{
	ps_comm_t c = NULL;

	setenv(env_bad[_i].name, env_bad[_i].value, 1);
	ck_assert_int_eq(ps_comm_init(&c, NULL), PS_COMM_ERR_CONFIG);
	ck_assert_ptr_null(c);
	ck_assert_msg(logged(env_bad[_i].name), "the log does not name %s",
		      env_bad[_i].name);
}
END_TEST

/* PS_COMM_SIZE alone is fine for one rank, and with the rank from attr. */
START_TEST(test_size_alone_one_rank)
{
	ps_comm_t c = NULL;
	int size = 0;

	setenv("PS_COMM_SIZE", "1", 1);
	ck_assert_int_eq(ps_comm_init(&c, NULL), 0);
	ck_assert_int_eq(ps_comm_size(c, &size), 0);
	ck_assert_int_eq(size, 1);
	ck_assert_int_eq(ps_comm_finalize(c), 0);
}
END_TEST

/*
 * A bad PS_COMM_INTRA refuses the van's bind with PS_COMM_ERR_CONFIG
 * (ps_comm/van.h), before any endpoint opens; the van has no last-error
 * call, so the log is what names the variable.
 */
START_TEST(test_van_intra_refused)
{
	ps_comm_van_t v = NULL;
	int port = 0, rc_create, rc_bind = -1;

	setenv("PS_COMM_INTRA", "bogus", 1);
	/*
	 * create reads the parameters but leaves PS_COMM_INTRA to bind. The
	 * value points into the environment: unset it only after bind, and
	 * before an assertion can end the test.
	 */
	rc_create = ps_comm_van_create(&v);
	if (rc_create == 0)
		rc_bind = ps_comm_van_bind(v, "127.0.0.1", 0, 1, &port);
	unsetenv("PS_COMM_INTRA");
	ck_assert_int_eq(rc_create, 0);
	ck_assert_int_eq(rc_bind, PS_COMM_ERR_CONFIG);
	ck_assert_str_eq(ps_comm_van_provider(v), "");
	ck_assert_msg(logged("PS_COMM_INTRA"), "the log does not name %s",
		      "PS_COMM_INTRA");
	ps_comm_van_destroy(v);
}
END_TEST

/* --------------------------------------------------------- stale handles */

/* Every van call on v (NULL or destroyed) is refused, none crashes. */
static void van_refused(ps_comm_van_t v)
{
	ps_comm_van_msg_t m;
	int port = 0;

	ck_assert_int_eq(ps_comm_van_set_id(v, 1), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_van_bind(v, "127.0.0.1", 0, 0, &port),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_van_connect(v, 1, "127.0.0.1", 9),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_van_send(v, 1, "x", 1, NULL, 0, NULL, NULL),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_van_recv(v, &m), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_van_stop(v), PS_COMM_ERR_ARG);
	ck_assert_str_eq(ps_comm_van_provider(v), "");
	ps_comm_van_destroy(v);
}

START_TEST(test_van_null)
{
	ck_assert_int_eq(ps_comm_van_create(NULL), PS_COMM_ERR_ARG);
	van_refused(NULL);
}
END_TEST

#ifndef UNDER_ASAN
/* A communicator of one rank (the environment is clean). */
static ps_comm_t one_rank(void)
{
	ps_comm_t c = NULL;

	ck_assert_int_eq(ps_comm_init(&c, NULL), 0);
	return c;
}

START_TEST(test_finalize_twice)
{
	ps_comm_t c = one_rank();

	ck_assert_int_eq(ps_comm_finalize(c), 0);
	ck_assert_int_eq(ps_comm_finalize(c), PS_COMM_ERR_ARG);
}
END_TEST

START_TEST(test_calls_after_finalize)
{
	ps_comm_t c = one_rank(), sub = NULL;
	ps_comm_request_t r = NULL;
	ps_comm_mem_t h = NULL;
	char buf[16] = "x", msg[64];
	int v = 0;

	ck_assert_int_eq(ps_comm_finalize(c), 0);
	ck_assert_int_eq(ps_comm_send(c, buf, 1, 0, 1), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_recv(c, buf, 1, 0, 1, NULL), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_isend(c, buf, 1, 0, 1, &r), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_barrier(c), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_allreduce(c, PS_COMM_IN_PLACE, &v, 1,
					   PS_COMM_INT32, PS_COMM_SUM),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_split(c, 0, 0, &sub), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_rank(c, &v), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_size(c, &v), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_last_error(c, msg, sizeof(msg)),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_abort(c, 1), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_revoke(c), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_failed_ranks(c, NULL, 0, &v), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_agree(c, &v), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_shrink(c, &sub), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_mem_register(c, buf, sizeof(buf), &h),
			 PS_COMM_ERR_ARG);
}
END_TEST

/* ps_comm_failed_ranks' arguments; a one-rank job has no failure. */
START_TEST(test_failed_ranks_args)
{
	ps_comm_t c = one_rank();
	ps_comm_failure_t f[2];
	int n = -1;

	ck_assert_int_eq(ps_comm_failed_ranks(NULL, f, 2, &n), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_failed_ranks(c, f, 2, NULL), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_failed_ranks(c, NULL, 2, &n),
			 PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_failed_ranks(c, f, -1, &n), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_failed_ranks(c, NULL, 0, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(ps_comm_revoke(NULL), PS_COMM_ERR_ARG);
	/* Revoked: what it still answers, and what it refuses. */
	ck_assert_int_eq(ps_comm_revoke(c), 0);
	ck_assert_int_eq(ps_comm_barrier(c), PS_COMM_ERR_REVOKED);
	ck_assert_int_eq(ps_comm_failed_ranks(c, f, 2, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(ps_comm_finalize(c), 0);
}
END_TEST

/*
 * ps_comm_agree and ps_comm_shrink: their arguments; on one rank the
 * flag comes back as passed and the shrink is that rank, revoked or not.
 */
START_TEST(test_agree_shrink_args)
{
	ps_comm_t c = one_rank(), s = NULL;
	int flag = 0x5a, size = 0;

	ck_assert_int_eq(ps_comm_agree(NULL, &flag), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_agree(c, NULL), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_shrink(NULL, &s), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_shrink(c, NULL), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_agree(c, &flag), 0);
	ck_assert_int_eq(flag, 0x5a);
	ck_assert_int_eq(ps_comm_revoke(c), 0);
	ck_assert_int_eq(ps_comm_agree(c, &flag), 0);
	ck_assert_int_eq(ps_comm_shrink(c, &s), 0);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(ps_comm_size(s, &size), 0);
	ck_assert_int_eq(size, 1);
	ck_assert_int_eq(ps_comm_barrier(s), 0);
	ck_assert_int_eq(ps_comm_finalize(s), 0);
	ck_assert_int_eq(ps_comm_finalize(c), 0);
}
END_TEST

/* ps_comm_grow's arguments, and a rank 0 with nowhere to serve it. */
START_TEST(test_grow_args)
{
	ps_comm_t c = one_rank(), g = NULL;
	char err[256];

	ck_assert_int_eq(ps_comm_grow(NULL, 1, &g), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_grow(c, 1, NULL), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_grow(c, 0, &g), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_last_error(c, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "n_new=0"));
	ck_assert_int_eq(ps_comm_grow(c, -3, &g), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_grow(c, INT_MAX, &g), PS_COMM_ERR_ARG);
	ck_assert_ptr_null(g);
	unsetenv("PS_COMM_GROW_ROOT");
	unsetenv("MASTER_ADDR");
	ck_assert_int_eq(ps_comm_grow(c, 1, &g), PS_COMM_ERR_CONFIG);
	ck_assert_int_eq(ps_comm_last_error(c, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "PS_COMM_GROW_ROOT"));
	ck_assert_ptr_null(g);
	/* The communicator is as good as before. */
	ck_assert_int_eq(ps_comm_barrier(c), 0);
	ck_assert_int_eq(ps_comm_finalize(c), 0);
}
END_TEST

/* A receive still pending at finalize: its handle is invalid after. */
START_TEST(test_request_after_finalize)
{
	ps_comm_t c = one_rank();
	ps_comm_request_t r = NULL;
	ps_comm_status_t st;
	char buf[8];
	int done = 0;

	ck_assert_int_eq(ps_comm_irecv(c, buf, sizeof(buf), 0, 5, &r), 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(ps_comm_finalize(c), 0);
	ck_assert_int_eq(ps_comm_test(&r, &done, &st), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_wait(&r, &st), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_waitall(1, &r, NULL), PS_COMM_ERR_ARG);
}
END_TEST

/* A van handle used after ps_comm_van_destroy. */
START_TEST(test_van_after_destroy)
{
	ps_comm_van_t v = NULL;

	ck_assert_int_eq(ps_comm_van_create(&v), 0);
	ck_assert_int_eq(ps_comm_van_set_id(v, 1), 0);
	ps_comm_van_destroy(v);
	van_refused(v);
}
END_TEST

/* A copy of a handle that completed (and was freed) is refused. */
START_TEST(test_request_copy_after_completion)
{
	ps_comm_t c = one_rank();
	ps_comm_request_t r[2] = {NULL, NULL}, copy;
	char out[4] = "abc", in[4];

	ck_assert_int_eq(ps_comm_irecv(c, in, sizeof(in), 0, 3, &r[0]), 0);
	copy = r[0];
	ck_assert_int_eq(ps_comm_isend(c, out, sizeof(out), 0, 3, &r[1]), 0);
	ck_assert_int_eq(ps_comm_waitall(2, r, NULL), 0);
	ck_assert_ptr_null(r[0]);
	ck_assert_int_eq(ps_comm_wait(&copy, NULL), PS_COMM_ERR_ARG);
	ck_assert_int_eq(ps_comm_finalize(c), 0);
}
END_TEST
#endif /* UNDER_ASAN */

static Suite *misuse_suite(void)
{
	Suite *s = suite_create("misuse");
	TCase *tc = tcase_create("init");

	tcase_add_checked_fixture(tc, clean_env, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_attr_refused, 0,
			    (int)PSC_ARRAY_SIZE(attrs_bad));
	tcase_add_loop_test(tc, test_env_refused, 0,
			    (int)PSC_ARRAY_SIZE(env_bad));
	tcase_add_test(tc, test_size_alone_one_rank);
	tcase_add_test(tc, test_van_null);
	tcase_add_test(tc, test_van_intra_refused);
	suite_add_tcase(s, tc);
#ifndef UNDER_ASAN
	tc = tcase_create("stale handles");
	tcase_add_checked_fixture(tc, clean_env, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_finalize_twice);
	tcase_add_test(tc, test_calls_after_finalize);
	tcase_add_test(tc, test_failed_ranks_args);
	tcase_add_test(tc, test_agree_shrink_args);
	tcase_add_test(tc, test_grow_args);
	tcase_add_test(tc, test_request_after_finalize);
	tcase_add_test(tc, test_request_copy_after_completion);
	tcase_add_test(tc, test_van_after_destroy);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int main(void)
{
	SRunner *sr;
	int fd = mkstemp(log_path), failed;

	if (fd < 0) {
		perror("mkstemp");
		return EXIT_FAILURE;
	}
	close(fd);
	sr = srunner_create(misuse_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	unlink(log_path);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
