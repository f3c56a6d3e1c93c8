/*
 * Hierarchical barrier: every rank tells its node's leader (lowest rank)
 * it has arrived, the leaders run a dissemination barrier over the
 * network, and each leader then releases its node.
 *
 * Steps, phases of one schedule: 1. fan-in to the leader (L-1 empty
 * messages over shm), 2. dissemination among the N leaders, 3. fan-out.
 * Cost: 2 a_shm + ceil(log2 N) a_net, against ceil(log2 n) a_net for
 * the flat barrier whose rounds mostly cross nodes. Any node layout.
 */
#include "coll.h"

/* Fan-in (out false) or fan-out of empty messages at node leader 0. */
static void fan(struct psc_sched *s, const struct psc_coll_args *sub,
		bool out)
{
	if (sub->rank != 0) {
		if (out)
			psc_sched_recv(s, NULL, 0, 0);
		else
			psc_sched_send(s, NULL, 0, 0);
		return;
	}
	for (int i = 1; i < sub->size; i++)
		if (out)
			psc_sched_send(s, NULL, 0, i);
		else
			psc_sched_recv(s, NULL, 0, i);
}

int psc_barrier_hier(struct psc_sched *s, const struct psc_coll_args *a)
{
	struct psc_group node, leaders;
	struct psc_coll_args sub;
	struct psc_hier h;

	if (!psc_hier_layout(s, a, &h) ||
	    !psc_group_of(s, a, &h, psc_on_my_node, &node) ||
	    !psc_group_of(s, a, &h, psc_node_leader, &leaders))
		return 0;
	if (psc_hier_step(s, a, &node, &sub))
		fan(s, &sub, false);
	if (psc_hier_step(s, a, &leaders, &sub))
		psc_barrier_dissemination(s, &sub);
	if (psc_hier_step(s, a, &node, &sub))
		fan(s, &sub, true);
	psc_hier_step(s, a, NULL, &sub);
	return 0;
}
