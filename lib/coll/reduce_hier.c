/*
 * Hierarchical reduce: each node reduces to its representative over shm
 * (the root on the root's node, the lowest rank elsewhere), then the
 * representatives reduce to the root over the network.
 *
 * Steps, phases of one schedule: 1. the flat reduce the dispatcher picks
 * for the node's rank count, inside every node; 2. the flat reduce it
 * picks among the N representatives (binomial or rs_gather). Cost: that
 * of the flat algorithm on L ranks over shm plus on N ranks over the
 * network: the vector crosses the network about once per node.
 * Deterministic mode: the rank-order fold has no per-node form, so hier
 * builds the flat deterministic schedule (rs_gather).
 */
#include "coll.h"

int psc_reduce_hier(struct psc_sched *s, const struct psc_coll_args *a)
{
	struct psc_group reps, node;
	struct psc_coll_args sub;
	struct psc_hier h;
	bool root = a->rank == a->root;
	const char *in = a->sendbuf;
	char *work;

	if (a->deterministic)
		return psc_reduce_rs_gather(s, a);
	if (!psc_hier_layout(s, a, &h) ||
	    !psc_group_of(s, a, &h, psc_node_rep, &reps) ||
	    !psc_group_of(s, a, &h, psc_on_my_node, &node))
		return 0;
	/*
	 * A representative's node result, the root's in its recvbuf. On a
	 * single node the intra step alone reduces into the root's recvbuf.
	 */
	work = root ? a->recvbuf
		    : reps.me >= 0 ? psc_sched_tmp(s, a->count * a->esize)
				   : NULL;
	if (reps.me >= 0 && !work)
		return 0;
	if (psc_hier_step(s, a, &node, &sub)) {
		for (int i = 0; i < node.n; i++)
			if (psc_group_index(&reps, node.ranks[i]) >= 0)
				sub.root = i;
		sub.recvbuf = work;
		a->hier.intra(s, &sub);
		in = work;
	}
	if (psc_hier_step(s, a, &reps, &sub)) {
		sub.root = psc_group_index(&reps, a->root);
		sub.sendbuf = in;
		sub.recvbuf = root ? a->recvbuf : NULL;
		a->hier.inter(s, &sub);
	}
	psc_hier_step(s, a, NULL, &sub);
	return 0;
}
