/*
 * What bench/alltoall.c and its MPI twin bench/mpi_alltoall.c share, so
 * that both exchange and check exactly the same bytes: the options and
 * the payload pattern. Header only.
 */
#ifndef ALLTOALL_COMMON_H
#define ALLTOALL_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte j of what rank s sends rank d in iteration it. */
static inline uint8_t a2a_pattern(int s, int d, int it, size_t j)
{
	return (uint8_t)((unsigned)s * 31u + (unsigned)d * 7u +
			 (unsigned)it * 13u + (unsigned)j);
}

/*
 * [-s LEN] [-i ITERS] into *len (default 4096, at most 16 MiB) and
 * *iters (default 1); prints the usage of prog and returns -1 when
 * they are wrong.
 */
static inline int a2a_options(int argc, char **argv, const char *prog,
			      long *len, long *iters)
{
	*len = 4096;
	*iters = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-s") == 0)
			*len = atol(argv[i + 1]);
		else if (strcmp(argv[i], "-i") == 0)
			*iters = atol(argv[i + 1]);
		else
			*len = -1;
	}
	if (*len < 1 || *len > 1 << 24 || *iters < 1 || argc % 2 == 0) {
		fprintf(stderr, "usage: %s [-s LEN] [-i ITERS]\n", prog);
		return -1;
	}
	return 0;
}

#endif
