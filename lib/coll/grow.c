/*
 * ps_comm_grow (contract in ps_comm.h; the model in doc/faults.md,
 * "Growing a job"): the old ranks agree on the number of new ranks and
 * on the next free context id (one allreduce), rank 0 tells them where
 * it serves the join (one broadcast), and the grown communicator is
 * bootstrapped like a world with the processes that join there
 * (psc_comm_grow_to, comm/view.h).
 */
#include <stdint.h>
#include <string.h>

#include "comm/view.h"
#include "p2p/tag.h"

/* Room for a "host:port", as the bootstrap's own root. */
#define ROOT_LEN 300

int ps_comm_grow(ps_comm_t c, int n_new, ps_comm_t *newcomm)
{
	int64_t v[3];
	char root[ROOT_LEN];
	int size, rc;

	if (!psc_comm_valid(c) || !newcomm)
		return PS_COMM_ERR_ARG;
	*newcomm = NULL;
	size = psc_comm_size(c);
	if (n_new < 1 || n_new > (1 << PSC_TAG_RANK_BITS) - size) {
		psc_comm_set_error(c, "ps_comm_grow: n_new=%d: from 1 to %d "
				   "new ranks (pscomm's limit is %d ranks)",
				   n_new, (1 << PSC_TAG_RANK_BITS) - size,
				   1 << PSC_TAG_RANK_BITS);
		return PS_COMM_ERR_ARG;
	}
	/* The fewest and the most new ranks asked for, the next free id. */
	v[0] = n_new;
	v[1] = -(int64_t)n_new;
	v[2] = -(int64_t)psc_p2p_ctx_next();
	rc = ps_comm_allreduce(c, PS_COMM_IN_PLACE, v, 3, PS_COMM_INT64,
			       PS_COMM_MIN);
	if (rc)
		return rc;
	if (v[0] != -v[1]) {
		psc_comm_set_error(c, "ps_comm_grow: the ranks passed different "
				   "n_new (from %lld to %lld)", (long long)v[0],
				   (long long)-v[1]);
		return PS_COMM_ERR_ARG;
	}
	memset(root, 0, sizeof(root));
	if (psc_comm_rank(c) == 0)
		psc_comm_grow_root(c, 0, root, sizeof(root));
	rc = ps_comm_bcast(c, root, sizeof(root), PS_COMM_UINT8, 0);
	if (rc)
		return rc;
	root[sizeof(root) - 1] = '\0';
	if (!root[0]) {
		psc_comm_set_error(c, "ps_comm_grow: rank 0 has no address to "
				   "serve new processes at: set "
				   "PS_COMM_GROW_ROOT=host:port on it (or "
				   "PS_COMM_ROOT)");
		return PS_COMM_ERR_CONFIG;
	}
	rc = psc_comm_take_ctx(c, (uint32_t)-v[2], "ps_comm_grow");
	return rc ? rc : psc_comm_grow_to(c, root, n_new, (uint32_t)-v[2],
					  newcomm);
}
