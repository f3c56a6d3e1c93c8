/*
 * pscomm's van: a message transport keyed by node id, for parameter
 * servers built like ps-lite (one scheduler, servers, workers, each known
 * by a small integer id that the scheduler hands out).
 *
 * A message is a meta block plus any number of data segments. The van
 * moves it over pscomm's libfabric endpoint: a small frame (sender id,
 * lengths, the meta when it is small) then each segment as its own tagged
 * message, so large segments are never copied. A node's fabric address is
 * served over a small TCP exchange on the host:port the node binds, so
 * peers need only the host:port that ps-lite's Node carries.
 *
 * Lifetime: create, bind, connect to peers (and to itself), send and
 * receive, stop, then bind again or destroy. Any thread may send while one
 * thread receives. Sends never wait for the receiver; the thread in
 * ps_comm_van_recv drives progress for the whole van.
 *
 * Every function returns 0 or a negative PS_COMM_ERR_* code.
 */
#ifndef PS_COMM_VAN_H
#define PS_COMM_VAN_H

#include <stddef.h>
#include <stdint.h>

#include "ps_comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The sender id of a node that has no id yet. */
#define PS_COMM_VAN_NO_ID (-1)

typedef struct ps_comm_van *ps_comm_van_t;

/* A data segment: len bytes at data (data may be NULL when len is 0). */
typedef struct ps_comm_van_seg {
	void *data;
	size_t len;
} ps_comm_van_seg_t;

/*
 * A received message. meta, segs and every segs[i].data are owned by the
 * receiver and released, each on its own and in any order, with
 * ps_comm_van_free (or all at once with ps_comm_van_msg_release).
 */
typedef struct ps_comm_van_msg {
	int sender;		 /* node id, or PS_COMM_VAN_NO_ID */
	void *meta;
	size_t meta_len;
	size_t nseg;
	ps_comm_van_seg_t *segs; /* nseg entries (NULL when nseg is 0) */
} ps_comm_van_msg_t;

/*
 * Called once per send when the van no longer needs its buffers, with 0
 * or the error that ended the message. It may run on any thread that is
 * inside a van call, and before ps_comm_van_send returns.
 */
typedef void (*ps_comm_van_done_fn)(void *arg, int err);

/* Allocate a van. Reads pscomm's parameters (PS_COMM_*, FI_PROVIDER). */
PS_COMM_API int ps_comm_van_create(ps_comm_van_t *van);

/*
 * Open the fabric endpoint on the interface that holds host and serve
 * its address on TCP port `port` of host's address. Nothing the van
 * opens listens wider than host: NULL, "" or "*" mean pscomm's usual
 * interface choice (PS_COMM_IFNAME) and its address, and only a wildcard
 * address ("0.0.0.0", "::") listens on every address. When the port is
 * taken, max_retry > 0 lets the van take another one (from
 * PS_COMM_PORT_RANGE, else any); max_retry 0 insists on `port`. *bound
 * receives the port served. Fails with PS_COMM_ERR_ARG if the van is
 * already bound, or host does not resolve or is not one of this
 * machine's addresses (the log names it), and with PS_COMM_ERR_CONFIG
 * when PS_COMM_INTRA is not auto, shm or net. With FI_PROVIDER unset the
 * van reaches the nodes of its own node (PS_COMM_NODE_ID) over shm and
 * the others over the network, as communicators do.
 */
PS_COMM_API int ps_comm_van_bind(ps_comm_van_t van, const char *host,
				 int port, int max_retry, int *bound);

/*
 * This node's id, sent with every later message (PS_COMM_VAN_NO_ID until
 * the node has one). Thread-safe.
 */
PS_COMM_API int ps_comm_van_set_id(ps_comm_van_t van, int node_id);

/*
 * Fetch the fabric address served at host:port and make it node_id's.
 * Connecting an id again is allowed: the new address replaces the old
 * one. Connecting to this van's own host:port makes self-sends work.
 * Fails after PS_COMM_TIMEOUT seconds with PS_COMM_ERR_TIMEOUT when
 * nothing answers, and with PS_COMM_ERR_PROTO or PS_COMM_ERR_MISMATCH
 * when something else or another provider answers.
 */
PS_COMM_API int ps_comm_van_connect(ps_comm_van_t van, int node_id,
				    const char *host, int port);

/*
 * Send meta_len bytes of meta and nseg segments to node_id. Returns once
 * every piece is handed to the fabric: it never waits for the receiver.
 * The buffers must stay valid until done(arg, err) runs (done may be
 * NULL when they outlive the van). Unless the call fails with
 * PS_COMM_ERR_ARG, done runs exactly once, also when the send fails.
 * Pieces of concurrent sends to one node never interleave. A message to
 * a node id connected at this van's own address never enters the
 * fabric: it is copied and queued for ps_comm_van_recv, and done runs
 * before the call returns. Errors:
 * PS_COMM_ERR_PEER for a node id never connected, for a node that
 * failed (see ps_comm_van_recv) or whose connection the provider
 * refuses, and for a node that stopped (its goodbye came), until it is
 * connected again.
 */
PS_COMM_API int ps_comm_van_send(ps_comm_van_t van, int node_id,
				 const void *meta, size_t meta_len,
				 const ps_comm_van_seg_t *segs, size_t nseg,
				 ps_comm_van_done_fn done, void *arg);

/*
 * Block until a message arrives and fill msg. One thread at a time; that
 * thread also drives the van's progress and hands back finished sends.
 *
 * A connected node fails when a send to it or a message from it fails
 * (at once when the provider reports it), or when a send to it stays
 * unfinished for PS_COMM_OP_TIMEOUT. Whatever the provider reports,
 * while a thread waits in here every node this van ever sent to, and
 * every node whose message is being received, is probed once it has
 * been silent for a second (its address fetched again, once a second):
 * it fails when its port is closed or another endpoint is served there,
 * or when its probes have gone unanswered for PS_COMM_PEER_TIMEOUT
 * (or, when set and shorter, PS_COMM_OP_TIMEOUT) since it last showed
 * it lives (connect, a message, an answered probe). A node that answers
 * never fails this way, however long its messages take. Each failure
 * is logged with the node's id and address and reported once: the call
 * fails with PS_COMM_ERR_PEER (or PS_COMM_ERR_TIMEOUT for a node silent
 * past PS_COMM_OP_TIMEOUT) and msg->sender holds the node's id; the van
 * keeps running. When ps_comm_van_stop begins while a thread is in
 * here, the call fails with PS_COMM_ERR_CANCELED.
 *
 * Messages come in the order their first frames arrived, so those of one
 * sender keep their order. Messages of different senders have no order,
 * even when one caused the other (A tells B, B then sends to C: C may see
 * B's message before A's). Malformed frames, frames from senders this
 * van never served, frames naming a node id from an older connection
 * than the one that id last sent from, and messages whose pieces fail or
 * stall past PS_COMM_OP_TIMEOUT are logged and dropped. Fails with
 * PS_COMM_ERR_ARG on a van that is not bound, and with
 * PS_COMM_ERR_FABRIC, from then on, once the provider reported a
 * completion for an operation it no longer held (logged as an error):
 * its data may have gone to the wrong buffer.
 *
 * A node that stops cleanly (ps_comm_van_stop) says goodbye first to
 * every node that sent to it. Its silence is then no failure: it is
 * not probed until it is connected again, and nothing is reported, so a
 * caller that still expects a message from it must not wait for one
 * (ps-lite's Finalize barrier makes sure nobody does).
 */
PS_COMM_API int ps_comm_van_recv(ps_comm_van_t van, ps_comm_van_msg_t *msg);

/* Release memory that ps_comm_van_recv handed out. NULL is ignored. */
PS_COMM_API void ps_comm_van_free(void *ptr);

/* Release everything a received message holds and clear it. */
PS_COMM_API void ps_comm_van_msg_release(ps_comm_van_msg_t *msg);

/*
 * Say goodbye to every node that sent to this van, finish (or after
 * PS_COMM_OP_TIMEOUT, at most 10 s, cancel) outstanding sends and the
 * goodbyes, stop serving the address, forget every peer and close the
 * endpoint. Sends to nodes that failed are not waited for, and nodes
 * that hold unfinished sends are probed each second, so stop takes
 * about a second for a node that died unnoticed. A thread inside
 * ps_comm_van_recv is made to return first (PS_COMM_ERR_CANCELED); no
 * other van call may overlap stop. The van can then be bound again.
 */
PS_COMM_API int ps_comm_van_stop(ps_comm_van_t van);

/*
 * Stop if needed and free the van. NULL is ignored. A destroyed handle
 * is refused by every van call with PS_COMM_ERR_ARG ("" from
 * ps_comm_van_provider, nothing from destroy) as far as the freed memory
 * still holds its cleared magic word: best effort, as for communicators.
 */
PS_COMM_API void ps_comm_van_destroy(ps_comm_van_t van);

/* The libfabric provider in use ("" before bind). */
PS_COMM_API const char *ps_comm_van_provider(ps_comm_van_t van);

#ifdef __cplusplus
}
#endif

#endif /* PS_COMM_VAN_H */
