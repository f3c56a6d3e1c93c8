/*
 * Requests: allocation on the endpoint's live list, completion and its
 * propagation from a large message's children to their parent, the EAGAIN
 * queues, and the public test/wait/waitall. A request that its owner
 * abandoned (timeout, finalize) stays alive until libfabric is done with
 * its fi_context2, then frees itself.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "psc.h"

struct ps_comm_request *psc_req_alloc_ep(struct psc_ep *ep,
					 enum psc_req_kind kind)
{
	struct ps_comm_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->kind = kind;
	r->state = PSC_REQ_QUEUED;
	r->ep = ep;
	r->status.source = -1;
	r->status.tag = -1;
	r->live_next = ep->live;
	if (ep->live)
		ep->live->live_prev = r;
	ep->live = r;
	return r;
}

struct ps_comm_request *psc_req_alloc(struct ps_comm *comm,
				      enum psc_req_kind kind)
{
	struct ps_comm_request *r = psc_req_alloc_ep(comm->ep, kind);

	if (r)
		r->comm = comm;
	return r;
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
	if (r->live_prev)
		r->live_prev->live_next = r->live_next;
	else
		ep->live = r->live_next;
	if (r->live_next)
		r->live_next->live_prev = r->live_prev;
	/* Closing with operations posted: their holds go with them. */
	psc_mr_req_done(ep, r, 0);
	if (r->owns_buf) {
		/* A cached registration must not outlive the memory. */
		if (ep->mr)
			psc_mr_invalidate(ep->mr, r->buf, r->len);
		free(r->buf);
	}
	free(r);
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
	__atomic_store_n(&r->state, PSC_REQ_DONE, __ATOMIC_RELEASE);
}

void psc_req_complete(struct ps_comm_request *r, int err)
{
	struct ps_comm_request *p = r->parent;

	if (err && !(err == PS_COMM_ERR_TRUNCATE && r->expect_trunc) &&
	    !r->status.error)
		r->status.error = err;
	/* Done with the buffer (a parent: with its children's range). */
	psc_mr_req_done(r->ep, r, 0);
	req_mark_done(r);
	if (!p)
		goto maybe_free;
	/* Children are freed with their parent; only report upwards. */
	if (r->status.error && !p->status.error)
		p->status.error = r->status.error;
	if (--p->children_left > 0)
		return;
	r = p;
	psc_mr_req_done(r->ep, r, 0);
	req_mark_done(r);
maybe_free:
	if (r->abandoned)
		psc_req_free(r);
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
int psc_req_reap(ps_comm_request_t *req, ps_comm_status_t *status)
{
	struct ps_comm_request *r = *req;
	struct psc_ep *ep = r->ep;
	int err = r->status.error;

	if (status)
		*status = r->status;
	pthread_mutex_lock(&ep->lock);
	psc_req_free(r);
	pthread_mutex_unlock(&ep->lock);
	*req = NULL;
	return err;
}

int ps_comm_test(ps_comm_request_t *req, int *done, ps_comm_status_t *status)
{
	struct ps_comm_request *r;

	if (!req || !done)
		return PS_COMM_ERR_ARG;
	r = *req;
	if (!r) {
		*done = 1;
		if (status)
			memset(status, 0, sizeof(*status));
		return 0;
	}
	if (!psc_req_done(r)) {
		pthread_mutex_lock(&r->ep->lock);
		psc_progress(r->ep);
		pthread_mutex_unlock(&r->ep->lock);
		psc_progress_hooks();
	}
	*done = psc_req_done(r);
	return *done ? psc_req_reap(req, status) : 0;
}

static bool req_done_pred(void *arg)
{
	return psc_req_done(arg);
}

/* Cancel every piece of r that libfabric still holds. Lock held. */
static void req_cancel_tree(struct ps_comm_request *r)
{
	if (r->kind == PSC_REQ_PARENT) {
		for (struct ps_comm_request *k = r->kids; k; k = k->sibling)
			if (!psc_req_done(k))
				psc_ep_cancel(r->ep, k);
	} else if (!psc_req_done(r)) {
		psc_ep_cancel(r->ep, r);
	}
}

int psc_wait(ps_comm_request_t *req, ps_comm_status_t *status,
	     double deadline)
{
	struct ps_comm_request *r = *req;
	struct psc_ep *ep = r->ep;

	if (psc_ep_wait(ep, req_done_pred, r, deadline) == 0)
		return psc_req_reap(req, status);
	if (r->abort) {
		/* A collective withdraws its own pieces, then completes. */
		r->abort(r, PS_COMM_ERR_TIMEOUT);
		psc_ep_wait(ep, req_done_pred, r, 0);
		psc_comm_set_error(r->comm, "collective timed out after "
				   "PS_COMM_OP_TIMEOUT=%g s: a peer did not "
				   "take part", r->comm->op_timeout);
		return psc_req_reap(req, status);
	}
	pthread_mutex_lock(&ep->lock);
	if (psc_req_done(r)) {
		pthread_mutex_unlock(&ep->lock);
		return psc_req_reap(req, status);
	}
	/* Abandon it: it frees itself once libfabric lets go of it. */
	req_cancel_tree(r);
	if (status) {
		*status = r->status;
		status->error = PS_COMM_ERR_TIMEOUT;
	}
	/* Before r may be freed: a queued request is cancelled at once. */
	psc_comm_set_error(r->comm, "operation timed out after "
			   "PS_COMM_OP_TIMEOUT=%g s: the peer did not answer",
			   r->comm->op_timeout);
	if (psc_req_done(r))
		psc_req_free(r);
	else
		r->abandoned = true;
	pthread_mutex_unlock(&ep->lock);
	*req = NULL;
	return PS_COMM_ERR_TIMEOUT;
}

int psc_req_cancel(ps_comm_request_t *req)
{
	struct ps_comm_request *r = *req;
	struct psc_ep *ep = r->ep;
	int rc = 0;

	*req = NULL;
	pthread_mutex_lock(&ep->lock);
	req_cancel_tree(r);
	/* Providers report a cancel as a CQ error entry: reap it. */
	for (int i = 0; i < 100 && !psc_req_done(r); i++)
		psc_progress(ep);
	if (psc_req_done(r)) {
		psc_req_free(r);
	} else {
		r->abandoned = true;
		rc = -EBUSY;
	}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

int ps_comm_wait(ps_comm_request_t *req, ps_comm_status_t *status)
{
	if (!req)
		return PS_COMM_ERR_ARG;
	if (!*req) {
		if (status)
			memset(status, 0, sizeof(*status));
		return 0;
	}
	return psc_wait(req, status, psc_comm_op_deadline((*req)->comm));
}

int ps_comm_waitall(size_t n, ps_comm_request_t *reqs,
		    ps_comm_status_t *statuses)
{
	int first = 0;

	if (n && !reqs)
		return PS_COMM_ERR_ARG;
	for (size_t i = 0; i < n; i++) {
		int rc = ps_comm_wait(&reqs[i], statuses ? &statuses[i] : NULL);

		if (rc && !first)
			first = rc;
	}
	return first;
}
