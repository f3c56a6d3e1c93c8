/*
 * pingpong: latency and bandwidth between rank 0 and rank 1 over pscomm.
 * Sizes go from MIN to MAX, doubling. Latency is half the average round
 * trip; bandwidth comes from a one-way stream of windows of 64 messages,
 * each window acknowledged by one byte, in 10^6 bytes per second. Ranks
 * other than 0 and 1 wait at a barrier. Every payload is checked.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ps_comm.h"
#include "args.h"
#include "example.h"

#define WINDOW 64
#define TAG_PING 1
#define TAG_BW 2
#define TAG_ACK 3
#define TAG_BARRIER 4

struct opts {
	size_t min, max;
	int iters, warmup;
	int csv;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pingpong [-m MIN] [-M MAX] [-i ITERS] [-w WARMUP] "
		"[--csv]\n"
		"  sizes in bytes (K/M/G suffixes), default 1 to 4M\n");
}

/* A usage error ends the program here, before pscomm is started. */
static void parse_opts(int argc, char **argv, struct opts *o)
{
	const char *min_arg = NULL, *max_arg = NULL, *v;
	struct ex_args a;

	*o = (struct opts){1, 4u << 20, 1000, 100, 0};
	ex_args_init(&a, "pingpong", usage, argc, argv);
	while (ex_args_next(&a)) {
		if (ex_flag(&a, "--csv"))
			o->csv = 1;
		else if ((v = ex_value(&a, "-m")))
			o->min = ex_size(&a, "-m", v), min_arg = v;
		else if ((v = ex_value(&a, "-M")))
			o->max = ex_size(&a, "-M", v), max_arg = v;
		else if ((v = ex_value(&a, "-i")))
			o->iters = ex_int(&a, "-i", v, 1, INT_MAX,
					  "iterations");
		else if ((v = ex_value(&a, "-w")))
			o->warmup = ex_int(&a, "-w", v, 0, INT_MAX,
					   "warm-up iterations");
		else
			ex_unknown(&a);
	}
	ex_size_order(&a, o->min, min_arg, o->max, max_arg);
}

static void fill(unsigned char *b, size_t n, size_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 131 + salt);
}

static int check(const unsigned char *b, size_t n, size_t salt)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(i * 131 + salt))
			return -1;
	return 0;
}

/* Fewer iterations for large sizes, so 4 MiB does not take minutes. */
static int scaled(int n, size_t size, int floor)
{
	if (size <= 65536)
		return n;
	n = (int)((double)n * 65536.0 / (double)size);
	return n < floor ? floor : n;
}

struct ctx {
	ps_comm_t comm;
	int rank;
	unsigned char *buf;
	const char *what;
};

/* Half round trip in microseconds over n iterations. */
static int latency(struct ctx *c, size_t size, int n, double *us)
{
	int peer = 1 - c->rank;
	double t0 = now_us();

	for (int i = 0; i < n; i++) {
		if (c->rank == 0) {
			TRY(ps_comm_send(c->comm, c->buf, size, peer, TAG_PING),
			    c, "send");
			TRY(ps_comm_recv(c->comm, c->buf, size, peer, TAG_PING,
					 NULL), c, "recv");
		} else {
			TRY(ps_comm_recv(c->comm, c->buf, size, peer, TAG_PING,
					 NULL), c, "recv");
			TRY(ps_comm_send(c->comm, c->buf, size, peer, TAG_PING),
			    c, "send");
		}
	}
	*us = (now_us() - t0) / n / 2;
	return 0;
}

/* One window: rank 0 streams WINDOW messages, rank 1 acknowledges. */
static int window(struct ctx *c, size_t size)
{
	ps_comm_request_t req[WINDOW];
	unsigned char ack = 0;

	for (int i = 0; i < WINDOW; i++) {
		if (c->rank == 0)
			TRY(ps_comm_isend(c->comm, c->buf, size, 1, TAG_BW,
					  &req[i]), c, "isend");
		else
			TRY(ps_comm_irecv(c->comm, c->buf, size, 0, TAG_BW,
					  &req[i]), c, "irecv");
	}
	TRY(ps_comm_waitall(WINDOW, req, NULL), c, "waitall");
	if (c->rank == 0)
		TRY(ps_comm_recv(c->comm, &ack, 1, 1, TAG_ACK, NULL), c,
		    "recv ack");
	else
		TRY(ps_comm_send(c->comm, &ack, 1, 0, TAG_ACK), c, "send ack");
	return 0;
}

static int bandwidth(struct ctx *c, size_t size, int reps, double *mbps)
{
	double t0;

	TRY(window(c, size), c, "warmup window");
	t0 = now_us();
	for (int r = 0; r < reps; r++) {
		int rc = window(c, size);

		if (rc)
			return rc;
	}
	*mbps = (double)size * WINDOW * reps / (now_us() - t0);
	return 0;
}

static int run_size(struct ctx *c, const struct opts *o, size_t size,
		    double *lat, double *bw)
{
	int iters = scaled(o->iters, size, 10);
	int warm = scaled(o->warmup, size, 2);
	int reps = iters / WINDOW > 0 ? iters / WINDOW : 1;
	int rc;

	fill(c->buf, size, size);
	rc = latency(c, size, warm, lat);
	if (!rc)
		rc = latency(c, size, iters, lat);
	if (!rc && check(c->buf, size, size) != 0) {
		fprintf(stderr, "pingpong: rank %d: payload of %zu bytes "
			"corrupted\n", c->rank, size);
		exit(1);
	}
	if (!rc)
		rc = bandwidth(c, size, reps, bw);
	if (!rc && check(c->buf, size, size) != 0) {
		fprintf(stderr, "pingpong: rank %d: streamed payload of %zu "
			"bytes corrupted\n", c->rank, size);
		exit(1);
	}
	return rc;
}

/* Everyone meets rank 0 and is released by it. */
static int barrier(struct ctx *c, int size)
{
	char b = 0;

	if (c->rank != 0) {
		TRY(ps_comm_send(c->comm, &b, 0, 0, TAG_BARRIER), c, "barrier");
		TRY(ps_comm_recv(c->comm, &b, 0, 0, TAG_BARRIER, NULL), c,
		    "barrier");
		return 0;
	}
	for (int r = 1; r < size; r++)
		TRY(ps_comm_recv(c->comm, &b, 0, PS_COMM_ANY_SOURCE,
				 TAG_BARRIER, NULL), c, "barrier");
	for (int r = 1; r < size; r++)
		TRY(ps_comm_send(c->comm, &b, 0, r, TAG_BARRIER), c, "barrier");
	return 0;
}

static int sweep(struct ctx *c, const struct opts *o)
{
	if (c->rank == 0 && o->csv)
		printf("size_bytes,latency_us,bandwidth_MBps\n");
	else if (c->rank == 0)
		printf("%12s %14s %16s\n", "size(B)", "latency(us)",
		       "bandwidth(MB/s)");
	for (size_t s = o->min; s <= o->max; s = s ? s * 2 : 1) {
		double lat = 0, bw = 0;
		int rc = run_size(c, o, s, &lat, &bw);

		if (rc)
			return rc;
		if (c->rank == 0)
			printf(o->csv ? "%zu,%.3f,%.2f\n"
				      : "%12zu %14.3f %16.2f\n", s, lat, bw);
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ctx c = {0};
	int size, rc;

	parse_opts(argc, argv, &o);
	rc = ps_comm_init(&c.comm, NULL);
	if (rc) {
		fprintf(stderr, "pingpong: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(c.comm, &c.rank);
	ps_comm_size(c.comm, &size);
	if (size < 2) {
		fprintf(stderr, "pingpong: needs at least 2 ranks (got %d)\n",
			size);
		ps_comm_finalize(c.comm);
		return 1;
	}
	c.buf = malloc(o.max ? o.max : 1);
	if (!c.buf) {
		fprintf(stderr, "pingpong: out of memory\n");
		return 1;
	}
	rc = c.rank < 2 ? sweep(&c, &o) : 0;
	if (!rc)
		rc = barrier(&c, size);
	if (rc) {
		char detail[512];

		ps_comm_last_error(c.comm, detail, sizeof(detail));
		fprintf(stderr, "pingpong: rank %d: %s failed: %s%s%s\n",
			c.rank, c.what, ps_comm_strerror(rc),
			detail[0] ? ": " : "", detail);
		/*
		 * A failure of this rank's own (not a dead peer's, which
		 * every rank learns): the others may wait for it, so tell
		 * them rather than leave them waiting.
		 */
		if (rc != PS_COMM_ERR_PEER && rc != PS_COMM_ERR_ABORTED)
			ps_comm_abort(c.comm, rc);
	}
	free(c.buf);
	if (ps_comm_finalize(c.comm) && !rc)
		rc = 1;
	return rc ? 1 : 0;
}
