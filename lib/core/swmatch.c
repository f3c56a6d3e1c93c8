/*
 * Software matching of first messages, for providers whose tag matching
 * cannot be trusted with wildcards (caps.sw_match).
 *
 * shm in libfabric 1.17 and 1.18 matches a new receive against its queue
 * of unexpected messages with the ignore mask left in the unexpected
 * entry by whatever receive used that pool entry before (smr_match_tagged
 * in prov/shm/src/smr_ep.c), not the new receive's mask: an ANY_SOURCE or
 * ANY_TAG receive then misses messages that already arrived, or takes the
 * wrong one. Exact receives are unaffected as long as every tagged
 * receive ever posted is exact, which is what this mode guarantees.
 *
 * So in this mode the first message of every user, collective or control
 * send travels untagged, with its pscomm tag in the remote CQ data where
 * the provider carries 8 bytes of it (shm, tcp), else in a 16-byte header
 * (tag and payload length) before at most ep->sw_eager bytes, into bounce
 * buffers that stay posted. Arrivals are matched here against receives in posting order, or
 * kept in arrival order until a receive comes. Larger messages send only
 * their large-message header this way; their chunks use exact tagged
 * receives straight into the user's buffer, so they are not copied.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "util/copy.h"
#include "util/log.h"
#include "util/util.h"

#define SW_BOUNCES 64

/*
 * Bounce buffers to keep posted: at most half of the receives the
 * provider takes (ep->post_limit[1]), so that exact receives (a large
 * message's chunks) always find room. All of them posted on a short
 * queue (FI_OFI_RXM_RX_SIZE=64) left chunks queued behind bounces that no
 * message would complete, and the job hung.
 */
static int sw_bounces(const struct psc_ep *ep)
{
	size_t limit = ep->post_limit[1];

	if (!limit || limit / 2 >= SW_BOUNCES)
		return SW_BOUNCES;
	return limit >= 2 ? (int)(limit / 2) : 1;
}

/* An arrival that no receive wanted yet. */
struct psc_sw_unexp {
	struct psc_sw_unexp *next;
	struct psc_ep *ep;	/* where it arrived (a pair shares the queue) */
	uint64_t tag;
	size_t len;
	uint8_t data[];
};

void psc_sw_encode_hdr(struct ps_comm_request *r)
{
	psc_be_put(r->scratch, r->tag, 8);
	psc_be_put(r->scratch + 8, r->len, 8);
}

/* Post one bounce buffer. Lock held. */
static int post_bounce(struct psc_ep *ep, struct ps_comm_request *b)
{
	b->state = PSC_REQ_QUEUED;
	return psc_ep_post(ep, b);
}

int psc_sw_open(struct psc_ep *ep)
{
	size_t each = PSC_SW_HDR + ep->sw_eager;
	int n = sw_bounces(ep);
	struct psc_mr *slab_mr;
	int rc = 0;

	/* One slab, so one registration covers every bounce buffer. */
	ep->sw_slab = malloc((size_t)n * each);
	if (!ep->sw_slab)
		return -ENOMEM;
	pthread_mutex_lock(ep->lock);
	if (ep->fab.mr_local)
		rc = psc_mr_pin(ep->fab.mr, ep->sw_slab, (size_t)n * each,
				&slab_mr);
	for (int i = 0; i < n && !rc; i++) {
		struct ps_comm_request *b = psc_req_alloc(ep, NULL, PSC_REQ_BOUNCE);

		if (!b) {
			rc = -ENOMEM;
			break;
		}
		b->buf = (char *)ep->sw_slab + (size_t)i * each;
		b->len = each;
		b->addr = FI_ADDR_UNSPEC;
		rc = post_bounce(ep, b);
	}
	pthread_mutex_unlock(ep->lock);
	return rc;
}

void psc_sw_close(struct psc_ep *ep)
{
	/* Its registration went with the cache, before this. */
	free(ep->sw_slab);
	ep->sw_slab = NULL;
}

void psc_sw_drop_unexp(struct psc_ep_shared *sh, const struct psc_ep *ep)
{
	struct psc_sw_unexp **pp = &sh->sw_unexp;

	while (*pp) {
		struct psc_sw_unexp *u = *pp;

		if (ep && u->ep != ep) {
			pp = &u->next;
			continue;
		}
		*pp = u->next;
		free(u);
	}
}

static bool tag_matches(const struct ps_comm_request *r, uint64_t tag)
{
	return ((tag ^ r->tag) & ~r->ignore) == 0;
}

/*
 * Deliver a message (tag, payload of len bytes) that arrived on ep to
 * receive r, as the provider would have: copy what fits, then let its
 * owner interpret it. A receive of a pair may have been posted on the
 * other endpoint: it moves to ep, where the rest of its message (a large
 * message's chunks) arrives.
 */
static void deliver(struct psc_ep *ep, struct ps_comm_request *r,
		    uint64_t tag, const uint8_t *data, size_t len)
{
	struct fi_cq_tagged_entry ev = {0};

	if (r->ep != ep)
		psc_req_move(r, ep);
	psc_copy(r->buf, data, PSC_MIN(len, r->len));
	ev.tag = tag;
	ev.len = len;
	r->state = PSC_REQ_POSTED;
	psc_req_dispatch(r, &ev);
}

/* Find an arrival's tag and payload; false if it is malformed. */
static bool parse_arrival(const struct psc_ep *ep,
			  const struct ps_comm_request *b,
			  const struct fi_cq_tagged_entry *ev, uint64_t *tag,
			  const uint8_t **data, uint64_t *len)
{
	const uint8_t *p = b->buf;

	if (ep->sw_tag_in_data) {
		*tag = ev->data;
		*data = p;
		*len = ev->len;
		return (ev->flags & FI_REMOTE_CQ_DATA) != 0;
	}
	if (ev->len < PSC_SW_HDR ||
	    psc_be_get(p + 8, 8) != ev->len - PSC_SW_HDR)
		return false;
	*tag = psc_be_get(p, 8);
	*data = p + PSC_SW_HDR;
	*len = ev->len - PSC_SW_HDR;
	return true;
}

void psc_sw_match(struct psc_ep *ep, uint64_t tag, const uint8_t *data,
		  size_t len)
{
	struct ps_comm_request **pp;
	struct psc_sw_unexp *u, **tail;

	for (pp = &ep->sh->sw_posted; *pp; pp = &(*pp)->next)
		if (tag_matches(*pp, tag)) {
			struct ps_comm_request *r = *pp;

			*pp = r->next;
			r->next = NULL;
			deliver(ep, r, tag, data, len);
			return;
		}
	u = malloc(sizeof(*u) + len);
	if (!u) {
		psc_log(PSC_LOG_ERROR, ep->fab.rank, "out of memory: dropping an "
			"unexpected message of %zu bytes", len);
		return;
	}
	u->next = NULL;
	u->ep = ep;
	u->tag = tag;
	u->len = len;
	psc_copy(u->data, data, len);
	for (tail = &ep->sh->sw_unexp; *tail; tail = &(*tail)->next)
		;
	*tail = u;
}

void psc_sw_arrival(struct psc_ep *ep, struct ps_comm_request *b,
		    const struct fi_cq_tagged_entry *ev)
{
	const uint8_t *data;
	uint64_t tag, len;

	if (!parse_arrival(ep, b, ev, &tag, &data, &len)) {
		/* A flood of bad messages must not flood the log too. */
		if (ep->sw_dropped++ < 10 || ep->sw_dropped % 10000 == 0)
			psc_log(PSC_LOG_WARN, ep->fab.rank, "dropping a malformed "
				"message of %zu bytes (%llu so far)", ev->len,
				(unsigned long long)ep->sw_dropped);
	} else if (tag == PSC_SW_CORE_TAG) {
		/* The sender's later first messages come by this ring. */
		psc_shmring_accept(ep, data, len);
	} else {
		psc_sw_match(ep, tag, data, len);
	}
	if (post_bounce(ep, b))
		psc_log(PSC_LOG_ERROR, ep->fab.rank, "cannot repost a receive "
			"buffer");
}

void psc_sw_recv(struct psc_ep *ep, struct ps_comm_request *r)
{
	struct psc_sw_unexp **pp;
	struct ps_comm_request **tail;

	for (pp = &ep->sh->sw_unexp; *pp; pp = &(*pp)->next)
		if (tag_matches(r, (*pp)->tag)) {
			struct psc_sw_unexp *u = *pp;

			*pp = u->next;
			deliver(u->ep, r, u->tag, u->data, u->len);
			free(u);
			return;
		}
	r->state = PSC_REQ_POSTED;
	r->next = NULL;
	for (tail = &ep->sh->sw_posted; *tail; tail = &(*tail)->next)
		;
	*tail = r;
}

void psc_sw_forget(struct psc_ep *ep)
{
	struct ps_comm_request **pp = &ep->sh->sw_posted;

	while (*pp) {
		if ((*pp)->ep == ep)
			*pp = (*pp)->next;
		else
			pp = &(*pp)->next;
	}
}

bool psc_sw_cancel(struct psc_ep *ep, struct ps_comm_request *r)
{
	for (struct ps_comm_request **pp = &ep->sh->sw_posted; *pp;
	     pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			r->next = NULL;
			psc_req_complete(r, -FI_ECANCELED);
			return true;
		}
	return false;
}
