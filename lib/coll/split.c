/*
 * ps_comm_split: sub-communicators on the parent's endpoint. Every rank of
 * the parent allgathers (color, key, next free context id); members of a
 * color are ordered by key, then parent rank. All new communicators of one
 * split share the context id that is the largest next free id among the
 * parent's ranks (their members never talk across colors), and every
 * parent rank moves past it, so later communicators get matching ids too.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/view.h"
#include "util/util.h"

struct member {
	int32_t color, key, ctx, rank;
};

static int by_key(const void *x, const void *y)
{
	const struct member *a = x, *b = y;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

int ps_comm_split(ps_comm_t parent, int color, int key, ps_comm_t *newcomm)
{
	struct member mine, *all;
	uint32_t ctx = 0;
	int n = 0, me = -1, rc, *ranks;

	if (!psc_comm_valid(parent) || !newcomm || color < PS_COMM_UNDEFINED)
		return PS_COMM_ERR_ARG;
	*newcomm = NULL;
	all = calloc((size_t)psc_comm_size(parent), sizeof(*all));
	ranks = calloc((size_t)psc_comm_size(parent), sizeof(*ranks));
	if (!all || !ranks) {
		free(all);
		free(ranks);
		return PS_COMM_ERR_NOMEM;
	}
	mine.ctx = (int32_t)psc_p2p_ctx_next();
	mine.color = color;
	mine.key = key;
	mine.rank = psc_comm_rank(parent);
	rc = ps_comm_allgather(parent, &mine, all, 4, PS_COMM_INT32);
	if (rc)
		goto out;
	for (int i = 0; i < psc_comm_size(parent); i++)
		ctx = PSC_MAX(ctx, (uint32_t)all[i].ctx);
	rc = psc_comm_take_ctx(parent, ctx, "split");
	if (rc)
		goto out;
	if (color == PS_COMM_UNDEFINED)
		goto out;
	for (int i = 0; i < psc_comm_size(parent); i++)
		if (all[i].color == color)
			all[n++] = all[i];
	qsort(all, (size_t)n, sizeof(*all), by_key);
	for (int i = 0; i < n; i++) {
		ranks[i] = all[i].rank;
		if (all[i].rank == psc_comm_rank(parent))
			me = i;
	}
	rc = psc_comm_create_sub(parent, ranks, n, me, ctx, newcomm);
out:
	free(all);
	free(ranks);
	return rc;
}
