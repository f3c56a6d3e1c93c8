/*
 * The multi-process point-to-point suite, run under ps_comm_run on every
 * provider present: message sizes from 0 B to 8 MiB and 64 MiB, a window
 * of large receives sharing one buffer, wildcards,
 * non-overtaking order, truncation, self-send, 10,000 outstanding
 * requests, receivers idle long enough to sleep (woken in time, and
 * using little CPU while they wait), several sending
 * threads against one receiver, two communicators side by side, and bad
 * arguments. Every received byte is checked against the pattern its
 * sender wrote. Exits 0 on success, 1 on any failure (a provider that
 * fails to open included: whether it exists is the caller's question).
 *
 * Options: --quick (fewer iterations, for slow providers).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ps_comm.h"
#include "suite.h"

static int quick;
static ps_comm_t comm;
/* Barriers run on their own communicator so wildcards never see them. */
static ps_comm_t ctl;

/* Rank 0 collects everyone, then releases everyone. */
static void barrier(void)
{
	char c = 0;
	const int tag = 30000;

	if (rank) {
		ps_comm_send(ctl, &c, 0, 0, tag);
		ps_comm_recv(ctl, &c, 0, 0, tag, NULL);
		return;
	}
	for (int i = 1; i < size; i++)
		ps_comm_recv(ctl, &c, 0, PS_COMM_ANY_SOURCE, tag, NULL);
	for (int i = 1; i < size; i++)
		ps_comm_send(ctl, &c, 0, i, tag);
}

static void ok(const char *test)
{
	barrier();
	if (rank == 0)
		printf("ok - %s (%d ranks)\n", test, size);
	fflush(stdout);
}

/*
 * First contact, before any other traffic: every rank sends to every
 * other at once, so connections open from both ends of each pair at the
 * same moment (providers that connect on the first send must resolve the
 * crossing without losing a message). Small and large messages, in
 * order, each checked byte for byte.
 */
#define CONTACT_MSGS 4
static size_t contact_len(int k)
{
	return k % 2 ? 20000 : (size_t)(8 + k);
}

static void test_first_contact(void)
{
	const char *t = "first contact from both ends";
	int n = CONTACT_MSGS * size;
	ps_comm_request_t *rq = calloc((size_t)n * 2, sizeof(*rq));
	unsigned char **sb = calloc((size_t)n, sizeof(*sb));
	unsigned char **rb = calloc((size_t)n, sizeof(*rb));
	ps_comm_status_t *st = calloc((size_t)n * 2, sizeof(*st));

	for (int p = 0; p < size; p++)
		for (int k = 0; p != rank && k < CONTACT_MSGS; k++) {
			int i = p * CONTACT_MSGS + k;
			size_t len = contact_len(k);

			rb[i] = malloc(len);
			sb[i] = malloc(len);
			fill(sb[i], len, rank, (size_t)(k * 1000 + p));
			CHECK_RC(t, ps_comm_irecv(comm, rb[i], len, p, 5,
						  &rq[2 * i]));
			CHECK_RC(t, ps_comm_isend(comm, sb[i], len, p, 5,
						  &rq[2 * i + 1]));
		}
	CHECK_RC(t, ps_comm_waitall((size_t)n * 2, rq, st));
	for (int p = 0; p < size; p++)
		for (int k = 0; p != rank && k < CONTACT_MSGS; k++) {
			int i = p * CONTACT_MSGS + k;
			size_t len = contact_len(k);

			if (st[2 * i].len != len ||
			    verify(rb[i], len, p, (size_t)(k * 1000 + rank)) >= 0)
				fail(t, "message %d from %d: %zu B, wrong bytes",
				     k, p, st[2 * i].len);
		}
	for (int i = 0; i < n; i++) {
		free(sb[i]);
		free(rb[i]);
	}
	free(sb);
	free(rb);
	free(rq);
	free(st);
	ok(t);
}

/* Each rank sends to its right neighbour and receives from its left. */
static void test_sizes(void)
{
	/* Both sides of the eager limits (8 KiB, and net's 64 KiB). */
	static const size_t sizes[] = {0, 1, 7, 13, 4095, 8192, 8193, 65536,
				       65537, 100003, 8u << 20};
	const char *t = "sizes";
	int right = (rank + 1) % size, left = (rank + size - 1) % size;

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		unsigned char *s = malloc(n + 1), *r = malloc(n + 1);
		ps_comm_request_t req;
		ps_comm_status_t st;
		long bad;

		fill(s, n, rank, n);
		memset(r, 0xEE, n + 1);
		CHECK_RC(t, ps_comm_irecv(comm, r, n, left, 1, &req));
		CHECK_RC(t, ps_comm_send(comm, s, n, right, 1));
		CHECK_RC(t, ps_comm_wait(&req, &st));
		if (st.source != left || st.tag != 1 || st.len != n ||
		    st.error)
			fail(t, "size %zu: status {%d,%d,%zu,%d}", n,
			     st.source, st.tag, st.len, st.error);
		if ((bad = verify(r, n, left, n)) >= 0)
			fail(t, "size %zu: byte %ld wrong", n, bad);
		if (r[n] != 0xEE)
			fail(t, "size %zu: wrote past the buffer", n);
		if (req)
			fail(t, "request not cleared after wait");
		free(s);
		free(r);
	}
	ok(t);
}

/* Rank 0 receives one message from every other rank with wildcards. */
static void test_wildcards(void)
{
	const char *t = "wildcards";
	unsigned char buf[64];
	ps_comm_status_t st;
	int seen[64] = {0};

	if (rank) {
		fill(buf, 40, rank, 40);
		CHECK_RC(t, ps_comm_send(comm, buf, 40, 0, 100 + rank));
		barrier();
		/* A specific source with ANY_TAG, then the other way. */
		CHECK_RC(t, ps_comm_send(comm, buf, 40, 0, 200 + rank));
		CHECK_RC(t, ps_comm_send(comm, buf, 40, 0, 300));
		ok(t);
		return;
	}
	for (int i = 1; i < size; i++) {
		CHECK_RC(t, ps_comm_recv(comm, buf, sizeof(buf),
					 PS_COMM_ANY_SOURCE, PS_COMM_ANY_TAG,
					 &st));
		if (st.source < 1 || st.source >= size ||
		    st.tag != 100 + st.source || st.len != 40 ||
		    seen[st.source]++)
			fail(t, "status {%d,%d,%zu}", st.source, st.tag,
			     st.len);
		else if (verify(buf, 40, st.source, 40) >= 0)
			fail(t, "payload from %d wrong", st.source);
	}
	barrier();
	for (int i = size - 1; i >= 1; i--) {
		CHECK_RC(t, ps_comm_recv(comm, buf, sizeof(buf), i,
					 PS_COMM_ANY_TAG, &st));
		if (st.source != i || st.tag != 200 + i)
			fail(t, "ANY_TAG from %d got {%d,%d}", i, st.source,
			     st.tag);
		CHECK_RC(t, ps_comm_recv(comm, buf, sizeof(buf),
					 PS_COMM_ANY_SOURCE, 300, &st));
		if (st.tag != 300 || st.source < 1)
			fail(t, "ANY_SOURCE tag 300 got {%d,%d}", st.source,
			     st.tag);
	}
	ok(t);
}

/*
 * Non-overtaking: rank 1 sends numbered messages of mixed sizes on two
 * tags; rank 0 drains tag B first, then tag A, and both must be in order.
 */
static void test_order(void)
{
	const char *t = "ordering";
	int n = quick ? 50 : 400;
	size_t big = 20000;
	unsigned char *buf = malloc(big), **out = calloc((size_t)n, sizeof(*out));
	ps_comm_request_t *rq = calloc((size_t)n, sizeof(*rq));

	/* Sends are nonblocking: a blocking large send may wait for its match. */
	for (int i = 0; rank == 1 && i < n; i++) {
		size_t len = i % 7 == 0 ? big : (size_t)(4 + i % 50);

		out[i] = malloc(len);
		fill(out[i], len, i, len);
		memcpy(out[i], &i, sizeof(i));
		CHECK_RC(t, ps_comm_isend(comm, out[i], len, 0,
					  i % 2 ? 11 : 12, &rq[i]));
	}
	for (int pass = 0; rank == 0 && pass < 2; pass++) {
		int tag = pass == 0 ? 12 : 11;

		for (int i = pass == 0 ? 0 : 1; i < n; i += 2) {
			size_t len = i % 7 == 0 ? big : (size_t)(4 + i % 50);
			ps_comm_status_t st;
			int got;

			CHECK_RC(t, ps_comm_recv(comm, buf, big, 1, tag, &st));
			memcpy(&got, buf, sizeof(got));
			if (got != i || st.len != len ||
			    verify_from(buf, sizeof(got), len, i, len) >= 0) {
				fail(t, "tag %d: expected #%d (%zu B), got #%d "
				     "(%zu B)", tag, i, len, got, st.len);
				pass = 2;
				break;
			}
		}
	}
	if (rank == 1)
		CHECK_RC(t, ps_comm_waitall((size_t)n, rq, NULL));
	for (int i = 0; i < n; i++)
		free(out[i]);
	free(out);
	free(rq);
	free(buf);
	ok(t);
}

/*
 * Every other rank streams numbered messages of mixed sizes (some past
 * the eager limit, so header and chunks) on two tags to rank 0, which
 * takes them all with ANY_SOURCE, half with ANY_TAG, some pre-posted
 * and some blocking. On a node-aware communicator the senders use both
 * fabrics at once: each message must come exactly once, intact, and in
 * its sender's order. Then an ANY_SOURCE receive is cancelled, and one
 * from the last rank (another node in the node layouts of the tests)
 * truncates without disturbing the message after it.
 */
/*
 * Wait for n requests, failing test (and leaving the job: the requests
 * are still the provider's) when they are not done within 60 s, so that
 * a hang fails the suite and names the test.
 */
static int wait_bounded(const char *test, size_t n, ps_comm_request_t *reqs,
			ps_comm_status_t *st)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n;) {
		int done = 0, rc = ps_comm_test(&reqs[i], &done,
						st ? &st[i] : NULL);

		if (rc)
			return rc;
		if (done) {
			i++;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 60) {
			fail(test, "request %zu of %zu not done after 60 s", i,
			     n);
			exit(1);
		}
	}
	return 0;
}

/*
 * A receiver may take messages in any order of tags: rank 1 sends one
 * large message with tag 50, then LATER ones with tag 51, and rank 0
 * receives every tag-51 message before the first. Where the provider
 * completes sends only in the order they were posted (shm above its
 * inject size), a chunk posted before its receive existed held back the
 * completion of every send behind it; past the sends an endpoint keeps
 * in flight the next was never posted, and both ranks waited for ever.
 */
#define LATER 100
static void test_received_last(void)
{
	const char *t = "a large message received after 100 sent behind it";
	const size_t len = 20000;
	ps_comm_request_t rq[LATER + 1];
	ps_comm_status_t st[LATER + 1];
	unsigned char *b;
	long bad;

	if (size < 2 || rank > 1) {
		ok(t);
		return;
	}
	if (!(b = malloc(len * (LATER + 1)))) {
		fail(t, "out of memory");
		ok(t);
		return;
	}
	for (int i = 0; rank == 1 && i <= LATER; i++) {
		fill(b + len * (size_t)i, len, rank, 500 + (size_t)i);
		CHECK_RC(t, ps_comm_isend(comm, b + len * (size_t)i, len, 0,
					  i ? 51 : 50, &rq[i]));
	}
	for (int i = 1; rank == 0 && i <= LATER; i++)
		CHECK_RC(t, ps_comm_irecv(comm, b + len * (size_t)i, len, 1,
					  51, &rq[i]));
	if (rank == 0) {
		CHECK_RC(t, wait_bounded(t, LATER, rq + 1, st + 1));
		CHECK_RC(t, ps_comm_irecv(comm, b, len, 1, 50, &rq[0]));
		CHECK_RC(t, wait_bounded(t, 1, rq, st));
		for (int i = 0; i <= LATER; i++) {
			bad = verify(b + len * (size_t)i, len, 1,
				     500 + (size_t)i);
			if (st[i].len != len || bad >= 0)
				fail(t, "message %d: %zu bytes, byte %ld wrong",
				     i, st[i].len, bad);
		}
	} else {
		CHECK_RC(t, wait_bounded(t, LATER + 1, rq, NULL));
	}
	free(b);
	ok(t);
}

static size_t mixed_len(int i)
{
	static const size_t lens[] = {0, 4, 33, 700, 5000, 20000, 4, 9000};

	return lens[i % 8] < 4 ? 4 : lens[i % 8];
}

static void mixed_recv(unsigned char *buf, const ps_comm_status_t *st,
		       int *next)
{
	const char *t = "mixed wildcards";
	int seq;

	memcpy(&seq, buf, sizeof(seq));
	if (st->source < 1 || st->source >= size) {
		fail(t, "source %d", st->source);
		return;
	}
	if (seq != next[st->source] || st->tag != 40 + seq % 2 ||
	    st->len != mixed_len(seq) ||
	    verify_from(buf, sizeof(seq), st->len, st->source,
			(size_t)seq) >= 0)
		fail(t, "from %d: expected #%d, got #%d (tag %d, %zu B)",
		     st->source, next[st->source], seq, st->tag, st->len);
	next[st->source] = seq + 1;
}

static void test_mixed(void)
{
	const char *t = "mixed wildcards";
	int n = quick ? 40 : 300, batch = 8;
	size_t big = 20000;

	if (rank) {
		ps_comm_request_t *rq = calloc((size_t)n, sizeof(*rq));
		unsigned char **out = calloc((size_t)n, sizeof(*out));

		for (int i = 0; i < n; i++) {
			out[i] = malloc(mixed_len(i));
			fill(out[i], mixed_len(i), rank, (size_t)i);
			memcpy(out[i], &i, sizeof(i));
			CHECK_RC(t, ps_comm_isend(comm, out[i], mixed_len(i), 0,
						  40 + i % 2, &rq[i]));
		}
		CHECK_RC(t, ps_comm_waitall((size_t)n, rq, NULL));
		for (int i = 0; i < n; i++)
			free(out[i]);
		free(out);
		free(rq);
	} else {
		int total = n * (size - 1), *next = calloc((size_t)size,
							   sizeof(*next));
		unsigned char *bufs = malloc(big * (size_t)batch);
		ps_comm_request_t rq[8];
		ps_comm_status_t st[8];

		for (int got = 0; got < total;) {
			int k = total - got < batch ? total - got : batch;

			/* Pre-posted ANY_TAG receives, then blocking ones. */
			for (int j = 0; j < k; j++)
				CHECK_RC(t, ps_comm_irecv(comm, bufs + big * (size_t)j,
							  big, PS_COMM_ANY_SOURCE,
							  PS_COMM_ANY_TAG, &rq[j]));
			CHECK_RC(t, ps_comm_waitall((size_t)k, rq, st));
			for (int j = 0; j < k; j++)
				mixed_recv(bufs + big * (size_t)j, &st[j], next);
			got += k;
			for (int j = 0; j < batch && got < total; j++, got++) {
				CHECK_RC(t, ps_comm_recv(comm, bufs, big,
							 PS_COMM_ANY_SOURCE,
							 PS_COMM_ANY_TAG, &st[0]));
				mixed_recv(bufs, &st[0], next);
			}
		}
		for (int r = 1; r < size; r++)
			if (next[r] != n)
				fail(t, "rank %d: %d of %d messages", r, next[r],
				     n);
		free(next);
		free(bufs);
	}
	barrier();
	/* An ANY_SOURCE receive from another node truncates cleanly. */
	if (rank == 0) {
		unsigned char b[64];
		ps_comm_status_t s2;
		int rc = ps_comm_recv(comm, b, 4, PS_COMM_ANY_SOURCE, 45, &s2);

		if (rc != PS_COMM_ERR_TRUNCATE || s2.len != 4 ||
		    s2.source != size - 1 || verify(b, 4, size - 1, 64) >= 0)
			fail(t, "truncated ANY_SOURCE receive: %s, %zu B from "
			     "%d", ps_comm_strerror(rc), s2.len, s2.source);
		CHECK_RC(t, ps_comm_recv(comm, b, sizeof(b), PS_COMM_ANY_SOURCE,
					 45, &s2));
		if (s2.len != 16 || verify(b, 16, size - 1, 16) >= 0)
			fail(t, "message after the truncation: %zu B", s2.len);
	} else if (rank == size - 1) {
		unsigned char b[64];

		fill(b, sizeof(b), rank, sizeof(b));
		CHECK_RC(t, ps_comm_send(comm, b, sizeof(b), 0, 45));
		fill(b, 16, rank, 16);
		CHECK_RC(t, ps_comm_send(comm, b, 16, 0, 45));
	}
	ok(t);
}

/* One truncation case: send n bytes into a cap-byte buffer. */
static void truncate_case(size_t n, size_t cap)
{
	const char *t = "truncation";
	/* Room for the 16-byte follow-up message too. */
	unsigned char *s = malloc(n), *r = malloc((cap > 16 ? cap : 16) + 1);
	ps_comm_status_t st;
	int rc;

	if (rank == 1) {
		fill(s, n, 1, n);
		CHECK_RC(t, ps_comm_send(comm, s, n, 0, 21));
		/* The next message must arrive intact. */
		CHECK_RC(t, ps_comm_send(comm, s, 16, 0, 21));
	} else if (rank == 0) {
		memset(r, 0xEE, cap + 1);
		rc = ps_comm_recv(comm, r, cap, 1, 21, &st);
		if (rc != PS_COMM_ERR_TRUNCATE || st.error != rc ||
		    st.len != cap || st.source != 1 || st.tag != 21)
			fail(t, "%zu into %zu: rc %d status {%d,%d,%zu,%d}", n,
			     cap, rc, st.source, st.tag, st.len, st.error);
		if (verify(r, cap, 1, n) >= 0 || r[cap] != 0xEE)
			fail(t, "%zu into %zu: buffer contents wrong", n, cap);
		memset(r, 0, cap);
		rc = ps_comm_recv(comm, r, cap > 16 ? cap : 16, 1, 21, &st);
		if (rc || st.len != 16 || verify(r, 16, 1, n) >= 0)
			fail(t, "message after a truncated %zu B one is wrong "
			     "(rc %d, len %zu)", n, rc, st.len);
	}
	free(s);
	free(r);
}

/*
 * 64 MiB and 3 bytes from rank 0 to rank 1 and back: split into many
 * chunks, several of them in flight at once, each byte checked.
 */
static void test_large(void)
{
	const char *t = "64 MiB message";
	size_t n = ((size_t)64 << 20) + 3;
	unsigned char *s, *r;
	ps_comm_status_t st;
	int peer = 1 - rank;
	long bad;

	if (quick || size < 2 || rank > 1) {
		ok(t);
		return;
	}
	s = malloc(n);
	r = malloc(n + 1);
	if (!s || !r) {
		fail(t, "out of memory");
		free(s);
		free(r);
		ok(t);
		return;
	}
	fill(s, n, rank, 64);
	memset(r, 0xEE, n + 1);
	for (int from = 0; from < 2; from++) {
		if (rank == from) {
			CHECK_RC(t, ps_comm_send(comm, s, n, peer, 2));
			continue;
		}
		CHECK_RC(t, ps_comm_recv(comm, r, n, peer, 2, &st));
		if (st.len != n || st.error)
			fail(t, "status {%d,%d,%zu,%d}", st.source, st.tag,
			     st.len, st.error);
		if ((bad = verify(r, n, peer, 64)) >= 0)
			fail(t, "byte %ld wrong", bad);
		if (r[n] != 0xEE)
			fail(t, "wrote past the buffer");
	}
	free(s);
	free(r);
	ok(t);
}

/*
 * A bandwidth test's window: rank 1 posts all its receives into one
 * buffer, rank 0 sends large messages (many chunks each) of different
 * lengths. Every receive must complete with its own message's length:
 * the chunks of one message landing on another's header, before pscomm
 * read it, must not mix them up or fail them. The bytes are a mix (the
 * receives share them); a checked message afterwards shows the channel
 * is still in order.
 */
#define SHARED_WINDOW 16
/*
 * Above every provider's single-message limit (net's is 64 KiB), yet few
 * chunks at PS_COMM_MAX_MSG_SIZE=4096 (mr.sh, under the sanitizers).
 */
static size_t shared_len(int i)
{
	return ((size_t)512 << 10) + 3 - (size_t)i * 4099;
}

static void test_shared_window(void)
{
	const char *t = "a window of large receives into one buffer";
	ps_comm_request_t req[SHARED_WINDOW];
	ps_comm_status_t st[SHARED_WINDOW];
	int n = quick ? 4 : SHARED_WINDOW;
	size_t max = shared_len(0), after = 65536;
	unsigned char *buf;
	long bad;

	if (size < 2 || rank > 1) {
		ok(t);
		return;
	}
	if (!(buf = malloc(max))) {
		fail(t, "out of memory");
		ok(t);
		return;
	}
	fill(buf, max, 0, 70);
	for (int rep = 0; rep < (quick ? 1 : 3); rep++) {
		for (int i = 0; i < n; i++) {
			if (rank == 0) {
				CHECK_RC(t, ps_comm_isend(comm, buf,
							  shared_len(i), 1, 3,
							  &req[i]));
			} else {
				CHECK_RC(t, ps_comm_irecv(comm, buf, max, 0, 3,
							  &req[i]));
			}
		}
		CHECK_RC(t, ps_comm_waitall(n, req, rank ? st : NULL));
		for (int i = 0; rank == 1 && i < n; i++)
			if (st[i].len != shared_len(i) || st[i].error ||
			    st[i].source != 0 || st[i].tag != 3)
				fail(t, "receive %d: status {%d,%d,%zu,%d}, "
				     "not {0,3,%zu,0}", i, st[i].source,
				     st[i].tag, st[i].len, st[i].error,
				     shared_len(i));
	}
	if (rank == 0) {
		fill(buf, after, 0, 71);
		CHECK_RC(t, ps_comm_send(comm, buf, after, 1, 4));
	} else {
		CHECK_RC(t, ps_comm_recv(comm, buf, after, 0, 4, NULL));
		if ((bad = verify(buf, after, 0, 71)) >= 0)
			fail(t, "the message after it: byte %ld wrong", bad);
	}
	free(buf);
	ok(t);
}

/*
 * Large messages sent long before their receives: rank 0 starts
 * LATE_MSGS sends of half a megabyte, then tells rank 1 (a small
 * message on another tag), and only then does rank 1 post the receives.
 * Split into 4 KiB chunks (p2p.sh's PS_COMM_MAX_MSG_SIZE=4096) that is
 * 3,072 chunks, more than shm's receive pool holds, and that pool also
 * holds the messages that arrived unexpected: chunks sent ahead of their
 * receives would fill it, and posting the receives would then fail for
 * want of room (or the small message wait behind them for ever).
 */
#define LATE_MSGS 24

static void test_late_receives(void)
{
	const char *t = "large sends long before their receives";
	ps_comm_request_t req[LATE_MSGS];
	ps_comm_status_t st[LATE_MSGS];
	int n = quick ? 4 : LATE_MSGS;
	size_t len = (size_t)512 << 10;
	unsigned char *buf, go = 1;
	long bad;

	if (size < 2 || rank > 1) {
		ok(t);
		return;
	}
	if (!(buf = malloc(len * (size_t)n))) {
		fail(t, "out of memory");
		ok(t);
		return;
	}
	if (rank == 0) {
		for (int i = 0; i < n; i++) {
			fill(buf + (size_t)i * len, len, 0, 80 + (size_t)i);
			CHECK_RC(t, ps_comm_isend(comm, buf + (size_t)i * len,
						  len, 1, 6, &req[i]));
		}
		CHECK_RC(t, ps_comm_send(comm, &go, 1, 1, 7));
		CHECK_RC(t, ps_comm_waitall(n, req, NULL));
	} else {
		CHECK_RC(t, ps_comm_recv(comm, &go, 1, 0, 7, NULL));
		for (int i = 0; i < n; i++)
			CHECK_RC(t, ps_comm_irecv(comm, buf + (size_t)i * len,
						  len, 0, 6, &req[i]));
		CHECK_RC(t, ps_comm_waitall(n, req, st));
		for (int i = 0; i < n; i++) {
			if (st[i].len != len || st[i].error)
				fail(t, "receive %d: %zu bytes, error %d", i,
				     st[i].len, st[i].error);
			if ((bad = verify(buf + (size_t)i * len, len, 0,
					  80 + (size_t)i)) >= 0)
				fail(t, "message %d: byte %ld wrong", i, bad);
		}
	}
	free(buf);
	ok(t);
}

static void test_truncate(void)
{
	truncate_case(100, 50);
	truncate_case(100, 10);
	truncate_case(30, 0);
	truncate_case(100 * 1024, 60 * 1024);
	truncate_case(1 << 20, 100);
	ok("truncation");
}

static void test_self(void)
{
	const char *t = "self-send";
	static const size_t sizes[] = {0, 5, 1 << 20};

	for (size_t k = 0; k < 3; k++) {
		size_t n = sizes[k];
		unsigned char *s = malloc(n + 1), *r = malloc(n + 1);
		ps_comm_request_t req;
		ps_comm_status_t st;

		fill(s, n, rank, n + 3);
		CHECK_RC(t, ps_comm_isend(comm, s, n, rank, 31, &req));
		CHECK_RC(t, ps_comm_recv(comm, r, n, rank, 31, &st));
		CHECK_RC(t, ps_comm_wait(&req, NULL));
		if (st.source != rank || st.len != n ||
		    verify(r, n, rank, n + 3) >= 0)
			fail(t, "size %zu wrong", n);
		free(s);
		free(r);
	}
	ok(t);
}

/* 10,000 receives and 10,000 sends outstanding at once, in a ring. */
static void test_many(void)
{
	const char *t = "outstanding requests";
	int n = quick ? 1000 : 10000;
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	ps_comm_request_t *rq = calloc((size_t)n * 2, sizeof(*rq));
	uint64_t *in = calloc((size_t)n, 8), *out = calloc((size_t)n, 8);

	for (int i = 0; i < n; i++) {
		out[i] = (uint64_t)rank << 32 | (uint64_t)i;
		CHECK_RC(t, ps_comm_irecv(comm, &in[i], 8, left, 40 + i % 100,
					  &rq[i]));
	}
	for (int i = 0; i < n; i++)
		CHECK_RC(t, ps_comm_isend(comm, &out[i], 8, right,
					  40 + i % 100, &rq[n + i]));
	CHECK_RC(t, ps_comm_waitall((size_t)n * 2, rq, NULL));
	for (int i = 0; i < n; i++)
		if (in[i] != ((uint64_t)left << 32 | (uint64_t)i)) {
			fail(t, "message %d: got %llx", i,
			     (unsigned long long)in[i]);
			break;
		}
	free(rq);
	free(in);
	free(out);
	ok(t);
}

#define THREADS 4

struct sender {
	int id, count;
	int rc;
};

static void *send_thread(void *arg)
{
	struct sender *s = arg;
	unsigned char buf[300];

	for (int i = 0; i < s->count && !s->rc; i++) {
		size_t len = 8 + (size_t)(i % 29) * 9;

		fill(buf, len, rank, (size_t)(s->id * 100000 + i));
		memcpy(buf, &i, sizeof(i));
		s->rc = ps_comm_send(comm, buf, len, 0, 50 + s->id);
	}
	return NULL;
}

/* Rank 0 receives from THREADS threads on every other rank. */
static void test_threads(void)
{
	const char *t = "multithreaded senders";
	int count = quick ? 30 : 500;
	unsigned char buf[300];

	if (rank) {
		pthread_t th[THREADS];
		struct sender s[THREADS];

		for (int i = 0; i < THREADS; i++) {
			s[i] = (struct sender){i, count, 0};
			pthread_create(&th[i], NULL, send_thread, &s[i]);
		}
		for (int i = 0; i < THREADS; i++) {
			pthread_join(th[i], NULL);
			if (s[i].rc)
				fail(t, "thread %d: %s", i,
				     ps_comm_strerror(s[i].rc));
		}
	} else {
		int next[64][THREADS] = {{0}};
		int total = (size - 1) * THREADS * count;

		for (int k = 0; k < total; k++) {
			ps_comm_status_t st;
			int th, i, src;

			CHECK_RC(t, ps_comm_recv(comm, buf, sizeof(buf),
						 PS_COMM_ANY_SOURCE,
						 PS_COMM_ANY_TAG, &st));
			src = st.source;
			th = st.tag - 50;
			memcpy(&i, buf, sizeof(i));
			if (src < 1 || src >= size || th < 0 || th >= THREADS ||
			    i != next[src][th]) {
				fail(t, "from %d tag %d: #%d out of order", src,
				     st.tag, i);
				break;
			}
			next[src][th]++;
			if (st.len != 8 + (size_t)(i % 29) * 9 ||
			    verify_from(buf, sizeof(i), st.len, src,
					(size_t)(th * 100000 + i)) >= 0) {
				fail(t, "from %d tag %d: #%d payload wrong",
				     src, st.tag, i);
				break;
			}
		}
	}
	ok(t);
}

/* Two communicators at once must not see each other's messages. */
static void test_two_comms(void)
{
	const char *t = "two communicators";
	ps_comm_t second;
	int r2, s2, a = 1, b = 2, got = 0;

	CHECK_RC(t, ps_comm_init(&second, NULL));
	ps_comm_rank(second, &r2);
	ps_comm_size(second, &s2);
	if (r2 != rank || s2 != size)
		fail(t, "second communicator is rank %d of %d", r2, s2);
	if (size >= 2 && rank == 1) {
		CHECK_RC(t, ps_comm_send(comm, &a, sizeof(a), 0, 60));
		CHECK_RC(t, ps_comm_send(second, &b, sizeof(b), 0, 60));
	} else if (size >= 2 && rank == 0) {
		CHECK_RC(t, ps_comm_recv(second, &got, sizeof(got), 1, 60,
					 NULL));
		if (got != 2)
			fail(t, "second communicator received %d", got);
		CHECK_RC(t, ps_comm_recv(comm, &got, sizeof(got), 1, 60, NULL));
		if (got != 1)
			fail(t, "first communicator received %d", got);
	}
	CHECK_RC(t, ps_comm_finalize(second));
	ok(t);
}

/* Every bad argument returns PS_COMM_ERR_ARG and changes nothing. */
static void test_bad_args(void)
{
	const char *t = "bad arguments";
	ps_comm_request_t req = NULL;
	char buf[8];
	int ub, x;
	struct {
		const char *what;
		int rc;
	} cases[24];
	int n = 0;

	ps_comm_tag_ub(comm, &ub);
	if (ub < 32767)
		fail(t, "tag_ub %d below 32767", ub);
#define CASE(call) cases[n++] = (typeof(cases[0])){#call, (call)}
	CASE(ps_comm_send(NULL, buf, 1, 0, 0));
	CASE(ps_comm_send(comm, NULL, 1, 0, 0));
	CASE(ps_comm_send(comm, buf, (size_t)-1, 0, 0));
	/* Longer than any address space: refused at once, nothing posted. */
	CASE(ps_comm_isend(comm, buf, SIZE_MAX / 2, 0, 0, &req));
	CASE(ps_comm_isend(comm, buf, PS_COMM_MSG_MAX + 1, 0, 0, &req));
	CASE(ps_comm_irecv(comm, buf, SIZE_MAX / 2, 0, 0, &req));
	CASE(ps_comm_send(comm, buf, 1, size, 0));
	CASE(ps_comm_send(comm, buf, 1, -1, 0));
	CASE(ps_comm_send(comm, buf, 1, 0, ub + 1 > 0 ? ub + 1 : -2));
	CASE(ps_comm_send(comm, buf, 1, 0, -5));
	CASE(ps_comm_send(comm, buf, 1, 0, PS_COMM_ANY_TAG));
	CASE(ps_comm_isend(comm, buf, 1, 0, 0, NULL));
	CASE(ps_comm_irecv(comm, buf, 1, size + 3, 0, &req));
	CASE(ps_comm_irecv(comm, buf, 1, -7, 0, &req));
	CASE(ps_comm_recv(comm, buf, 1, 0, -2, NULL));
	CASE(ps_comm_recv(comm, NULL, 4, 0, 0, NULL));
	CASE(ps_comm_wait(NULL, NULL));
	CASE(ps_comm_waitall(3, NULL, NULL));
	CASE(ps_comm_test(&req, NULL, NULL));
	CASE(ps_comm_rank(NULL, &x));
	CASE(ps_comm_size(comm, NULL));
	CASE(ps_comm_init(NULL, NULL));
	CASE(ps_comm_finalize(NULL));
#undef CASE
	for (int i = 0; i < n; i++)
		if (cases[i].rc != PS_COMM_ERR_ARG)
			fail(t, "%s returned %d, not PS_COMM_ERR_ARG",
			     cases[i].what, cases[i].rc);
	if (req)
		fail(t, "a refused irecv produced a request");
	/* A completed (NULL) request tests done and waits at once. */
	CHECK_RC(t, ps_comm_test(&req, &x, NULL));
	if (!x)
		fail(t, "NULL request is not done");
	CHECK_RC(t, ps_comm_wait(&req, NULL));
	ok(t);
}

/* Nonblocking receive completed by polling ps_comm_test. */
static void test_poll(void)
{
	const char *t = "test polling";
	int v = 0, done = 0, spins = 0;
	ps_comm_request_t req;

	if (size < 2 || rank > 1) {
		ok(t);
		return;
	}
	if (rank == 1) {
		v = 4242;
		CHECK_RC(t, ps_comm_send(comm, &v, sizeof(v), 0, 70));
		ok(t);
		return;
	}
	CHECK_RC(t, ps_comm_irecv(comm, &v, sizeof(v), 1, 70, &req));
	while (!done && spins++ < 100000000)
		CHECK_RC(t, ps_comm_test(&req, &done, NULL));
	if (!done || v != 4242 || req)
		fail(t, "done %d value %d", done, v);
	ok(t);
}

/*
 * A receiver left idle long enough to sleep must be woken by each
 * message (on shm through its rings' bells, which check_shmring tests
 * from the rings' own counters): ranks 0 and 1 take turns to pause, then
 * send.
 */
static void test_idle_wake(void)
{
	const char *t = "test idle receiver woken";
	const int n = quick ? 6 : 20;

	if (size < 2 || rank > 1) {
		ok(t);
		return;
	}
	for (int i = 0; i < n; i++) {
		int from = i % 2 ? 0 : 1, v = 0;

		if (rank == from) {
			struct timespec ts = {0, 5000000};

			nanosleep(&ts, NULL);
			v = 1000 + i;
			CHECK_RC(t, ps_comm_send(comm, &v, sizeof(v), 1 - from,
						 71));
			continue;
		}
		CHECK_RC(t, ps_comm_recv(comm, &v, sizeof(v), from, 71, NULL));
		if (v != 1000 + i)
			fail(t, "message %d carried %d", i, v);
	}
	ok(t);
}

static double clock_secs(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * A receiver that waits long for a message sleeps instead of spinning:
 * the waiting thread uses under a third of the waiting time in CPU (a
 * wait fd that stays readable, as net's did, spins at close to all of
 * it). Each wait comes after traffic in both directions, so completions
 * have signalled the wait objects before it. The provider's own threads
 * are not counted: sockets' progress thread polls for a while after
 * traffic, whatever pscomm does.
 */
static void test_idle_cpu(void)
{
	const char *t = "test idle receiver uses little CPU";
	const struct timespec gap = {0, quick ? 300000000 : 600000000};
	double wall = 0, cpu = 0;

	if (size < 2 || rank > 1) {
		ok(t);
		return;
	}
	for (int i = 0; i < 2; i++) {
		int from = i % 2 ? 0 : 1, v = 0;
		ps_comm_request_t rq;
		double w0, c0;

		CHECK_RC(t, ps_comm_irecv(comm, &v, sizeof(v), 1 - rank, 72,
					  &rq));
		CHECK_RC(t, ps_comm_send(comm, &i, sizeof(i), 1 - rank, 72));
		CHECK_RC(t, ps_comm_wait(&rq, NULL));
		if (rank == from) {
			nanosleep(&gap, NULL);
			v = 2000 + i;
			CHECK_RC(t, ps_comm_send(comm, &v, sizeof(v), 1 - from,
						 73));
			continue;
		}
		w0 = clock_secs(CLOCK_MONOTONIC);
		c0 = clock_secs(CLOCK_THREAD_CPUTIME_ID);
		CHECK_RC(t, ps_comm_recv(comm, &v, sizeof(v), from, 73, NULL));
		cpu += clock_secs(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall += clock_secs(CLOCK_MONOTONIC) - w0;
		if (v != 2000 + i)
			fail(t, "message %d carried %d", i, v);
	}
	if (cpu > wall / 3)
		fail(t, "rank %d used %.0f ms of CPU while waiting %.0f ms",
		     rank, cpu * 1e3, wall * 1e3);
	printf("# rank %d: %.1f ms of CPU in %.0f ms of waiting\n", rank,
	       cpu * 1e3, wall * 1e3);
	ok(t);
}

int main(int argc, char **argv)
{
	const char *prov;
	int rc;

	for (int i = 1; i < argc; i++)
		quick |= strcmp(argv[i], "--quick") == 0;
	/* Whether the provider exists was decided before (run_ranks). */
	rc = ps_comm_init(&comm, NULL);
	if (rc) {
		fprintf(stderr, "p2p_suite: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	rc = ps_comm_init(&ctl, NULL);
	if (rc) {
		fprintf(stderr, "p2p_suite: second ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(comm, &rank);
	ps_comm_size(comm, &size);
	ps_comm_provider_name(comm, &prov);
	if (rank == 0)
		printf("# p2p suite on %s, %d ranks%s\n", prov, size,
		       quick ? " (quick)" : "");
	test_first_contact();
	test_bad_args();
	test_sizes();
	test_large();
	test_shared_window();
	test_late_receives();
	test_wildcards();
	test_order();
	test_mixed();
	test_received_last();
	test_truncate();
	test_self();
	test_poll();
	test_idle_wake();
	test_idle_cpu();
	test_many();
	test_threads();
	test_two_comms();
	rc = ps_comm_finalize(comm);
	if (!rc)
		rc = ps_comm_finalize(ctl);
	if (rc)
		fail("finalize", "%s", ps_comm_strerror(rc));
	return failures ? 1 : 0;
}
