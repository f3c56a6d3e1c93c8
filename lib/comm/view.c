/*
 * The calls of comm/view.h that read a communicator's fields, for the
 * layers above comm that see it opaque.
 */
#include "comm/comm.h"

bool psc_comm_valid(const struct ps_comm *c)
{
	return psc_comm_ok(c);
}

struct psc_chan *psc_comm_chan(struct ps_comm *c)
{
	return &c->ch;
}

int psc_comm_rank(const struct ps_comm *c)
{
	return c->ch.rank;
}

int psc_comm_size(const struct ps_comm *c)
{
	return c->ch.size;
}

const struct psc_params *psc_comm_params(const struct ps_comm *c)
{
	return &c->params;
}

const int *psc_comm_nodes(const struct ps_comm *c, int *nnodes,
			  int *local_size)
{
	*nnodes = c->nnodes;
	*local_size = c->local_size;
	return c->node_of;
}

uint32_t psc_comm_next_seq(struct ps_comm *c)
{
	return __atomic_fetch_add(&c->coll_seq, 1, __ATOMIC_RELAXED);
}

void psc_comm_count_hier(struct ps_comm *c)
{
	__atomic_fetch_add(&c->hier_runs, 1, __ATOMIC_RELAXED);
}

int psc_comm_await(struct ps_comm *c, ps_comm_request_t *req,
		   ps_comm_status_t *status, double deadline, const char *what)
{
	return psc_comm_wait(c, req, status, deadline, what);
}

int psc_comm_take_ctx(struct ps_comm *c, uint32_t ctx, const char *what)
{
	uint32_t limit = 1u << PSC_TAG_CTX_BITS;

	if (ctx >= limit) {
		psc_comm_set_error(c, "%s: all %u context ids are used", what,
				   limit);
		return PS_COMM_ERR_NOMEM;
	}
	psc_p2p_ctx_reserve(ctx);
	return 0;
}
