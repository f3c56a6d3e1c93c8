/*
 * provider_probe: one rank of a job that says which provider it ended up
 * on, for tests/mp/fallback.sh. It initialises pscomm (twice with
 * --twice: a second world in the same process, both alive at once, as
 * the p2p suite makes them),
 * checks with an allreduce of the ranks that the communicator carries
 * data, and prints on stdout, for each communicator:
 *
 *   rank R provider P
 *   rank R waits by W
 *
 * W being how its endpoint waits for completions (PS_COMM_WAIT, read
 * from the endpoint itself): "poll", "fd", "sread" or "wait set".
 * or, when ps_comm_init fails, "rank R init error CODE" (CODE the
 * negative PS_COMM_ERR_* value) with R from PS_COMM_RANK.
 *
 * Exit codes: 0 every communicator worked; 1 the allreduce was wrong or
 * failed; 2 usage; 3 ps_comm_init failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/ep_int.h"
#include "ps_comm.h"

/* How c's endpoint waits, as it was opened. */
static const char *wait_of(ps_comm_t c)
{
	const struct psc_fab *f = &((struct ps_comm *)c)->ch.ep->fab;

	if (f->wait_set)
		return "wait set";
	return f->wait_mode == PSC_WAIT_FD	  ? "fd"
	       : f->wait_mode == PSC_WAIT_SREAD ? "sread"
					       : "poll";
}

/* Initialise a world into *c and print its provider: 0, or 3. */
static int open_world(ps_comm_t *c)
{
	const char *env = getenv("PS_COMM_RANK");
	const char *prov = NULL;
	int rank, rc = ps_comm_init(c, NULL);

	if (rc) {
		printf("rank %s init error %d\n", env ? env : "?", rc);
		return 3;
	}
	ps_comm_rank(*c, &rank);
	ps_comm_provider_name(*c, &prov);
	printf("rank %d provider %s\nrank %d waits by %s\n", rank, prov, rank,
	       wait_of(*c));
	fflush(stdout);
	return 0;
}

/* An allreduce of the ranks on c, checked; then finalize: 0 or 1. */
static int check_world(ps_comm_t c)
{
	int64_t mine, sum = 0;
	int rank, size, rc;

	ps_comm_rank(c, &rank);
	ps_comm_size(c, &size);
	mine = rank;
	rc = ps_comm_allreduce(c, &mine, &sum, 1, PS_COMM_INT64, PS_COMM_SUM);
	if (!rc && sum != (int64_t)size * (size - 1) / 2)
		rc = PS_COMM_ERR_INTERNAL;
	if (rc)
		fprintf(stderr, "provider_probe: rank %d: allreduce: %s\n",
			rank, ps_comm_strerror(rc));
	if (ps_comm_finalize(c) != 0 && !rc)
		rc = PS_COMM_ERR_INTERNAL;
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	ps_comm_t world[2] = {NULL, NULL};
	int n = 1, rc = 0;

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--twice") != 0)) {
		fprintf(stderr, "usage: provider_probe [--twice]\n");
		return 2;
	}
	if (argc == 2)
		n = 2;
	/* Both worlds live at once, so the second may share endpoints. */
	for (int i = 0; i < n; i++) {
		rc = open_world(&world[i]);
		if (rc)
			return rc;
	}
	for (int i = 0; i < n; i++)
		rc |= check_world(world[i]);
	return rc;
}
