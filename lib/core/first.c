/*
 * First messages, as the core carries them for the layer that matches
 * them (caps.sw_match): untagged receive buffers that stay posted, and
 * the hand-off of every arrival, from those buffers or from the shm
 * rings (shmring.c), to the first-message hook that layer registered
 * (core/ep.h, struct psc_first_ops). The core reads no tag and matches
 * nothing: a first message is an opaque 64-bit immediate (CQ data, on
 * providers that carry it intact) or a PSC_EP_FIRST_HDR-byte prefix the
 * layer above wrote, then a payload of at most ep->first_eager bytes.
 * The one immediate the core keeps for itself, PSC_FIRST_CORE_IMM,
 * announces a shm ring and never reaches the hook.
 */
#include <errno.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "util/log.h"

#define FIRST_BOUNCES 64

/*
 * Receive buffers to keep posted: at most half of the receives the
 * provider takes (ep->post_limit[1]), so that exact receives (a large
 * message's chunks) always find room. All of them posted on a short
 * queue (FI_OFI_RXM_RX_SIZE=64) left chunks queued behind bounces that no
 * message would complete, and the job hung.
 */
static int first_bounces(const struct psc_ep *ep)
{
	size_t limit = ep->post_limit[1];

	if (!limit || limit / 2 >= FIRST_BOUNCES)
		return FIRST_BOUNCES;
	return limit >= 2 ? (int)(limit / 2) : 1;
}

/* Post one receive buffer. Lock held. */
static int post_bounce(struct psc_ep *ep, struct ps_comm_request *b)
{
	b->state = PSC_REQ_QUEUED;
	return psc_ep_post(ep, b);
}

int psc_first_open(struct psc_ep *ep)
{
	size_t each = PSC_EP_FIRST_HDR + ep->first_eager;
	int n = first_bounces(ep);
	struct psc_mr *slab_mr;
	int rc = 0;

	/* One slab, so one registration covers every receive buffer. */
	ep->first_slab = malloc((size_t)n * each);
	if (!ep->first_slab)
		return -ENOMEM;
	pthread_mutex_lock(ep->lock);
	if (ep->fab.mr_local)
		rc = psc_mr_pin(ep->fab.mr, ep->first_slab, (size_t)n * each,
				&slab_mr);
	for (int i = 0; i < n && !rc; i++) {
		struct ps_comm_request *b = psc_req_alloc(ep, NULL,
							  PSC_REQ_BOUNCE);

		if (!b) {
			rc = -ENOMEM;
			break;
		}
		b->buf = (char *)ep->first_slab + (size_t)i * each;
		b->len = each;
		b->addr = FI_ADDR_UNSPEC;
		rc = post_bounce(ep, b);
	}
	pthread_mutex_unlock(ep->lock);
	return rc;
}

void psc_first_close(struct psc_ep *ep)
{
	/* Its registration went with the cache, before this. */
	free(ep->first_slab);
	ep->first_slab = NULL;
}

/*
 * The hook of an endpoint no layer registered one on: nothing can take
 * the message. Set at open, so delivering never tests for a hook.
 */
static void first_unclaimed(void *arg, struct psc_ep *ep, uint64_t imm,
			    const uint8_t *data, size_t len)
{
	(void)arg;
	(void)imm;
	(void)data;
	psc_log(PSC_LOG_WARN, ep->fab.rank, "dropping a first message of %zu "
		"bytes: no layer takes first messages on this endpoint", len);
}

void psc_first_init(struct psc_ep *ep)
{
	ep->first_fn = first_unclaimed;
	ep->first_arg = NULL;
}

/* Point ep's cached hook at sh's registration. Lock held. */
static void first_cache(struct psc_ep *ep)
{
	const struct psc_first_ops *ops = ep->sh->first_ops;

	if (!ops)
		return;
	ep->first_fn = ep->first_imm ? ops->arrive_imm : ops->arrive_hdr;
	ep->first_arg = ep->sh->first_arg;
}

void *psc_ep_first_register(struct psc_ep *ep,
			    const struct psc_first_ops *ops)
{
	struct psc_ep_shared *sh;
	void *arg = NULL;

	pthread_mutex_lock(ep->lock);
	sh = ep->sh;
	if (sh->first_ops == ops) {
		arg = sh->first_arg;
	} else if (!sh->first_ops && (arg = ops->create()) != NULL) {
		sh->first_ops = ops;
		sh->first_arg = arg;
		first_cache(ep);
		if (ep->pair)
			first_cache(ep->pair);
	}
	pthread_mutex_unlock(ep->lock);
	return arg;
}

void *psc_ep_first_arg(const struct psc_ep *ep)
{
	return ep->sh->first_arg;
}

void psc_first_pair(struct psc_ep *ep)
{
	first_cache(ep);
}

void psc_first_detach(struct psc_ep *ep)
{
	const struct psc_first_ops *ops = ep->sh->first_ops;

	if (ops)
		ops->detach(ep->sh->first_arg, ep);
}

void psc_first_destroy(struct psc_ep_shared *sh)
{
	if (sh->first_ops)
		sh->first_ops->destroy(sh->first_arg);
	sh->first_ops = NULL;
	sh->first_arg = NULL;
}

void psc_ep_first_due(struct psc_ep *ep, int by)
{
	ep->sh->first_due += (unsigned)by;
}

void psc_first_poll(struct psc_ep *ep)
{
	const struct psc_first_ops *ops = ep->sh->first_ops;

	if (ops && ops->poll)
		ops->poll(ep->sh->first_arg, ep);
}

bool psc_first_withdraw(struct psc_ep *ep, struct ps_comm_request *r)
{
	const struct psc_first_ops *ops = ep->sh->first_ops;

	return ops && ops->withdraw(ep->sh->first_arg, r);
}

/* A malformed arrival: say so, without flooding the log. */
static void first_malformed(struct psc_ep *ep, size_t len)
{
	if (ep->first_dropped++ < 10 || ep->first_dropped % 10000 == 0)
		psc_log(PSC_LOG_WARN, ep->fab.rank, "dropping a malformed "
			"message of %zu bytes (%llu so far)", len,
			(unsigned long long)ep->first_dropped);
}

void psc_first_arrival(struct psc_ep *ep, struct ps_comm_request *b,
		       const struct fi_cq_tagged_entry *ev)
{
	if (!ep->first_imm)
		/* The prefix is the hook's to read. */
		psc_first_deliver(ep, 0, b->buf, ev->len);
	else if (!(ev->flags & FI_REMOTE_CQ_DATA))
		first_malformed(ep, ev->len);
	else if (ev->data == PSC_FIRST_CORE_IMM)
		/* The sender's later first messages come by this ring. */
		psc_shmring_accept(ep, b->buf, ev->len);
	else
		psc_first_deliver(ep, ev->data, b->buf, ev->len);
	if (post_bounce(ep, b))
		psc_log(PSC_LOG_ERROR, ep->fab.rank, "cannot repost a receive "
			"buffer");
}
