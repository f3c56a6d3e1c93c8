/*
 * The van's sends: a message is a batch, its frame and pieces posted in
 * order under the destination's send lock (or delivered in process when
 * it is for this van), kept on the pending list until the fabric is done
 * with its buffers, then handed back through the caller's callback by
 * whichever thread reaps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_int.h"

bool psc_van_batch_done(const struct van_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->reqs[i] && !psc_req_done(b->reqs[i]))
			return false;
	return true;
}

void psc_van_batch_finish(struct ps_comm_van *v, struct van_batch *b,
			  double deadline)
{
	int err = b->err, sent = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->reqs[i]) {
			int rc = psc_van_wait(&b->reqs[i], NULL, deadline);

			if (rc && !sent)
				sent = rc;
		}
	if (sent && sent != PS_COMM_ERR_CANCELED && b->peer && !b->bye) {
		char why[160];

		snprintf(why, sizeof(why), "a send to it failed: %s",
			 ps_comm_strerror(sent));
		psc_van_peer_fail(v, b->peer, sent, why);
	}
	if (!err)
		err = sent;
	free(b->frame);
	if (b->done)
		b->done(b->arg, err);
	free(b);
}

void psc_van_reap(struct ps_comm_van *v)
{
	struct van_batch *done = NULL, **pp, *b;
	struct van_peer *late = NULL;
	double now = psc_now();

	pthread_mutex_lock(&v->lock);
	for (pp = &v->pending; (b = *pp) != NULL;) {
		if (psc_van_batch_done(b)) {
			*pp = b->next;
			b->next = done;
			done = b;
		} else {
			if (b->deadline > 0 && now >= b->deadline && b->peer &&
			    !b->peer->failed)
				late = b->peer;
			pp = &b->next;
		}
	}
	pthread_mutex_unlock(&v->lock);
	if (late) {
		char why[160];

		snprintf(why, sizeof(why), "a send to it did not finish within "
			 "%g s (PS_COMM_OP_TIMEOUT)", v->params.op_timeout);
		psc_van_peer_fail(v, late, PS_COMM_ERR_TIMEOUT, why);
	}
	while ((b = done) != NULL) {
		done = b->next;
		psc_van_batch_finish(v, b, 0);
	}
}

/* Post the frame and pieces of b to p in order. p->send_lock held. */
static int post_pieces(struct ps_comm_van *v, struct van_peer *p,
		       struct van_batch *b, size_t flen, const void *meta,
		       size_t meta_len, bool inline_meta,
		       const ps_comm_van_seg_t *segs, size_t nseg)
{
	size_t k = 0;
	int rc;

	if (p->at.addr == PSC_NODE_NO_ADDR || psc_van_peer_failed(p))
		return PS_COMM_ERR_PEER;
	if (psc_van_peer_left(p)) {
		psc_log(PSC_LOG_WARN, -1, "van: send to node %d, which stopped "
			"and was not connected again", p->id);
		return PS_COMM_ERR_PEER;
	}
	psc_van_credit_mark(v, p, b, segs, nseg);
	rc = psc_van_send(v, b->frame, flen, p,
			  PSC_VAN_TAG_FRAME, &b->reqs[k++]);
	if (!rc && !inline_meta)
		rc = psc_van_send(v, meta, meta_len, p,
				  PSC_VAN_TAG_PIECE, &b->reqs[k++]);
	for (size_t i = 0; !rc && i < nseg; i++)
		if (b->credit_seg == (int)i)
			rc = psc_van_credit_send(v, p, b, segs[i].data,
						 segs[i].len, &b->reqs[k++]);
		else if (!b->in_frame[i])
			rc = psc_van_send(v, segs[i].data,
					  segs[i].len, p, PSC_VAN_TAG_PIECE,
					  &b->reqs[k++]);
	return rc;
}

struct van_batch *psc_van_batch_new(struct ps_comm_van *v, const void *meta,
				    size_t meta_len,
				    const ps_comm_van_seg_t *segs, size_t nseg,
				    size_t *flen, bool *inline_meta)
{
	struct van_batch *b;
	struct psc_van_frame f;
	char err[128];

	*flen = psc_van_frame_size(meta_len, segs, nseg, v->frame_limit,
				   inline_meta);
	b = calloc(1, sizeof(*b) + (nseg + 2) * sizeof(ps_comm_request_t) +
			  nseg);
	if (!b)
		return NULL;
	b->frame = malloc(*flen);
	if (!b->frame) {
		free(b);
		return NULL;
	}
	psc_van_frame_encode(b->frame, __atomic_load_n(&v->my_id,
						       __ATOMIC_RELAXED),
			     meta, meta_len, *inline_meta, segs, nseg,
			     v->frame_limit);
	/* Which segments the frame carries: they get no piece. */
	b->in_frame = (bool *)&b->reqs[nseg + 2];
	if (psc_van_frame_decode(b->frame, *flen, &f, err, sizeof(err)) == 0)
		for (size_t i = 0; i < nseg; i++)
			b->in_frame[i] = psc_van_frame_seg_inline(&f,
								  (uint32_t)i);
	b->n = nseg + 2;
	b->credit_seg = -1;
	return b;
}

int psc_van_post_batch(struct ps_comm_van *v, struct van_peer *p,
		       struct van_batch *b, size_t flen, const void *meta,
		       size_t meta_len, bool inline_meta,
		       const ps_comm_van_seg_t *segs, size_t nseg)
{
	int rc;

	b->peer = p;
	b->deadline = psc_deadline(v->params.op_timeout);
	pthread_mutex_lock(&p->send_lock);
	rc = post_pieces(v, p, b, flen, meta, meta_len, inline_meta, segs,
			 nseg);
	pthread_mutex_unlock(&p->send_lock);
	/*
	 * The provider refused the post itself (its connection to the node
	 * is gone, as the sockets provider tells at once): the node failed.
	 */
	if ((rc == PS_COMM_ERR_SYSTEM || rc == PS_COMM_ERR_FABRIC) &&
	    !b->bye) {
		char why[160];

		snprintf(why, sizeof(why), "the provider refused a send to it "
			 "(%s)", ps_comm_strerror(rc));
		psc_van_peer_fail(v, p, PS_COMM_ERR_PEER, why);
		rc = PS_COMM_ERR_PEER;
	}
	return rc;
}

void psc_van_queue_batch(struct ps_comm_van *v, struct van_batch *b)
{
	pthread_mutex_lock(&v->lock);
	b->next = v->pending;
	v->pending = b;
	pthread_mutex_unlock(&v->lock);
}

/* Push posted sends along now: the receiving thread may be asleep. */
static void kick(struct ps_comm_van *v)
{
	psc_node_chan_progress(v->chan);
}


int ps_comm_van_send(ps_comm_van_t v, int node_id, const void *meta,
		     size_t meta_len, const ps_comm_van_seg_t *segs,
		     size_t nseg, ps_comm_van_done_fn done, void *arg)
{
	struct van_batch *b;
	struct van_peer *p;
	bool inline_meta, self;
	size_t flen;
	int rc;

	if (!psc_van_ok(v) || !v->bound || (!meta && meta_len) ||
	    (!segs && nseg) || nseg > PSC_VAN_MAX_SEGS ||
	    meta_len > UINT32_MAX)
		return PS_COMM_ERR_ARG;
	for (size_t i = 0; i < nseg; i++)
		if ((!segs[i].data && segs[i].len) ||
		    segs[i].len > (size_t)PTRDIFF_MAX)
			return PS_COMM_ERR_ARG;
	psc_van_reap(v);
	pthread_mutex_lock(&v->lock);
	p = psc_van_peer_find(v, node_id);
	self = p && p->self;
	pthread_mutex_unlock(&v->lock);
	if (self) {
		rc = psc_van_deliver_local(v, meta, meta_len, segs, nseg);
		if (done)
			done(arg, rc);
		return rc;
	}
	b = psc_van_batch_new(v, meta, meta_len, segs, nseg, &flen,
			      &inline_meta);
	if (!b) {
		if (done)
			done(arg, PS_COMM_ERR_NOMEM);
		return PS_COMM_ERR_NOMEM;
	}
	b->done = done;
	b->arg = arg;
	if (!p) {
		psc_log(PSC_LOG_WARN, -1, "van: send to node %d, which was "
			"never connected", node_id);
		rc = PS_COMM_ERR_PEER;
	} else {
		double t = psc_now();

		/* Peers live until stop, which no send may overlap. */
		rc = psc_van_post_batch(v, p, b, flen, meta, meta_len,
					inline_meta, segs, nseg);
		__atomic_store(&p->last_send, &t, __ATOMIC_RELAXED);
	}
	b->err = rc;
	psc_van_queue_batch(v, b);
	kick(v);
	psc_van_reap(v);
	return rc;
}

