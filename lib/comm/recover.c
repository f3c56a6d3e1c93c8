/*
 * Recovery from a failure (doc/faults.md, "Recovery"): revoke a
 * communicator on every live rank, list its failed ranks, agree
 * uniformly among the live ones, and shrink it to them. Agreement runs
 * over the liveness star (live/live.h: psc_live_agree), never over the
 * fabric, so it works on a failed or revoked communicator and whichever
 * ranks die during it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "live/live.h"
#include "util/err.h"
#include "util/util.h"

int ps_comm_revoke(ps_comm_t c)
{
	if (!psc_comm_ok(c))
		return PS_COMM_ERR_ARG;
	/* Here first, as for an abort; then every other rank. */
	psc_ep_fail_owner(c->ch.ep, &c->ch, -EKEYREVOKED, "this rank revoked "
			  "the communicator (ps_comm_revoke)");
	if (c->live)
		psc_live_revoke(c->live, c->ch.ctx);
	psc_ep_cancel_owner(c->ch.ep, &c->ch, -EKEYREVOKED);
	return 0;
}

int ps_comm_failed_ranks(ps_comm_t c, ps_comm_failure_t *failed, int max,
			 int *count)
{
	char words[sizeof(failed->evidence)];
	int n = 0;

	if (!psc_comm_ok(c) || !count || max < 0 || (max > 0 && !failed))
		return PS_COMM_ERR_ARG;
	for (int i = 0; i < c->ch.size && c->live && c->world; i++) {
		bool agreed = c->agreed_failed && c->agreed_failed[i];

		if (!psc_live_dead(c->live, c->world[i], words,
				   sizeof(words))) {
			if (!agreed)
				continue;
			snprintf(words, sizeof(words), "counted failed by the "
				 "last agreement: it finalized or left the "
				 "liveness star");
		}
		if (n < max) {
			failed[n].rank = i;
			failed[n].agreed = agreed;
			snprintf(failed[n].evidence,
				 sizeof(failed[n].evidence), "%s", words);
		}
		n++;
	}
	*count = n;
	return 0;
}

/*
 * This rank's next agreement on c: flag and next in and out (live.h),
 * and c's agreed failed set updated. Returns a PS_COMM_ERR_* value,
 * recording the words of a failure; what names the caller.
 */
static int agree(struct ps_comm *c, uint32_t *flag, uint32_t *next,
		 const char *what)
{
	uint32_t seq = __atomic_add_fetch(&c->agree_seq, 1, __ATOMIC_RELAXED);
	bool *failed;
	char err[256];
	int rc;

	if (c->ch.size == 1)
		return 0;
	if (!c->live || !c->world) {
		psc_comm_set_error(c, "%s: this communicator has no liveness "
				   "monitor (PS_COMM_BOOTSTRAP=none)", what);
		return PS_COMM_ERR_NOTSUP;
	}
	failed = calloc((size_t)c->ch.size, sizeof(*failed));
	if (!failed)
		return PS_COMM_ERR_NOMEM;
	rc = psc_live_agree(c->live, c->ch.ctx, seq, c->world, c->ch.size,
			    psc_comm_op_deadline(c), flag, next, failed, err,
			    sizeof(err));
	if (rc) {
		free(failed);
		psc_comm_set_error(c, "%s: %s", what, err);
		return rc == -EOPNOTSUPP ? PS_COMM_ERR_NOTSUP
					 : psc_err_public(rc, PSC_ERR_OP);
	}
	free(c->agreed_failed);
	c->agreed_failed = failed;
	return 0;
}

int ps_comm_agree(ps_comm_t c, int *flag)
{
	uint32_t f, next = 0;
	int rc;

	if (!psc_comm_ok(c) || !flag)
		return PS_COMM_ERR_ARG;
	f = (uint32_t)*flag;
	rc = agree(c, &f, &next, "ps_comm_agree");
	if (rc == 0)
		*flag = (int)f;
	return rc;
}

int ps_comm_shrink(ps_comm_t c, ps_comm_t *newcomm)
{
	uint32_t flag = ~0u, ctx = psc_p2p_ctx_next();
	uint32_t limit = 1u << PSC_TAG_CTX_BITS;
	int *ranks, n = 0, me = -1, rc;

	if (!psc_comm_ok(c) || !newcomm)
		return PS_COMM_ERR_ARG;
	*newcomm = NULL;
	rc = agree(c, &flag, &ctx, "ps_comm_shrink");
	if (rc)
		return rc;
	if (ctx >= limit) {
		psc_comm_set_error(c, "ps_comm_shrink: all %u context ids are "
				   "used", limit);
		return PS_COMM_ERR_NOMEM;
	}
	psc_p2p_ctx_reserve(ctx);
	for (int i = 0; i < c->ch.npaths; i++)
		if (psc_ep_poisoned(c->ch.path[i].ep)) {
			psc_comm_set_error(c, "ps_comm_shrink: a rank on this "
					   "node died on provider %s, which "
					   "cannot be used after that; shrink "
					   "needs a network provider between "
					   "this node's ranks (FI_PROVIDER)",
					   psc_ep_provider(c->ch.path[i].ep));
			return PS_COMM_ERR_NOTSUP;
		}
	ranks = malloc((size_t)c->ch.size * sizeof(*ranks));
	if (!ranks)
		return PS_COMM_ERR_NOMEM;
	for (int i = 0; i < c->ch.size; i++) {
		if (c->agreed_failed && c->agreed_failed[i])
			continue;
		if (i == c->ch.rank)
			me = n;
		ranks[n++] = i;
	}
	if (me < 0) {
		psc_comm_set_error(c, "ps_comm_shrink: the agreement counted "
				   "this rank failed");
		rc = PS_COMM_ERR_PEER;
	} else {
		rc = psc_comm_create_sub(c, ranks, n, me, ctx, newcomm);
	}
	/* The survivors of the world leave the liveness star through it. */
	if (rc == 0 && c->owns_live) {
		(*newcomm)->owns_live = true;
		c->owns_live = false;
	}
	free(ranks);
	return rc;
}
