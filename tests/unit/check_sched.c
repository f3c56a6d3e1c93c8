/*
 * Unit tests for the schedule engine's dependency resolution (lib/coll/
 * sched.c) on a one-rank communicator that sends to itself: a step
 * starts only when the steps it depends on are done, and independent
 * later steps do not wait for it; a fence is done once every earlier
 * step is, and a phase gates every later step; receives on one channel are posted
 * in the order they were added; a dependency that points forward fails
 * the build. Runs on any provider (FI_PROVIDER chooses). Also: the words
 * each PS_COMM_<COLL>_ALGO accepts at init are the dispatcher's
 * algorithm names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "coll/coll.h"
#include "coll/sched.h"
#include "comm/comm.h"
#include "fixture.h"
#include "util/util.h"

#define TAG 42

static struct ps_comm c;

/* A communicator over fx_one (opened first). */
static void comm_setup(void)
{
	memset(&c, 0, sizeof(c));
	c.ch = fx_one.ch;
	c.params = fx_one.params;
}

static struct psc_sched *new_sched(void)
{
	struct psc_sched *s = psc_sched_new(&c, TAG, PS_COMM_INT32,
					    PS_COMM_SUM);

	ck_assert_ptr_nonnull(s);
	return s;
}

/* Send v to this rank on the schedule's channel and tag, outside it. */
static void send_self(const int32_t *v)
{
	ps_comm_request_t r = NULL;
	char err[256];

	ck_assert_int_eq(psc_isend(&c.ch, PSC_PROTO_COLL, v, sizeof(*v), 0,
				   TAG, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(psc_wait(&r, NULL, psc_now() + 30, NULL), 0);
}

static int run(struct psc_sched *s, ps_comm_request_t *req)
{
	ck_assert_int_eq(psc_sched_start(s, req), 0);
	return psc_wait(req, NULL, psc_now() + 30, NULL);
}

START_TEST(test_dependent_waits)
{
	static int32_t in, got = -1, early = -1, one = 1, sum = 10;
	struct psc_sched *s = new_sched();
	ps_comm_request_t req;
	int recv, copy, add;

	in = -1;
	recv = psc_sched_recv(s, &in, sizeof(in), 0);
	copy = psc_sched_copy(s, &got, &in, sizeof(in));
	psc_sched_after(s, copy, recv);
	add = psc_sched_reduce(s, &sum, &in, 1, false);
	psc_sched_after(s, add, copy);
	/* Independent of the receive: runs at once. */
	psc_sched_copy(s, &early, &one, sizeof(one));
	ck_assert_int_eq(psc_sched_error(s), 0);
	ck_assert_int_eq(psc_sched_count(s), 4);
	ck_assert_int_eq(psc_sched_start(s, &req), 0);
	/* Started and polled once: nothing has been sent yet. */
	ck_assert_int_eq(early, 1);
	ck_assert_int_eq(got, -1);
	ck_assert_int_eq(sum, 10);
	ck_assert(!psc_req_done(req));
	send_self(&(int32_t){7});
	ck_assert_int_eq(psc_wait(&req, NULL, psc_now() + 30, NULL), 0);
	ck_assert_int_eq(got, 7);
	ck_assert_int_eq(sum, 17);
}
END_TEST

START_TEST(test_fence_and_phase)
{
	static int32_t in = -1, a = -1, b = -1, free_ = -1, x = 5, y = 6,
		       z = 9;
	struct psc_sched *s = new_sched();
	ps_comm_request_t req;
	int fence;

	psc_sched_recv(s, &in, sizeof(in), 0);
	/* Done once the receive is; a step waits for it only if told. */
	fence = psc_sched_fence(s);
	psc_sched_after(s, psc_sched_copy(s, &a, &x, sizeof(x)), fence);
	psc_sched_copy(s, &free_, &z, sizeof(z));
	/* A phase gates every later step without being named. */
	psc_sched_phase(s);
	psc_sched_copy(s, &b, &y, sizeof(y));
	ck_assert_int_eq(psc_sched_start(s, &req), 0);
	ck_assert_int_eq(free_, 9);
	ck_assert_int_eq(a, -1);
	ck_assert_int_eq(b, -1);
	send_self(&(int32_t){3});
	ck_assert_int_eq(psc_wait(&req, NULL, psc_now() + 30, NULL), 0);
	ck_assert_int_eq(in, 3);
	ck_assert_int_eq(a, 5);
	ck_assert_int_eq(b, 6);
}
END_TEST

START_TEST(test_channel_order)
{
	static int32_t r1 = -1, r2 = -1, v1 = 100, v2 = 200;
	struct psc_sched *s = new_sched();
	ps_comm_request_t req;

	/* Same peer, same tag: the first receive added gets the first send. */
	psc_sched_recv(s, &r1, sizeof(r1), 0);
	psc_sched_recv(s, &r2, sizeof(r2), 0);
	psc_sched_send(s, &v1, sizeof(v1), 0);
	psc_sched_send(s, &v2, sizeof(v2), 0);
	ck_assert_int_eq(run(s, &req), 0);
	ck_assert_int_eq(r1, 100);
	ck_assert_int_eq(r2, 200);
}
END_TEST

START_TEST(test_forward_dependency_fails)
{
	struct psc_sched *s = new_sched();
	static int32_t x, y;
	int a = psc_sched_copy(s, &x, &y, sizeof(x));
	int b = psc_sched_copy(s, &y, &x, sizeof(x));

	psc_sched_after(s, a, b);
	ck_assert_int_eq(psc_sched_error(s), -ENOTRECOVERABLE);
	psc_sched_free(s);
}
END_TEST

START_TEST(test_length_mismatch)
{
	static int32_t small[1], big[2] = {1, 2};
	struct psc_sched *s = new_sched();
	ps_comm_request_t req;

	psc_sched_recv(s, small, sizeof(small), 0);
	psc_sched_send(s, big, sizeof(big), 0);
	ck_assert_int_eq(run(s, &req), -EBADE);
}
END_TEST

/* The parameter table refuses exactly the names the dispatcher lacks. */
START_TEST(test_algo_names_agree)
{
	char err[256] = "";

	ck_assert_msg(psc_coll_check_names(err, sizeof(err)) == 0, "%s", err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sched");
	TCase *tc = fx_tcase("dependencies");

	tcase_add_checked_fixture(tc, comm_setup, NULL);
	tcase_add_test(tc, test_dependent_waits);
	tcase_add_test(tc, test_fence_and_phase);
	tcase_add_test(tc, test_channel_order);
	tcase_add_test(tc, test_forward_dependency_fails);
	tcase_add_test(tc, test_length_mismatch);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_add_test(tc, test_algo_names_agree);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
