/*
 * Unit tests for the output queue of a non-blocking socket
 * (lib/net/outq.c), over a socketpair with small buffers: frames that the
 * socket does not take are queued, not dropped or cut, and arrive whole
 * and in order once the reader drains and the queue is flushed; a queue
 * at its max refuses a frame whole (-ENOBUFS) and the stream stays
 * intact; a closed peer is an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "net/outq.h"

#define FRAME 300

static void pair_small(int sv[2])
{
	int small = 4096;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
}

/* Frame i: FRAME bytes, each (i + offset) & 0xff. */
static void frame(uint8_t *f, int i)
{
	for (int k = 0; k < FRAME; k++)
		f[k] = (uint8_t)(i + k);
}

/*
 * Read from fd, flushing q on wfd meanwhile, until n frames came; each
 * must be frame i in order.
 */
static void drain_and_check(int fd, struct psc_outq *q, int wfd, int n)
{
	uint8_t got[FRAME], want[FRAME];
	size_t have = 0;
	int i = 0;

	while (i < n) {
		ssize_t r = read(fd, got + have, FRAME - have);

		ck_assert_int_gt(r, 0);
		have += (size_t)r;
		if (have == FRAME) {
			frame(want, i++);
			ck_assert_mem_eq(got, want, FRAME);
			have = 0;
		}
		ck_assert_int_eq(psc_outq_flush(q, wfd), 0);
	}
	ck_assert(!psc_outq_pending(q));
}

START_TEST(test_queue_keeps_order)
{
	struct psc_outq q = {0};
	uint8_t f[FRAME];
	int sv[2], n = 0;

	pair_small(sv);
	/* Far more than the socket holds: the rest must be queued. */
	for (n = 0; n < 400; n++) {
		frame(f, n);
		ck_assert_int_eq(psc_outq_send(&q, sv[0], f, FRAME), 0);
	}
	ck_assert(psc_outq_pending(&q));
	drain_and_check(sv[1], &q, sv[0], n);
	psc_outq_free(&q);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_full_queue_refuses_whole_frames)
{
	struct psc_outq q = {.max = 8 * FRAME};
	uint8_t f[FRAME];
	int sv[2], sent = 0, rc = 0;

	pair_small(sv);
	for (int i = 0; i < 1000 && rc == 0; i++) {
		frame(f, sent);
		rc = psc_outq_send(&q, sv[0], f, FRAME);
		if (rc == 0)
			sent++;
	}
	ck_assert_int_eq(rc, -ENOBUFS);
	ck_assert_uint_le(q.len, q.max);
	/* What was accepted arrives whole and in order. */
	drain_and_check(sv[1], &q, sv[0], sent);
	psc_outq_free(&q);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_closed_peer)
{
	struct psc_outq q = {0};
	uint8_t f[FRAME] = {0};
	int sv[2], rc = 0;

	pair_small(sv);
	close(sv[1]);
	for (int i = 0; i < 100 && rc == 0; i++)
		rc = psc_outq_send(&q, sv[0], f, FRAME);
	ck_assert_int_eq(rc, -EPIPE);
	psc_outq_free(&q);
	close(sv[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outq");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_queue_keeps_order);
	tcase_add_test(tc, test_full_queue_refuses_whole_frames);
	tcase_add_test(tc, test_closed_peer);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
