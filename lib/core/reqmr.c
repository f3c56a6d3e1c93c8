/*
 * Registration of request buffers: the buffer and descriptor each posted
 * request goes with on providers that need descriptors, from its
 * parent's held range, a pinned or cached range, or a pre-registered
 * slot that small messages are copied through. The endpoint lock guards
 * it all.
 */
#include <string.h>
#include <sys/uio.h>

#include "core/ep_int.h"
#include "util/copy.h"
#include "util/util.h"

/* Whether r's buffer lies inside the range its parent holds. */
static struct psc_mr *parent_range(const struct ps_comm_request *r)
{
	const struct ps_comm_request *p = r->parent;

	return p && psc_mr_covers(p->mr, r->buf, r->len) ? p->mr : NULL;
}

/* Whether r goes through a slot: small (request scratch always is). */
static bool wants_slot(const struct psc_ep *ep, const struct ps_comm_request *r)
{
	return r->len <= psc_mr_bounce_size(ep->fab.mr);
}

int psc_reqmr_prepare(struct psc_ep *ep, struct ps_comm_request *r,
		       void **buf, void **desc)
{
	struct psc_mr *m;
	int rc;

	*buf = r->buf;
	*desc = NULL;
	if (r->mr_slot) {
		*buf = r->mr_slot->buf;
		*desc = r->mr_slot->mr->desc;
		return 0;
	}
	if (r->mr) {
		*desc = r->mr->desc;
		return 0;
	}
	if (r->len == 0)
		return 0;
	if ((m = parent_range(r)) != NULL) {
		*desc = m->desc;
		return 0;
	}
	/* Pinned ranges first: the first messages' buffers, user ones. */
	if (psc_mr_acquire_pinned(ep->fab.mr, r->buf, r->len, &r->mr) == 0) {
		*desc = r->mr->desc;
		return 0;
	}
	if (wants_slot(ep, r)) {
		rc = psc_mr_slot_get(ep->fab.mr, &r->mr_slot);
		if (rc)
			return rc;
		if (r->kind == PSC_REQ_SEND)
			psc_copy(r->mr_slot->buf, r->buf, r->len);
		*buf = r->mr_slot->buf;
		*desc = r->mr_slot->mr->desc;
		return 0;
	}
	rc = psc_mr_acquire(ep->fab.mr, r->buf, r->len, &r->mr);
	if (!rc)
		*desc = r->mr->desc;
	return rc;
}

int psc_reqmr_prepare_hdr(struct psc_ep *ep, struct ps_comm_request *r,
			   const void *hdr, size_t hdrlen, struct iovec *iov,
			   void **desc, size_t *count)
{
	bool flat = hdrlen + r->len <= psc_mr_slot_size(ep->fab.mr);
	int rc;

	if (!r->mr_slot) {
		rc = psc_mr_slot_get(ep->fab.mr, &r->mr_slot);
		if (rc)
			return rc;
		memcpy(r->mr_slot->buf, hdr, hdrlen);
		if (flat && r->len)
			psc_copy((char *)r->mr_slot->buf + hdrlen, r->buf,
			       r->len);
	}
	iov[0].iov_base = r->mr_slot->buf;
	iov[0].iov_len = flat ? hdrlen + r->len : hdrlen;
	desc[0] = r->mr_slot->mr->desc;
	*count = 1;
	if (flat)
		return 0;
	if (!r->mr) {
		rc = psc_mr_acquire(ep->fab.mr, r->buf, r->len, &r->mr);
		if (rc) {
			psc_reqmr_done(ep, r, 0);
			return rc;
		}
	}
	iov[1].iov_base = r->buf;
	iov[1].iov_len = r->len;
	desc[1] = r->mr->desc;
	*count = 2;
	return 0;
}

void psc_reqmr_done(struct psc_ep *ep, struct ps_comm_request *r, size_t got)
{
	if (r->mr_slot) {
		if (r->kind != PSC_REQ_SEND && got)
			psc_copy(r->buf, r->mr_slot->buf, PSC_MIN(got, r->len));
		psc_mr_slot_put(ep->fab.mr, r->mr_slot);
		r->mr_slot = NULL;
	}
	if (r->mr) {
		psc_mr_release(ep->fab.mr, r->mr);
		r->mr = NULL;
	}
}

int psc_reqmr_hold(struct psc_ep *ep, struct ps_comm_request *parent,
		    const void *buf, size_t len)
{
	if (!ep->fab.mr_local || parent->mr || len == 0)
		return 0;
	return psc_mr_acquire(ep->fab.mr, buf, len, &parent->mr);
}


int psc_ep_hold_range(struct psc_ep *ep, struct ps_comm_request *parent,
		      const void *buf, size_t len)
{
	return psc_reqmr_hold(ep, parent, buf, len);
}

int psc_ep_mem_pin(struct psc_ep *ep, const void *buf, size_t len,
		   struct ps_comm_mem **out)
{
	int rc;

	pthread_mutex_lock(ep->lock);
	rc = psc_mr_user_pin(ep->fab.mr, buf, len, out);
	pthread_mutex_unlock(ep->lock);
	return rc;
}

int psc_ep_mem_unpin(struct psc_ep *ep, struct ps_comm_mem *u)
{
	int rc;

	pthread_mutex_lock(ep->lock);
	rc = psc_mr_user_unpin(ep->fab.mr, u);
	pthread_mutex_unlock(ep->lock);
	return rc;
}
