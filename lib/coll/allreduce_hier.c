/*
 * Hierarchical allreduce: the heavy traffic stays inside nodes (shm),
 * and only 1/m of the vector crosses the network from each rank, m being
 * the smallest node's rank count.
 *
 * Steps, each a phase of one schedule on the parent communicator:
 *  0. fold (uneven nodes only): on a node with L > m ranks, the ranks of
 *     index li >= m reduce their vector into the rank of index li % m
 *     (binomial reduce among {i, i+m, i+2m...}). This keeps the
 *     node-peer structure regular: every node has exactly m active ranks.
 *  1. the m active ranks of each node ring-reduce-scatter the vector into
 *     m pieces: active rank i holds piece i reduced over its node;
 *  2. the ranks holding piece i on every node (its node peers, one per
 *     node) allreduce it over the network with the flat algorithm the
 *     dispatcher picks for the piece's size (rd, rabenseifner or ring);
 *  3. the active ranks of each node ring-allgather the pieces;
 *  4. fold out: each active rank broadcasts the result to the ranks that
 *     folded into it (binomial).
 * One rank per node: steps 0, 1, 3, 4 are empty and this is the flat
 * algorithm; one node: step 2 is empty. Shapes like 3+1 (m = 1) become
 * reduce to the node leader, leaders' allreduce, broadcast in the node.
 *
 * Cost (M bytes, N nodes, m ranks per node): inside nodes about
 * 2((m-1)/m) M over shm (plus M per folded rank), between nodes that of
 * the flat algorithm on N ranks for M/m bytes, e.g. 2((N-1)/N)(M/m) b
 * for the ring. Steps wait for each other (no pipelining across them).
 * Bitwise identity: each piece's result is computed by one algorithm
 * that gives every node peer the same bits, then only copied.
 * Deterministic mode: the promise is the rank-order fold x0 op x1 op ...,
 * which no per-node grouping can reproduce, so hier builds the flat
 * deterministic schedule (psc_allreduce_det_log).
 */
#include "coll.h"
#include "util/copy.h"

/* The first m ranks of this rank's node. */
static bool active_here(const struct psc_hier *h,
			const struct psc_coll_args *a, int r)
{
	return psc_on_my_node(h, a, r) && h->lidx[r] < h->minsize;
}

/* The ranks of this node whose index is this rank's modulo m. */
static bool fold_class(const struct psc_hier *h,
		       const struct psc_coll_args *a, int r)
{
	return psc_on_my_node(h, a, r) &&
	       h->lidx[r] % h->minsize == h->li % h->minsize;
}

/* The active ranks of this rank's index, one per node. */
static bool node_peer(const struct psc_hier *h,
		      const struct psc_coll_args *a, int r)
{
	(void)a;
	return h->lidx[r] == h->li;
}

int psc_hier_reduce_pieces(struct psc_sched *s, const struct psc_coll_args *a,
			   const struct psc_hier *h, const char *src, char *work,
			   size_t count)
{
	struct psc_group fold, act, peers;
	struct psc_coll_args sub;
	size_t off, len, es = a->esize;
	int m = h->minsize;

	if (!psc_group_of(s, a, h, fold_class, &fold) ||
	    !psc_group_of(s, a, h, active_here, &act) ||
	    !psc_group_of(s, a, h, node_peer, &peers))
		return -1;
	/* A fold reduces in place: the input goes into work first. */
	if (fold.n > 1 && src != work) {
		psc_copy(work, src, count * es);
		src = work;
	}
	if (psc_hier_step(s, a, &fold, &sub)) {
		sub.sendbuf = sub.recvbuf = work;
		sub.count = count;
		psc_reduce_binomial(s, &sub);
	}
	if (h->li >= m)
		return -1;
	/* Out of place, the steps need neither a copy nor scratch. */
	if (psc_hier_step(s, a, &act, &sub)) {
		psc_ring_reduce_scatter(s, &sub, src, work, count, 0, NULL);
		src = work;
	}
	psc_block(count, m, h->li, &off, &len);
	if (psc_hier_step(s, a, &peers, &sub) && len) {
		sub.sendbuf = src + off * es;
		sub.recvbuf = work + off * es;
		sub.count = len;
		a->hier.inter(s, &sub);
	} else if (src != work && len) {
		psc_sched_copy(s, work + off * es, src + off * es, len * es);
	}
	return h->li;
}

int psc_allreduce_hier(struct psc_sched *s, const struct psc_coll_args *a)
{
	struct psc_group fold, act;
	struct psc_coll_args sub;
	struct psc_hier h;
	char *work = a->recvbuf;

	if (a->deterministic) {
		psc_input_to_recvbuf(a);
		return psc_allreduce_det_log(s, a);
	}
	if (!psc_hier_layout(s, a, &h) ||
	    !psc_group_of(s, a, &h, fold_class, &fold) ||
	    !psc_group_of(s, a, &h, active_here, &act))
		return 0;
	if (psc_hier_reduce_pieces(s, a, &h, a->sendbuf, work, a->count) >= 0 &&
	    psc_hier_step(s, a, &act, &sub))
		psc_ring_allgather(s, &sub, work, a->count, 0, NULL, -1);
	if (psc_hier_step(s, a, &fold, &sub)) {
		sub.sendbuf = sub.recvbuf = work;
		psc_bcast_binomial(s, &sub);
	}
	psc_hier_step(s, a, NULL, &sub);
	return 0;
}
