/*
 * Unit tests for software matching of first messages (lib/p2p/
 * swmatch.c), driven directly with raw 64-bit tags: arrivals nobody
 * wants yet are kept and taken in arrival order, an arrival goes to the
 * first posted receive it matches (posting order, wildcards included),
 * an ignore mask ignores exactly its bits, and a cancelled receive takes
 * nothing. Runs on any provider (FI_PROVIDER chooses).
 */
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rdma/fi_errno.h>

#include "p2p/swmatch.h"
#include "fixture.h"

#define T1 0x1111ULL
#define T2 0x2222ULL

/* A message of one byte, c, with tag. */
static void arrive(uint64_t tag, char c)
{
	psc_ep_lock(fx_one.ep);
	psc_swm_match(fx_one.ch.path[0].swm, fx_one.ep, tag,
		      (const uint8_t *)&c, 1);
	psc_ep_unlock(fx_one.ep);
}

/* Post a receive of one byte into *buf matching tag under ignore. */
static ps_comm_request_t post(uint64_t tag, uint64_t ignore, char *buf)
{
	struct ps_comm_request *r;

	*buf = 0;
	psc_ep_lock(fx_one.ep);
	r = psc_req_alloc(fx_one.ep, &fx_one, PSC_REQ_RECV);
	ck_assert_ptr_nonnull(r);
	r->buf = buf;
	r->len = 1;
	r->tag = tag;
	r->ignore = ignore;
	psc_swm_recv(fx_one.ch.path[0].swm, fx_one.ep, r);
	psc_ep_unlock(fx_one.ep);
	return r;
}

/* r completed with one byte, which was c. */
static void got(ps_comm_request_t *r, const char *buf, char c)
{
	ps_comm_status_t st;

	ck_assert_msg(psc_req_done(*r), "no message for the receive of '%c'",
		      c);
	ck_assert_int_eq(psc_req_reap(r, &st, NULL), 0);
	ck_assert_int_eq(st.len, 1);
	ck_assert_int_eq(*buf, c);
}

START_TEST(test_unexpected_in_arrival_order)
{
	char b1, b2, b3, b4;
	ps_comm_request_t r;

	arrive(T1, 'a');
	arrive(T2, 'x');
	arrive(T1, 'b');
	r = post(T1, 0, &b1);
	got(&r, &b1, 'a');
	/* A wildcard takes the oldest arrival of any tag. */
	r = post(0, ~0ULL, &b2);
	got(&r, &b2, 'x');
	r = post(T1, 0, &b3);
	got(&r, &b3, 'b');
	/* Nothing left: the receive waits for the next arrival. */
	r = post(T1, 0, &b4);
	ck_assert(!psc_req_done(r));
	arrive(T1, 'c');
	got(&r, &b4, 'c');
}
END_TEST

START_TEST(test_posted_in_posting_order)
{
	char any, exact, second;
	ps_comm_request_t ra = post(0, ~0ULL, &any);
	ps_comm_request_t re = post(T2, 0, &exact);
	ps_comm_request_t r2 = post(T2, 0, &second);

	/* The wildcard was posted first: it takes the T2 message. */
	arrive(T2, 'p');
	got(&ra, &any, 'p');
	ck_assert(!psc_req_done(re));
	arrive(T1, 'q'); /* wanted by nobody: kept */
	ck_assert(!psc_req_done(re));
	arrive(T2, 'r');
	got(&re, &exact, 'r');
	arrive(T2, 's');
	got(&r2, &second, 's');
	/* The kept one is still there, for the next receive of T1. */
	ra = post(T1, 0, &any);
	got(&ra, &any, 'q');
}
END_TEST

START_TEST(test_ignore_mask)
{
	char b1, b2;
	/* Any low byte: 0x2200 .. 0x22ff. */
	ps_comm_request_t r = post(0x2200, 0xff, &b1);
	ps_comm_request_t other;

	arrive(0x2300, 'n'); /* a bit outside the mask differs */
	ck_assert(!psc_req_done(r));
	arrive(0x22ab, 'y');
	got(&r, &b1, 'y');
	other = post(0x2300, 0, &b2);
	got(&other, &b2, 'n');
}
END_TEST

START_TEST(test_cancel)
{
	char b1, b2;
	ps_comm_request_t r = post(T1, 0, &b1);
	ps_comm_request_t later;
	bool was;

	psc_ep_lock(fx_one.ep);
	was = psc_swm_cancel(fx_one.ch.path[0].swm, r);
	psc_ep_unlock(fx_one.ep);
	ck_assert(was);
	ck_assert(psc_req_done(r));
	ck_assert_int_eq(psc_req_reap(&r, NULL, NULL), -FI_ECANCELED);
	arrive(T1, 'k');
	ck_assert_int_eq(b1, 0);
	later = post(T1, 0, &b2);
	got(&later, &b2, 'k');
}
END_TEST

int main(void)
{
	Suite *s = suite_create("swmatch");
	TCase *tc = fx_tcase("order");

	tcase_add_test(tc, test_unexpected_in_arrival_order);
	tcase_add_test(tc, test_posted_in_posting_order);
	tcase_add_test(tc, test_ignore_mask);
	tcase_add_test(tc, test_cancel);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
