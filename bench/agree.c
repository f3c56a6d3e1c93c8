/*
 * agree: the failure-free cost of ps_comm_agree against an 8-byte
 * ps_comm_allreduce on the same communicator, measured side by side. Each
 * round times ITERS calls of one, then ITERS of the other (the order
 * alternates between rounds); rank 0 prints each round's time per call
 * and, last, the medians with their ranges and the median ratio:
 *
 *   agree: RANKS ranks, PROVIDER: allreduce 8 B MED us (MIN-MAX),
 *   agree MED us (MIN-MAX), ratio MED (MIN-MAX)
 *
 * Every result is checked: the allreduce's sum, the agreement's AND.
 * Usage: agree [-i ITERS] [-r ROUNDS] (defaults 200 and 7).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ps_comm.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, min and max of v[0..n), sorted in place. */
static void stats(double *v, int n, double *med, double *lo, double *hi)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	*lo = v[0];
	*hi = v[n - 1];
}

/* The slowest rank's time per call for iters calls of one kind. */
static int timed(ps_comm_t c, int kind, int iters, int rank, int size,
		 double *us)
{
	double t0, t;
	int rc = ps_comm_barrier(c);

	t0 = now_us();
	for (int i = 0; i < iters && !rc; i++) {
		if (kind == 0) {
			int64_t v = rank + i;

			rc = ps_comm_allreduce(c, PS_COMM_IN_PLACE, &v, 1,
					       PS_COMM_INT64, PS_COMM_SUM);
			if (!rc && v != (int64_t)size * (size - 1) / 2 +
						 (int64_t)size * i) {
				fprintf(stderr, "agree: wrong sum\n");
				return 1;
			}
		} else {
			int flag = ~(1 << (rank % 30));
			int want = ~((1 << (size < 30 ? size : 30)) - 1);

			rc = ps_comm_agree(c, &flag);
			if (!rc && flag != want) {
				fprintf(stderr, "agree: wrong flag 0x%x\n",
					(unsigned)flag);
				return 1;
			}
		}
	}
	t = (now_us() - t0) / iters;
	if (!rc)
		rc = ps_comm_allreduce(c, PS_COMM_IN_PLACE, &t, 1,
				       PS_COMM_FLOAT64, PS_COMM_MAX);
	*us = t;
	return rc;
}

int main(int argc, char **argv)
{
	int iters = 200, rounds = 7, rank, size, rc;
	double *ar, *ag, *ratio, m[3], a[3], q[3];
	const char *prov;
	ps_comm_t c;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-i") == 0)
			iters = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-r") == 0)
			rounds = atoi(argv[i + 1]);
	}
	if (iters < 1 || rounds < 1 || argc % 2 == 0) {
		fprintf(stderr, "usage: agree [-i ITERS] [-r ROUNDS]\n");
		return 2;
	}
	if ((rc = ps_comm_init(&c, NULL)) != 0) {
		fprintf(stderr, "agree: ps_comm_init: %s\n",
			ps_comm_strerror(rc));
		return 1;
	}
	ps_comm_rank(c, &rank);
	ps_comm_size(c, &size);
	ps_comm_provider_name(c, &prov);
	ar = calloc((size_t)rounds, sizeof(*ar));
	ag = calloc((size_t)rounds, sizeof(*ag));
	ratio = calloc((size_t)rounds, sizeof(*ratio));
	if (!ar || !ag || !ratio)
		return 1;
	/* Warm-up: connections, the first agreement's slot. */
	rc = timed(c, 0, 10, rank, size, &m[0]) ||
	     timed(c, 1, 10, rank, size, &m[0]);
	for (int r = 0; r < rounds && !rc; r++) {
		int first = r % 2;

		rc = timed(c, first, iters, rank, size, first ? &ag[r] : &ar[r])
		     || timed(c, !first, iters, rank, size,
			      first ? &ar[r] : &ag[r]);
		ratio[r] = ag[r] / ar[r];
		if (!rc && rank == 0)
			printf("round %d: allreduce 8 B %.2f us, agree %.2f us\n",
			       r, ar[r], ag[r]);
	}
	if (rc) {
		fprintf(stderr, "agree: rank %d: %s\n", rank,
			rc > 0 ? "wrong result" : ps_comm_strerror(rc));
		return 1;
	}
	stats(ar, rounds, &m[0], &m[1], &m[2]);
	stats(ag, rounds, &a[0], &a[1], &a[2]);
	stats(ratio, rounds, &q[0], &q[1], &q[2]);
	if (rank == 0)
		printf("agree: %d ranks, %s: allreduce 8 B %.2f us (%.2f-%.2f), "
		       "agree %.2f us (%.2f-%.2f), ratio %.2f (%.2f-%.2f)\n",
		       size, prov, m[0], m[1], m[2], a[0], a[1], a[2], q[0],
		       q[1], q[2]);
	free(ar);
	free(ag);
	free(ratio);
	return ps_comm_finalize(c) ? 1 : 0;
}
