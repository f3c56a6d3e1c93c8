/*
 * Hierarchical allgather: gather each node's blocks at its leader (the
 * lowest rank) over shm, exchange them between leaders over the network,
 * then broadcast the whole result inside every node.
 *
 * Steps, phases of one schedule: 1. every rank sends its block to its
 * leader, which receives it in place (L-1 messages over shm); 2. every
 * leader sends its node's blocks straight to every other leader, one
 * message per run of consecutive ranks on that node (one run per node
 * when ranks are placed by node), N-1 messages in flight each way; 3. the
 * flat bcast the dispatcher picks for the full result (n m bytes) on the
 * node's ranks. Cost between nodes: 1 latency and ((N-1)/N) M bytes per
 * leader for M gathered bytes, against n-1 or log2 n mostly-network
 * steps for the flat algorithms. Any node layout; no data is combined.
 */
#include "coll.h"

/*
 * Send (to leader index peer) or receive the blocks of node k's ranks,
 * one operation per run of consecutive ranks on k, in rank order on both
 * sides.
 */
static void node_runs(struct psc_sched *s, const struct psc_coll_args *a,
		      int k, int peer, bool recv)
{
	size_t bytes = a->count * a->esize;
	char *buf = a->recvbuf;

	for (int r = 0; r < a->size;) {
		int e = r;

		if (a->node_of[r] != k) {
			r++;
			continue;
		}
		while (e < a->size && a->node_of[e] == k)
			e++;
		if (recv)
			psc_sched_recv(s, buf + (size_t)r * bytes,
				       (size_t)(e - r) * bytes, peer);
		else
			psc_sched_send(s, buf + (size_t)r * bytes,
				       (size_t)(e - r) * bytes, peer);
		r = e;
	}
}

int psc_allgather_hier(struct psc_sched *s, const struct psc_coll_args *a)
{
	struct psc_group node, leaders;
	struct psc_coll_args sub;
	struct psc_hier h;
	size_t bytes = a->count * a->esize;
	char *buf = a->recvbuf;

	if (!psc_hier_layout(s, a, &h) ||
	    !psc_group_of(s, a, &h, psc_on_my_node, &node) ||
	    !psc_group_of(s, a, &h, psc_node_leader, &leaders))
		return 0;
	if (psc_hier_step(s, a, &node, &sub)) {
		if (node.me > 0)
			psc_sched_send(s, buf + (size_t)a->rank * bytes, bytes,
				       0);
		for (int i = 1; node.me == 0 && i < node.n; i++)
			psc_sched_recv(s, buf + (size_t)node.ranks[i] * bytes,
				       bytes, i);
	}
	/* Leaders are listed in node order: leader i speaks for node i. */
	if (psc_hier_step(s, a, &leaders, &sub) && a->node_of) {
		int me = leaders.me, nl = leaders.n;

		for (int i = 1; i < nl; i++)
			node_runs(s, a, h.node, psc_mod(me + i, nl), false);
		for (int i = 1; i < nl; i++)
			node_runs(s, a, psc_mod(me - i, nl),
				  psc_mod(me - i, nl), true);
	}
	if (psc_hier_step(s, a, &node, &sub)) {
		sub.sendbuf = sub.recvbuf = buf;
		sub.count = a->count * (size_t)a->size;
		a->hier.intra(s, &sub);
	}
	psc_hier_step(s, a, NULL, &sub);
	return 0;
}
