/*
 * Growing a communicator, its side in lib/comm (comm/view.h): where rank
 * 0 serves the joiners, and the grown communicator, bootstrapped like a
 * world by the old ranks and the processes that join (comm/create.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "util/log.h"

void psc_comm_grow_root(const struct ps_comm *c, char *root, size_t len)
{
	const char *m = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");

	if (*c->params.grow_root)
		snprintf(root, len, "%s", c->params.grow_root);
	else if (*c->params.root)
		snprintf(root, len, "%s", c->params.root);
	else if (m && *m && mp && *mp)
		snprintf(root, len, strchr(m, ':') ? "[%s]:%s" : "%s:%s", m,
			 mp);
	else
		root[0] = '\0';
}

/*
 * The rendezvous's check (comm.h, struct psc_comm_grow) from its own
 * thread: whether the communicator that grows failed (thread-safe).
 */
static bool old_dead(void *arg, char *why, size_t len)
{
	struct ps_comm *c = arg;
	char words[400];

	if (!psc_ep_owner_failed(c->ch.ep, &c->ch, words, sizeof(words)))
		return false;
	snprintf(why, len, "the communicator that grows failed: %s", words);
	return true;
}

int psc_comm_grow_to(struct ps_comm *c, const char *root, int n_new,
		     uint32_t ctx, struct ps_comm **newcomm)
{
	struct psc_comm_grow g = {.rank = c->ch.rank,
				  .size = c->ch.size + n_new,
				  .old_size = c->ch.size,
				  .ctx = ctx,
				  .root = root,
				  .dead = old_dead,
				  .dead_arg = c};
	struct ps_comm *nc = calloc(1, sizeof(*nc));
	struct psc_chan ch;
	int rc;

	if (!nc)
		return PS_COMM_ERR_NOMEM;
	nc->magic = PSC_COMM_MAGIC;
	nc->ch.rank = -1;
	nc->params = c->params;
	nc->op_timeout = c->op_timeout;
	if (c->ch.rank == 0)
		psc_log(PSC_LOG_INFO, 0, "ps_comm_grow: %d new processes may "
			"join at %s (PS_COMM_JOIN)", n_new, root);
	rc = psc_comm_bootstrap(nc, NULL, &g);
	if (rc == 0) {
		*newcomm = nc;
		return 0;
	}
	psc_comm_set_error(c, "ps_comm_grow: %s", nc->last_error);
	ch = nc->ch;
	psc_comm_free(nc);
	psc_chan_release(&ch);
	/* A rank of c died: that is the failure, as for any collective. */
	if (psc_ep_owner_failed(c->ch.ep, &c->ch, NULL, 0))
		rc = psc_comm_failure(c, psc_ep_owner_failed(c->ch.ep, &c->ch,
							     NULL, 0));
	return rc;
}
