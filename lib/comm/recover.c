/*
 * Recovery from a failure (doc/faults.md, "Recovery"): revoke a
 * communicator on every live rank, list its failed ranks, and the
 * communicator's side of agreement and shrink (comm/view.h), whose
 * public calls are in lib/coll/agree.c. The agreement's slow path runs
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

uint32_t psc_comm_agree_seq(struct ps_comm *c)
{
	if (c->ch.size > 1 && (!c->live || !c->world)) {
		psc_comm_set_error(c, "agreement: this communicator has no "
				   "liveness monitor (PS_COMM_BOOTSTRAP=none)");
		return 0;
	}
	return __atomic_add_fetch(&c->agree_seq, 1, __ATOMIC_RELAXED);
}

bool psc_comm_failed(struct ps_comm *c)
{
	return c->ch.aborted || psc_ep_owner_failed(c->ch.ep, &c->ch, NULL, 0);
}

/* c's agreed failed set: failed (c's size, malloc'd), or none. */
static void set_agreed(struct ps_comm *c, bool *failed)
{
	free(c->agreed_failed);
	c->agreed_failed = failed;
}

int psc_comm_agree_star(struct ps_comm *c, uint32_t seq, uint32_t *flag,
			uint32_t *next, const char *what)
{
	bool *failed;
	char err[256];
	int rc;

	if (c->ch.size == 1)
		return 0;
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
	set_agreed(c, failed);
	return 0;
}

int psc_comm_agree_decided(struct ps_comm *c, uint32_t seq, uint32_t flag,
			   uint32_t next)
{
	if (c->ch.size == 1)
		return 0;
	if (psc_live_agree_decided(c->live, c->ch.ctx, seq, c->world,
				   c->ch.size, flag, next) != 0)
		return PS_COMM_ERR_NOMEM;
	set_agreed(c, NULL);
	return 0;
}

bool psc_comm_usable(struct ps_comm *c)
{
	for (int i = 0; i < c->ch.npaths; i++)
		if (psc_ep_poisoned(c->ch.path[i].ep))
			return false;
	return true;
}

int psc_comm_shrink_to(struct ps_comm *c, uint32_t ctx, bool rebuild,
		       struct ps_comm **newcomm)
{
	int *ranks, n = 0, me = -1, rc;

	if (c->agreed_failed && c->agreed_failed[c->ch.rank]) {
		psc_comm_set_error(c, "ps_comm_shrink: the agreement counted "
				   "this rank failed");
		return PS_COMM_ERR_PEER;
	}
	if (rebuild)
		return psc_comm_rebuild(c, ctx, newcomm);
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
	rc = psc_comm_create_sub(c, ranks, n, me, ctx, newcomm);
	free(ranks);
	/* The survivors of the world leave the liveness star through it. */
	if (rc == 0 && c->owns_live) {
		(*newcomm)->owns_live = true;
		c->owns_live = false;
	}
	return rc;
}
