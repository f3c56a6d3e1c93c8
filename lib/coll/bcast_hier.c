/*
 * Hierarchical broadcast: the root sends to one representative per node
 * over the network (the lowest rank of each other node), then each
 * representative broadcasts inside its node over shm.
 *
 * Steps, phases of one schedule: 1. the flat bcast the dispatcher picks
 * for the message among the representatives (binomial or scatter_ring),
 * 2. the flat bcast it picks for the node's rank count inside every
 * node. Cost: that of the flat algorithm on N nodes between nodes, and
 * on the node's ranks inside it: the message crosses the network about
 * once per node instead of once per rank. Any node layout; no data is
 * combined, so deterministic mode changes nothing.
 */
#include "coll.h"

int psc_bcast_hier(struct psc_sched *s, const struct psc_coll_args *a)
{
	struct psc_group reps, node;
	struct psc_coll_args sub;
	struct psc_hier h;

	if (!psc_hier_layout(s, a, &h) ||
	    !psc_group_of(s, a, &h, psc_node_rep, &reps) ||
	    !psc_group_of(s, a, &h, psc_on_my_node, &node))
		return 0;
	if (psc_hier_step(s, a, &reps, &sub)) {
		sub.root = psc_group_index(&reps, a->root);
		a->hier.inter(s, &sub);
	}
	if (psc_hier_step(s, a, &node, &sub)) {
		/* This node's representative: its only member in reps. */
		for (int i = 0; i < node.n; i++)
			if (psc_group_index(&reps, node.ranks[i]) >= 0)
				sub.root = i;
		a->hier.intra(s, &sub);
	}
	psc_hier_step(s, a, NULL, &sub);
	return 0;
}
