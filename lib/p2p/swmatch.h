/*
 * Software matching of first messages (caps.sw_match), p2p's side of the
 * core's first-message hook (core/ep.h): the eager header, the queue of
 * posted receives and the queue of arrivals nobody wanted yet, shared by
 * the endpoints of a pair. For p2p's own files, and for the unit suite.
 *
 * Every call needs the endpoint lock held.
 */
#ifndef PSC_P2P_SWMATCH_H
#define PSC_P2P_SWMATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ep.h"
#include "util/util.h"

/*
 * The eager header of a first message on an endpoint whose provider
 * carries no immediate (tag, then payload length, big-endian), the
 * prefix the core sends from a request's scratch.
 */
#define PSC_SWM_HDR 16
_Static_assert(PSC_SWM_HDR == PSC_EP_FIRST_HDR,
	       "the eager header is the core's first-message prefix");

/* The matching state of an endpoint, or of a pair. */
struct psc_swm;

/*
 * Register p2p's first-message hook on ep (and its partner), or find
 * the one registered: the matching state, or NULL when out of memory.
 * Takes the lock; call without it.
 */
struct psc_swm *psc_swm_attach(struct psc_ep *ep);

/*
 * Write r's tag and length into r->scratch: the prefix of a first message
 * on an endpoint without immediates.
 */
static inline void psc_swm_encode_hdr(struct ps_comm_request *r)
{
	psc_be_put(r->scratch, r->tag, 8);
	psc_be_put(r->scratch + 8, r->len, 8);
}

/*
 * A first message (tag, len bytes at data) arrived on ep: deliver it to
 * the first posted receive it matches, or keep a copy in arrival order
 * until one comes. data is not used after the call.
 */
void psc_swm_match(struct psc_swm *m, struct psc_ep *ep, uint64_t tag,
		   const uint8_t *data, size_t len);

/* Match first receive r (on ep) against kept arrivals, or queue it. */
void psc_swm_recv(struct psc_swm *m, struct psc_ep *ep,
		  struct ps_comm_request *r);

/* Withdraw a queued receive, completing it cancelled; true if queued. */
bool psc_swm_cancel(struct psc_swm *m, struct ps_comm_request *r);
/*
 * p2p.c's, for an arrival no receive wanted yet (tag, len bytes at hdr,
 * on ep). psc_p2p_is_ahead: whether it is the header of a large message
 * whose one chunk went without the go-ahead. A provider that completes
 * sends in posting order (shm) holds back every later send of its
 * sender until that chunk is matched, and the sender or a third rank may
 * wait on one of those before this program posts the receive. So when
 * no receive claimed the header soon (AHEAD_CLAIM_* in swmatch.c),
 * psc_p2p_ahead_recv posts a receive for the chunk of a header
 * psc_p2p_is_ahead accepted into a buffer of its own and returns it
 * (NULL: out of memory, or the post failed). The
 * receive that matches the header later takes it over (ahead_chunk); one
 * never claimed goes with the endpoint. Lock held.
 */
bool psc_p2p_is_ahead(const struct psc_ep *ep, uint64_t tag,
		      const uint8_t *hdr, size_t len);
struct ps_comm_request *psc_p2p_ahead_recv(struct psc_ep *ep, uint64_t tag,
					   const uint8_t *hdr);

#endif /* PSC_P2P_SWMATCH_H */
