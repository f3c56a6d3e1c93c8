/*
 * Software matching of first messages, for providers whose tag matching
 * cannot be trusted with wildcards (caps.sw_match): p2p's first-message
 * hook (core/ep.h).
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
 * send travels untagged (the core's first messages), with its pscomm tag
 * as the core's immediate where the provider carries 8 bytes of CQ data
 * (shm, tcp), else in a 16-byte header (tag and payload length) before
 * at most the endpoint's eager size, into receive buffers the core keeps
 * posted, or through the core's shm rings. Arrivals are matched here
 * against receives in posting order, or kept in arrival order until a
 * receive comes. Larger messages send only their large-message header
 * this way; their chunks use exact tagged receives straight into the
 * user's buffer, so they are not copied.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "p2p/swmatch.h"
#include "util/copy.h"
#include "util/log.h"

/*
 * When the header of a message sent ahead (psc_p2p_is_ahead) that no
 * receive claimed gets its chunk received into a buffer of pscomm's own:
 * after this many progress passes and this long since it came. A
 * program that posts its receive soon claims it first, and the provider
 * then copies the chunk once, into the receive's buffer; one that waits
 * on something else meanwhile (which may be held back behind that chunk
 * at its sender) makes the passes spinning or sleeping.
 */
#define AHEAD_CLAIM_PASSES 64
#define AHEAD_CLAIM_SEC 1e-3

/* An arrival that no receive wanted yet. */
struct swm_unexp {
	struct swm_unexp *next;
	struct psc_ep *ep;	/* where it arrived (a pair shares the queue) */
	/* A header sent ahead, until claimed or its chunk received. */
	struct swm_unexp *ahead_next;
	bool ahead_due;
	uint64_t ahead_pass;	/* m->passes when it came */
	double ahead_at;	/* psc_now() when it came */
	struct ps_comm_request *ahead; /* its chunk's receive, or NULL */
	uint64_t tag;
	size_t len;
	uint8_t data[];
};

/* The queues of an endpoint, or of a pair, under its lock. */
struct psc_swm {
	struct ps_comm_request *posted; /* receives, in posting order */
	struct swm_unexp *unexp;	/* arrivals, in arrival order */
	struct swm_unexp *ahead;	/* the ahead_due ones */
	uint64_t passes;		/* swm_poll calls while any is due */
	uint64_t dropped;		/* malformed arrivals dropped */
};

/* u (ahead_due) is claimed, or its chunk received: no longer due. */
static void ahead_settle(struct psc_swm *m, struct swm_unexp *u)
{
	struct swm_unexp **pp = &m->ahead;

	if (!u->ahead_due)
		return;
	while (*pp != u)
		pp = &(*pp)->ahead_next;
	*pp = u->ahead_next;
	u->ahead_due = false;
	psc_ep_first_due(u->ep, -1);
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
	/* pscomm's own copy, stable during the dispatch (a large header). */
	ev.buf = (void *)data;
	ev.tag = tag;
	ev.len = len;
	r->state = PSC_REQ_POSTED;
	psc_req_dispatch(r, &ev);
}

/* psc_swm_match, inlined into the hooks: a delivery makes no extra call. */
static inline __attribute__((always_inline)) void
swm_match(struct psc_swm *m, struct psc_ep *ep, uint64_t tag,
	  const uint8_t *data, size_t len)
{
	struct ps_comm_request **pp;
	struct swm_unexp *u, **tail;

	for (pp = &m->posted; *pp; pp = &(*pp)->next)
		if (tag_matches(*pp, tag)) {
			struct ps_comm_request *r = *pp;

			*pp = r->next;
			r->next = NULL;
			deliver(ep, r, tag, data, len);
			return;
		}
	u = malloc(sizeof(*u) + len);
	if (!u) {
		psc_log(PSC_LOG_ERROR, psc_ep_rank(ep), "out of memory: "
			"dropping an unexpected message of %zu bytes", len);
		return;
	}
	u->next = NULL;
	u->ep = ep;
	u->tag = tag;
	u->len = len;
	psc_copy(u->data, data, len);
	u->ahead = NULL;
	u->ahead_due = psc_p2p_is_ahead(ep, tag, data, len);
	if (u->ahead_due) {
		u->ahead_pass = m->passes;
		u->ahead_at = psc_now();
		u->ahead_next = m->ahead;
		m->ahead = u;
		psc_ep_first_due(ep, 1);
	}
	for (tail = &m->unexp; *tail; tail = &(*tail)->next)
		;
	*tail = u;
}

void psc_swm_match(struct psc_swm *m, struct psc_ep *ep, uint64_t tag,
		   const uint8_t *data, size_t len)
{
	swm_match(m, ep, tag, data, len);
}

/* The hook on an endpoint with immediates: the immediate is the tag. */
static void arrive_imm(void *arg, struct psc_ep *ep, uint64_t imm,
		       const uint8_t *data, size_t len)
{
	swm_match(arg, ep, imm, data, len);
}

/* The hook on an endpoint with prefixes: the eager header. */
static void arrive_hdr(void *arg, struct psc_ep *ep, uint64_t imm,
		       const uint8_t *data, size_t len)
{
	struct psc_swm *m = arg;

	(void)imm;
	if (len < PSC_SWM_HDR || psc_be_get(data + 8, 8) != len - PSC_SWM_HDR) {
		/* A flood of bad messages must not flood the log too. */
		if (m->dropped++ < 10 || m->dropped % 10000 == 0)
			psc_log(PSC_LOG_WARN, psc_ep_rank(ep), "dropping a "
				"malformed message of %zu bytes (%llu so far)",
				len, (unsigned long long)m->dropped);
		return;
	}
	swm_match(m, ep, psc_be_get(data, 8), data + PSC_SWM_HDR,
		  len - PSC_SWM_HDR);
}

void psc_swm_recv(struct psc_swm *m, struct psc_ep *ep,
		  struct ps_comm_request *r)
{
	struct swm_unexp **pp;
	struct ps_comm_request **tail;

	(void)ep;
	for (pp = &m->unexp; *pp; pp = &(*pp)->next)
		if (tag_matches(r, (*pp)->tag)) {
			struct swm_unexp *u = *pp;

			*pp = u->next;
			ahead_settle(m, u);
			r->ahead_chunk = u->ahead;
			deliver(u->ep, r, u->tag, u->data, u->len);
			free(u);
			return;
		}
	r->state = PSC_REQ_POSTED;
	r->next = NULL;
	for (tail = &m->posted; *tail; tail = &(*tail)->next)
		;
	*tail = r;
}

bool psc_swm_cancel(struct psc_swm *m, struct ps_comm_request *r)
{
	for (struct ps_comm_request **pp = &m->posted; *pp;
	     pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			r->next = NULL;
			psc_req_complete(r, -FI_ECANCELED);
			return true;
		}
	return false;
}

static bool swm_withdraw(void *arg, struct ps_comm_request *r)
{
	return psc_swm_cancel(arg, r);
}

/*
 * Forget ep's receives (its requests are freed next; the partner keeps
 * the queue) and the arrivals that came on it (the rest of their
 * messages never comes).
 */
static void swm_detach(void *arg, const struct psc_ep *ep)
{
	struct psc_swm *m = arg;
	struct ps_comm_request **pp = &m->posted;
	struct swm_unexp **up = &m->unexp;

	while (*pp) {
		if ((*pp)->ep == ep)
			*pp = (*pp)->next;
		else
			pp = &(*pp)->next;
	}
	while (*up) {
		struct swm_unexp *u = *up;

		if (u->ep != ep) {
			up = &u->next;
			continue;
		}
		*up = u->next;
		ahead_settle(m, u);
		free(u);
	}
}

/*
 * A progress pass with headers sent ahead unclaimed: receive the chunks
 * of those past AHEAD_CLAIM_*.
 */
static void swm_poll(void *arg, struct psc_ep *ep)
{
	struct psc_swm *m = arg;
	struct swm_unexp *u, *next;
	double now = psc_now();

	(void)ep;
	m->passes++;
	for (u = m->ahead; u; u = next) {
		next = u->ahead_next;
		if (m->passes - u->ahead_pass < AHEAD_CLAIM_PASSES ||
		    now - u->ahead_at < AHEAD_CLAIM_SEC)
			continue;
		ahead_settle(m, u);
		u->ahead = psc_p2p_ahead_recv(u->ep, u->tag, u->data);
	}
}

static void *swm_create(void)
{
	return calloc(1, sizeof(struct psc_swm));
}

/* Free the state and the arrivals nobody received. */
static void swm_destroy(void *arg)
{
	struct psc_swm *m = arg;

	while (m->unexp) {
		struct swm_unexp *u = m->unexp;

		m->unexp = u->next;
		free(u);
	}
	free(m);
}

static const struct psc_first_ops swm_ops = {
	.size = sizeof(struct psc_first_ops),
	.arrive_imm = arrive_imm,
	.arrive_hdr = arrive_hdr,
	.create = swm_create,
	.withdraw = swm_withdraw,
	.detach = swm_detach,
	.destroy = swm_destroy,
	.poll = swm_poll,
};

struct psc_swm *psc_swm_attach(struct psc_ep *ep)
{
	return psc_ep_first_register(ep, &swm_ops);
}
