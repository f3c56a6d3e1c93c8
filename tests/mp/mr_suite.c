/*
 * The multi-process memory registration suite, run under ps_comm_run
 * (tests/mp/mr.sh) with and without PS_COMM_MR_MODE=local: user
 * registrations (ps_comm_mem_register/deregister) from every rank, sends
 * and receives from inside registered regions, nested regions, a
 * deregistration while an operation on the region is in flight, reuse of
 * the memory afterwards (through the cache), a freshly allocated buffer
 * after a free, buffers unmapped and mapped again at the same address
 * (a stale registration fails this on real RDMA devices: tests/rdma),
 * many regions, and bad arguments. Every received byte is
 * checked against the pattern its sender wrote. Exits 0 on success, 1 on
 * any failure (a provider that fails to open included: whether it exists
 * is the caller's question).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ps_comm.h"
#include "suite.h"

static ps_comm_t comm;

static void ok(const char *test)
{
	char c = 0;

	/* A barrier on tag 30000 that the tests never use. */
	if (rank) {
		ps_comm_send(comm, &c, 0, 0, 30000);
		ps_comm_recv(comm, &c, 0, 0, 30000, NULL);
	} else {
		for (int i = 1; i < size; i++)
			ps_comm_recv(comm, &c, 0, PS_COMM_ANY_SOURCE, 30000,
				     NULL);
		for (int i = 1; i < size; i++)
			ps_comm_send(comm, &c, 0, i, 30000);
		printf("ok - %s (%d ranks)\n", test, size);
		fflush(stdout);
	}
}

/*
 * Ring exchange of n bytes: send from s, receive into r, check r. The
 * sent bytes' salt is n + salt.
 */
static void ring(const char *t, unsigned char *s, unsigned char *r, size_t n,
		 size_t salt)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	ps_comm_request_t req;
	ps_comm_status_t st;
	long bad;

	fill(s, n, rank, n + salt);
	memset(r, 0xEE, n);
	CHECK_RC(t, ps_comm_irecv(comm, r, n, left, 5, &req));
	CHECK_RC(t, ps_comm_send(comm, s, n, right, 5));
	CHECK_RC(t, ps_comm_wait(&req, &st));
	if (st.len != n || st.source != left)
		fail(t, "size %zu: status {%d,%d,%zu}", n, st.source, st.tag,
		     st.len);
	if ((bad = verify(r, n, left, n + salt)) >= 0)
		fail(t, "size %zu: byte %ld wrong", n, bad);
}

static const size_t sizes[] = {0, 1, 31, 4096, 8193, 65536, 1000003};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define REGION (4u << 20)

/* Register, exchange from inside the region at odd offsets, deregister. */
static void test_inside(void)
{
	const char *t = "send/recv inside registered regions";
	unsigned char *mem = malloc(REGION);
	ps_comm_mem_t h;

	if (!mem) {
		fail(t, "out of memory");
		return;
	}
	CHECK_RC(t, ps_comm_mem_register(comm, mem, REGION, &h));
	for (size_t k = 0; k < NSIZES; k++)
		ring(t, mem + 7, mem + REGION / 2 + 3, sizes[k], 1);
	CHECK_RC(t, ps_comm_mem_deregister(comm, h));
	/* The same memory again, now through the cache. */
	for (size_t k = 0; k < NSIZES; k++)
		ring(t, mem + 1, mem + REGION / 2 + 1, sizes[k], 2);
	free(mem);
	ok(t);
}

/* Nested regions: dropping the outer one leaves the inner one working. */
static void test_nested(void)
{
	const char *t = "nested regions";
	unsigned char *mem = malloc(REGION);
	ps_comm_mem_t outer, inner;

	if (!mem) {
		fail(t, "out of memory");
		return;
	}
	CHECK_RC(t, ps_comm_mem_register(comm, mem, REGION, &outer));
	CHECK_RC(t, ps_comm_mem_register(comm, mem + 4096, 2u << 20, &inner));
	ring(t, mem + 4096, mem + 4096 + (1u << 20), 1000003, 3);
	CHECK_RC(t, ps_comm_mem_deregister(comm, outer));
	ring(t, mem + 4096, mem + 4096 + (1u << 20), 1000003, 4);
	ring(t, mem + 4096, mem + 4096 + (1u << 20), 100, 5);
	CHECK_RC(t, ps_comm_mem_deregister(comm, inner));
	free(mem);
	ok(t);
}

/* Deregister while a large send and receive on the region are in flight. */
static void test_inflight(void)
{
	const char *t = "deregister with operations in flight";
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	const size_t n = 3u << 20;
	unsigned char *s = malloc(n), *r = malloc(n);
	ps_comm_request_t rq[2];
	ps_comm_mem_t hs, hr;
	long bad;

	if (!s || !r) {
		fail(t, "out of memory");
		free(s);
		free(r);
		return;
	}
	fill(s, n, rank, 77);
	memset(r, 0, n);
	CHECK_RC(t, ps_comm_mem_register(comm, s, n, &hs));
	CHECK_RC(t, ps_comm_mem_register(comm, r, n, &hr));
	CHECK_RC(t, ps_comm_irecv(comm, r, n, left, 6, &rq[0]));
	CHECK_RC(t, ps_comm_isend(comm, s, n, right, 6, &rq[1]));
	CHECK_RC(t, ps_comm_mem_deregister(comm, hs));
	CHECK_RC(t, ps_comm_mem_deregister(comm, hr));
	CHECK_RC(t, ps_comm_waitall(2, rq, NULL));
	if ((bad = verify(r, n, left, 77)) >= 0)
		fail(t, "byte %ld wrong", bad);
	free(s);
	free(r);
	ok(t);
}

/*
 * Free and allocate again, possibly at the same address, registering
 * each time: no stale registration may serve the new memory.
 */
static void test_realloc(void)
{
	const char *t = "register, free, allocate again";

	for (int i = 0; i < 8; i++) {
		size_t n = (size_t)(1u << 20) + (size_t)i * 4099;
		unsigned char *s = malloc(n), *r = malloc(n);
		ps_comm_mem_t hs, hr;

		if (!s || !r) {
			fail(t, "out of memory");
			free(s);
			free(r);
			return;
		}
		CHECK_RC(t, ps_comm_mem_register(comm, s, n, &hs));
		CHECK_RC(t, ps_comm_mem_register(comm, r, n, &hr));
		ring(t, s, r, n, 10 + (size_t)i);
		CHECK_RC(t, ps_comm_mem_deregister(comm, hr));
		CHECK_RC(t, ps_comm_mem_deregister(comm, hs));
		/* Unregistered: the cache's turn, then free. */
		ring(t, s, r, n, 20 + (size_t)i);
		free(s);
		free(r);
	}
	ok(t);
}

/*
 * Memory given back to the kernel and mapped again at the same address,
 * as glibc does under malloc and free (large blocks, a trimmed heap):
 * the new pages are what must be sent, and what a receive must fill. A
 * registration cached for the old pages still pins them, so on a real
 * RDMA device a stale one sends the old bytes or receives into pages the
 * program no longer sees.
 */
static void test_remap(void)
{
	const char *t = "buffers unmapped and mapped again at the same address";
	const size_t n = (size_t)1 << 20;
	const int prot = PROT_READ | PROT_WRITE;
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	unsigned char *s = mmap(NULL, n, prot, flags, -1, 0);
	unsigned char *r = mmap(NULL, n, prot, flags, -1, 0);

	if (s == MAP_FAILED || r == MAP_FAILED) {
		fail(t, "mmap failed");
		return;
	}
	for (int i = 0; i < 4; i++) {
		ring(t, s, r, n, 40 + (size_t)i);
		if (munmap(s, n) || munmap(r, n) ||
		    mmap(s, n, prot, flags | MAP_FIXED_NOREPLACE, -1, 0) != s ||
		    mmap(r, n, prot, flags | MAP_FIXED_NOREPLACE, -1, 0) != r) {
			/* Another thread mapped the range in between. */
			fail(t, "cannot map the same addresses again");
			return;
		}
	}
	ring(t, s, r, n, 50);
	munmap(s, n);
	munmap(r, n);
	ok(t);
}

/* Many small regions registered at once, used, then deregistered. */
static void test_many(void)
{
	const char *t = "many regions";
	enum { N = 64, LEN = 512 };
	unsigned char *mem = malloc(N * LEN * 2);
	ps_comm_mem_t h[N];

	if (!mem) {
		fail(t, "out of memory");
		return;
	}
	for (int i = 0; i < N; i++)
		CHECK_RC(t, ps_comm_mem_register(comm, mem + i * LEN * 2, LEN,
						 &h[i]));
	for (int i = 0; i < N; i += 9)
		ring(t, mem + i * LEN * 2, mem + ((i + 1) % N) * LEN * 2, LEN,
		     30 + (size_t)i);
	/* Out of order, to walk the list. */
	for (int i = 1; i < N; i += 2)
		CHECK_RC(t, ps_comm_mem_deregister(comm, h[i]));
	for (int i = 0; i < N; i += 2)
		CHECK_RC(t, ps_comm_mem_deregister(comm, h[i]));
	free(mem);
	ok(t);
}

/* Whether comm's last error contains word. */
static int last_error_names(ps_comm_t c, const char *word)
{
	char msg[1024];

	return ps_comm_last_error(c, msg, sizeof(msg)) == 0 &&
	       strstr(msg, word) != NULL;
}

static void test_bad_args(void)
{
	const char *t = "bad arguments";
	char buf[64];
	ps_comm_mem_t h = NULL, good;

	if (ps_comm_mem_register(NULL, buf, sizeof(buf), &h) !=
		    PS_COMM_ERR_ARG ||
	    ps_comm_mem_register(comm, NULL, sizeof(buf), &h) !=
		    PS_COMM_ERR_ARG ||
	    ps_comm_mem_register(comm, buf, 0, &h) != PS_COMM_ERR_ARG ||
	    ps_comm_mem_register(comm, buf, sizeof(buf), NULL) !=
		    PS_COMM_ERR_ARG ||
	    ps_comm_mem_register(comm, buf, SIZE_MAX, &h) != PS_COMM_ERR_ARG)
		fail(t, "register accepted a bad argument");
	/* Lengths past the mapped memory: nothing is recorded or pinned. */
	if (ps_comm_mem_register(comm, buf, SIZE_MAX / 2, &h) !=
		    PS_COMM_ERR_ARG ||
	    ps_comm_mem_register(comm, buf, (size_t)1 << 46, &h) !=
		    PS_COMM_ERR_ARG)
		fail(t, "register accepted a length past the mapped memory");
	else if (!last_error_names(comm, "len "))
		fail(t, "the refusal does not name the length");
	if (ps_comm_mem_deregister(comm, NULL) != PS_COMM_ERR_ARG ||
	    ps_comm_mem_deregister(NULL, h) != PS_COMM_ERR_ARG)
		fail(t, "deregister accepted a bad argument");
	CHECK_RC(t, ps_comm_mem_register(comm, buf, sizeof(buf), &good));
	CHECK_RC(t, ps_comm_mem_deregister(comm, good));
	/* Twice: the handle is gone (its address is only compared). */
	if (ps_comm_mem_deregister(comm, good) != PS_COMM_ERR_ARG)
		fail(t, "a second deregister was accepted");
	ok(t);
}

int main(void)
{
	const char *prov;
	int rc = ps_comm_init(&comm, NULL);

	/* Whether the provider exists was decided before (run_ranks). */
	if (rc) {
		fprintf(stderr, "mr_suite: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(comm, &rank);
	ps_comm_size(comm, &size);
	ps_comm_provider_name(comm, &prov);
	if (rank == 0)
		printf("# memory registration suite on %s, %d ranks\n", prov,
		       size);
	test_bad_args();
	test_inside();
	test_nested();
	test_inflight();
	test_realloc();
	test_remap();
	test_many();
	rc = ps_comm_finalize(comm);
	if (rc)
		fail("finalize", "%s", ps_comm_strerror(rc));
	return failures ? 1 : 0;
}
