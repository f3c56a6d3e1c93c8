/*
 * The van's state and the calls its modules make of each other
 * (lib/van/): van.c creates, binds and stops a van and wraps the p2p
 * calls it makes; peer.c keeps the nodes it knows (connect, failures,
 * probes of silent nodes); send.c posts messages and hands finished
 * sends back; recv.c takes frames, receives their pieces and hands out
 * messages. The frame format and the address server are in van_int.h.
 * Locking is as described on struct ps_comm_van; every function here is
 * internal to the van.
 */
#ifndef PSC_VAN_STATE_INT_H
#define PSC_VAN_STATE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ps_comm/van.h"
#include "van_int.h"

/* How long stop lets outstanding sends finish before cancelling them. */
#define DRAIN_MAX_SEC 10.0
/* A blocked receive wakes this often to hand back finished sends. */
#define REAP_SEC 0.05
/* Messages whose pieces are being received at once, at most. */
#define PSC_VAN_MAX_INFLIGHT 64
/*
 * While a thread waits in ps_comm_van_recv, a node it may be waiting on
 * (psc_van_probe_silent) that has been silent for PROBE_SEC is probed (its
 * address fetched again) once per PROBE_SEC, at most PROBE_MAX of them
 * per round; a probe waits at most PROBE_IO_SEC.
 */
#define PROBE_SEC 1.0
#define PROBE_IO_SEC 0.5
#define PROBE_MAX 8

/*
 * Credit granted to a node: the chunk receives of its next segment of
 * len bytes to this van, posted from its slot into buf (credit.c).
 * id 0: none. Under the node's send_lock.
 */
struct van_credit_rx {
	uint32_t id, slot;
	size_t len, chunk;
	void *buf;
	ps_comm_request_t req;
	bool announced;		   /* a frame to the node carried it */
};

/* Credit a node granted this van (id 0: none). Under send_lock. */
struct van_credit_tx {
	uint32_t id, slot, chunk;
	uint64_t len;
	bool fits;		   /* this van's path can use it */
};

struct van_peer {
	int id;
	pthread_mutex_t send_lock; /* one message's pieces at a time */
	struct psc_node_addr at;   /* under send_lock (v->lock too to
				      change): where the channel reaches it */
	uint32_t slot;		   /* under send_lock */
	uint8_t name[PSC_NODE_NAME_MAX]; /* its network endpoint's address */
	size_t namelen;
	char host[256];		   /* where its address is served */
	int port;
	bool self;		   /* this van's own address */
	/*
	 * Failure: 0, or the PS_COMM_ERR_* that ended the node (atomic; a
	 * connect clears it). Its words, under v->lock.
	 */
	int failed;
	char why[200];
	bool reported;		   /* recv told its caller: receiving thread */
	bool left;		   /* atomic: it said it stopped (PSC_VAN_F_BYE);
				      a connect clears it */
	double last_send;	   /* atomic (relaxed, as bits): last send */
	double alive;		   /* atomic (relaxed, as bits): connected,
				      or answered a probe */
	double probed;		   /* receiving thread: last probe */
	double unanswered;	   /* receiving thread: first probe that
				      went unanswered since it last showed
				      it lives */
	struct van_credit_rx rx;   /* under send_lock */
	struct van_credit_tx tx;   /* under send_lock */
};

/* The latest slot a sender id was seen from (receiving thread only). */
struct van_sender {
	int id;
	uint32_t slot;
	double seen; /* its last frame */
};

/* One message in flight. */
struct van_batch {
	struct van_batch *next;
	struct van_peer *peer;	 /* NULL: never connected */
	double deadline;	 /* 0: none (PS_COMM_OP_TIMEOUT) */
	uint8_t *frame;
	ps_comm_van_done_fn done;
	void *arg;
	int err;
	bool bye;		 /* a goodbye: its failure fails no node */
	bool *in_frame;		 /* per segment: carried by the frame */
	int credit_seg;		 /* the segment on a credit, or -1 */
	struct van_credit_tx credit; /* the credit it goes on */
	size_t n;
	ps_comm_request_t reqs[]; /* then in_frame's nseg bools */
};

struct psc_van_watch; /* watch.c */

/* "psvn": a van handle that ps_comm_van_destroy has not freed. */
#define PSC_VAN_HANDLE_MAGIC 0x7073766eu

struct ps_comm_van {
	uint32_t magic;	      /* PSC_VAN_HANDLE_MAGIC until destroyed */
	pthread_mutex_t lock; /* peers, pending, bound */
	struct psc_params params; /* as at create */
	struct psc_node_chan *chan; /* the channel (p2p/node.h), once bound */
	char provider[64];    /* the channel's network provider, or "" */
	bool bound;
	bool poll_wait;	      /* PS_COMM_WAIT=poll: no CQ wait object */
	int my_id;	      /* atomic */
	struct psc_auth_key key; /* PS_COMM_JOB_KEY: fetches authenticate */
	uint32_t next_slot;   /* atomic: slots handed out so far + 1 */
	size_t frame_limit;   /* largest frame this van sends (set at bind) */
	struct psc_van_server *server;
	struct van_peer **peers;
	size_t npeers, cap;
	struct van_batch *pending;
	ps_comm_request_t frame_req;
	uint8_t frame_buf[PSC_VAN_FRAME_MAX];
	struct van_inflight *in_head, *in_tail; /* being received */
	size_t in_count;
	/* Messages to this van itself, under lock; local_n atomic. */
	struct van_inflight *local_head, *local_tail;
	unsigned local_n;
	struct van_sender *senders; /* receiving thread */
	size_t nsenders, senders_cap;
	size_t probe_next;	    /* where the next probe round starts */
	double probe_round;	    /* atomic (relaxed, as bits): when the
				       last finished probe round began, so
				       that tests can wait for one */
	bool stopping;		    /* atomic: stop has begun */
	unsigned fail_gen;	    /* atomic: failures recorded so far */
	unsigned fail_seen;	    /* receiving thread: fail_gen looked at */
	int in_recv;		    /* atomic: threads in ps_comm_van_recv */
	struct psc_van_watch *watch; /* bound, unless PS_COMM_WATCHDOG=0 */
	/* Credit (credit.c): set at bind; the rest atomic. */
	size_t credit_min, credit_max; /* segments that take credit */
	uint32_t credit_next;	    /* the last id granted */
	size_t credit_bytes;	    /* buffers of credits granted */
	unsigned long credit_sent, credit_recvd; /* segments on credit */
};

/*
 * Whether v is a van handle the caller may use: not NULL, and not
 * destroyed as far as its magic word tells (best effort, as for
 * communicators: only while the memory stays mapped).
 */
static inline bool psc_van_ok(const struct ps_comm_van *v)
{
	return v && v->magic == PSC_VAN_HANDLE_MAGIC;
}

/*
 * Receiving is pipelined: every frame that has arrived gets its piece
 * receives posted at once (so transfers of several messages overlap),
 * and messages are handed out in the order their frames arrived.
 */
struct van_inflight {
	struct van_inflight *next;
	ps_comm_van_msg_t msg;
	double deadline;	 /* 0: none */
	int err;		 /* a posting failure */
	size_t n;
	ps_comm_request_t reqs[]; /* meta piece (maybe) + segments */
};

/* ------------------------------------------- van.c: the p2p calls */

/*
 * The p2p and core calls the van makes, with their internal codes turned
 * into the PS_COMM_ERR_* values the van's callers get.
 */
int psc_van_wait(ps_comm_request_t *req, ps_comm_status_t *st,
		 double deadline);

/*
 * Post a send of buf (len bytes) to node p with tag, p's slot in the
 * tag's rank field; *req receives the request. p->send_lock held.
 * Returns 0 or a PS_COMM_ERR_* value (the post's words go to the debug
 * log).
 */
int psc_van_send(struct ps_comm_van *v, const void *buf, size_t len,
		 const struct van_peer *p, uint32_t tag,
		 ps_comm_request_t *req);

/*
 * Post a receive into buf (len bytes) from peer (a slot, -1 any) and
 * tag; *req receives the request. Returns 0 or a PS_COMM_ERR_* value.
 */
int psc_van_recv(struct ps_comm_van *v, void *buf, size_t len, int peer,
		 int64_t tag, ps_comm_request_t *req);

/* ------------------------------------------------- peer.c: nodes */

/* The peer with this id, or NULL. v->lock held. */
struct van_peer *psc_van_peer_find(struct ps_comm_van *v, int id);

/*
 * Make room in *arr (elements of size elem, *cap of them) for n + 1:
 * doubles it, from 16. Returns false when out of memory.
 */
bool psc_van_room_for_one(void **arr, size_t *cap, size_t n, size_t elem);

/* Node p's failure, 0 if none. */
int psc_van_peer_failed(const struct van_peer *p);

/*
 * Record once that node p failed with err, for why (a sentence part):
 * later sends to it fail at once, and ps_comm_van_recv reports it.
 */
void psc_van_peer_fail(struct ps_comm_van *v, struct van_peer *p, int err,
		       const char *why);

/* Whether node p said goodbye (stopped) since it was last connected. */
bool psc_van_peer_left(const struct van_peer *p);

/*
 * Fetch p's address again: a node that answers with its endpoint lives;
 * one whose port refuses, or that serves another endpoint, is gone; one
 * that does not answer is judged by silent().
 */
void psc_van_probe(struct ps_comm_van *v, struct van_peer *p);

/*
 * Probe the nodes a waiting receiver may depend on, whatever the fabric
 * reports (verbs reports nothing about a node that only sends to this
 * one): every node this van sent to (a request of its may be
 * unanswered, however long ago it went) and every node whose message is
 * being received, once silent for PROBE_SEC since both this van's last
 * send to it and its last frame, unless they said goodbye. With
 * `pending`, instead those that still hold unfinished sends (stop),
 * goodbye or not. At most PROBE_MAX per call, taking turns.
 * Peers live until stop, so they can be probed without v->lock.
 */
void psc_van_probe_silent(struct ps_comm_van *v, bool pending);

/* ------------------------------------------- watch.c: the watchdog */

/*
 * Start v's watchdog over its endpoint (bind, once the endpoint is open),
 * unless PS_COMM_WATCHDOG=0: a thread that stays inside one libfabric call
 * for PS_COMM_PEER_TIMEOUT (1 s once the node it is for failed) ends the
 * process with PSC_EP_STUCK_EXIT, naming the call and the node. Returns 0,
 * PS_COMM_ERR_NOMEM or PS_COMM_ERR_SYSTEM.
 */
int psc_van_watch_start(struct ps_comm_van *v);

/* Stop v's watchdog, if it runs, before its endpoint goes (stop). */
void psc_van_watch_stop(struct ps_comm_van *v);

/* ------------------------------------------------- send.c: sends */

/* Whether every request of b has completed. Any thread, v->lock held. */
bool psc_van_batch_done(const struct van_batch *b);

/*
 * Free b's requests and frame and tell its owner. A piece that failed
 * (not cancelled by stop) fails the node it went to.
 */
void psc_van_batch_finish(struct ps_comm_van *v, struct van_batch *b,
			  double deadline);

/*
 * Hand back every finished send. A send still unfinished past its
 * deadline fails its node (the provider keeps its buffers until the
 * node's pieces end or stop closes the endpoint). Never called with
 * v->lock held.
 */
void psc_van_reap(struct ps_comm_van *v);

/* Build the batch of a message: its frame and room for its requests. */
struct van_batch *psc_van_batch_new(struct ps_comm_van *v, const void *meta,
				    size_t meta_len,
				    const ps_comm_van_seg_t *segs, size_t nseg,
				    size_t *flen, bool *inline_meta);

/* Post b's frame and pieces to p (post_pieces), under p's send lock. */
int psc_van_post_batch(struct ps_comm_van *v, struct van_peer *p,
		       struct van_batch *b, size_t flen, const void *meta,
		       size_t meta_len, bool inline_meta,
		       const ps_comm_van_seg_t *segs, size_t nseg);

/* Put b on the pending list, where reap and stop find it. */
void psc_van_queue_batch(struct ps_comm_van *v, struct van_batch *b);

/* ------------------------------------------------ credit.c: credit */

/*
 * Credit spares a large segment the go-ahead's round trip where the
 * network path needs one (net): a van that receives a segment of a
 * size between credit_min and credit_max from a node over the network
 * posts the chunk receives of the node's next segment of that size at
 * once (p2p/node.h, pre-arranged transfers), into a buffer that then
 * becomes that segment, and grants that credit in its next frame to the
 * node. The node sends its next segment of that size at once on it; a
 * node that sends a large segment of another size gives the credit back
 * in that frame (PSC_VAN_F_RETURN), and the van grants one of the new
 * size. A node holds at most one credit of each van. Credits granted by
 * a van take at most PSC_VAN_CREDIT_BYTES of buffers.
 */
#define PSC_VAN_CREDIT_BYTES ((size_t)64 << 20)

/* Size credit for v's channel (bind). */
void psc_van_credit_init(struct ps_comm_van *v);

/*
 * Mark b's frame before it goes to p: a segment of it on p's credit
 * (b->credit_seg, b->credit), the credit given back when a large segment
 * cannot use it, and the credit p was granted and not yet told of.
 * p->send_lock held.
 */
void psc_van_credit_mark(struct ps_comm_van *v, struct van_peer *p,
			 struct van_batch *b, const ps_comm_van_seg_t *segs,
			 size_t nseg);

/*
 * Post b's segment on its credit (psc_van_credit_mark) into *req.
 * Returns 0 or a PS_COMM_ERR_* value. p->send_lock held.
 */
int psc_van_credit_send(struct ps_comm_van *v, const struct van_peer *p,
			const struct van_batch *b, const void *buf,
			size_t len, ps_comm_request_t *req);

/*
 * A frame f came from slot: take the credit its sender grants, and
 * release the one it gives back. Receiving thread.
 */
void psc_van_credit_frame(struct ps_comm_van *v, uint32_t slot,
			  const struct psc_van_frame *f);

/*
 * Segment i of frame f (from slot) goes on the credit granted to its
 * sender: move that credit's receive into *req and its buffer into
 * *buf. Returns 0, or PS_COMM_ERR_PROTO when the sender holds no such
 * credit. Receiving thread.
 */
int psc_van_credit_take(struct ps_comm_van *v, uint32_t slot,
			const struct psc_van_frame *f, uint32_t i,
			ps_comm_request_t *req, void **buf);

/*
 * Grant f's sender (from slot) a credit for its next segment of the size
 * of its frame's largest segment, when it can take one and holds none
 * of that size. Receiving thread, after the frame's pieces are posted.
 */
void psc_van_credit_grant(struct ps_comm_van *v, uint32_t slot,
			  const struct psc_van_frame *f);

/*
 * Withdraw the credits to and from p (stop). A node that failed keeps
 * the credit it was granted: it may live and use it yet, and its chunks
 * must then find their receives (a node that comes back from another
 * slot gets a new one).
 */
void psc_van_credit_drop(struct ps_comm_van *v, struct van_peer *p);

/* ---------------------------------------------- recv.c: receives */

/* Whether every piece receive of f has completed. */
bool psc_van_inflight_done(const struct van_inflight *f);

/* When sender id's last frame came (0: never). Receiving thread. */
double psc_van_sender_seen(struct ps_comm_van *v, int id);

/*
 * A message to this van itself never enters the fabric: a provider's
 * connection to its own address is the least tried path there is, and
 * ps-lite's first message to itself is the TERMINATE of its Stop, sent
 * while its peers tear their connections down (verbs;ofi_rxm on rxe
 * crashed inside that post). The message is copied into receive buffers
 * and queued whole for the receiving thread, which takes it like a frame
 * that just arrived. Any thread.
 */
int psc_van_deliver_local(struct ps_comm_van *v, const void *meta,
			  size_t meta_len, const ps_comm_van_seg_t *segs,
			  size_t nseg);

/*
 * Move the messages this van sent itself behind those being received, in
 * the order they were sent. Receiving thread, or stop.
 */
void psc_van_take_local(struct ps_comm_van *v);

/* Take every frame that has arrived, while messages in flight have room. */
void psc_van_take_frames(struct ps_comm_van *v);

/* Whether stop has begun on v (atomic load; any thread). */
bool psc_van_stopping(struct ps_comm_van *v);

/* Withdraw every message being received (stop). */
void psc_van_drop_inflight(struct ps_comm_van *v);

#endif /* PSC_VAN_STATE_INT_H */
