/*
 * A node-addressed channel: p2p messaging for the van (lib/van), whose
 * peers are nodes that join one at a time, each at an address it serves,
 * instead of the ranks of a job. It owns its endpoints, which no
 * communicator shares (their addresses are served to whoever fetches
 * them), chosen as communicators choose theirs (psc_provider_fabrics):
 * the one provider FI_PROVIDER names, the network for every node
 * (PS_COMM_INTRA=net), or shm to the nodes of this node and the network
 * to the others. Every message carries, in the tag's rank field, the
 * "slot" its receiver handed to the sender, and the van's protocol
 * (PSC_PROTO_VAN); receives match a slot (or any) and a tag on every
 * path at once. A large message goes as communicators send it, under the
 * receiver's go-ahead where the provider needs one (caps.chunks_wait):
 * the receiver sends that to the address the sender's slot is bound to
 * (psc_node_chan_reply_bind).
 *
 * Arguments are validated by the caller. Functions return 0 or an
 * internal code (util/err.h), with words in err where the failure needs
 * them; posts take the endpoint lock themselves.
 */
#ifndef PSC_P2P_NODE_H
#define PSC_P2P_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ep.h"
#include "p2p/p2p.h"

struct psc_node_chan;
struct psc_params;
struct psc_iface;

/* How to open a channel. */
struct psc_node_chan_config {
	const struct psc_params *params; /* outlives the channel */
	const struct psc_iface *iface;	 /* NULL: pscomm's choice */
	bool poll_wait;			 /* no CQ wait object */
	int universe;			 /* nodes of the job, 0: unknown */
};

/*
 * Open a channel; *out is NULL on failure. Returns 0, -EINVAL with err
 * naming PS_COMM_INTRA, or the endpoints' error. Waits never spin
 * unless PS_COMM_SPIN_US asks, and sends in flight do not keep them
 * yielding (the van's receiving thread idles beside the application's).
 */
int psc_node_chan_open(struct psc_node_chan **out,
		       const struct psc_node_chan_config *cfg, char *err,
		       size_t len);

/*
 * Close n and free it; NULL is ignored. Endpoints whose provider can
 * crash while closing are left to the process's exit.
 */
void psc_node_chan_close(struct psc_node_chan *n);

/* Sizes of what a channel serves (psc_node_names). */
#define PSC_NODE_NAME_MAX 256
#define PSC_NODE_ID_MAX 128

/*
 * What a channel serves so that other nodes can join it, or what a node
 * served: the network (or only) endpoint's provider and address, and
 * with shm this node's identity (psc_node_id) and the shm address.
 */
struct psc_node_names {
	const char *provider;
	const uint8_t *name;
	size_t namelen;
	const char *node; /* "" or NULL: no shm */
	const uint8_t *shm;
	size_t shmlen;	  /* 0: no shm */
};
void psc_node_chan_names(const struct psc_node_chan *n,
			 struct psc_node_names *out);

/* The network (or only) endpoint's provider; "" once closed. */
const char *psc_node_chan_provider(const struct psc_node_chan *n);

/*
 * What the channel runs on, for log lines: "tcp;ofi_rxm" or
 * "tcp;ofi_rxm, and shm to the nodes of this node".
 */
void psc_node_chan_describe(const struct psc_node_chan *n, char *buf,
			    size_t len);

/* The largest message that is one piece on every path. */
size_t psc_node_chan_single(const struct psc_node_chan *n);

/* Where a node is reached: a path and an address there. */
struct psc_node_addr {
	uint64_t addr; /* PSC_NODE_NO_ADDR: not joined */
	uint8_t path;
};
#define PSC_NODE_NO_ADDR UINT64_MAX

/*
 * Add node peer (what it serves) to n: over shm when both have it and
 * their identities are equal, else over the network. Into *at; a node
 * joined before keeps its address. Returns 0, -ENOSPC, -ENOMEM, -EINVAL
 * or the AV insert's error (as psc_node_chan_reply_bind). Takes the
 * lock.
 */
int psc_node_chan_join(struct psc_node_chan *n,
		       const struct psc_node_names *peer,
		       struct psc_node_addr *at);

/*
 * Bind slot, just handed to node peer (what it serves), to its address:
 * a large message from slot is answered there (go-ahead), on the path
 * psc_node_chan_join picks. Each node is joined once, for both. A
 * channel keeps the latest PSC_NODE_REPLY_MAX bindings and joins at
 * most PSC_NODE_KNOWN_MAX nodes. Returns 0, -ENOSPC (that many nodes
 * joined), -ENOMEM, -EINVAL (no address for the path) or the AV insert's
 * error. Takes the lock.
 */
#define PSC_NODE_REPLY_MAX 4096
#define PSC_NODE_KNOWN_MAX 4096
int psc_node_chan_reply_bind(struct psc_node_chan *n, uint32_t slot,
			     const struct psc_node_names *peer);

/* Whether peer is n itself (the same network address). */
bool psc_node_chan_is_self(const struct psc_node_chan *n,
			   const struct psc_node_names *peer);

/* The provider of the path at uses. */
const char *psc_node_chan_path_provider(const struct psc_node_chan *n,
					const struct psc_node_addr *at);

/*
 * Post a send of buf to the node at (tag's rank field: slot), or a
 * receive from slot (-1: any) with tag (-1: any), on any path. -ESHUTDOWN
 * once aborted, -ENOMEM, or the provider's error.
 */
int psc_node_chan_send(struct psc_node_chan *n, const struct psc_node_addr *at,
		       uint32_t slot, uint32_t tag, const void *buf,
		       size_t len, ps_comm_request_t *req, char *err,
		       size_t elen);
int psc_node_chan_recv(struct psc_node_chan *n, int slot, int64_t tag,
		       void *buf, size_t len, ps_comm_request_t *req,
		       char *err, size_t elen);

/*
 * Pre-arranged transfers on the network path (p2p/chan.h,
 * psc_irecv_bulk): the receiver posts the chunk receives of exactly len
 * bytes from slot under an id it picks, and tells the sender (the van
 * does so in its frames); the sender's chunks then go at once, with no
 * go-ahead's round trip. psc_node_chan_bulk_max gives the largest such
 * transfer and the chunk size the receiver uses (0: the network path
 * needs none, its large messages go at once). A receive needs slot bound
 * to a node on the network path (psc_node_chan_reply_bind), a send an
 * address there. -EINVAL when the transfer cannot go that way, else as
 * psc_node_chan_send.
 */
size_t psc_node_chan_bulk_max(const struct psc_node_chan *n, size_t *chunk);
/* Whether a sender to at can make a transfer of len bytes in chunks. */
bool psc_node_chan_bulk_fits(const struct psc_node_chan *n,
			     const struct psc_node_addr *at, size_t len,
			     size_t chunk);
int psc_node_chan_bulk_recv(struct psc_node_chan *n, uint32_t slot,
			    uint32_t id, void *buf, size_t len, size_t chunk,
			    ps_comm_request_t *req, char *err, size_t elen);
int psc_node_chan_bulk_send(struct psc_node_chan *n,
			    const struct psc_node_addr *at, uint32_t slot,
			    uint32_t id, const void *buf, size_t len,
			    size_t chunk, ps_comm_request_t *req, char *err,
			    size_t elen);

/* Progress every path, unless another thread holds the lock. */
void psc_node_chan_progress(struct psc_node_chan *n);

/*
 * Progress and wait until ready(arg) is true (called as psc_ep_wait
 * calls it) or deadline (psc_now() seconds); true when ready.
 */
bool psc_node_chan_wait(struct psc_node_chan *n, bool (*ready)(void *arg),
			void *arg, double deadline);

/*
 * 0, or the code of a failure of the channel's endpoints (the provider
 * failed), with its words in err. Takes the lock.
 */
int psc_node_chan_failed(struct psc_node_chan *n, char *err, size_t len);

/*
 * The watchdog's sample of every path (zeroed to start): how long, by
 * now, a thread has been inside the same libfabric call on one of them
 * (the longest; 0: none), which call, and the node it is for (*at:
 * PSC_NODE_NO_ADDR when none).
 */
struct psc_node_stuck {
	struct psc_ep_stuck path[2];
};
double psc_node_chan_stuck(struct psc_node_chan *n, struct psc_node_stuck *s,
			   double now, const char **call,
			   struct psc_node_addr *at);

/*
 * Give up the channel for good: remove its files and end the process
 * with status (the caller has said why).
 */
__attribute__((noreturn)) void psc_node_chan_abandon(struct psc_node_chan *n,
						     int status);

/* The endpoint of a path (0, 1), or NULL: for tests. */
struct psc_ep *psc_node_chan_ep(const struct psc_node_chan *n, int path);

#endif /* PSC_P2P_NODE_H */
