/*
 * Requests: allocation on the endpoint's live list, completion and its
 * propagation from a large message's children to their parent, the EAGAIN
 * queues, reaping, cancelling and waiting. A request that its owner
 * abandoned (timeout, finalize) stays alive until libfabric is done with
 * its fi_context2, then frees itself.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "core/ep_int.h"
#include "util/util.h"

/* Put r on ep's live list. Lock held. */
static void live_link(struct ps_comm_request *r, struct psc_ep *ep)
{
	r->ep = ep;
	r->live_prev = NULL;
	r->live_next = ep->live;
	if (ep->live)
		ep->live->live_prev = r;
	ep->live = r;
}

struct ps_comm_request *psc_req_alloc(struct psc_ep *ep, void *owner,
				      enum psc_req_kind kind)
{
	struct ps_comm_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->kind = kind;
	r->state = PSC_REQ_QUEUED;
	r->magic = PSC_REQ_MAGIC;
	r->owner = owner;
	r->status.source = -1;
	r->status.tag = -1;
	live_link(r, ep);
	return r;
}

/* Take r off its endpoint's live list. Lock held. */
static void live_unlink(struct ps_comm_request *r)
{
	if (r->live_prev)
		r->live_prev->live_next = r->live_next;
	else
		r->ep->live = r->live_next;
	if (r->live_next)
		r->live_next->live_prev = r->live_prev;
	r->live_prev = r->live_next = NULL;
}

void psc_req_move(struct ps_comm_request *r, struct psc_ep *ep)
{
	live_unlink(r);
	live_link(r, ep);
}

/* Give back r's unit of psc_ep_ahead_take, if it holds one. Lock held. */
static void ahead_give(struct ps_comm_request *r)
{
	if (r->ahead) {
		r->ahead = false;
		r->ep->ahead--;
	}
}

void psc_req_free(struct ps_comm_request *r)
{
	struct psc_ep *ep = r->ep;

	while (r->kids) {
		struct ps_comm_request *k = r->kids;

		r->kids = k->sibling;
		k->parent = NULL;
		psc_req_free(k);
	}
	live_unlink(r);
	ahead_give(r);
	/* Closing with operations posted: their holds go with them. */
	psc_reqmr_done(ep, r, 0);
	if (r->owns_buf) {
		/* A cached registration must not outlive the memory. */
		if (ep->fab.mr)
			psc_mr_invalidate(ep->fab.mr, r->buf, r->len);
		free(r->buf);
	}
	if (r->errmsg)
		free(r->errmsg);
	psc_magic_clear(&r->magic);
	free(r);
}

bool psc_req_valid(const struct ps_comm_request *r)
{
	/*
	 * Internal requests (first-message buffers, children) are never
	 * the caller's: one that took a freed handle's memory is no match.
	 */
	return r->magic == PSC_REQ_MAGIC && r->kind != PSC_REQ_BOUNCE &&
	       !r->parent;
}

void psc_req_adopt(struct ps_comm_request *parent,
		   struct ps_comm_request *child)
{
	child->parent = parent;
	child->sibling = parent->kids;
	parent->kids = child;
	parent->children_left++;
}

bool psc_req_done(const struct ps_comm_request *r)
{
	return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == PSC_REQ_DONE;
}

/* Mark done: the release store pairs with psc_req_done(). */
static void req_mark_done(struct ps_comm_request *r)
{
	ahead_give(r);
	__atomic_store_n(&r->state, PSC_REQ_DONE, __ATOMIC_RELEASE);
}

void psc_req_complete(struct ps_comm_request *r, int err)
{
	struct ps_comm_request *p = r->parent;

	if (err && !(err == -FI_ETRUNC && r->expect_trunc) &&
	    !r->status.error)
		r->status.error = err;
	/* Done with the buffer (a parent: with its children's range). */
	psc_reqmr_done(r->ep, r, 0);
	req_mark_done(r);
	if (!p)
		goto maybe_free;
	/* Children are freed with their parent; only report upwards. */
	if (r->status.error && !p->status.error)
		p->status.error = r->status.error;
	/* A failed parent's parked children wait for nothing any more. */
	if (p->status.error && p->status.error != -FI_ETRUNC)
		for (struct ps_comm_request *k = p->kids; k; k = k->sibling)
			if (k != r && k->state == PSC_REQ_PARKED)
				psc_req_complete(k, 0);
	if (r->errmsg && !p->errmsg) {
		p->errmsg = r->errmsg;
		r->errmsg = NULL;
	}
	if (--p->children_left > 0)
		return;
	r = p;
	psc_reqmr_done(r->ep, r, 0);
	req_mark_done(r);
maybe_free:
	if (r->abandoned)
		psc_req_free(r);
}

void psc_req_set_errmsg(struct ps_comm_request *r, const char *fmt, ...)
{
	va_list ap;

	if (r->errmsg)
		return;
	va_start(ap, fmt);
	if (vasprintf(&r->errmsg, fmt, ap) < 0)
		r->errmsg = NULL;
	va_end(ap);
}

void psc_queue_push(struct psc_req_queue *q, struct ps_comm_request *r)
{
	r->next = NULL;
	if (q->tail)
		q->tail->next = r;
	else
		q->head = r;
	q->tail = r;
}

struct ps_comm_request *psc_queue_pop(struct psc_req_queue *q)
{
	struct ps_comm_request *r = q->head;

	if (r) {
		q->head = r->next;
		if (!q->head)
			q->tail = NULL;
		r->next = NULL;
	}
	return r;
}

bool psc_queue_remove(struct psc_req_queue *q, struct ps_comm_request *r)
{
	struct ps_comm_request *prev = NULL;

	for (struct ps_comm_request *i = q->head; i; prev = i, i = i->next) {
		if (i != r)
			continue;
		if (prev)
			prev->next = i->next;
		else
			q->head = i->next;
		if (q->tail == i)
			q->tail = prev;
		i->next = NULL;
		return true;
	}
	return false;
}

/* Hand a completed request's result to the caller and free it. */
static inline __attribute__((always_inline)) int
reap(ps_comm_request_t *req, ps_comm_status_t *status, char **words)
{
	struct ps_comm_request *r = *req;
	struct psc_ep *ep = r->ep;
	int err = r->status.error;

	if (status)
		*status = r->status;
	if (words) {
		*words = r->errmsg;
		r->errmsg = NULL;
	}
	pthread_mutex_lock(ep->lock);
	psc_req_free(r);
	pthread_mutex_unlock(ep->lock);
	*req = NULL;
	return err;
}

int psc_req_reap(ps_comm_request_t *req, ps_comm_status_t *status,
		 char **words)
{
	return reap(req, status, words);
}

static bool req_done_pred(void *arg)
{
	return psc_req_done(arg);
}

void psc_req_cancel_tree(struct ps_comm_request *r)
{
	if (r->kind == PSC_REQ_PARENT) {
		for (struct ps_comm_request *k = r->kids; k; k = k->sibling)
			if (!psc_req_done(k))
				psc_ep_cancel(r->ep, k);
	} else if (!psc_req_done(r)) {
		psc_ep_cancel(r->ep, r);
	}
}

bool psc_req_settled(struct ps_comm_request *r)
{
	return psc_req_done(r) ||
	       psc_ep_owner_failed(r->ep, r->owner, NULL, 0) != 0;
}

static bool req_settled_pred(void *arg)
{
	return psc_req_settled(arg);
}

/* words for the caller: the request's own, else the failure's. */
static void give_words(char **words, char *mine, const char *fail)
{
	if (!words) {
		free(mine);
		return;
	}
	*words = mine ? mine : (fail[0] ? strdup(fail) : NULL);
}

/* r frees itself once done; nobody holds its handle any more. Lock held. */
static void abandon(struct ps_comm_request *r)
{
	r->abandoned = true;
	r->magic = 0;
}

int psc_wait(ps_comm_request_t *req, ps_comm_status_t *status,
	     double deadline, char **words)
{
	struct ps_comm_request *r = *req;
	struct psc_ep *ep = r->ep;
	char fail[512] = "";
	char *mine;
	int err;

	if (psc_ep_wait(ep, req_settled_pred, r, deadline) == 0 &&
	    psc_req_done(r))
		return reap(req, status, words);
	/* Its owner failed (a peer died), or the deadline passed. */
	err = psc_ep_owner_failed(ep, r->owner, fail, sizeof(fail));
	if (!err)
		err = -ETIMEDOUT;
	if (r->ops && r->ops->abort) {
		/* Its owner withdraws the pieces, then completes it. */
		r->ops->abort(r, err);
		psc_ep_wait(ep, req_done_pred, r, 0);
		err = reap(req, status, &mine);
		give_words(words, mine, fail);
		return err;
	}
	pthread_mutex_lock(ep->lock);
	if (psc_req_done(r)) {
		pthread_mutex_unlock(ep->lock);
		return reap(req, status, words);
	}
	/* Abandon it: it frees itself once libfabric lets go of it. */
	psc_req_cancel_tree(r);
	if (status) {
		*status = r->status;
		status->error = err;
	}
	give_words(words, NULL, fail);
	/* A queued request is cancelled at once: free it now. */
	if (psc_req_done(r))
		psc_req_free(r);
	else
		abandon(r);
	pthread_mutex_unlock(ep->lock);
	*req = NULL;
	return err;
}

int psc_req_cancel(ps_comm_request_t *req)
{
	struct ps_comm_request *r = *req;
	struct psc_ep *ep = r->ep;
	int rc = 0;

	*req = NULL;
	pthread_mutex_lock(ep->lock);
	psc_req_cancel_tree(r);
	/* Providers report a cancel as a CQ error entry: reap it. */
	for (int i = 0; i < 100 && !psc_req_done(r); i++)
		psc_progress(ep);
	if (psc_req_done(r)) {
		psc_req_free(r);
	} else {
		abandon(r);
		rc = -EBUSY;
	}
	pthread_mutex_unlock(ep->lock);
	return rc;
}
