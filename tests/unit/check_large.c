/*
 * Unit tests for large messages (lib/p2p/p2p.c) on one endpoint that
 * talks to itself, with chunks of 64 KiB (PS_COMM_MAX_MSG_SIZE): a
 * message of any length costs a bounded number of requests on each side
 * (counted on the endpoint's live list) and a flat RSS, however many
 * chunks it has: an 8 GiB send of untouched pages posts at once, and
 * its receive, once the header matched, holds a few chunks only; a
 * 64 MiB message arrives bitwise whole; one longer than its receive
 * buffer truncates, fills the buffer, and leaves the channel usable.
 * Where unexpected arrivals share the receive pool (caps.chunks_credit,
 * forced here), a send holds its chunks until the receive is posted, and
 * a long message, sent half a window at a time, still costs a bounded
 * number of requests, and only a few one-chunk messages go without the
 * go-ahead where the provider allows it (caps.ahead_min), taken by the
 * receiver before their receives exist. Runs on any provider
 * (FI_PROVIDER chooses).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>
#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "fixture.h"
#include "p2p/p2p.h"
#include "util/util.h"

#define CHUNK (64u << 10)
#define HUGE_LEN ((size_t)8 << 30) /* 131,072 chunks of 64 KiB */
/* Requests a message may hold on one side: a window of chunks and a few. */
#define PER_SIDE 24

static int live_count(void)
{
	int n = 0;

	psc_ep_lock(fx_one.ep);
	for (struct ps_comm_request *r = fx_one.ep->live; r; r = r->live_next)
		n++;
	psc_ep_unlock(fx_one.ep);
	return n;
}

/* Resident set size in bytes (/proc/self/statm). */
static size_t rss(void)
{
	unsigned long size, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu %lu", &size, &res), 2);
	fclose(f);
	return res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Pages nobody touched: reading them maps the zero page, nothing more. */
static void *untouched(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p;
}

static void isend(const void *buf, size_t len, int tag, ps_comm_request_t *req)
{
	char err[256];

	ck_assert_msg(psc_isend(&fx_one.ch, PSC_PROTO_USER, buf, len, 0,
				(uint32_t)tag, req, err, sizeof(err)) == 0,
		      "isend of %zu bytes: %s", len, err);
}

static void irecv(void *buf, size_t len, int tag, ps_comm_request_t *req)
{
	char err[256];

	ck_assert_msg(psc_irecv(&fx_one.ch, PSC_PROTO_USER, buf, len, 0, tag,
				req, err, sizeof(err)) == 0,
		      "irecv of %zu bytes: %s", len, err);
}

/*
 * Drive progress until both requests are done (or, with until_parent,
 * until the receive became a large message's parent), keeping the most
 * requests seen live at once; fails after 60 s.
 */
static int drive(ps_comm_request_t rr, ps_comm_request_t sr, bool until_parent)
{
	double end = psc_now() + 60;
	int peak = 0;

	for (;;) {
		int n = live_count();

		peak = n > peak ? n : peak;
		if (until_parent ? rr->kind == PSC_REQ_PARENT && rr->kids
				 : psc_p2p_done(rr) && psc_p2p_done(sr))
			return peak;
		ck_assert_msg(psc_now() < end, "no progress in 60 s");
		psc_ep_progress(fx_one.ep);
	}
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

/*
 * A large message to itself, so that the provider's connection and its
 * buffer pools exist before the memory is measured.
 */
static void warm_up(void)
{
	size_t n = (size_t)1 << 20;
	unsigned char *b = calloc(1, n);
	ps_comm_request_t rr, sr;

	ck_assert_ptr_nonnull(b);
	irecv(b, n, 4, &rr);
	isend(b, n, 4, &sr);
	drive(rr, sr, false);
	ck_assert_int_eq(psc_p2p_reap(&sr, NULL, NULL), 0);
	ck_assert_int_eq(psc_p2p_reap(&rr, NULL, NULL), 0);
	free(b);
}

/* A send of 8 GiB posts at once with a window of requests, RSS flat. */
START_TEST(test_huge_send_bounded)
{
	const void *buf = untouched(HUGE_LEN, PROT_READ);
	int before;
	size_t rss0;
	double t0;
	ps_comm_request_t req;

	warm_up();
	before = live_count();
	rss0 = rss();
	t0 = psc_now();
	isend(buf, HUGE_LEN, 5, &req);
	ck_assert_msg(psc_now() - t0 < 1.0, "posting took %.2f s",
		      psc_now() - t0);
	ck_assert_msg(live_count() - before <= PER_SIDE,
		      "%d requests for "
		      "one send",
		      live_count() - before);
	ck_assert_msg(rss() < rss0 + (4u << 20), "RSS grew by %zu KiB",
		      (rss() - rss0) >> 10);
	/* Nobody receives it; the pages stay mapped for the provider. */
	psc_p2p_cancel(&req);
}
END_TEST

/*
 * Its receive, once the header matched, holds a window of chunks, not a
 * request per chunk (the data only starts to arrive: then both go).
 */
START_TEST(test_huge_recv_bounded)
{
	void *dst = untouched(HUGE_LEN, PROT_READ | PROT_WRITE);
	const void *src = untouched(HUGE_LEN, PROT_READ);
	int before = live_count();
	ps_comm_request_t rr, sr;
	int peak;

	irecv(dst, HUGE_LEN, 6, &rr);
	isend(src, HUGE_LEN, 6, &sr);
	peak = drive(rr, sr, true);
	ck_assert_msg(peak - before <= 2 * PER_SIDE,
		      "%d requests for one "
		      "message",
		      peak - before);
	psc_p2p_cancel(&rr);
	psc_p2p_cancel(&sr);
}
END_TEST

/*
 * fx_one's endpoint as one whose receive pool also holds unexpected
 * arrivals (shm): chunks go on the receiver's go-ahead, half a window at
 * a time.
 */
static void by_window(void)
{
	fx_one.ep->fab.caps.chunks_wait = true;
	fx_one.ep->fab.caps.chunks_credit = true;
}

/* 64 MiB and 5 bytes in 1,025 chunks arrive whole, a window at a time. */
static void whole_64mib(void)
{
	size_t n = ((size_t)64 << 20) + 5;
	unsigned char *s = malloc(n), *r = malloc(n + 1);
	int before = live_count(), peak;
	ps_comm_request_t rr, sr;
	ps_comm_status_t st;

	ck_assert(s && r);
	fill(s, n, 7);
	memset(r, 0xEE, n + 1);
	irecv(r, n, 8, &rr);
	isend(s, n, 8, &sr);
	peak = drive(rr, sr, false);
	ck_assert_int_eq(psc_p2p_reap(&sr, NULL, NULL), 0);
	ck_assert_int_eq(psc_p2p_reap(&rr, &st, NULL), 0);
	ck_assert_uint_eq(st.len, n);
	ck_assert_msg(memcmp(s, r, n) == 0, "the bytes differ");
	ck_assert_int_eq(r[n], 0xEE);
	ck_assert_msg(peak - before <= 2 * PER_SIDE,
		      "%d requests live at "
		      "once",
		      peak - before);
	ck_assert_int_eq(live_count(), before);
	free(s);
	free(r);
}

START_TEST(test_64mib_whole)
{
	whole_64mib();
}
END_TEST

/* The same by half windows: the go-ahead's sends are used again. */
START_TEST(test_64mib_by_window)
{
	by_window();
	whole_64mib();
}
END_TEST

/* Chunk sends of a message, not its header. */
static int chunk_sends(const struct ps_comm_request *p)
{
	int n = 0;

	psc_ep_lock(fx_one.ep);
	for (const struct ps_comm_request *k = p->kids; k; k = k->sibling)
		n += k->kind == PSC_REQ_SEND && k->len != 24;
	psc_ep_unlock(fx_one.ep);
	return n;
}

/*
 * Whether send sr's chunks so far all have their receives in rr posted
 * (once rr took the header). Both on fx_one.
 */
static bool sent_within_posted(const struct ps_comm_request *sr,
			       const struct ps_comm_request *rr)
{
	bool ok;

	psc_ep_lock(fx_one.ep);
	ok = rr->kind != PSC_REQ_PARENT || psc_req_done(rr) ||
	     sr->chunk_next <= rr->chunk_next;
	psc_ep_unlock(fx_one.ep);
	return ok;
}

/*
 * By half windows, no chunk leaves before its receive is posted: a send
 * nobody receives yet holds its header's go-ahead receive only, however
 * long the endpoint progresses, and once the receive is there no chunk
 * goes past the receives it has posted; the message arrives whole.
 */
START_TEST(test_window_waits)
{
	size_t n = (size_t)4 << 20;
	unsigned char *s = malloc(n), *r = malloc(n);
	ps_comm_request_t rr, sr;
	ps_comm_status_t st;

	ck_assert(s && r);
	by_window();
	fill(s, n, 13);
	isend(s, n, 12, &sr);
	for (int i = 0; i < 2000; i++)
		psc_ep_progress(fx_one.ep);
	ck_assert_int_eq(chunk_sends(sr), 0);
	ck_assert(!psc_p2p_done(sr));
	irecv(r, n, 12, &rr);
	while (!psc_p2p_done(rr) || !psc_p2p_done(sr)) {
		ck_assert_msg(sent_within_posted(sr, rr),
			      "a chunk went before its receive was posted");
		psc_ep_progress(fx_one.ep);
	}
	ck_assert_int_eq(psc_p2p_reap(&sr, NULL, NULL), 0);
	ck_assert_int_eq(psc_p2p_reap(&rr, &st, NULL), 0);
	ck_assert_uint_eq(st.len, n);
	ck_assert_msg(memcmp(s, r, n) == 0, "the bytes differ");
	free(s);
	free(r);
}
END_TEST

/*
 * Where a one-chunk message completes at its sender only once matched
 * (caps.ahead_min, forced here), up to PSC_EP_AHEAD_MAX such messages go
 * without the go-ahead, before any receive is posted; the next, and a
 * message of two chunks, wait for it. The receiver takes the ones that
 * went into buffers of its own, so they complete at the sender before
 * any receive is posted (shm completes sends in posting order: one that
 * waited for its receive would hold back every send behind it), and
 * their units come back. Every message arrives whole, in receives
 * posted in the opposite order.
 */
START_TEST(test_ahead_bounded)
{
	enum { N = PSC_EP_AHEAD_MAX + 2 };
	size_t len[N + 1];
	unsigned char *s[N + 1], *r[N + 1];
	ps_comm_request_t sr[N + 1], rr[N + 1];
	ps_comm_status_t st;
	int ahead = 0;
	double end = psc_now() + 10;

	by_window();
	fx_one.ep->fab.caps.ahead_min = 4097;
	for (int i = 0; i <= N; i++) {
		/* The last one has two chunks. */
		len[i] = i == N ? CHUNK + 1 : CHUNK - (size_t)i;
		s[i] = malloc(len[i]);
		r[i] = malloc(len[i]);
		ck_assert(s[i] && r[i]);
		fill(s[i], len[i], 20u + (unsigned)i);
		isend(s[i], len[i], 20 + i, &sr[i]);
	}
	/* The receiver takes their chunks once they wait unclaimed a while. */
	for (int i = 0; i < 2000 || !psc_p2p_done(sr[PSC_EP_AHEAD_MAX - 1]);
	     i++) {
		ck_assert_msg(psc_now() < end, "no chunk sent ahead was taken "
			      "in 10 s");
		psc_ep_progress(fx_one.ep);
	}
	for (int i = 0; i <= N; i++) {
		int c = chunk_sends(sr[i]);

		ck_assert_msg(c == (i < (int)PSC_EP_AHEAD_MAX),
			      "message %d of %zu bytes sent %d chunks before "
			      "its receive", i, len[i], c);
		ck_assert_msg(psc_p2p_done(sr[i]) == (c == 1),
			      "message %d: %d chunks sent ahead, and the send "
			      "is %sdone before its receive", i, c,
			      psc_p2p_done(sr[i]) ? "" : "not ");
		ahead += c;
	}
	ck_assert_int_eq(ahead, (int)PSC_EP_AHEAD_MAX);
	psc_ep_lock(fx_one.ep);
	ck_assert_uint_eq(fx_one.ep->ahead, 0);
	psc_ep_unlock(fx_one.ep);
	for (int i = N; i >= 0; i--)
		irecv(r[i], len[i], 20 + i, &rr[i]);
	for (int i = N; i >= 0; i--) {
		drive(rr[i], sr[i], false);
		ck_assert_int_eq(psc_p2p_reap(&sr[i], NULL, NULL), 0);
		ck_assert_int_eq(psc_p2p_reap(&rr[i], &st, NULL), 0);
		ck_assert_uint_eq(st.len, len[i]);
		ck_assert_msg(memcmp(s[i], r[i], len[i]) == 0,
			      "message %d: the bytes differ", i);
		free(s[i]);
		free(r[i]);
	}
	psc_ep_lock(fx_one.ep);
	ck_assert_uint_eq(fx_one.ep->ahead, 0);
	psc_ep_unlock(fx_one.ep);
}
END_TEST

/*
 * 4 MiB into 1 MiB and 5 bytes: the buffer fills, the rest of the
 * chunks are truncated as expected, and the next message arrives.
 */
START_TEST(test_truncated_large)
{
	size_t n = (size_t)4 << 20, room = ((size_t)1 << 20) + 5;
	unsigned char *s = malloc(n), *r = malloc(room + 1);
	ps_comm_request_t rr, sr;
	ps_comm_status_t st;
	int v = 42, got = 0;

	ck_assert(s && r);
	fill(s, n, 9);
	memset(r, 0xEE, room + 1);
	irecv(r, room, 10, &rr);
	isend(s, n, 10, &sr);
	drive(rr, sr, false);
	ck_assert_int_eq(psc_p2p_reap(&sr, NULL, NULL), 0);
	ck_assert_int_eq(psc_p2p_reap(&rr, &st, NULL), -FI_ETRUNC);
	ck_assert_uint_eq(st.len, room);
	ck_assert_msg(memcmp(s, r, room) == 0, "the bytes differ");
	ck_assert_int_eq(r[room], 0xEE);
	irecv(&got, sizeof(got), 11, &rr);
	isend(&v, sizeof(v), 11, &sr);
	drive(rr, sr, false);
	ck_assert_int_eq(psc_p2p_reap(&sr, NULL, NULL), 0);
	ck_assert_int_eq(psc_p2p_reap(&rr, NULL, NULL), 0);
	ck_assert_int_eq(got, 42);
	free(s);
	free(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("large");
	TCase *tc = fx_tcase("chunks");
	char v[32];

	snprintf(v, sizeof(v), "%u", CHUNK);
	setenv("PS_COMM_MAX_MSG_SIZE", v, 1);
	tcase_add_test(tc, test_huge_send_bounded);
	tcase_add_test(tc, test_huge_recv_bounded);
	tcase_add_test(tc, test_64mib_whole);
	tcase_add_test(tc, test_truncated_large);
	tcase_add_test(tc, test_64mib_by_window);
	tcase_add_test(tc, test_window_waits);
	tcase_add_test(tc, test_ahead_bounded);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
