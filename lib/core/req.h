/*
 * Requests: one operation of the core layer, and the calls that create,
 * complete, reap, cancel and wait for them. A request that libfabric
 * knows embeds the fi_context2 handed to the provider, so it lives until
 * its completion is reaped. A large message is a PARENT request whose
 * children do the work. Requests carry their own completion behaviour
 * (ops), so the progress engine names no protocol.
 *
 * Error codes in requests (status.error) and returned here are internal
 * codes (util/err.h); the communicator layer translates them.
 * Every function that takes the endpoint lock says so.
 */
#ifndef PSC_REQ_H
#define PSC_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "core/handle.h"
#include "ps_comm.h"

enum psc_req_kind {
	PSC_REQ_SEND,
	PSC_REQ_RECV,
	PSC_REQ_PARENT,	 /* several operations: its children do the work */
	PSC_REQ_BOUNCE,	 /* a receive buffer of first messages */
	PSC_REQ_GENERIC, /* no libfabric operation: its owner completes it */
};
/*
 * PARKED: a large message's chunk send with nothing it may send yet, in
 * no queue and not with the provider; it goes on at the receiver's next
 * go-ahead (p2p/p2p.c), and cancelling it completes it at once.
 */
enum psc_req_state {
	PSC_REQ_QUEUED,
	PSC_REQ_POSTED,
	PSC_REQ_PARKED,
	PSC_REQ_DONE
};

struct psc_ep;
struct psc_mr;
struct psc_mr_slot;
struct ps_comm_request;

/*
 * What a request's owner does at its events. Every member may be NULL.
 */
struct psc_req_ops {
	size_t size; /* sizeof(struct psc_req_ops) */
	/*
	 * A completion for r arrived (or the layer that matches first
	 * messages delivered one).
	 * Lock held. Return 1 if r goes on (more operations posted), else
	 * the result r completes with: 0 or an internal code. NULL: a plain
	 * operation whose length is checked against the sender's.
	 */
	int (*complete)(struct ps_comm_request *r,
			const struct fi_cq_tagged_entry *ev);
	/*
	 * A receive's CQ error entry says FI_ETRUNC (the buffer was filled);
	 * tag is the entry's, or 0. Lock held. Returns 1 if r goes on (as
	 * complete's), else the result r completes with. NULL: -FI_ETRUNC
	 * with the whole buffer received.
	 */
	int (*truncated)(struct ps_comm_request *r, uint64_t tag);
	/*
	 * Fail the work behind a GENERIC request with err, without the lock
	 * held; r completes soon after (a blocking wait's timeout).
	 */
	void (*abort)(struct ps_comm_request *r, int err);
};

struct ps_comm_request {
	struct fi_context2 fctx; /* handed to libfabric */
	enum psc_req_kind kind;
	enum psc_req_state state; /* DONE is stored atomically */
	/*
	 * PSC_REQ_MAGIC while the handle is the caller's to use; cleared
	 * when the request is freed or abandoned, or its communicator is
	 * finalized (psc_req_valid).
	 */
	uint32_t magic;
	const struct psc_req_ops *ops;
	void *owner;	      /* who made it (a communicator's channel) */
	void *ctx;	      /* the owner's, for its ops */
	struct psc_ep *ep;
	void *buf;
	size_t len;
	fi_addr_t addr;
	uint64_t tag;
	uint64_t ignore;
	uint64_t data;	      /* CQ data to send (length check) */
	ps_comm_status_t status; /* error: an internal code */
	char *errmsg;	      /* malloc'd words for a failure, or NULL */
	struct ps_comm_request *parent;
	struct ps_comm_request *kids;	 /* PARENT: its children */
	struct ps_comm_request *sibling; /* next child of the parent */
	size_t children_left; /* PARENT: children not yet done */
	uint64_t chunk_next;  /* large PARENT: offset of its next chunk */
	uint64_t chunk_limit; /* large PARENT: a send's chunks may go up to
			       * this offset (the receiver's go-ahead); a
			       * receive's go-ahead said so far */
	struct ps_comm_request *next;	 /* queue link */
	struct ps_comm_request *live_prev, *live_next; /* the endpoint's */
	bool abandoned;	      /* owner gone: free when done */
	bool expect_trunc;    /* chunk past the buffer: truncation is ok */
	bool untagged;	      /* a first message (core/ep.h): untagged */
	bool owns_buf;	      /* buf is malloc'd: free it with the request */
	bool no_inject;	      /* complete only once the provider sent it */
	bool cancel_asked;    /* pscomm called fi_cancel on it */
	bool ahead;	      /* holds a unit of psc_ep_ahead_take: given
			       * back when it completes or is freed */
	uint8_t resends;      /* posted again after its connection closed */
	size_t user_len;      /* receive: the caller's buffer length */
	void *user_buf;
	uint8_t scratch[32];  /* large header or short-receive bounce */
	/* Registration: held from posting until completion. */
	struct psc_mr *mr;	       /* the buffer's, or its parent's range */
	struct psc_mr_slot *mr_slot;   /* pre-registered copy of a small one */
	/* First receive: its large message's chunk, received ahead (p2p). */
	struct ps_comm_request *ahead_chunk;
};

/* A FIFO of requests waiting to be posted (EAGAIN). */
struct psc_req_queue {
	struct ps_comm_request *head, *tail;
};

/*
 * Allocate a zeroed request on ep's live list, owned by owner. Lock
 * held. NULL when out of memory.
 */
/* A live request's magic word ("preq"). */
#define PSC_REQ_MAGIC 0x70726571u

struct ps_comm_request *psc_req_alloc(struct psc_ep *ep, void *owner,
				      enum psc_req_kind kind);
/* Unlink and free a request and its children. Lock held. */
void psc_req_free(struct ps_comm_request *r);
/* Add child to parent (lock held). */
void psc_req_adopt(struct ps_comm_request *parent,
		   struct ps_comm_request *child);
/*
 * Record completion of r (err 0 or an internal code), propagate to its
 * parent, and free it if abandoned. Lock held.
 */
void psc_req_complete(struct ps_comm_request *r, int err);

/*
 * Keep words for r's failure (printf-style), for the communicator to
 * show; the first message wins, and a parent gets its child's. Lock held
 * or r not yet shared. Out of memory: no words, the code still counts.
 */
void psc_req_set_errmsg(struct ps_comm_request *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Deliver a completion for r (from the CQ, or from the layer that matched
 * a first message to r): r's ops decide whether it goes on or with what
 * it completes. Lock held.
 */
void psc_req_dispatch(struct ps_comm_request *r,
		      const struct fi_cq_tagged_entry *ev);

/*
 * Move r (not posted, no children) from its endpoint's live list to
 * ep's, whose lock is the same (a pair): a receive matched by a first
 * message that arrived on ep continues there. Lock held.
 */
void psc_req_move(struct ps_comm_request *r, struct psc_ep *ep);

void psc_queue_push(struct psc_req_queue *q, struct ps_comm_request *r);
struct ps_comm_request *psc_queue_pop(struct psc_req_queue *q);
/* Remove r if present; returns true if it was there. */
bool psc_queue_remove(struct psc_req_queue *q, struct ps_comm_request *r);

#endif /* PSC_REQ_H */
