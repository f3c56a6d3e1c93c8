/*
 * Connecting a new world's ranks, where the provider cannot be trusted
 * to open a connection from both ends at once (caps.connect_race).
 *
 * libfabric's native TCP RDM endpoint (net in 1.17, the tcp provider's
 * own RDM endpoint from 1.18 on, still in 2.6) opens a connection on
 * the first send, from either end. When both ends connect at once, a
 * connect request that arrives after its pair's connection is up can
 * replace that connection: the accepting end records the peer's pid
 * from an event that carries no data, and a reused connection record
 * keeps the pid of the connection it served before, so the check that
 * should reject the late request fails (xnet_process_connreq, "old
 * connection exists, replacing"). Whatever the peer had already sent
 * on the replaced connection is lost, with a successful completion at
 * the sender. After deaths at 8 ranks on net, survivors that had never
 * talked lost a collective message this way in about 1 run in 10 and
 * waited for it for good.
 *
 * So each pair of ranks on such a path connects once, from its lower
 * rank, before any other message: every rank sends an empty control
 * message to each higher rank and waits for one from each lower rank.
 * A later send to a lower rank then finds the connection its peer
 * opened, and no two requests ever cross.
 */
#include <stdlib.h>

#include "comm/comm.h"
#include "p2p/tag.h"
#include "util/err.h"
#include "util/util.h"

static bool racy(const struct psc_chan *ch, int peer)
{
	return peer != ch->rank && psc_chan_path(ch, peer)->caps->connect_race;
}

int psc_comm_wire(struct ps_comm *c)
{
	struct psc_chan *ch = &c->ch;
	double deadline = psc_deadline(c->params.timeout);
	ps_comm_request_t *r;
	char err[256];
	int n = 0, rc = 0;
	bool any = false;

	for (int p = 0; p < ch->size && !any; p++)
		any = racy(ch, p);
	if (!any)
		return 0;
	r = calloc((size_t)ch->size, sizeof(ps_comm_request_t));
	if (!r)
		return PS_COMM_ERR_NOMEM;
	for (int p = 0; p < ch->size && !rc; p++) {
		if (!racy(ch, p))
			continue;
		rc = p < ch->rank
			     ? psc_irecv(ch, PSC_PROTO_CTRL, NULL, 0, p,
					 PSC_CTRL_WIRE, &r[n], err, sizeof(err))
			     : psc_isend(ch, PSC_PROTO_CTRL, NULL, 0, p,
					 PSC_CTRL_WIRE, &r[n], err, sizeof(err));
		if (!rc)
			n++;
	}
	if (rc) {
		psc_comm_set_error(c, "connecting to the other ranks: %s",
				   err);
		rc = psc_err_public(rc, PSC_ERR_BOOT);
	}
	/*
	 * After a failure, what was posted is only reaped (psc_wait, as
	 * finalize's barrier does): its words would replace the failure's.
	 */
	for (int i = 0; i < n; i++) {
		if (rc)
			psc_wait(&r[i], NULL, psc_now(), NULL);
		else
			rc = psc_comm_wait(c, &r[i], NULL, deadline,
					   "connecting to the other ranks");
	}
	free(r);
	return rc;
}
