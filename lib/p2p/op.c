/*
 * p2p's operation interface for the layers above it: channel accessors,
 * calls on request handles, and operations that are no single message
 * (a running collective). Such an operation gets a GENERIC request of
 * the core, whose abort op is p2p's, and a progress source of the
 * channel's endpoint, so the layer above never takes the endpoint lock,
 * allocates or writes a request, or registers a source itself.
 */
#include <errno.h>
#include <stddef.h>

#include "p2p/chan.h"
#include "util/util.h"

int psc_chan_rank(const struct psc_chan *ch)
{
	return ch->rank;
}

int psc_chan_size(const struct psc_chan *ch)
{
	return ch->size;
}

unsigned psc_chan_user_bits(const struct psc_chan *ch)
{
	return ch->tl.user_bits;
}

uint32_t psc_p2p_ctx_next(void)
{
	return psc_ctx_next();
}

void psc_p2p_ctx_reserve(uint32_t ctx)
{
	psc_ctx_reserve(ctx);
}

bool psc_p2p_done(const struct ps_comm_request *r)
{
	return psc_req_done(r);
}

int psc_p2p_reap(ps_comm_request_t *req, ps_comm_status_t *status,
		 char **words)
{
	return psc_req_reap(req, status, words);
}

int psc_p2p_cancel(ps_comm_request_t *req)
{
	return psc_req_cancel(req);
}

struct psc_chan *psc_p2p_chan(const struct ps_comm_request *r)
{
	return r->owner;
}

bool psc_p2p_is_op(const struct ps_comm_request *r)
{
	return r->kind == PSC_REQ_GENERIC;
}

int psc_p2p_progress(const struct ps_comm_request *r)
{
	return psc_ep_progress(r->ep);
}

/* Complete the operation's request with its result, then release it. */
static void op_finish(struct psc_prog_src *src)
{
	struct psc_chan_op *op = psc_container_of(src, struct psc_chan_op, src);
	struct psc_ep *ep = op->ch->ep;

	psc_ep_lock(ep);
	psc_req_complete(op->req, op->result);
	psc_ep_unlock(ep);
	op->release(op);
}

/*
 * Advance the operation; once it is over, leave the endpoint's sources.
 * The request forgets it first, so an abort never reaches an operation
 * being released.
 */
static int op_poll(struct psc_prog_src *src)
{
	struct psc_chan_op *op = psc_container_of(src, struct psc_chan_op, src);
	int moved = op->poll(op);

	if (op->over) {
		op->req->ctx = NULL;
		src->finished = true;
	}
	return moved;
}

struct abort_arg {
	struct ps_comm_request *r;
	int err;
};

/* Fail a running operation (no source is being polled meanwhile). */
static void abort_unpolled(void *arg)
{
	struct abort_arg *a = arg;
	struct psc_chan_op *op = a->r->ctx;

	if (op && op->abort)
		op->abort(op, a->err);
}

/* The request's abort op: fail the operation with err (a timeout). */
static void op_abort(struct ps_comm_request *r, int err)
{
	struct abort_arg a = {r, err};

	/* The next poll completes it. */
	psc_ep_with_sources(r->ep, abort_unpolled, &a);
}

static const struct psc_req_ops op_req_ops = {
	.size = sizeof(struct psc_req_ops),
	.abort = op_abort,
};

int psc_chan_op_start(struct psc_chan *ch, struct psc_chan_op *op,
		      ps_comm_request_t *req)
{
	struct psc_ep *ep = ch->ep;
	struct ps_comm_request *r;
	int failed;

	psc_ep_lock(ep);
	failed = ch->aborted ? -ESHUTDOWN
			     : psc_ep_owner_failed(ep, ch, NULL, 0);
	r = failed ? NULL : psc_req_alloc(ep, ch, PSC_REQ_GENERIC);
	if (r) {
		r->ctx = op;
		r->ops = &op_req_ops;
		r->status.source = ch->rank;
	}
	psc_ep_unlock(ep);
	if (!r)
		return failed ? failed : -ENOMEM;
	op->req = r;
	op->ch = ch;
	op->over = false;
	op->src.poll = op_poll;
	op->src.finish = op_finish;
	/* Appended: older operations get progressed first. */
	psc_ep_add_source(ep, &op->src);
	*req = r;
	psc_ep_run_sources(ep);
	return 0;
}
