/*
 * Hierarchical reduce_scatter: the first steps of the hierarchical
 * allreduce (allreduce_hier.c) on the whole input (n blocks), after
 * which the m active ranks of every node each hold one fully reduced
 * piece of it; then, inside every node, each active rank sends each of
 * the node's ranks the part of its piece that overlaps that rank's block
 * (over shm, at most a few messages per rank).
 *
 * Cost: that of the allreduce's fold, reduce-scatter and inter-node
 * steps on n m bytes, plus ((L-1)/L) m per rank over shm. Between nodes
 * each piece is allreduced rather than reduce-scattered: about twice the
 * optimal network volume, the price of a simple and uniform piece
 * layout. Deterministic mode: the flat deterministic schedule (ring,
 * whose reduce-scatter is then the rank-ordered direct exchange).
 */
#include "coll.h"
#include "util/copy.h"

/* The overlap [*lo, *hi) of [a0, a1) and [b0, b1); false if empty. */
static bool overlap(size_t a0, size_t a1, size_t b0, size_t b1, size_t *lo,
		    size_t *hi)
{
	*lo = a0 > b0 ? a0 : b0;
	*hi = a1 < b1 ? a1 : b1;
	return *lo < *hi;
}

/*
 * Inside the node (peers are node indices): active rank i's piece of
 * work goes to the ranks whose blocks it overlaps, into their recvbuf.
 */
static void scatter_pieces(struct psc_sched *s, const struct psc_coll_args *a,
			   const struct psc_hier *h,
			   const struct psc_group *node, const char *work,
			   int mine)
{
	size_t es = a->esize, cnt = a->count, total = cnt * (size_t)a->size;
	char *out = a->recvbuf;

	for (int i = 0; i < h->minsize; i++) {
		size_t po, pl, lo, hi;

		psc_block(total, h->minsize, i, &po, &pl);
		for (int q = 0; q < node->n; q++) {
			size_t b0 = (size_t)node->ranks[q] * cnt;

			if ((i != mine && q != node->me) ||
			    !overlap(po, po + pl, b0, b0 + cnt, &lo, &hi))
				continue;
			if (i == mine && q == node->me)
				psc_sched_copy(s, out + (lo - b0) * es,
					       work + lo * es, (hi - lo) * es);
			else if (i == mine)
				psc_sched_send(s, work + lo * es,
					       (hi - lo) * es, q);
			else
				psc_sched_recv(s, out + (lo - b0) * es,
					       (hi - lo) * es, i);
		}
	}
}

int psc_reduce_scatter_hier(struct psc_sched *s,
			    const struct psc_coll_args *a)
{
	size_t total = a->count * (size_t)a->size;
	struct psc_coll_args sub;
	struct psc_group node;
	struct psc_hier h;
	char *work;
	int mine;

	if (a->deterministic)
		return psc_reduce_scatter_ring(s, a);
	work = psc_sched_tmp(s, total * a->esize);
	if (!work || !psc_hier_layout(s, a, &h) ||
	    !psc_group_of(s, a, &h, psc_on_my_node, &node))
		return 0;
	/* The first step, so the input can be taken now (also in place). */
	psc_copy(work, a->sendbuf, total * a->esize);
	mine = psc_hier_reduce_pieces(s, a, &h, work, work, total);
	psc_hier_step(s, a, &node, &sub);
	scatter_pieces(s, a, &h, &node, work, mine);
	psc_hier_step(s, a, NULL, &sub);
	return 0;
}
