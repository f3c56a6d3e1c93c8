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

#include "psc.h"

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

/* A communicator over the given parent ranks, sharing its endpoint. */
static int make_comm(struct ps_comm *parent, const struct member *m, int n,
		     int me, uint32_t ctx, struct ps_comm **out)
{
	struct ps_comm *c = calloc(1, sizeof(*c));

	if (!c)
		return PS_COMM_ERR_NOMEM;
	c->peers = calloc((size_t)n, sizeof(*c->peers));
	if (!c->peers) {
		free(c);
		return PS_COMM_ERR_NOMEM;
	}
	for (int i = 0; i < n; i++)
		c->peers[i] = parent->peers[m[i].rank];
	c->ep = parent->ep;
	c->rank = me;
	c->size = n;
	c->ctx = ctx;
	c->params = parent->params;
	c->op_timeout = parent->op_timeout;
	memcpy(c->provider, parent->provider, sizeof(c->provider));
	psc_ep_hold(c->ep);
	*out = c;
	return 0;
}

int ps_comm_split(ps_comm_t parent, int color, int key, ps_comm_t *newcomm)
{
	struct member mine, *all;
	uint32_t ctx = 0, limit = 1u << PSC_TAG_CTX_BITS;
	int n = 0, me = -1, rc;

	if (!parent || !newcomm || color < PS_COMM_UNDEFINED)
		return PS_COMM_ERR_ARG;
	*newcomm = NULL;
	all = calloc((size_t)parent->size, sizeof(*all));
	if (!all)
		return PS_COMM_ERR_NOMEM;
	pthread_mutex_lock(&parent->ep->lock);
	mine.ctx = (int32_t)parent->ep->next_ctx;
	pthread_mutex_unlock(&parent->ep->lock);
	mine.color = color;
	mine.key = key;
	mine.rank = parent->rank;
	rc = ps_comm_allgather(parent, &mine, all, 4, PS_COMM_INT32);
	if (rc)
		goto out;
	for (int i = 0; i < parent->size; i++)
		ctx = PSC_MAX(ctx, (uint32_t)all[i].ctx);
	if (ctx >= limit) {
		psc_comm_set_error(parent, "split: all %u context ids are used",
				   limit);
		rc = PS_COMM_ERR_NOMEM;
		goto out;
	}
	pthread_mutex_lock(&parent->ep->lock);
	parent->ep->next_ctx = ctx + 1;
	pthread_mutex_unlock(&parent->ep->lock);
	if (color == PS_COMM_UNDEFINED)
		goto out;
	for (int i = 0; i < parent->size; i++)
		if (all[i].color == color)
			all[n++] = all[i];
	qsort(all, (size_t)n, sizeof(*all), by_key);
	for (int i = 0; i < n; i++)
		if (all[i].rank == parent->rank)
			me = i;
	rc = make_comm(parent, all, n, me, ctx, newcomm);
out:
	free(all);
	return rc;
}
