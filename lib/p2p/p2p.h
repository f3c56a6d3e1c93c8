/*
 * Point-to-point messaging over a core endpoint: tagged sends and
 * receives with a protocol, MPI's ordering and truncation rules, and
 * messages larger than the provider's max_msg_size (a header, then
 * chunks on the continuation protocol). A channel is the p2p view of a
 * communicator: its endpoint, context id and peers.
 *
 * Arguments are validated by the caller. Functions take the endpoint
 * lock themselves and return 0 or an internal code (util/err.h), with
 * words in err where the failure needs them.
 */
#ifndef PSC_P2P_H
#define PSC_P2P_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ep.h"

struct psc_chan {
	struct psc_ep *ep;
	int rank;
	int size;
	uint32_t ctx;
	fi_addr_t *peers;   /* rank -> fi_addr */
	uint32_t large_seq; /* continuation stream id, per sender */
	bool aborted;	    /* under the endpoint lock */
	/* The endpoint's constants, read on every message (psc_chan_bind). */
	pthread_mutex_t *lock;	/* the endpoint lock */
	const struct psc_caps *caps;
	const struct psc_tag_layout *tl;
	size_t single;	    /* largest message sent as one piece */
};

/*
 * Put ch on endpoint ep: set ch->ep and the constants read from it.
 * Call once the endpoint is open, before any other call on ch.
 */
void psc_chan_bind(struct psc_chan *ch, struct psc_ep *ep);

/*
 * Post a send to rank peer (psc_isend) or to an explicit address with src
 * carried in the tag's rank field (psc_isend_to: the van's peers join one
 * at a time and are keyed by node id, not by rank). -ESHUTDOWN once the
 * channel is aborted, -ENOMEM, or the provider's error.
 */
int psc_isend_to(struct psc_chan *ch, unsigned proto, const void *buf,
		 size_t len, fi_addr_t addr, uint32_t src, uint32_t tag,
		 ps_comm_request_t *req, char *err, size_t elen);

static inline int psc_isend(struct psc_chan *ch, unsigned proto,
			    const void *buf, size_t len, int peer,
			    uint32_t tag, ps_comm_request_t *req, char *err,
			    size_t elen)
{
	return psc_isend_to(ch, proto, buf, len, ch->peers[peer],
			    (uint32_t)ch->rank, tag, req, err, elen);
}

/* Post a receive from peer (-1: any) with tag (-1: any). */
int psc_irecv(struct psc_chan *ch, unsigned proto, void *buf, size_t len,
	      int peer, int64_t tag, ps_comm_request_t *req, char *err,
	      size_t elen);

/* Abort the channel: later posts fail with -ESHUTDOWN. Takes the lock. */
void psc_chan_abort(struct psc_chan *ch);

#endif /* PSC_P2P_H */
