/*
 * alltoall: every rank sends LEN bytes to every other rank and receives
 * LEN bytes from each (nonblocking sends and receives, then one wait),
 * ITERS times, and checks every byte received. bench/scale.sh runs it
 * (-j alltoall) to measure what a job whose ranks all talk to each other
 * holds in /dev/shm; bench/mpi_alltoall.c is its MPI twin.
 *
 * Rank 0 prints one CSV row, as examples/allreduce --csv does:
 *   LEN,ITERS,TIME_US,ERRORS
 * where TIME_US is the slowest rank's time per exchange and ERRORS the
 * wrong bytes of all ranks. Exit status 0 when ERRORS is 0.
 * Usage: alltoall [-s LEN] [-i ITERS] (defaults 4096 and 1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alltoall_common.h"
#include "ps_comm.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* One exchange: post every receive and send, wait, count wrong bytes. */
static int exchange(ps_comm_t c, int rank, int size, size_t len, int it,
		    uint8_t *sb, uint8_t *rb, ps_comm_request_t *req,
		    int64_t *wrong)
{
	size_t n = 0;
	int rc = 0;

	for (int p = 0; p < size && !rc; p++)
		if (p != rank)
			rc = ps_comm_irecv(c, rb + (size_t)p * len, len, p, it,
					   &req[n++]);
	for (int p = 0; p < size && !rc; p++) {
		if (p == rank)
			continue;
		for (size_t j = 0; j < len; j++)
			sb[(size_t)p * len + j] = a2a_pattern(rank, p, it, j);
		rc = ps_comm_isend(c, sb + (size_t)p * len, len, p, it,
				   &req[n++]);
	}
	if (rc)
		return rc;
	rc = ps_comm_waitall(n, req, NULL);
	for (int p = 0; p < size && !rc; p++)
		for (size_t j = 0; p != rank && j < len; j++)
			*wrong += rb[(size_t)p * len + j] !=
				  a2a_pattern(p, rank, it, j);
	return rc;
}

int main(int argc, char **argv)
{
	long len, iters;
	int rank, size, rc;
	int64_t wrong = 0;
	uint8_t *sb, *rb;
	ps_comm_request_t *req;
	double t0, t;
	ps_comm_t c;

	if (a2a_options(argc, argv, "alltoall", &len, &iters) != 0)
		return 2;
	if ((rc = ps_comm_init(&c, NULL)) != 0) {
		fprintf(stderr, "alltoall: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(c, &rank);
	ps_comm_size(c, &size);
	sb = malloc((size_t)size * (size_t)len);
	rb = malloc((size_t)size * (size_t)len);
	req = calloc(2 * (size_t)size, sizeof(*req));
	if (!sb || !rb || !req) {
		fprintf(stderr, "alltoall: out of memory\n");
		return 1;
	}
	t0 = now_us();
	for (long it = 0; it < iters && !rc; it++)
		rc = exchange(c, rank, size, (size_t)len, (int)it, sb, rb, req,
			      &wrong);
	t = (now_us() - t0) / (double)iters;
	if (!rc)
		rc = ps_comm_allreduce(c, PS_COMM_IN_PLACE, &t, 1,
				       PS_COMM_FLOAT64, PS_COMM_MAX);
	if (!rc)
		rc = ps_comm_allreduce(c, PS_COMM_IN_PLACE, &wrong, 1,
				       PS_COMM_INT64, PS_COMM_SUM);
	if (rc) {
		fprintf(stderr, "alltoall: rank %d: %s\n", rank,
			ps_comm_strerror(rc));
		return 1;
	}
	if (rank == 0)
		printf("%ld,%ld,%.3f,%lld\n", len, iters, t, (long long)wrong);
	free(sb);
	free(rb);
	free(req);
	rc = ps_comm_finalize(c);
	return rc || wrong ? 1 : 0;
}
