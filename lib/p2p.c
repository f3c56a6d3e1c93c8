/*
 * Point-to-point: the tag layout, argument checks, and tagged send and
 * receive, including messages larger than the provider's max_msg_size.
 *
 * A large message is a 24-byte header (magic, total length, stream id)
 * sent with the user's tag and the "large" bit, followed by chunks of at
 * most max_msg_size sent on the continuation protocol with a tag made of
 * the sender's rank and the stream id. The receiver's first receive
 * matches header or small message alike; on a header it posts one receive
 * per chunk with the exact continuation tag, so chunks of different
 * messages can never mix, and the send order of first pieces keeps MPI's
 * non-overtaking rule.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "psc.h"

#define LARGE_MAGIC 0x5053434cu /* "PSCL" */
#define LARGE_HDR_LEN 24

/* ------------------------------------------------------- tag layout */

static uint64_t mask_of(unsigned bits)
{
	return bits >= 64 ? ~0ULL : ((1ULL << bits) - 1);
}

int psc_tag_layout_init(struct psc_tag_layout *l, uint64_t mem_tag_format)
{
	unsigned bits = psc_tag_bits_from_format(mem_tag_format);
	unsigned fixed = PSC_TAG_PROTO_BITS + 1 + PSC_TAG_CTX_BITS +
			 PSC_TAG_RANK_BITS;

	memset(l, 0, sizeof(*l));
	if (bits < fixed + PSC_TAG_MIN_USER_BITS)
		return -ENOSPC;
	l->usable_bits = bits;
	l->user_bits = PSC_MIN(bits - fixed, (unsigned)PSC_TAG_MAX_USER_BITS);
	l->rank_shift = l->user_bits;
	l->ctx_shift = l->rank_shift + PSC_TAG_RANK_BITS;
	l->large_shift = l->ctx_shift + PSC_TAG_CTX_BITS;
	l->proto_shift = l->large_shift + 1;
	l->user_mask = mask_of(l->user_bits);
	l->rank_mask = mask_of(PSC_TAG_RANK_BITS) << l->rank_shift;
	l->ctx_mask = mask_of(PSC_TAG_CTX_BITS) << l->ctx_shift;
	l->large_bit = 1ULL << l->large_shift;
	l->proto_mask = mask_of(PSC_TAG_PROTO_BITS) << l->proto_shift;
	l->tag_ub = (int)l->user_mask;
	return 0;
}

uint64_t psc_tag_make(const struct psc_tag_layout *l, unsigned proto,
		      bool large, uint32_t ctx, uint32_t rank, uint32_t tag)
{
	return ((uint64_t)proto << l->proto_shift & l->proto_mask) |
	       (large ? l->large_bit : 0) |
	       ((uint64_t)ctx << l->ctx_shift & l->ctx_mask) |
	       ((uint64_t)rank << l->rank_shift & l->rank_mask) |
	       (tag & l->user_mask);
}

void psc_tag_match(const struct psc_tag_layout *l, unsigned proto,
		   uint32_t ctx, int src, int64_t tag, uint64_t *tagp,
		   uint64_t *ignore)
{
	*ignore = l->large_bit;
	if (src < 0)
		*ignore |= l->rank_mask;
	if (tag < 0)
		*ignore |= l->user_mask;
	*tagp = psc_tag_make(l, proto, false, ctx, src < 0 ? 0 : (uint32_t)src,
			     tag < 0 ? 0 : (uint32_t)tag);
}

uint32_t psc_tag_rank(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)((t & l->rank_mask) >> l->rank_shift);
}

uint32_t psc_tag_user(const struct psc_tag_layout *l, uint64_t t)
{
	return (uint32_t)(t & l->user_mask);
}

unsigned psc_tag_proto(const struct psc_tag_layout *l, uint64_t t)
{
	return (unsigned)((t & l->proto_mask) >> l->proto_shift);
}

bool psc_tag_is_large(const struct psc_tag_layout *l, uint64_t t)
{
	return (t & l->large_bit) != 0;
}

/* ------------------------------------------------------ send, recv */

/* The largest message sent as one piece. */
static size_t single_limit(const struct psc_ep *ep)
{
	return ep->caps.sw_match ? ep->sw_eager : ep->caps.max_msg_size;
}

/*
 * Send r as the first piece of a message: untagged with a header under
 * software matching, else tagged. Lock held.
 */
static int post_first_send(struct psc_ep *ep, struct ps_comm_request *r)
{
	if (ep->caps.sw_match) {
		r->untagged = true;
		psc_sw_encode_hdr(r);
	}
	return psc_ep_post(ep, r);
}

/* Create and post one child operation of parent. Lock held. */
static int post_child(struct ps_comm_request *parent, enum psc_req_kind kind,
		      void *buf, size_t len, uint64_t tag, uint64_t ignore,
		      bool first)
{
	struct ps_comm *c = parent->comm;
	struct ps_comm_request *k = psc_req_alloc(c, kind);
	int rc;

	if (!k)
		return -ENOMEM;
	k->buf = buf;
	k->len = len;
	k->tag = tag;
	k->ignore = ignore;
	k->addr = parent->addr;
	k->data = len;
	psc_req_adopt(parent, k);
	rc = first ? post_first_send(c->ep, k) : psc_ep_post(c->ep, k);
	if (rc)
		psc_req_complete(k, psc_err_from_fi(rc));
	return rc;
}

/* Post a large send as a header plus chunks. Lock held. */
static int isend_large(struct ps_comm *c, struct ps_comm_request *p,
		       unsigned proto, const void *buf, size_t len,
		       uint32_t src, uint32_t tag)
{
	const struct psc_tag_layout *tl = &c->ep->tl;
	size_t max = c->ep->caps.max_msg_size;
	uint32_t seq = (uint32_t)(c->large_seq++ & tl->user_mask);
	uint64_t ctag = psc_tag_make(tl, PSC_PROTO_CONT, false, c->ctx,
				     src, seq);
	int rc;

	psc_be_put(p->scratch, LARGE_MAGIC, 4);
	psc_be_put(p->scratch + 4, 0, 4);
	psc_be_put(p->scratch + 8, len, 8);
	psc_be_put(p->scratch + 16, seq, 4);
	psc_be_put(p->scratch + 20, 0, 4);
	/* One registration for all chunks; without it each finds its own. */
	psc_mr_req_hold(c->ep, p, buf, len);
	/* Hold a reference so the parent cannot complete while posting. */
	p->children_left++;
	rc = post_child(p, PSC_REQ_SEND, p->scratch, LARGE_HDR_LEN,
			psc_tag_make(tl, proto, true, c->ctx, src, tag), 0,
			true);
	for (size_t off = 0; rc == 0 && off < len; off += max)
		rc = post_child(p, PSC_REQ_SEND, (char *)buf + off,
				PSC_MIN(max, len - off), ctag, 0, false);
	p->children_left--;
	if (p->children_left == 0)
		psc_req_complete(p, p->status.error);
	return 0;
}

int psc_isend(struct ps_comm *c, unsigned proto, const void *buf,
	      size_t len, int peer, uint32_t tag, ps_comm_request_t *req)
{
	return psc_isend_to(c, proto, buf, len, c->peers[peer],
			    (uint32_t)c->rank, tag, req);
}

int psc_isend_to(struct ps_comm *c, unsigned proto, const void *buf,
		 size_t len, fi_addr_t addr, uint32_t src, uint32_t tag,
		 ps_comm_request_t *req)
{
	struct psc_ep *ep = c->ep;
	struct ps_comm_request *r;
	int rc = 0;

	pthread_mutex_lock(&ep->lock);
	if (c->aborted) {
		pthread_mutex_unlock(&ep->lock);
		return PS_COMM_ERR_ABORTED;
	}
	r = psc_req_alloc(c, len > single_limit(ep) ? PSC_REQ_PARENT
						    : PSC_REQ_SEND);
	if (!r) {
		pthread_mutex_unlock(&ep->lock);
		return PS_COMM_ERR_NOMEM;
	}
	r->addr = addr;
	r->status.source = (int)src;
	r->status.tag = (int)tag;
	r->status.len = len;
	if (r->kind == PSC_REQ_PARENT) {
		rc = isend_large(c, r, proto, buf, len, src, tag);
	} else {
		r->buf = (void *)buf;
		r->len = len;
		r->data = len;
		/* Finalize must know its messages left before it closes. */
		r->no_inject = proto == PSC_PROTO_CTRL;
		r->tag = psc_tag_make(&ep->tl, proto, false, c->ctx, src,
				      tag);
		rc = post_first_send(ep, r);
	}
	if (rc) {
		psc_comm_set_error(c, "posting a send to fi_addr %llu "
				   "failed: %s", (unsigned long long)addr,
				   fi_strerror(-rc));
		psc_req_free(r);
		pthread_mutex_unlock(&ep->lock);
		return psc_err_from_fi(rc);
	}
	*req = r;
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

int psc_irecv(struct ps_comm *c, unsigned proto, void *buf, size_t len,
	      int peer, int64_t tag, ps_comm_request_t *req)
{
	struct psc_ep *ep = c->ep;
	struct ps_comm_request *r;
	int rc;

	pthread_mutex_lock(&ep->lock);
	if (c->aborted) {
		pthread_mutex_unlock(&ep->lock);
		return PS_COMM_ERR_ABORTED;
	}
	r = psc_req_alloc(c, PSC_REQ_RECV);
	if (!r) {
		pthread_mutex_unlock(&ep->lock);
		return PS_COMM_ERR_NOMEM;
	}
	r->first = true;
	r->user_buf = buf;
	r->user_len = len;
	/* Short buffers receive into scratch so a large header always fits. */
	if (len < LARGE_HDR_LEN) {
		r->buf = r->scratch;
		r->len = sizeof(r->scratch);
	} else {
		r->buf = buf;
		r->len = PSC_MIN(len, ep->caps.max_msg_size);
	}
	r->addr = FI_ADDR_UNSPEC;
	psc_tag_match(&ep->tl, proto, c->ctx, peer, tag, &r->tag, &r->ignore);
	rc = 0;
	if (ep->caps.sw_match)
		psc_sw_recv(ep, r);
	else
		rc = psc_ep_post(ep, r);
	if (rc) {
		psc_comm_set_error(c, "posting a receive failed: %s",
				   fi_strerror(-rc));
		psc_req_free(r);
		pthread_mutex_unlock(&ep->lock);
		return psc_err_from_fi(rc);
	}
	*req = r;
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

/*
 * Receive a chunk that does not fit: into a buffer of its full size, so
 * the provider never truncates (rxm drops the connection when it does);
 * the part that fits is copied out on completion.
 */
static int post_discard(struct ps_comm_request *r, void *dst, size_t take,
			size_t n, uint64_t tag, uint64_t ignore)
{
	void *tmp = malloc(n ? n : 1);
	int rc;

	if (!tmp)
		return -ENOMEM;
	rc = post_child(r, PSC_REQ_RECV, tmp, n, tag, ignore, false);
	r->kids->owns_buf = true;
	r->kids->user_buf = dst;
	r->kids->user_len = take;
	return rc;
}

/* Turn r into the parent of one receive per chunk of a large message. */
static int recv_large(struct ps_comm_request *r, const uint8_t *hdr)
{
	struct ps_comm *c = r->comm;
	const struct psc_tag_layout *tl = &c->ep->tl;
	size_t max = c->ep->caps.max_msg_size;
	uint64_t total, ctag, ignore;
	uint32_t seq;
	int rc = 0;

	if (psc_be_get(hdr, 4) != LARGE_MAGIC)
		return PS_COMM_ERR_PROTO;
	total = psc_be_get(hdr + 8, 8);
	seq = (uint32_t)psc_be_get(hdr + 16, 4);
	psc_tag_match(tl, PSC_PROTO_CONT, c->ctx, r->status.source, seq,
		      &ctag, &ignore);
	r->kind = PSC_REQ_PARENT;
	r->status.len = PSC_MIN(total, r->user_len);
	psc_mr_req_hold(c->ep, r, r->user_buf, r->status.len);
	if (total > r->user_len)
		r->status.error = PS_COMM_ERR_TRUNCATE;
	r->children_left++;
	for (uint64_t off = 0; rc == 0 && off < total; off += max) {
		size_t n = PSC_MIN(max, total - off);
		size_t room = off >= r->user_len ? 0 : r->user_len - off;
		size_t take = PSC_MIN(n, room);
		char *dst = (char *)r->user_buf + (off < r->user_len ? off
						     : r->user_len);

		if (take < n && r->comm->ep->caps.sw_match)
			rc = post_discard(r, dst, take, n, ctag, ignore);
		else
			rc = post_child(r, PSC_REQ_RECV, dst, take, ctag,
					ignore, false);
		if (take < n)
			r->kids->expect_trunc = true;
	}
	r->children_left--;
	if (r->children_left == 0) {
		psc_req_complete(r, r->status.error);
		return 1;
	}
	return rc ? psc_err_from_fi(rc) : 1;
}

int psc_p2p_first_recv(struct ps_comm_request *r,
		       const struct fi_cq_tagged_entry *ev)
{
	const struct psc_tag_layout *tl = &r->ep->tl;
	size_t got = ev->len;

	r->first = false;
	r->status.source = (int)psc_tag_rank(tl, ev->tag);
	r->status.tag = (int)psc_tag_user(tl, ev->tag);
	/* A provider that truncates silently: the sender's length says so. */
	if (r->ep->caps.len_in_cq_data && (ev->flags & FI_REMOTE_CQ_DATA) &&
	    (uint32_t)ev->data != (uint32_t)got) {
		r->status.error = PS_COMM_ERR_TRUNCATE;
		got = PSC_MIN((size_t)(uint32_t)ev->data, r->len);
		if ((uint32_t)ev->data > r->len)
			got = r->len + 1; /* more than fitted */
	}
	if (psc_tag_is_large(tl, ev->tag) && got == LARGE_HDR_LEN)
		return recv_large(r, r->buf);
	/* A zero-length receive may have a NULL buffer: copy nothing. */
	if (r->buf == r->scratch && PSC_MIN(got, r->user_len))
		memcpy(r->user_buf, r->scratch, PSC_MIN(got, r->user_len));
	if (got > r->user_len)
		r->status.error = PS_COMM_ERR_TRUNCATE;
	r->status.len = PSC_MIN(got, r->user_len);
	return r->status.error;
}

/* ------------------------------------------------------- public API */

/* Validate the arguments common to sends and receives. */
static int check_p2p(struct ps_comm *c, const void *buf, size_t len,
		     int peer, int tag, bool recv, const char *fn)
{
	if (!c)
		return PS_COMM_ERR_ARG;
	if (!buf && len) {
		psc_comm_set_error(c, "%s: NULL buffer with length %zu", fn,
				   len);
		return PS_COMM_ERR_ARG;
	}
	if (len > (size_t)PTRDIFF_MAX) {
		psc_comm_set_error(c, "%s: length %zu is negative or too "
				   "large", fn, len);
		return PS_COMM_ERR_ARG;
	}
	if ((peer < 0 || peer >= c->size) &&
	    !(recv && peer == PS_COMM_ANY_SOURCE)) {
		psc_comm_set_error(c, "%s: rank %d out of range 0..%d", fn,
				   peer, c->size - 1);
		return PS_COMM_ERR_ARG;
	}
	if ((tag < 0 || tag > c->ep->tl.tag_ub) &&
	    !(recv && tag == PS_COMM_ANY_TAG)) {
		psc_comm_set_error(c, "%s: tag %d out of range 0..%d "
				   "(ps_comm_tag_ub)", fn, tag,
				   c->ep->tl.tag_ub);
		return PS_COMM_ERR_ARG;
	}
	return 0;
}

int ps_comm_isend(ps_comm_t comm, const void *buf, size_t len, int peer,
		  int tag, ps_comm_request_t *req)
{
	int rc = check_p2p(comm, buf, len, peer, tag, false, "ps_comm_isend");

	if (rc)
		return rc;
	if (!req)
		return PS_COMM_ERR_ARG;
	return psc_isend(comm, PSC_PROTO_USER, buf, len, peer, (uint32_t)tag,
			 req);
}

int ps_comm_irecv(ps_comm_t comm, void *buf, size_t len, int peer, int tag,
		  ps_comm_request_t *req)
{
	int rc = check_p2p(comm, buf, len, peer, tag, true, "ps_comm_irecv");

	if (rc)
		return rc;
	if (!req)
		return PS_COMM_ERR_ARG;
	return psc_irecv(comm, PSC_PROTO_USER, buf, len, peer, tag, req);
}

int ps_comm_send(ps_comm_t comm, const void *buf, size_t len, int peer,
		 int tag)
{
	ps_comm_request_t r;
	int rc = ps_comm_isend(comm, buf, len, peer, tag, &r);

	return rc ? rc : psc_wait(&r, NULL, psc_comm_op_deadline(comm));
}

int ps_comm_recv(ps_comm_t comm, void *buf, size_t len, int peer, int tag,
		 ps_comm_status_t *status)
{
	ps_comm_request_t r;
	int rc = ps_comm_irecv(comm, buf, len, peer, tag, &r);

	return rc ? rc : psc_wait(&r, status, psc_comm_op_deadline(comm));
}
