/*
 * mpi_alltoall: bench/alltoall.c over MPI, for bench/scale.sh -j alltoall:
 * every rank sends LEN bytes to every other rank and receives LEN bytes
 * from each (MPI_Irecv, MPI_Isend, MPI_Waitall), ITERS times, checking
 * every byte. Rank 0 prints LEN,ITERS,TIME_US,ERRORS.
 * Usage: mpi_alltoall [-s LEN] [-i ITERS] (defaults 4096 and 1).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "alltoall_common.h"

int main(int argc, char **argv)
{
	long len, iters, wrong = 0;
	int rank, size, n;
	uint8_t *sb, *rb;
	MPI_Request *req;
	double t0, t;

	if (a2a_options(argc, argv, "mpi_alltoall", &len, &iters) != 0)
		return 2;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	sb = malloc((size_t)size * (size_t)len);
	rb = malloc((size_t)size * (size_t)len);
	req = calloc(2 * (size_t)size, sizeof(*req));
	if (!sb || !rb || !req)
		MPI_Abort(MPI_COMM_WORLD, 1);
	t0 = MPI_Wtime();
	for (long it = 0; it < iters; it++) {
		n = 0;
		for (int p = 0; p < size; p++)
			if (p != rank)
				MPI_Irecv(rb + (size_t)p * len, (int)len,
					  MPI_BYTE, p, (int)it, MPI_COMM_WORLD,
					  &req[n++]);
		for (int p = 0; p < size; p++) {
			if (p == rank)
				continue;
			for (long j = 0; j < len; j++)
				sb[(size_t)p * len + j] =
					a2a_pattern(rank, p, (int)it, (size_t)j);
			MPI_Isend(sb + (size_t)p * len, (int)len, MPI_BYTE, p,
				  (int)it, MPI_COMM_WORLD, &req[n++]);
		}
		MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
		for (int p = 0; p < size; p++)
			for (long j = 0; p != rank && j < len; j++)
				wrong += rb[(size_t)p * len + j] !=
					 a2a_pattern(p, rank, (int)it, (size_t)j);
	}
	t = (MPI_Wtime() - t0) * 1e6 / (double)iters;
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("%ld,%ld,%.3f,%ld\n", len, iters, t, wrong);
	free(sb);
	free(rb);
	free(req);
	MPI_Finalize();
	return wrong ? 1 : 0;
}
