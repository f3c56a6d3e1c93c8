/*
 * What the hierarchical algorithms (*_hier.c) share: the node layout of
 * a call (each rank's index on its node, the nodes' sizes), groups of
 * ranks selected from it (a node, the node leaders, the ranks of one
 * index on every node), and the step that runs a flat building block on
 * such a group within the one schedule of the call. A step is a phase of
 * the schedule: it starts once every earlier operation of this rank is
 * done, so a block that reads its input at once (a first send) sees the
 * previous step's result. Peers are translated by the schedule, so the
 * flat blocks run unchanged with the group's indices as ranks; no
 * sub-communicator or context id is needed.
 */
#include "coll.h"

static int node_of(const struct psc_coll_args *a, int r)
{
	return a->node_of ? a->node_of[r] : 0;
}

bool psc_hier_layout(struct psc_sched *s, const struct psc_coll_args *a,
		     struct psc_hier *h)
{
	int n = a->size, nn = a->node_of ? a->nnodes : 1;

	h->lidx = psc_sched_tmp(s, (size_t)n * sizeof(int));
	h->nsize = psc_sched_tmp(s, (size_t)nn * sizeof(int));
	if (!h->lidx || !h->nsize)
		return false;
	memset(h->nsize, 0, (size_t)nn * sizeof(int));
	for (int r = 0; r < n; r++)
		h->lidx[r] = h->nsize[node_of(a, r)]++;
	h->nnodes = nn;
	h->node = node_of(a, a->rank);
	h->li = h->lidx[a->rank];
	h->minsize = n;
	for (int k = 0; k < nn; k++)
		if (h->nsize[k] < h->minsize)
			h->minsize = h->nsize[k];
	return true;
}

bool psc_group_of(struct psc_sched *s, const struct psc_coll_args *a,
		  const struct psc_hier *h, psc_member_fn in,
		  struct psc_group *g)
{
	g->n = 0;
	g->me = -1;
	g->ranks = psc_sched_tmp(s, (size_t)a->size * sizeof(int));
	if (!g->ranks)
		return false;
	for (int r = 0; r < a->size; r++) {
		if (!in(h, a, r))
			continue;
		if (r == a->rank)
			g->me = g->n;
		g->ranks[g->n++] = r;
	}
	return true;
}

bool psc_on_my_node(const struct psc_hier *h, const struct psc_coll_args *a,
		    int r)
{
	return node_of(a, r) == h->node;
}

bool psc_node_leader(const struct psc_hier *h,
		     const struct psc_coll_args *a, int r)
{
	(void)a;
	return h->lidx[r] == 0;
}

bool psc_node_rep(const struct psc_hier *h, const struct psc_coll_args *a,
		  int r)
{
	if (node_of(a, r) == node_of(a, a->root))
		return r == a->root;
	return h->lidx[r] == 0;
}

int psc_group_index(const struct psc_group *g, int r)
{
	for (int i = 0; i < g->n; i++)
		if (g->ranks[i] == r)
			return i;
	return -1;
}

bool psc_hier_step(struct psc_sched *s, const struct psc_coll_args *a,
		   const struct psc_group *g, struct psc_coll_args *sub)
{
	psc_sched_phase(s);
	*sub = *a;
	sub->root = 0;
	if (!g) {
		psc_sched_peers(s, NULL);
		return a->size > 1;
	}
	psc_sched_peers(s, g->ranks);
	sub->rank = g->me;
	sub->size = g->n;
	return g->me >= 0 && g->n > 1;
}
