/*
 * A channel's definition, for p2p and for the layers that build and own
 * channels (comm, the van): its endpoints, context id and peers. Every
 * other layer sees struct psc_chan opaque, through p2p/p2p.h.
 *
 * Arguments are validated by the caller. Functions take the endpoint
 * lock themselves and return 0 or an internal code (util/err.h), with
 * words in err where the failure needs them.
 */
#ifndef PSC_CHAN_H
#define PSC_CHAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ep.h"
#include "p2p/p2p.h"

struct psc_swm;

/* One fabric of a channel, with the constants read on every message. */
struct psc_path {
	struct psc_ep *ep;
	const struct psc_caps *caps;
	size_t single;	    /* largest message sent as one piece */
	struct psc_swm *swm; /* software matching (p2p/swmatch.h), or NULL */
};

/*
 * A channel runs on one endpoint, or on a pair (shm to node-local peers,
 * the network to the others: via says which path serves each rank). A
 * receive from any source is posted on path 0; the pair's shared
 * matching queue gives it the first message of either.
 */
struct psc_chan {
	struct psc_ep *ep;  /* path[0].ep */
	struct psc_path path[2];
	int npaths;
	uint8_t *via;	    /* rank -> path; NULL: path 0 for every rank */
	int rank;
	int size;
	uint32_t ctx;
	fi_addr_t *peers;   /* rank -> fi_addr on its path's endpoint */
	/*
	 * Without peers (a node-addressed channel): the address on ep of
	 * the sender whose messages carry src in the tag's rank field, for
	 * a large message's go-ahead; 0 or -ENOENT. Lock held.
	 */
	int (*reply)(const struct psc_chan *ch, uint32_t src,
		     const struct psc_ep *ep, fi_addr_t *addr);
	uint32_t large_seq; /* continuation stream id, per sender */
	bool aborted;	    /* under the endpoint lock */
	pthread_mutex_t *lock;	/* the endpoint lock (one for a pair) */
	struct psc_tag_layout tl; /* from the endpoint's tag format */
};

/*
 * Put ch on endpoint ep (path 0) and, when pair is not NULL, on its
 * partner as path 1; ch->via is the caller's to fill. Call once the
 * endpoints are open, before any other call on ch.
 */
void psc_chan_bind(struct psc_chan *ch, struct psc_ep *ep,
		   struct psc_ep *pair);

/* The path that serves rank peer. */
static inline const struct psc_path *psc_chan_path(const struct psc_chan *ch,
						   int peer)
{
	return &ch->path[ch->via ? ch->via[peer] : 0];
}

/*
 * Post a send on path to an explicit address with src carried in the
 * tag's rank field (psc_isend_to: the van's peers join one at a time and
 * are keyed by node id, not by rank). -ESHUTDOWN once the channel is
 * aborted, -ENOMEM, or the provider's error.
 */
int psc_isend_path(struct psc_chan *ch, const struct psc_path *path,
		   unsigned proto, const void *buf, size_t len, fi_addr_t addr,
		   uint32_t src, uint32_t tag, ps_comm_request_t *req,
		   char *err, size_t elen);

/*
 * Pre-arranged transfers: a receiver posts the chunk receives of exactly
 * len bytes from src (tag rank field) under an id it picks, before the
 * sender knows of it, and tells the sender by its own means; the sender
 * then sends the chunks at once (PSC_PROTO_BULK), without a header or a
 * go-ahead, and they never arrive unexpected. Every chunk receive is
 * posted at once, so a transfer is at most psc_bulk_max bytes, in chunks
 * of the size the receiver picked (psc_bulk_max's). Both complete like a
 * large message (status.len is len). -EINVAL for a length or chunk size
 * that the path cannot take that way, else as psc_isend_path.
 */
size_t psc_bulk_max(const struct psc_path *path, size_t *chunk);
/* Whether a transfer of len bytes in chunks of chunk fits path. */
bool psc_bulk_fits(const struct psc_path *path, size_t len, size_t chunk);
int psc_irecv_bulk(struct psc_chan *ch, uint32_t src, uint32_t id, void *buf,
		   size_t len, size_t chunk, ps_comm_request_t *req,
		   char *err, size_t elen);
int psc_isend_bulk(struct psc_chan *ch, const struct psc_path *path,
		   const void *buf, size_t len, fi_addr_t addr, uint32_t src,
		   uint32_t id, size_t chunk, ps_comm_request_t *req,
		   char *err, size_t elen);

static inline int psc_isend_to(struct psc_chan *ch, unsigned proto,
			       const void *buf, size_t len, fi_addr_t addr,
			       uint32_t src, uint32_t tag,
			       ps_comm_request_t *req, char *err, size_t elen)
{
	return psc_isend_path(ch, &ch->path[0], proto, buf, len, addr, src,
			      tag, req, err, elen);
}

/*
 * One more hold on each of ch's endpoints (a communicator sharing them),
 * and dropping the holds of one user (NULL endpoints are skipped).
 */
void psc_chan_hold(struct psc_chan *ch);
void psc_chan_release(struct psc_chan *ch);

/* Abort the channel: later posts fail with -ESHUTDOWN. Takes the lock. */
void psc_chan_abort(struct psc_chan *ch);

#endif /* PSC_CHAN_H */
