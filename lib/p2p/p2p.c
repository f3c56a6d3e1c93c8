/*
 * Point-to-point: tagged send and receive on a channel, including
 * messages larger than the provider's max_msg_size.
 *
 * A large message is a 24-byte header (magic, flags, total length,
 * stream id, chunk size) sent with the user's tag and the "large" bit,
 * followed by chunks of the announced size (max_msg_size, which the
 * provider profile may cap; the last one shorter) sent on the
 * continuation protocol with a tag made of the sender's rank and the
 * stream id. The receiver's first receive matches header or small
 * message alike; on a header it posts receives for the chunks with the
 * exact continuation tag, so chunks of different messages can never
 * mix, and the send order of first pieces keeps MPI's non-overtaking
 * rule.
 *
 * Each side keeps at most LARGE_WINDOW chunks in flight: a child request
 * that completes moves on to the next chunk of its parent (a cursor,
 * chunk_next), so a message of any length costs a fixed number of
 * requests. Sends and receives of one stream share one tag and match in
 * the order posted, and both sides post chunks in offset order, so the
 * n-th chunk sent lands in the n-th receive posted, at its offset.
 *
 * Where the provider stalls a connection behind an unexpected message it
 * cannot keep (caps.chunks_wait), the sender of a rank-addressed message
 * flags its header and posts its chunks only when the receiver's
 * go-ahead (PSC_PROTO_CTS, with the stream id) arrives, which the
 * receiver sends once its chunk receives are posted. A chunk then never
 * arrives unexpected, so a message nobody receives yet cannot hold up the
 * ones behind it. A node-addressed channel (the van's) has no ranks: its
 * receiver finds where to send the go-ahead through ch->reply.
 *
 * The go-ahead carries an offset: the sender's chunks go up to it, and a
 * chunk send with nothing left below it parks (PSC_REQ_PARKED) until the
 * next. A receiver lets the whole message go at once, except where the
 * provider's receive pool also holds unexpected arrivals
 * (caps.chunks_credit, shm): there each go-ahead reaches only as far as
 * the chunk receives it has posted, and a new one follows every half
 * window, so chunks sent ahead of their receives can never fill the pool
 * and make posting a receive fail.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "p2p/chan.h"
#include "p2p/swmatch.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/util.h"

_Static_assert(PSC_P2P_ETRUNC == FI_ETRUNC, "p2p.h's ETRUNC is libfabric's");
_Static_assert(PSC_TAG_CTX_BITS == PSC_EP_CTX_BITS,
	       "a tag holds every context id the core hands out");

#define LARGE_MAGIC 0x5053434du /* "PSCM": with the chunk size at +20 */
#define LARGE_HDR_LEN 24
/* Chunks of one message in flight at once, on each side. */
#define LARGE_WINDOW 16
/* Header flag: the sender posts its chunks on the receiver's go-ahead. */
#define LARGE_WAITS 1u
/*
 * Flag of a pre-arranged transfer (psc_isend_bulk, psc_irecv_bulk), kept
 * in its request only: no header goes, and its chunks' protocol is
 * PSC_PROTO_BULK.
 */
#define LARGE_BULK 2u
/* Where a waiting parent send keeps the go-ahead (after its header). */
#define CTS_OFF LARGE_HDR_LEN
/* The go-ahead: the offset the sender's chunks may go up to. */
#define CTS_LEN 8
/* Where a go-ahead send keeps its payload: past an untagged header. */
#define CTS_SEND_OFF 16

static const struct psc_req_ops first_recv_ops;
static const struct psc_req_ops cts_recv_ops;
static const struct psc_req_ops cts_send_ops;
static const struct psc_req_ops chunk_send_ops;
static const struct psc_req_ops chunk_recv_ops;
static int post_chunk_recvs(struct ps_comm_request *r);

/* A new child operation of parent, not yet posted. Lock held. */
static struct ps_comm_request *new_child(struct ps_comm_request *parent,
					 enum psc_req_kind kind, void *buf,
					 size_t len, uint64_t tag,
					 uint64_t ignore)
{
	struct ps_comm_request *k = psc_req_alloc(parent->ep, parent->owner,
						  kind);

	if (!k)
		return NULL;
	k->buf = buf;
	k->len = len;
	k->tag = tag;
	k->ignore = ignore;
	k->addr = parent->addr;
	k->data = len;
	psc_req_adopt(parent, k);
	return k;
}

/*
 * Post the first piece of a message: where the provider's matching
 * cannot be trusted (caps.sw_match), a send goes as the core's untagged
 * first message, its tag the immediate or, on an endpoint without
 * immediates, in the eager header (p2p/swmatch.h); a receive is matched
 * in software against the arrivals of m. Inline: the send and receive
 * paths make no call before the post. Lock held.
 */
static inline __attribute__((always_inline)) int
post_first_send(struct psc_ep *ep, const struct psc_caps *caps,
		struct ps_comm_request *r)
{
	if (caps->sw_match) {
		r->untagged = true;
		if (!caps->sw_tag_in_data)
			psc_swm_encode_hdr(r);
	}
	return psc_ep_post(ep, r);
}

static inline __attribute__((always_inline)) int
post_first_recv(struct psc_ep *ep, const struct psc_caps *caps,
		struct psc_swm *m, struct ps_comm_request *r)
{
	if (!caps->sw_match)
		return psc_ep_post(ep, r);
	/* No matching state: it could not be allocated at psc_chan_bind. */
	if (!m)
		return -ENOMEM;
	psc_swm_recv(m, ep, r);
	return 0;
}

/* Post child k (as a first message or an exact one). Lock held. */
static int post_kid(struct ps_comm_request *k, bool first)
{
	struct psc_ep *ep = k->ep;
	int rc;

	if (!first)
		rc = psc_ep_post(ep, k);
	else if (k->kind == PSC_REQ_RECV)
		rc = post_first_recv(ep, psc_ep_caps(ep), psc_ep_first_arg(ep),
				     k);
	else
		rc = post_first_send(ep, psc_ep_caps(ep), k);

	if (rc)
		psc_req_complete(k, rc);
	return rc;
}

/* Create and post one child operation of parent. Lock held. */
static int post_child(struct ps_comm_request *parent, enum psc_req_kind kind,
		      void *buf, size_t len, uint64_t tag, uint64_t ignore,
		      bool first)
{
	struct ps_comm_request *k = new_child(parent, kind, buf, len, tag,
					      ignore);

	return k ? post_kid(k, first) : -ENOMEM;
}

/* Large message p's length and chunk size: its header, in p->scratch. */
static uint64_t large_total(const struct ps_comm_request *p)
{
	return psc_be_get(p->scratch + 8, 8);
}

static size_t large_chunk(const struct ps_comm_request *p)
{
	return (size_t)psc_be_get(p->scratch + 20, 4);
}

/* Its stream id: the chunks' and the go-ahead's tags carry it. */
static uint32_t large_seq(const struct ps_comm_request *p)
{
	return (uint32_t)psc_be_get(p->scratch + 16, 4);
}

/* The protocol of its chunks. */
static unsigned large_proto(const struct ps_comm_request *p)
{
	return (psc_be_get(p->scratch + 4, 4) & LARGE_BULK) ? PSC_PROTO_BULK
							 : PSC_PROTO_CONT;
}

/* Write the header of large message p into p->scratch. */
static void large_hdr_put(struct ps_comm_request *p, uint32_t flags,
			  uint64_t len, uint32_t seq, size_t chunk)
{
	psc_be_put(p->scratch, LARGE_MAGIC, 4);
	psc_be_put(p->scratch + 4, flags, 4);
	psc_be_put(p->scratch + 8, len, 8);
	psc_be_put(p->scratch + 16, seq, 4);
	psc_be_put(p->scratch + 20, chunk, 4);
}

/*
 * End posting the pieces of large message p, which held a reference of
 * its own (children_left) while they were posted: a piece that could
 * not even be created fails the message, and a message whose pieces all
 * ended already completes. Lock held.
 */
static void large_posted(struct ps_comm_request *p, int rc)
{
	if (rc && !p->status.error)
		p->status.error = rc;
	p->children_left--;
	if (p->children_left == 0)
		psc_req_complete(p, p->status.error);
}

/*
 * Whether chunk child k of a large message goes on to the next chunk: 1
 * yes; 0 no (every chunk is posted, or the message failed already: k
 * ends with its own result); or -FI_ECANCELED when k was cancelled with
 * chunks left, so the message cannot complete as if whole. Lock held.
 */
static int chunk_goes_on(const struct ps_comm_request *k)
{
	const struct ps_comm_request *p = k->parent;

	if (p->chunk_next >= large_total(p))
		return 0;
	if (k->cancel_asked)
		return -FI_ECANCELED;
	/* A receive's expected truncation lets the rest arrive. */
	return !p->status.error || p->status.error == -FI_ETRUNC;
}

/* Post chunk child k again, for the chunk just armed. Lock held. */
static int chunk_repost(struct ps_comm_request *k)
{
	int rc;

	k->state = PSC_REQ_QUEUED;
	rc = psc_ep_post(k->ep, k);
	return rc ? rc : 1;
}

/* Point send child k at the next chunk of its parent p. Lock held. */
static void arm_send_chunk(struct ps_comm_request *p,
			   struct ps_comm_request *k)
{
	uint64_t off = p->chunk_next;
	size_t n = (size_t)PSC_MIN((uint64_t)large_chunk(p),
				   large_total(p) - off);

	k->buf = (char *)p->buf + off;
	k->len = n;
	k->data = n;
	p->chunk_next = off + n;
}

/*
 * A chunk went out: send the next one in its place, or, past what the
 * receiver's go-ahead allows, park until the next go-ahead. Lock held.
 */
static int chunk_send_complete(struct ps_comm_request *k,
			       const struct fi_cq_tagged_entry *ev)
{
	int go = chunk_goes_on(k);

	(void)ev;
	if (go != 1)
		return go;
	if (k->parent->chunk_next >= k->parent->chunk_limit) {
		k->state = PSC_REQ_PARKED;
		return 1;
	}
	arm_send_chunk(k->parent, k);
	return chunk_repost(k);
}

static const struct psc_req_ops chunk_send_ops = {
	.size = sizeof(struct psc_req_ops),
	.complete = chunk_send_complete,
};

/*
 * Send the chunks of large send p (p->buf, p->len) that its go-ahead
 * allows (below p->chunk_limit): first by the chunk sends parked, then
 * by new ones, up to LARGE_WINDOW in all; each moves on as it
 * completes. With every chunk on its way, a parked one is done (and
 * when the message fails, psc_req_complete ends them). Lock held.
 */
static int post_chunks(struct ps_comm_request *p)
{
	const struct psc_chan *ch = p->owner;
	uint32_t seq = large_seq(p);
	uint64_t ctag = psc_tag_make(&ch->tl, large_proto(p), false, ch->ctx,
				     (uint32_t)p->status.source, seq);
	uint64_t end = PSC_MIN(p->chunk_limit, large_total(p));
	int rc = 0, n = 0;

	for (struct ps_comm_request *k = p->kids; k; k = k->sibling) {
		if (k->ops != &chunk_send_ops)
			continue;
		n++;
		if (k->state != PSC_REQ_PARKED)
			continue;
		/* Every chunk is on its way: nothing left for k. */
		if (p->chunk_next >= large_total(p)) {
			psc_req_complete(k, 0);
		} else if (p->chunk_next < end) {
			k->state = PSC_REQ_QUEUED;
			arm_send_chunk(p, k);
			rc = post_kid(k, false);
		}
	}
	for (; rc == 0 && n < LARGE_WINDOW && p->chunk_next < end; n++) {
		struct ps_comm_request *k = new_child(p, PSC_REQ_SEND, NULL, 0,
						      ctag, 0);

		if (!k)
			return -ENOMEM;
		k->ops = &chunk_send_ops;
		/* An injected chunk would complete without moving on. */
		k->no_inject = true;
		arm_send_chunk(p, k);
		rc = post_kid(k, false);
	}
	return rc;
}

/*
 * Post (or, with k, post again) large send p's receive of its
 * receiver's go-ahead, from any rank: the stream id is the sender's
 * own. Returns 0 or an error; a new receive that could not be posted is
 * complete. Lock held.
 */
static int post_cts_recv(struct ps_comm_request *p, struct ps_comm_request *k)
{
	const struct psc_chan *ch = p->owner;
	const struct psc_tag_layout *tl = &ch->tl;
	uint32_t seq = large_seq(p);

	if (k) {
		k->state = PSC_REQ_QUEUED;
		return post_first_recv(k->ep, psc_ep_caps(k->ep),
				       psc_ep_first_arg(k->ep), k);
	}
	k = new_child(p, PSC_REQ_RECV, p->scratch + CTS_OFF, CTS_LEN,
		      psc_tag_make(tl, PSC_PROTO_CTS, false, ch->ctx, 0, seq),
		      tl->rank_mask | tl->large_bit);
	if (!k)
		return -ENOMEM;
	k->ops = &cts_recv_ops;
	k->addr = FI_ADDR_UNSPEC;
	return post_kid(k, true);
}

/* The chunk size a large send on an endpoint with caps c announces. */
static size_t send_chunk(const struct psc_caps *c)
{
	return PSC_MIN(c->max_msg_size, (size_t)UINT32_MAX);
}

/*
 * Whether large send p of len bytes goes without waiting for the
 * go-ahead where chunks wait for it: only where unexpected arrivals are
 * bounded by the go-ahead (caps.chunks_credit), as one chunk that its
 * provider completes once the receiver matched it (caps.ahead_min), and
 * only with one of its endpoint's few units (psc_ep_ahead_take). This
 * spares a small large message the go-ahead's round trip on shm. Such a
 * provider completes a sender's sends in the order they were posted, so
 * one that waited for its receive to be posted would hold back every
 * send behind it: its receiver takes it at once (ahead_recv). Lock held.
 */
static bool goes_ahead(struct ps_comm_request *p, size_t len)
{
	const struct psc_caps *c = psc_ep_caps(p->ep);

	return c->chunks_credit && c->ahead_min && c->sw_match &&
	       len >= c->ahead_min && len <= send_chunk(c) &&
	       psc_ep_ahead_take(p->ep, p, len);
}

/*
 * Post a large send as a header plus chunks, or, when the chunks must
 * wait, a header and the receive of the go-ahead (from any rank: the
 * stream id is the sender's own). Lock held.
 */
static int isend_large(struct psc_chan *ch, struct ps_comm_request *p,
		       unsigned proto, const void *buf, size_t len,
		       uint32_t src, uint32_t tag)
{
	const struct psc_tag_layout *tl = &ch->tl;
	bool waits = psc_ep_caps(p->ep)->chunks_wait && !goes_ahead(p, len);
	uint32_t seq = (uint32_t)(ch->large_seq++ & tl->user_mask);
	struct ps_comm_request *k = NULL;
	int rc;

	p->buf = (void *)buf;
	p->len = len;
	/* Waiting, nothing goes before the go-ahead. */
	p->chunk_limit = waits ? 0 : len;
	large_hdr_put(p, waits ? LARGE_WAITS : 0, len, seq,
		      send_chunk(psc_ep_caps(p->ep)));
	/* One registration for all chunks; without it each finds its own. */
	psc_ep_hold_range(p->ep, p, buf, len);
	/* Hold a reference so the parent cannot complete while posting. */
	p->children_left++;
	rc = 0;
	if (waits) {
		rc = post_cts_recv(p, NULL);
		k = p->kids;
	}
	if (rc == 0)
		rc = post_child(p, PSC_REQ_SEND, p->scratch, LARGE_HDR_LEN,
				psc_tag_make(tl, proto, true, ch->ctx, src,
					     tag),
				0, true);
	if (rc == 0 && !waits)
		rc = post_chunks(p);
	/* No header went out: no go-ahead will come. */
	if (rc && k && !psc_req_done(k))
		psc_ep_cancel(k->ep, k);
	large_posted(p, rc);
	return 0;
}

/*
 * The receiver's go-ahead arrived: send the chunks it allows, and wait
 * for the next while some are still held back. Lock held.
 */
static int cts_recv_complete(struct ps_comm_request *k,
			     const struct fi_cq_tagged_entry *ev)
{
	struct ps_comm_request *p = k->parent;
	uint64_t to;
	int rc;

	if (ev->len != CTS_LEN)
		return -EPROTO;
	to = psc_be_get(k->buf, CTS_LEN);
	if (to > p->chunk_limit)
		p->chunk_limit = PSC_MIN(to, large_total(p));
	rc = post_chunks(p);
	if (rc || p->status.error || p->chunk_limit >= large_total(p))
		return rc;
	rc = post_cts_recv(p, k);
	return rc ? rc : 1;
}

static const struct psc_req_ops cts_recv_ops = {
	.size = sizeof(struct psc_req_ops),
	.complete = cts_recv_complete,
};

static const struct psc_req_ops cts_send_ops = {
	.size = sizeof(struct psc_req_ops),
};

/*
 * Whether large receive r sends a go-ahead every half window, each
 * reaching as far as its chunk receives (caps.chunks_credit), rather
 * than one for the whole message.
 */
static bool cts_by_window(const struct ps_comm_request *r)
{
	return (psc_be_get(r->scratch + 4, 4) & LARGE_WAITS) &&
	       psc_ep_caps(r->ep)->chunks_credit;
}

/*
 * Tell the sender of large message r (header matched, chunk receives
 * posted up to r->chunk_next) how far its chunks may go: that far, or,
 * without cts_by_window, to the end. A go-ahead sent before is done with
 * by now or soon: the first one done is sent again, so a message keeps
 * a few of them whatever its length. Lock held.
 */
static int send_cts(struct ps_comm_request *r)
{
	const struct psc_chan *ch = r->owner;
	uint32_t seq = large_seq(r);
	int src = r->status.source;
	struct ps_comm_request *k;
	fi_addr_t to;

	if (ch->peers && src >= 0 && src < ch->size)
		to = ch->peers[src];
	else if (ch->peers || !ch->reply ||
		 ch->reply(ch, (uint32_t)src, r->ep, &to) != 0)
		return -EPROTO;
	r->chunk_limit = cts_by_window(r) ? r->chunk_next : large_total(r);
	for (k = r->kids; k; k = k->sibling)
		if (k->ops == &cts_send_ops && psc_req_done(k) &&
		    !k->status.error)
			break;
	if (k) {
		/* Counted again among r's children until it is done. */
		r->children_left++;
		k->state = PSC_REQ_QUEUED;
	} else {
		/* The sender's receive of it ignores the rank field. */
		k = new_child(r, PSC_REQ_SEND, NULL, CTS_LEN,
			      psc_tag_make(&ch->tl, PSC_PROTO_CTS, false,
					   ch->ctx,
					   ch->peers ? (uint32_t)ch->rank : 0,
					   seq),
			      0);
		if (!k)
			return -ENOMEM;
		k->ops = &cts_send_ops;
		k->buf = k->scratch + CTS_SEND_OFF;
		k->addr = to;
	}
	psc_be_put(k->buf, r->chunk_limit, CTS_LEN);
	return post_kid(k, true);
}

/*
 * A new request of ch for a send or receive, or an error: -ESHUTDOWN
 * once the channel is aborted, the failure's code and words once it
 * failed (a peer died: nothing more enters the provider for it),
 * -ENOMEM. Lock held.
 */
static int chan_req(struct psc_chan *ch, struct psc_ep *ep,
		    enum psc_req_kind kind, struct ps_comm_request **out,
		    char *err, size_t elen)
{
	int rc = psc_ep_owner_failed(ep, ch, err, elen);

	if (rc)
		return rc;
	if (ch->aborted)
		return -ESHUTDOWN;
	*out = psc_req_alloc(ep, ch, kind);
	return *out ? 0 : -ENOMEM;
}

/*
 * End a post: hand r to the caller, or on failure say what failed (a
 * send names its address), free r and return the code. Releases the lock.
 */
static inline int post_end(struct psc_chan *ch, struct ps_comm_request *r,
			   int rc, ps_comm_request_t *req, char *err,
			   size_t elen)
{
	if (rc && r->kind == PSC_REQ_RECV)
		snprintf(err, elen, "posting a receive failed: %s",
			 psc_fab_strerror(-rc));
	else if (rc)
		snprintf(err, elen, "posting a send to fi_addr %llu failed: "
			 "%s", (unsigned long long)r->addr,
			 psc_fab_strerror(-rc));
	if (rc)
		psc_req_free(r);
	else
		*req = r;
	pthread_mutex_unlock(ch->lock);
	return rc;
}

/*
 * The send path, inlined into both entry points so that psc_isend (the
 * 8-byte hot path) makes no call of its own before the post.
 */
static inline __attribute__((always_inline)) int
isend_path(struct psc_chan *ch, const struct psc_path *path, unsigned proto,
	   const void *buf, size_t len, fi_addr_t addr, uint32_t src,
	   uint32_t tag, ps_comm_request_t *req, char *err, size_t elen)
{
	struct psc_ep *ep = path->ep;
	struct ps_comm_request *r;
	int rc;

	pthread_mutex_lock(ch->lock);
	rc = chan_req(ch, ep,
		      len > path->single ? PSC_REQ_PARENT : PSC_REQ_SEND, &r,
		      err, elen);
	if (rc) {
		pthread_mutex_unlock(ch->lock);
		return rc;
	}
	r->addr = addr;
	r->status.source = (int)src;
	r->status.tag = (int)tag;
	r->status.len = len;
	if (r->kind == PSC_REQ_PARENT) {
		rc = isend_large(ch, r, proto, buf, len, src, tag);
	} else {
		r->buf = (void *)buf;
		r->len = len;
		r->data = len;
		/* Finalize must know its messages left before it closes. */
		r->no_inject = proto == PSC_PROTO_CTRL;
		r->tag = psc_tag_make(&ch->tl, proto, false, ch->ctx, src, tag);
		rc = post_first_send(ep, path->caps, r);
	}
	return post_end(ch, r, rc, req, err, elen);
}

int psc_isend_path(struct psc_chan *ch, const struct psc_path *path,
		   unsigned proto, const void *buf, size_t len, fi_addr_t addr,
		   uint32_t src, uint32_t tag, ps_comm_request_t *req,
		   char *err, size_t elen)
{
	return isend_path(ch, path, proto, buf, len, addr, src, tag, req, err,
			  elen);
}

int psc_isend(struct psc_chan *ch, unsigned proto, const void *buf,
	      size_t len, int peer, uint32_t tag, ps_comm_request_t *req,
	      char *err, size_t elen)
{
	return isend_path(ch, psc_chan_path(ch, peer), proto, buf, len,
			  ch->peers[peer], (uint32_t)ch->rank, tag, req, err,
			  elen);
}

int psc_irecv(struct psc_chan *ch, unsigned proto, void *buf, size_t len,
	      int peer, int64_t tag, ps_comm_request_t *req, char *err,
	      size_t elen)
{
	const struct psc_path *path = peer >= 0 ? psc_chan_path(ch, peer)
						: &ch->path[0];
	struct psc_ep *ep = path->ep;
	struct ps_comm_request *r;
	int rc;

	pthread_mutex_lock(ch->lock);
	rc = chan_req(ch, ep, PSC_REQ_RECV, &r, err, elen);
	if (rc) {
		pthread_mutex_unlock(ch->lock);
		return rc;
	}
	r->ops = &first_recv_ops;
	r->user_buf = buf;
	r->user_len = len;
	/* Short buffers receive into scratch so a large header always fits. */
	if (len < LARGE_HDR_LEN) {
		r->buf = r->scratch;
		r->len = sizeof(r->scratch);
	} else {
		r->buf = buf;
		r->len = PSC_MIN(len, path->caps->max_msg_size);
	}
	r->addr = FI_ADDR_UNSPEC;
	psc_tag_match(&ch->tl, proto, ch->ctx, peer, tag, &r->tag, &r->ignore);
	rc = post_first_recv(ep, path->caps, path->swm, r);
	return post_end(ch, r, rc, req, err, elen);
}

size_t psc_bulk_max(const struct psc_path *path, size_t *chunk)
{
	const struct psc_caps *c = path->caps;

	*chunk = send_chunk(c);
	/*
	 * Only where a large message otherwise waits for its go-ahead, and
	 * unexpected arrivals do not share the receive pool (shm).
	 */
	if (!c->chunks_wait || c->chunks_credit)
		return 0;
	return LARGE_WINDOW * *chunk;
}

bool psc_bulk_fits(const struct psc_path *path, size_t len, size_t chunk)
{
	size_t own;
	size_t max = psc_bulk_max(path, &own);

	return len > 0 && chunk > 0 && chunk <= own &&
	       len <= (size_t)LARGE_WINDOW * chunk && len <= max;
}

/*
 * Check a pre-arranged transfer (what: "send" or "receive") against path
 * and make its request, with its source, id, length and header: 0 with
 * the lock held, or -EINVAL (words in err) or chan_req's error, unlocked.
 */
static int bulk_req(struct psc_chan *ch, const struct psc_path *path,
		    const char *what, size_t len, size_t chunk, uint32_t src,
		    uint32_t id, struct ps_comm_request **out, char *err,
		    size_t elen)
{
	int rc;

	if (!psc_bulk_fits(path, len, chunk)) {
		snprintf(err, elen, "a pre-arranged %s of %zu bytes in chunks "
			 "of %zu does not fit this path", what, len, chunk);
		return -EINVAL;
	}
	pthread_mutex_lock(ch->lock);
	rc = chan_req(ch, path->ep, PSC_REQ_PARENT, out, err, elen);
	if (rc) {
		pthread_mutex_unlock(ch->lock);
		return rc;
	}
	(*out)->status.source = (int)src;
	(*out)->status.tag = (int)id;
	(*out)->status.len = len;
	large_hdr_put(*out, LARGE_BULK, len, id, chunk);
	return 0;
}

int psc_irecv_bulk(struct psc_chan *ch, uint32_t src, uint32_t id, void *buf,
		   size_t len, size_t chunk, ps_comm_request_t *req,
		   char *err, size_t elen)
{
	struct ps_comm_request *r;
	int rc = bulk_req(ch, &ch->path[0], "receive", len, chunk, src, id,
			  &r, err, elen);

	if (rc)
		return rc;
	r->addr = FI_ADDR_UNSPEC;
	r->user_buf = buf;
	r->user_len = len;
	r->chunk_next = 0;
	psc_ep_hold_range(r->ep, r, buf, len);
	r->children_left++;
	large_posted(r, post_chunk_recvs(r));
	return post_end(ch, r, 0, req, err, elen);
}

int psc_isend_bulk(struct psc_chan *ch, const struct psc_path *path,
		   const void *buf, size_t len, fi_addr_t addr, uint32_t src,
		   uint32_t id, size_t chunk, ps_comm_request_t *req,
		   char *err, size_t elen)
{
	struct ps_comm_request *p;
	int rc = bulk_req(ch, path, "send", len, chunk, src, id, &p, err,
			  elen);

	if (rc)
		return rc;
	p->addr = addr;
	p->buf = (void *)buf;
	p->len = len;
	p->chunk_limit = len;
	psc_ep_hold_range(p->ep, p, buf, len);
	p->children_left++;
	large_posted(p, post_chunks(p));
	return post_end(ch, p, 0, req, err, elen);
}

/* Fill one path from its endpoint. */
static void path_bind(struct psc_path *p, struct psc_ep *ep)
{
	p->ep = ep;
	p->caps = psc_ep_caps(ep);
	p->single = psc_ep_single_limit(ep);
	/* NULL when out of memory: software-matched receives then fail. */
	p->swm = psc_swm_attach(ep);
}

void psc_chan_bind(struct psc_chan *ch, struct psc_ep *ep,
		   struct psc_ep *pair)
{
	/*
	 * Provider selection refused formats too narrow for the layout, and
	 * a pair's endpoints share one format.
	 */
	int rc = psc_tag_layout_init(&ch->tl, psc_ep_tag_format(ep));

	assert(rc == 0);
	(void)rc;
	ch->ep = ep;
	ch->lock = psc_ep_mutex(ep);
	path_bind(&ch->path[0], ep);
	ch->npaths = 1;
	if (pair) {
		path_bind(&ch->path[1], pair);
		ch->npaths = 2;
	}
}

void psc_chan_hold(struct psc_chan *ch)
{
	for (int i = 0; i < ch->npaths; i++)
		psc_ep_hold(ch->path[i].ep);
}

void psc_chan_release(struct psc_chan *ch)
{
	for (int i = 0; i < ch->npaths; i++)
		psc_ep_release(ch->path[i].ep);
}

void psc_chan_abort(struct psc_chan *ch)
{
	psc_ep_lock(ch->ep);
	ch->aborted = true;
	psc_ep_unlock(ch->ep);
}

/*
 * Point receive child k at the next chunk of its parent r: into the
 * caller's buffer, or, for the part past its end, a shorter receive the
 * provider truncates (expect_trunc). Where the provider must not
 * truncate (software matching: rxm drops the connection when it does),
 * a chunk that does not fit goes whole into a buffer of k's own, of one
 * chunk, and the part that fits is copied out on completion. -ENOMEM, or
 * 0. Lock held.
 */
static int arm_recv_chunk(struct ps_comm_request *r,
			  struct ps_comm_request *k)
{
	uint64_t off = r->chunk_next;
	size_t max = large_chunk(r);
	size_t n = (size_t)PSC_MIN((uint64_t)max, large_total(r) - off);
	size_t room = off >= r->user_len ? 0 : r->user_len - (size_t)off;
	size_t take = PSC_MIN(n, room);
	char *dst = (char *)r->user_buf + (off < r->user_len ? (size_t)off
						: r->user_len);

	k->expect_trunc = take < n;
	/* take < n when the buffer is shorter: cppcheck misses it. */
	/* cppcheck-suppress knownConditionTrueFalse */
	if (take < n && psc_ep_caps(r->ep)->sw_match) {
		/* Past the buffer's end once, past it for every later chunk. */
		if (!k->owns_buf) {
			void *tmp = malloc(max);

			if (!tmp)
				return -ENOMEM;
			k->buf = tmp;
			k->owns_buf = true;
		}
		k->len = n;
		k->user_buf = dst;
		k->user_len = take;
	} else {
		k->buf = dst;
		k->len = take;
	}
	r->chunk_next = off + n;
	return 0;
}

/*
 * Chunk receive k is done with its chunk: receive the next one in its
 * place, or end (chunk_goes_on's 0 or error). Lock held.
 */
static int chunk_recv_next(struct ps_comm_request *k)
{
	struct ps_comm_request *r = k->parent;
	int go = chunk_goes_on(k), rc;

	if (go != 1)
		return go;
	rc = arm_recv_chunk(r, k);
	/* Half a window more to let go, or the last of the message. */
	if (rc == 0 && cts_by_window(r) &&
	    (r->chunk_next - r->chunk_limit >=
		     (uint64_t)large_chunk(r) * (LARGE_WINDOW / 2) ||
	     r->chunk_next == large_total(r)))
		rc = send_cts(r);
	return rc ? rc : chunk_repost(k);
}

/* A chunk arrived: receive the next one in its place. Lock held. */
static int chunk_recv_complete(struct ps_comm_request *k,
			       const struct fi_cq_tagged_entry *ev)
{
	/* What the progress engine does for a plain receive. */
	k->status.len = ev->len;
	if (k->owns_buf && k->user_len)
		psc_copy(k->user_buf, k->buf, k->user_len);
	if (psc_ep_caps(k->ep)->len_in_cq_data &&
	    (ev->flags & FI_REMOTE_CQ_DATA) &&
	    (uint32_t)ev->data != (uint32_t)ev->len && !k->expect_trunc)
		return -FI_ETRUNC;
	return chunk_recv_next(k);
}

/* A chunk past the buffer's end was truncated, as expected. Lock held. */
static int chunk_recv_truncated(struct ps_comm_request *k, uint64_t tag)
{
	(void)tag;
	k->status.len = k->len;
	if (!k->expect_trunc)
		return -FI_ETRUNC;
	return chunk_recv_next(k);
}

static const struct psc_req_ops chunk_recv_ops = {
	.size = sizeof(struct psc_req_ops),
	.complete = chunk_recv_complete,
	.truncated = chunk_recv_truncated,
};

/* A chunk received ahead came in: keep it until a receive claims it. */
static int ahead_recv_complete(struct ps_comm_request *k,
			       const struct fi_cq_tagged_entry *ev)
{
	k->status.len = ev->len;
	return 0;
}

static const struct psc_req_ops ahead_recv_ops = {
	.size = sizeof(struct psc_req_ops),
	.complete = ahead_recv_complete,
};

bool psc_p2p_is_ahead(const struct psc_ep *ep, uint64_t tag,
		      const uint8_t *hdr, size_t len)
{
	const struct psc_caps *c = psc_ep_caps(ep);
	struct psc_tag_layout tl;
	uint64_t total;

	if (len != LARGE_HDR_LEN || !c->chunks_wait || !c->ahead_min ||
	    !c->sw_match || psc_be_get(hdr, 4) != LARGE_MAGIC ||
	    (psc_be_get(hdr + 4, 4) & LARGE_WAITS))
		return false;
	total = psc_be_get(hdr + 8, 8);
	/* One chunk, of a size psc_ep_ahead_take lets go. */
	return total >= c->ahead_min && total <= psc_be_get(hdr + 20, 4) &&
	       total <= PSC_EP_AHEAD_BYTES / PSC_EP_AHEAD_MAX &&
	       psc_tag_layout_init(&tl, psc_ep_tag_format(ep)) == 0 &&
	       psc_tag_is_large(&tl, tag);
}

struct ps_comm_request *psc_p2p_ahead_recv(struct psc_ep *ep, uint64_t tag,
					   const uint8_t *hdr)
{
	uint64_t total = psc_be_get(hdr + 8, 8);
	struct psc_tag_layout tl;
	struct ps_comm_request *k;

	if (psc_tag_layout_init(&tl, psc_ep_tag_format(ep)) != 0)
		return NULL;
	k = psc_req_alloc(ep, NULL, PSC_REQ_RECV);
	if (k && !(k->buf = malloc((size_t)total))) {
		psc_req_free(k);
		k = NULL;
	}
	if (!k) {
		psc_log(PSC_LOG_ERROR, psc_ep_rank(ep), "out of memory: a "
			"message of %llu bytes sent ahead of its receive waits "
			"for it, and its sender's later sends with it",
			(unsigned long long)total);
		return NULL;
	}
	k->owns_buf = true;
	k->len = (size_t)total;
	k->ops = &ahead_recv_ops;
	k->addr = FI_ADDR_UNSPEC;
	/* The chunk's tag, as recv_large makes it: context, sender, stream. */
	psc_tag_match(&tl, PSC_PROTO_CONT, psc_tag_ctx(&tl, tag),
		      (int)psc_tag_rank(&tl, tag),
		      (uint32_t)psc_be_get(hdr + 16, 4), &k->tag, &k->ignore);
	if (psc_ep_post(ep, k) != 0) {
		psc_req_free(k);
		return NULL;
	}
	return k;
}

/*
 * Large receive r (one chunk of total bytes) claims k, the receive of
 * its chunk that psc_p2p_ahead_recv posted when the header came first:
 * what k received goes to the caller's buffer now, or when it arrives.
 * Returns 0 or k's error. Lock held.
 */
static int adopt_ahead(struct ps_comm_request *r, struct ps_comm_request *k,
		       uint64_t total)
{
	size_t take = (size_t)PSC_MIN(total, (uint64_t)r->user_len);
	int rc;

	r->chunk_next = total;
	if (!psc_req_done(k)) {
		k->ops = &chunk_recv_ops;
		k->owner = r->owner;
		k->user_buf = r->user_buf;
		k->user_len = take;
		psc_req_adopt(r, k);
		return 0;
	}
	rc = k->status.error;
	if (!rc && take)
		psc_copy(r->user_buf, k->buf, PSC_MIN(take, k->status.len));
	psc_req_free(k);
	if (rc && !r->status.error)
		r->status.error = rc;
	return rc;
}

/*
 * Post the chunk receives of large receive r (its header in r->scratch,
 * r->chunk_next where they start), up to LARGE_WINDOW of them; each
 * moves on as it completes. Returns 0 or an error. Lock held.
 */
static int post_chunk_recvs(struct ps_comm_request *r)
{
	const struct psc_chan *ch = r->owner;
	uint64_t total = large_total(r), ctag, ignore;
	int rc = 0;

	psc_tag_match(&ch->tl, large_proto(r), ch->ctx, r->status.source,
		      large_seq(r), &ctag, &ignore);
	for (int i = 0; rc == 0 && i < LARGE_WINDOW && r->chunk_next < total;
	     i++) {
		struct ps_comm_request *k = new_child(r, PSC_REQ_RECV, NULL, 0,
						      ctag, ignore);

		if (!k)
			return -ENOMEM;
		k->ops = &chunk_recv_ops;
		rc = arm_recv_chunk(r, k);
		if (rc)
			psc_req_complete(k, rc);
		else
			rc = post_kid(k, false);
	}
	return rc;
}

/*
 * Turn r into the parent of the receives of a large message's chunks,
 * up to LARGE_WINDOW at a time.
 */
static int recv_large(struct ps_comm_request *r, const uint8_t *hdr)
{
	struct ps_comm_request *pre = r->ahead_chunk;
	struct psc_chan *ch = r->owner;
	/* The endpoint the header came on, where its chunks follow. */
	const struct psc_caps *caps = psc_ep_caps(r->ep);
	uint64_t total;
	uint32_t flags;
	size_t max;
	int rc = 0;

	if (psc_be_get(hdr, 4) != LARGE_MAGIC)
		return -EPROTO;
	flags = (uint32_t)psc_be_get(hdr + 4, 4);
	total = psc_be_get(hdr + 8, 8);
	max = (size_t)psc_be_get(hdr + 20, 4);
	/*
	 * The sender's chunk size: within what this endpoint receives in
	 * one message, and no finer than 4 KiB unless this endpoint's own
	 * limit is (a bad header cannot make it receive byte by byte).
	 */
	if (max == 0 || max > caps->max_msg_size ||
	    (max < PSC_MIN(caps->max_msg_size, 4096) && max < total)) {
		psc_log(PSC_LOG_WARN, ch->rank, "refusing a large message of "
			"%llu bytes in chunks of %zu from rank %d (this "
			"endpoint takes chunks of up to %zu)",
			(unsigned long long)total, max, r->status.source,
			caps->max_msg_size);
		return -EPROTO;
	}
	r->ahead_chunk = NULL;
	/* The chunks overwrite a header received into the caller's buffer. */
	if (hdr != r->scratch)
		memcpy(r->scratch, hdr, LARGE_HDR_LEN);
	/* A sent header never makes a pre-arranged transfer. */
	psc_be_put(r->scratch + 4, flags & ~LARGE_BULK, 4);
	r->kind = PSC_REQ_PARENT;
	r->chunk_next = 0;
	r->status.len = PSC_MIN(total, r->user_len);
	psc_ep_hold_range(r->ep, r, r->user_buf, r->status.len);
	if (total > r->user_len)
		r->status.error = -FI_ETRUNC;
	r->children_left++;
	if (pre)
		rc = adopt_ahead(r, pre, total);
	if (rc == 0)
		rc = post_chunk_recvs(r);
	if (rc == 0 && (flags & LARGE_WAITS))
		rc = send_cts(r);
	r->children_left--;
	if (r->children_left == 0) {
		psc_req_complete(r, r->status.error);
		return 1;
	}
	return rc ? rc : 1;
}

/*
 * Where to read a large message's header that first receive r got. The
 * header lands in the caller's buffer, and a program may have other
 * receives pending on the same bytes (a bandwidth window posts them all
 * into one buffer): the chunks of another message, written by the NIC
 * or the kernel (rxe, siw) at any moment, may overwrite it there before
 * it is read. Software matching (caps.sw_match: every provider pscomm
 * picks by default) delivers from pscomm's own copy, valid while the
 * completion is handled (ev->buf), so the header is read there. Where
 * the provider matches and writes the buffer itself, the header is read
 * from the buffer, and ps_comm.h (ps_comm_irecv) asks programs not to
 * share those bytes between pending receives there.
 */
static const uint8_t *first_hdr(const struct ps_comm_request *r,
				const struct fi_cq_tagged_entry *ev)
{
	if (psc_ep_caps(r->ep)->sw_match && ev->buf)
		return ev->buf;
	return r->buf;
}

/*
 * The first receive of a message completed: a small message (copied out
 * of scratch when short) or a large message's header.
 */
static int first_recv_complete(struct ps_comm_request *r,
			       const struct fi_cq_tagged_entry *ev)
{
	const struct psc_chan *ch = r->owner;
	const struct psc_tag_layout *tl = &ch->tl;
	size_t got = ev->len;

	r->status.source = (int)psc_tag_rank(tl, ev->tag);
	r->status.tag = (int)psc_tag_user(tl, ev->tag);
	/* A provider that truncates silently: the sender's length says so. */
	if (psc_ep_caps(r->ep)->len_in_cq_data &&
	    (ev->flags & FI_REMOTE_CQ_DATA) &&
	    (uint32_t)ev->data != (uint32_t)got) {
		r->status.error = -FI_ETRUNC;
		got = PSC_MIN((size_t)(uint32_t)ev->data, r->len);
		if ((uint32_t)ev->data > r->len)
			got = r->len + 1; /* more than fitted */
	}
	if (psc_tag_is_large(tl, ev->tag) && got == LARGE_HDR_LEN)
		return recv_large(r, first_hdr(r, ev));
	/* A zero-length receive may have a NULL buffer: copy nothing. */
	if (r->buf == r->scratch && PSC_MIN(got, r->user_len))
		psc_copy(r->user_buf, r->scratch, PSC_MIN(got, r->user_len));
	if (got > r->user_len)
		r->status.error = -FI_ETRUNC;
	r->status.len = PSC_MIN(got, r->user_len);
	return r->status.error;
}

/* The provider truncated the first receive: it filled the buffer. */
static int first_recv_truncated(struct ps_comm_request *r, uint64_t tag)
{
	const struct psc_tag_layout *tl =
		&((const struct psc_chan *)r->owner)->tl;

	if (tag) {
		r->status.source = (int)psc_tag_rank(tl, tag);
		r->status.tag = (int)psc_tag_user(tl, tag);
	}
	if (r->buf == r->scratch && r->user_len)
		psc_copy(r->user_buf, r->scratch, r->user_len);
	r->status.len = r->user_len;
	return -FI_ETRUNC;
}

static const struct psc_req_ops first_recv_ops = {
	.size = sizeof(struct psc_req_ops),
	.complete = first_recv_complete,
	.truncated = first_recv_truncated,
};
