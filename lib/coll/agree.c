/*
 * ps_comm_agree and ps_comm_shrink (contract in ps_comm.h; the model in
 * doc/faults.md, "Recovery"). An agreement first tries the fabric: one
 * allreduce that takes the minimum of each flag bit (their AND) and of
 * the negated next free context ids (their maximum). A rank that
 * completes it knows every rank sent its flag, and records the decision
 * with the liveness monitor; a rank whose allreduce fails (a death, a
 * revoke), or that starts on a failed communicator, revokes it and goes
 * through the liveness star instead, whose root asks the others for a decision they
 * made on the fabric before it decides anything, so every rank gets the
 * same one (comm/view.h, live/live.h).
 */
#include <stdlib.h>

#include "comm/view.h"
#include "util/util.h"

#define BITS 32

/*
 * This rank's next agreement on c: flag and next in and out, c's agreed
 * failed set updated. Returns a PS_COMM_ERR_* value.
 */
static int agree(struct ps_comm *c, uint32_t *flag, uint32_t *next,
		 const char *what)
{
	uint32_t seq = psc_comm_agree_seq(c);
	int32_t v[BITS + 1];
	uint32_t f = 0;

	if (seq == 0)
		return PS_COMM_ERR_NOTSUP;
	if (psc_comm_size(c) == 1)
		return 0;
	for (int b = 0; b < BITS; b++)
		v[b] = (int32_t)((*flag >> b) & 1);
	v[BITS] = -(int32_t)*next;
	/*
	 * A rank that cannot complete the allreduce (c failed here, or the
	 * allreduce did) revokes c first: a failure only it saw (a
	 * provider's error, PS_COMM_OP_TIMEOUT) must not leave the others
	 * waiting for it in their allreduce while it waits for them at the
	 * root.
	 */
	if (psc_comm_failed(c) ||
	    ps_comm_allreduce(c, PS_COMM_IN_PLACE, v, BITS + 1, PS_COMM_INT32,
			      PS_COMM_MIN) != 0) {
		ps_comm_revoke(c);
		return psc_comm_agree_star(c, seq, flag, next, what);
	}
	for (int b = 0; b < BITS; b++)
		f |= (uint32_t)(v[b] & 1) << b;
	*flag = f;
	*next = (uint32_t)-v[BITS];
	return psc_comm_agree_decided(c, seq, f, *next);
}

int ps_comm_agree(ps_comm_t c, int *flag)
{
	uint32_t f, next = 0;
	int rc;

	if (!psc_comm_valid(c) || !flag)
		return PS_COMM_ERR_ARG;
	f = (uint32_t)*flag;
	rc = agree(c, &f, &next, "ps_comm_agree");
	if (rc == 0)
		*flag = (int)f;
	return rc;
}

/* Shrinks that fail because a survivor died during them, at most. */
#define SHRINK_TRIES 8

/*
 * The agreement's flag bit 0 is whether a rank's endpoints are usable:
 * when one survivor's are not (a node-local death on shared memory),
 * all of them rebuild on fresh ones. A survivor that dies during a
 * rebuild fails it everywhere: the survivors agree again without it.
 */
int ps_comm_shrink(ps_comm_t c, ps_comm_t *newcomm)
{
	int rc = PS_COMM_ERR_PEER;

	if (!psc_comm_valid(c) || !newcomm)
		return PS_COMM_ERR_ARG;
	*newcomm = NULL;
	for (int t = 0; t < SHRINK_TRIES && rc == PS_COMM_ERR_PEER; t++) {
		uint32_t flag = psc_comm_usable(c) ? ~0u : ~1u;
		uint32_t ctx = psc_p2p_ctx_next();

		rc = agree(c, &flag, &ctx, "ps_comm_shrink");
		if (!rc)
			rc = psc_comm_take_ctx(c, ctx, "ps_comm_shrink");
		if (!rc)
			rc = psc_comm_shrink_to(c, ctx, !(flag & 1), newcomm);
		if (rc == PS_COMM_ERR_PEER && (flag & 1))
			break;
	}
	return rc;
}
