/*
 * Unit tests for the request life cycle (lib/core/request.c): a request
 * is allocated on its endpoint's live list, completes once (the first
 * error wins, an expected truncation does not count), reports to its
 * parent, which completes with its last child, keeps the first failure
 * words, frees itself when abandoned, and is reaped by its owner; the
 * EAGAIN queue is FIFO; a wait that passes its deadline aborts a GENERIC
 * request through its ops. And an endpoint's last release closes it,
 * but leaves it open to the process's exit where closing can crash
 * (caps.stop_unclosed). Runs on any provider (FI_PROVIDER chooses).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "fixture.h"
#include "util/util.h"

static int live_count(void)
{
	int n = 0;

	psc_ep_lock(fx_one.ep);
	for (struct ps_comm_request *r = fx_one.ep->live; r; r = r->live_next)
		n++;
	psc_ep_unlock(fx_one.ep);
	return n;
}

static struct ps_comm_request *alloc(enum psc_req_kind kind)
{
	struct ps_comm_request *r;

	psc_ep_lock(fx_one.ep);
	r = psc_req_alloc(fx_one.ep, &fx_one, kind);
	psc_ep_unlock(fx_one.ep);
	ck_assert_ptr_nonnull(r);
	return r;
}

static void complete(struct ps_comm_request *r, int err)
{
	psc_ep_lock(fx_one.ep);
	psc_req_complete(r, err);
	psc_ep_unlock(fx_one.ep);
}

START_TEST(test_alloc_complete_reap)
{
	int before = live_count();
	ps_comm_request_t r = alloc(PSC_REQ_GENERIC);
	ps_comm_status_t st;

	ck_assert_int_eq(live_count(), before + 1);
	ck_assert(!psc_req_done(r));
	ck_assert_int_eq(r->status.source, -1);
	r->status.len = 5;
	complete(r, -EIO);
	ck_assert(psc_req_done(r));
	/* A second failure does not replace the first. */
	complete(r, -EPROTO);
	ck_assert_int_eq(psc_req_reap(&r, &st, NULL), -EIO);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(st.len, 5);
	ck_assert_int_eq(live_count(), before);
}
END_TEST

START_TEST(test_expected_truncation)
{
	ps_comm_request_t r = alloc(PSC_REQ_RECV);

	r->expect_trunc = true;
	complete(r, -FI_ETRUNC);
	ck_assert_int_eq(psc_req_reap(&r, NULL, NULL), 0);
}
END_TEST

START_TEST(test_parent_children)
{
	ps_comm_request_t p = alloc(PSC_REQ_PARENT);
	struct ps_comm_request *a = alloc(PSC_REQ_SEND);
	struct ps_comm_request *b = alloc(PSC_REQ_SEND);
	char *words = NULL;

	psc_ep_lock(fx_one.ep);
	psc_req_adopt(p, a);
	psc_req_adopt(p, b);
	psc_req_set_errmsg(b, "first %d", 1);
	psc_req_set_errmsg(b, "second");
	psc_ep_unlock(fx_one.ep);
	ck_assert_int_eq(p->children_left, 2);
	complete(a, 0);
	ck_assert(psc_req_done(a));
	ck_assert_msg(!psc_req_done(p), "parent done before its last child");
	complete(b, -ECONNRESET);
	ck_assert(psc_req_done(p));
	/* The child's code and words are the parent's; reap frees all. */
	ck_assert_int_eq(psc_req_reap(&p, NULL, &words), -ECONNRESET);
	ck_assert_str_eq(words, "first 1");
	free(words);
}
END_TEST

START_TEST(test_abandoned_frees_itself)
{
	int before = live_count();
	struct ps_comm_request *r = alloc(PSC_REQ_SEND);

	r->abandoned = true;
	complete(r, 0);
	ck_assert_int_eq(live_count(), before);
}
END_TEST

START_TEST(test_queue_fifo)
{
	struct psc_req_queue q = {0};
	struct ps_comm_request r[4];

	for (int i = 0; i < 4; i++)
		psc_queue_push(&q, &r[i]);
	ck_assert(psc_queue_remove(&q, &r[3]));
	ck_assert(!psc_queue_remove(&q, &r[3]));
	ck_assert_ptr_eq(psc_queue_pop(&q), &r[0]);
	ck_assert(psc_queue_remove(&q, &r[1]));
	ck_assert_ptr_eq(psc_queue_pop(&q), &r[2]);
	ck_assert_ptr_null(psc_queue_pop(&q));
	/* Empty again: the tail was reset, so a push is the head. */
	psc_queue_push(&q, &r[1]);
	ck_assert_ptr_eq(q.head, &r[1]);
	ck_assert_ptr_eq(q.tail, &r[1]);
}
END_TEST

static int aborted_with;

/* A GENERIC request's abort: complete it with the code (no lock held). */
static void abort_op(struct ps_comm_request *r, int err)
{
	aborted_with = err;
	complete(r, err);
}

static const struct psc_req_ops abort_ops = {
	.size = sizeof(struct psc_req_ops),
	.abort = abort_op,
};

START_TEST(test_wait_deadline_aborts)
{
	ps_comm_request_t r = alloc(PSC_REQ_GENERIC);

	r->ops = &abort_ops;
	aborted_with = 0;
	ck_assert_int_eq(psc_wait(&r, NULL, psc_now() + 0.05, NULL),
			 -ETIMEDOUT);
	ck_assert_int_eq(aborted_with, -ETIMEDOUT);
	ck_assert_ptr_null(r);
}
END_TEST

START_TEST(test_owner_failure_ends_wait)
{
	ps_comm_request_t r = alloc(PSC_REQ_GENERIC);
	char *words = NULL;

	r->ops = &abort_ops;
	psc_ep_fail_owner(fx_one.ep, &fx_one, -ECONNRESET, "rank 3 died");
	ck_assert(psc_req_settled(r));
	ck_assert_int_eq(psc_wait(&r, NULL, 0, &words), -ECONNRESET);
	ck_assert_int_eq(aborted_with, -ECONNRESET);
	ck_assert_ptr_nonnull(words);
	ck_assert_ptr_nonnull(strstr(words, "rank 3 died"));
	free(words);
	psc_ep_forget_owner(fx_one.ep, &fx_one);
}
END_TEST

/* Entries in a /proc/self listing: open descriptors, or mappings. */
static int fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;

	ck_assert_ptr_nonnull(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/*
 * What an open endpoint holds shows in its descriptors and mappings
 * (sockets, wait objects, queues, buffer pools): its last release gives
 * some back, except where the provider's close can crash.
 */
START_TEST(test_release_closes_or_keeps)
{
	struct fx_ep a;
	int f, m;

	/* Once first: what libfabric keeps for the process. */
	fx_open(&a, PSC_ROLE_ANY, 0, 1);
	fx_close(&a);
	fx_open(&a, PSC_ROLE_ANY, 0, 1);
	f = fds();
	m = maps();
	fx_close(&a);
	ck_assert_msg(fds() < f || maps() < m,
		      "a closed endpoint kept %d descriptors, %d mappings",
		      fds(), maps());
	fx_open(&a, PSC_ROLE_ANY, 0, 1);
	a.ep->fab.caps.stop_unclosed = true;
	f = fds();
	m = maps();
	fx_close(&a);
	ck_assert_int_eq(fds(), f);
	ck_assert_int_eq(maps(), m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("request");
	TCase *tc = fx_tcase("life cycle");

	tcase_add_test(tc, test_alloc_complete_reap);
	tcase_add_test(tc, test_expected_truncation);
	tcase_add_test(tc, test_parent_children);
	tcase_add_test(tc, test_abandoned_frees_itself);
	tcase_add_test(tc, test_queue_fifo);
	tcase_add_test(tc, test_wait_deadline_aborts);
	tcase_add_test(tc, test_owner_failure_ends_wait);
	suite_add_tcase(s, tc);
	tc = tcase_create("release");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_release_closes_or_keeps);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
