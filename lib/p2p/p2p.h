/*
 * Point-to-point messaging as the layers above p2p see it: tagged sends
 * and receives on a channel with a protocol, MPI's ordering and
 * truncation rules, and messages larger than the provider's
 * max_msg_size (a header, then chunks on the continuation protocol). A
 * channel is the p2p view of a communicator: its endpoint, context id
 * and peers. Channels and requests are opaque here (p2p/chan.h and
 * core/req.h hold their fields), and no libfabric type appears, so a
 * collective compiles without the fabric's headers.
 *
 * Arguments are validated by the caller. Functions take the endpoint
 * lock themselves and return 0 or an internal code (util/err.h), with
 * words in err where the failure needs them.
 */
#ifndef PSC_P2P_H
#define PSC_P2P_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/source.h"
#include "p2p/tag.h"
#include "ps_comm.h"

struct psc_chan;

/*
 * The code of a receive whose message was longer than its buffer:
 * libfabric's FI_ETRUNC (p2p.c checks the two agree), for the layers
 * that do not include libfabric.
 */
#define PSC_P2P_ETRUNC 265

/*
 * Post a send to rank peer, or a receive from peer (-1: any) with tag
 * (-1: any). -ESHUTDOWN once the channel is aborted, the failure's code
 * and words once its owner failed, -ENOMEM, or the provider's error.
 */
int psc_isend(struct psc_chan *ch, unsigned proto, const void *buf,
	      size_t len, int peer, uint32_t tag, ps_comm_request_t *req,
	      char *err, size_t elen);
int psc_irecv(struct psc_chan *ch, unsigned proto, void *buf, size_t len,
	      int peer, int64_t tag, ps_comm_request_t *req, char *err,
	      size_t elen);

/* This rank, the channel's rank count, and the user tag's width. */
int psc_chan_rank(const struct psc_chan *ch);
int psc_chan_size(const struct psc_chan *ch);
unsigned psc_chan_user_bits(const struct psc_chan *ch);

/*
 * Context ids, one counter for the process's channels: the next free one
 * (to agree on with peers), and moving past ctx once the peers agreed.
 */
uint32_t psc_p2p_ctx_next(void);
void psc_p2p_ctx_reserve(uint32_t ctx);

/*
 * Calls on a request of p2p (as core/handle.h has them): whether it is
 * done (no lock), reaping a done one (status and malloc'd failure words;
 * *req becomes NULL), and withdrawing one (0, or -EBUSY when the
 * provider keeps it: its buffer must then stay valid). Return internal
 * codes.
 */
bool psc_p2p_done(const struct ps_comm_request *r);
int psc_p2p_reap(ps_comm_request_t *req, ps_comm_status_t *status,
		 char **words);
int psc_p2p_cancel(ps_comm_request_t *req);

/*
 * What the layers above may know of a request of p2p, whose fields they
 * never read: the channel that owns it (psc_isend, psc_irecv, the
 * channel of psc_chan_op_start), whether it is an operation of
 * psc_chan_op_start rather than a message, and progress of the
 * endpoints it waits on (takes the lock; returns how many things
 * moved). No lock needed for the first two.
 */
struct psc_chan *psc_p2p_chan(const struct ps_comm_request *r);
bool psc_p2p_is_op(const struct ps_comm_request *r);
int psc_p2p_progress(const struct ps_comm_request *r);

/*
 * An operation of a layer above that is no single message (a running
 * collective): it embeds this base and reaches its own object with
 * psc_container_of. p2p gives it a request that completes with its
 * result, and polls it with the channel's progress.
 */
struct psc_chan_op {
	/*
	 * Set by the user before psc_chan_op_start. poll advances the
	 * operation: called from waits and progress without any lock, by
	 * one thread at a time; never blocks; returns how many things
	 * moved. It sets over (and result: 0 or an internal code) when the
	 * operation is finished; it is not called again after that.
	 */
	int (*poll)(struct psc_chan_op *op);
	/*
	 * Fail the operation with err (a wait's deadline, the owner's
	 * failure); called while poll is not running, from any thread. The
	 * next poll is expected to finish it. May be NULL.
	 */
	void (*abort)(struct psc_chan_op *op, int err);
	/*
	 * The request completed with result: free the operation. Called once,
	 * without any lock.
	 */
	void (*release)(struct psc_chan_op *op);
	bool over;
	int result;
	/* p2p's own: */
	struct psc_prog_src src;
	struct ps_comm_request *req;
	struct psc_chan *ch;
};

/*
 * Start op on ch and give the caller the request that completes with it
 * (its status.source is this rank). Older operations of the endpoint
 * are polled first; this call polls them once. Returns 0, -ESHUTDOWN
 * (channel aborted), the owner's failure code, or -ENOMEM; on failure
 * op is not started (release is not called). Takes the lock.
 */
int psc_chan_op_start(struct psc_chan *ch, struct psc_chan_op *op,
		      ps_comm_request_t *req);

#endif /* PSC_P2P_H */
