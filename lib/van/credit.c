/*
 * Credit (state_int.h): a van posts the chunk receives of a node's next
 * large segment before the node sends it, and tells the node in a
 * frame, so that the segment goes at once instead of waiting for the
 * receiver's go-ahead. Every credit a van granted belongs to one node's
 * van_peer, under its send_lock; the receiving thread grants and takes
 * them, the sending threads announce and use them.
 */
#include <stdio.h>
#include <string.h>

#include "state_int.h"

void psc_van_credit_init(struct ps_comm_van *v)
{
	size_t chunk;

	v->credit_max = psc_node_chan_bulk_max(v->chan, &chunk);
	/* A segment of one message goes at once without any credit. */
	v->credit_min = psc_node_chan_single(v->chan);
	if (v->credit_max <= v->credit_min)
		v->credit_max = 0;
}

/* Whether a segment of len bytes would use a credit. */
static bool takes_credit(const struct ps_comm_van *v, uint64_t len)
{
	return len > v->credit_min && len <= v->credit_max;
}

/* Withdraw the credit granted to p, if any. p->send_lock held. */
static void drop_rx(struct ps_comm_van *v, struct van_peer *p)
{
	struct van_credit_rx *c = &p->rx;

	if (!c->id)
		return;
	/* A receive the provider keeps may still write: its buffer leaks. */
	if (psc_req_cancel(&c->req) == 0)
		ps_comm_van_free(c->buf);
	__atomic_sub_fetch(&v->credit_bytes, c->len, __ATOMIC_RELAXED);
	memset(c, 0, sizeof(*c));
}

void psc_van_credit_mark(struct ps_comm_van *v, struct van_peer *p,
			 struct van_batch *b, const ps_comm_van_seg_t *segs,
			 size_t nseg)
{
	struct van_credit_tx *t = &p->tx;
	bool large = false;

	b->credit_seg = -1;
	/* A credit of the node before it was connected again is void. */
	if (t->id && t->slot != p->slot)
		t->id = 0;
	for (size_t i = 0; t->id && i < nseg; i++) {
		if (b->in_frame[i] || !takes_credit(v, segs[i].len))
			continue;
		if (segs[i].len == t->len && t->fits) {
			b->credit_seg = (int)i;
			b->credit = *t;
			psc_van_frame_set_credit(b->frame, (uint32_t)i);
			t->id = 0;
		}
		large = true;
	}
	/* A large segment that cannot use it gives it back. */
	if (t->id && large) {
		psc_van_frame_set_return(b->frame);
		t->id = 0;
	}
	if (p->rx.id && !p->rx.announced && !b->bye) {
		psc_van_frame_set_grant(b->frame, p->rx.id, p->rx.slot,
					(uint32_t)p->rx.chunk, p->rx.len);
		p->rx.announced = true;
	}
}

int psc_van_credit_send(struct ps_comm_van *v, const struct van_peer *p,
			const struct van_batch *b, const void *buf,
			size_t len, ps_comm_request_t *req)
{
	char err[256];
	int rc = psc_node_chan_bulk_send(v->chan, &p->at, p->slot, b->credit.id,
					 buf, len, b->credit.chunk, req, err,
					 sizeof(err));

	if (rc)
		psc_log(PSC_LOG_DEBUG, -1, "van: %s", err);
	else
		__atomic_add_fetch(&v->credit_sent, 1, __ATOMIC_RELAXED);
	return psc_err_from_fi(rc);
}

/* The node that sent frame f, when this van connected it. */
static struct van_peer *sender_peer(struct ps_comm_van *v,
				    const struct psc_van_frame *f)
{
	struct van_peer *p;

	if (f->sender == PS_COMM_VAN_NO_ID)
		return NULL;
	pthread_mutex_lock(&v->lock);
	p = psc_van_peer_find(v, f->sender);
	pthread_mutex_unlock(&v->lock);
	return p;
}

void psc_van_credit_frame(struct ps_comm_van *v, uint32_t slot,
			  const struct psc_van_frame *f)
{
	struct van_peer *p;

	if (!f->grant_id && !(f->flags & PSC_VAN_F_RETURN))
		return;
	p = sender_peer(v, f);
	if (!p)
		return;
	pthread_mutex_lock(&p->send_lock);
	if ((f->flags & PSC_VAN_F_RETURN) && p->rx.announced &&
	    p->rx.slot == slot)
		drop_rx(v, p);
	if (f->grant_id) {
		p->tx.id = f->grant_id;
		p->tx.slot = f->grant_slot;
		p->tx.chunk = f->grant_chunk;
		p->tx.len = f->grant_len;
		p->tx.fits = takes_credit(v, f->grant_len) &&
			     psc_node_chan_bulk_fits(v->chan, &p->at,
						     (size_t)f->grant_len,
						     f->grant_chunk);
	}
	pthread_mutex_unlock(&p->send_lock);
}

int psc_van_credit_take(struct ps_comm_van *v, uint32_t slot,
			const struct psc_van_frame *f, uint32_t i,
			ps_comm_request_t *req, void **buf)
{
	struct van_peer *p = sender_peer(v, f);
	uint64_t len = psc_van_frame_seg_len(f, i);
	int rc = PS_COMM_ERR_PROTO;

	if (p) {
		pthread_mutex_lock(&p->send_lock);
		if (p->rx.id && p->rx.announced && p->rx.slot == slot &&
		    p->rx.len == len) {
			*req = p->rx.req;
			*buf = p->rx.buf;
			__atomic_sub_fetch(&v->credit_bytes, p->rx.len,
					   __ATOMIC_RELAXED);
			memset(&p->rx, 0, sizeof(p->rx));
			__atomic_add_fetch(&v->credit_recvd, 1,
					   __ATOMIC_RELAXED);
			rc = 0;
		}
		pthread_mutex_unlock(&p->send_lock);
	}
	if (rc)
		psc_log(PSC_LOG_WARN, -1, "van: node %d sent a segment of %llu "
			"bytes on a credit this van did not grant it",
			f->sender, (unsigned long long)len);
	return rc;
}

/* Post a credit of len bytes for p's sends from slot. send_lock held. */
static void grant_rx(struct ps_comm_van *v, struct van_peer *p,
		     uint32_t slot, size_t len)
{
	struct van_credit_rx *c = &p->rx;
	size_t chunk, bytes;
	char err[256];
	uint32_t id;
	int rc;

	bytes = __atomic_add_fetch(&v->credit_bytes, len, __ATOMIC_RELAXED);
	if (bytes > PSC_VAN_CREDIT_BYTES ||
	    !psc_node_chan_bulk_max(v->chan, &chunk))
		goto undo;
	c->buf = psc_van_buf_alloc(len);
	if (!c->buf)
		goto undo;
	do
		id = __atomic_add_fetch(&v->credit_next, 1, __ATOMIC_RELAXED);
	while (id == 0);
	rc = psc_node_chan_bulk_recv(v->chan, slot, id, c->buf, len, chunk,
				     &c->req, err, sizeof(err));
	if (rc) {
		/* A node on shm needs no credit: its segments go at once. */
		psc_log(PSC_LOG_DEBUG, -1, "van: no credit for node %d: %s",
			p->id, err);
		ps_comm_van_free(c->buf);
		c->buf = NULL;
		goto undo;
	}
	c->id = id;
	c->slot = slot;
	c->len = len;
	c->chunk = chunk;
	c->announced = false;
	return;
undo:
	__atomic_sub_fetch(&v->credit_bytes, len, __ATOMIC_RELAXED);
}

void psc_van_credit_grant(struct ps_comm_van *v, uint32_t slot,
			  const struct psc_van_frame *f)
{
	struct van_peer *p;
	uint64_t len = 0;

	for (uint32_t i = 0; i < f->nseg; i++) {
		uint64_t n = psc_van_frame_seg_len(f, i);

		if (!psc_van_frame_seg_inline(f, i) && takes_credit(v, n) &&
		    n > len)
			len = n;
	}
	if (!len)
		return;
	p = sender_peer(v, f);
	if (!p)
		return;
	pthread_mutex_lock(&p->send_lock);
	/*
	 * Keep a credit of that size, and one the node may hold (it gives
	 * it back when it cannot use it); replace one it was never told of,
	 * or one for a slot it no longer sends from.
	 */
	if (p->rx.id && p->rx.slot == slot &&
	    (p->rx.len == len || p->rx.announced)) {
		pthread_mutex_unlock(&p->send_lock);
		return;
	}
	drop_rx(v, p);
	grant_rx(v, p, slot, (size_t)len);
	pthread_mutex_unlock(&p->send_lock);
}

void psc_van_credit_drop(struct ps_comm_van *v, struct van_peer *p)
{
	pthread_mutex_lock(&p->send_lock);
	drop_rx(v, p);
	p->tx.id = 0;
	pthread_mutex_unlock(&p->send_lock);
}
