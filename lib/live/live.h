/*
 * Liveness: which ranks of a world communicator are alive, judged by
 * evidence and never by how long an operation takes. Each world
 * communicator runs one monitor thread. The ranks form a star around
 * rank 0 over TCP: every link carries a heartbeat both ways, a link that
 * closes without a goodbye or stays silent for PS_COMM_PEER_TIMEOUT is a
 * dead peer, and the root relays each death to the others. Every rank
 * listens: when the root dies, the lowest rank neither dead nor gone
 * becomes the root and the others join it. Peers in the
 * same kernel are also watched through pidfds, so their death is known
 * at once. A death fails every watched communicator that contains the
 * rank (psc_ep_fail_owner), which ends its waits and posts. A rank that
 * finalized is no death, but PS_COMM_PEER_TIMEOUT after its goodbye the
 * communicators that contain it fail too: nothing more can come from it.
 *
 * The same thread is the watchdog: a thread that stays inside one
 * libfabric call for PS_COMM_PEER_TIMEOUT (1 s once a node-local peer is
 * known dead) can never be brought back, so the process prints what it
 * was doing and for which peer, and exits with PSC_LIVE_EXIT.
 *
 * Functions return 0 or a negative errno with words in err. Every one is
 * thread-safe.
 */
#ifndef PSC_LIVE_H
#define PSC_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ep.h"
#include "net/auth.h"
#include "net/net.h"

/* Exit status of a process ended by the watchdog. */
#define PSC_LIVE_EXIT PSC_EP_STUCK_EXIT

struct psc_live;

struct psc_live_config {
	int rank, size;
	double timeout;		    /* PS_COMM_PEER_TIMEOUT, > 0 */
	bool watchdog;		    /* PS_COMM_WATCHDOG */
	const struct psc_iface *iface; /* rank 0 listens there */
	const char *port_range;	    /* PS_COMM_PORT_RANGE */
	int unauth_max;		    /* PS_COMM_UNAUTH_MAX */
};

/*
 * A monitor for this rank, held once by the caller; rank 0 starts
 * listening. Nothing runs until psc_live_start.
 */
int psc_live_open(struct psc_live **out, const struct psc_live_config *cfg,
		  char *err, size_t len);

/* Drop a hold; the last one stops the thread and frees l. */
void psc_live_release(struct psc_live *l);

/* This rank's part of its bootstrap record, as text. */
void psc_live_self(const struct psc_live *l, char *buf, size_t len);

/*
 * Rank r's part of its record (text from psc_live_self) and host name,
 * for every rank, this one included. Returns 0 or -EPROTO.
 */
int psc_live_peer(struct psc_live *l, int r, const char *host,
		  const char *text, char *err, size_t len);

/*
 * The job key that links authenticate with (net/auth.h); set it before
 * psc_live_start. Without it the empty key's sub-keys are used.
 */
void psc_live_set_key(struct psc_live *l, const struct psc_auth_key *key);

/*
 * Join the star once every peer is known: ranks other than 0 connect to
 * rank 0 (-ECONNRESET or -ECONNREFUSED when it is gone), then the thread
 * starts.
 */
int psc_live_start(struct psc_live *l, char *err, size_t len);

/*
 * Rank 0: every rank has finished the rendezvous, so from now each has
 * PS_COMM_PEER_TIMEOUT to connect before it counts as dead ("never
 * connected"). Until then no rank is blamed for being late: rank 0 may
 * start the thread before the slowest rank said goodbye. Other ranks:
 * no effect.
 */
void psc_live_arm(struct psc_live *l);

/*
 * Watch a communicator: owner on ep, context id ctx, with n ranks whose
 * world ranks are world[i] and fabric addresses on ep addrs[i] (both
 * copied; FI_ADDR_UNSPEC for a rank ep does not serve).
 * A death among them fails owner with -ECONNRESET; an abort of ctx by
 * any rank fails it with -ESHUTDOWN. Each watch holds the monitor.
 */
int psc_live_watch(struct psc_live *l, struct psc_ep *ep, const void *owner,
		   uint32_t ctx, const int *world, const fi_addr_t *addrs,
		   int n);

/*
 * Stop watching owner (each of its watches: one per endpoint of a pair)
 * and drop their holds (the last one frees l).
 */
void psc_live_unwatch(struct psc_live *l, const void *owner);

/*
 * An operation of owner failed in a way that suggests a dead peer, which
 * one unknown: wait up to a second for the monitor to learn of a death
 * among owner's ranks (which fails owner). If none is known by then and
 * fail is set, fail owner with evidence as its words. Returns whether a
 * death is known.
 */
bool psc_live_report(struct psc_live *l, const void *owner, bool fail,
		     const char *evidence);

/* ps_comm_abort: tell every rank, through the root, that ctx is aborted. */
void psc_live_abort(struct psc_live *l, uint32_t ctx, const char *words);

/*
 * ps_comm_revoke: tell every rank, through the root, that ctx is
 * revoked; each fails it with -EKEYREVOKED, over an earlier failure.
 */
void psc_live_revoke(struct psc_live *l, uint32_t ctx);

/* The largest world an agreement takes: one frame's bitmap of ranks. */
#define PSC_LIVE_AGREE_RANKS ((480 - 20) * 8)

/*
 * The agreement of ps_comm_agree and ps_comm_shrink among the n ranks of
 * the communicator with context id ctx (world ranks world[i], this rank
 * among them): this rank's seq-th agreement on ctx (1, 2, ... in the
 * same order on every member), decided by the liveness root.
 *   *flag  in: this rank's flag; out: the AND of the flags of the members
 *          the decision counts alive;
 *   *next  in: this rank's next free context id; out: the largest sent;
 *   failed[i] set when the decision counts member i failed (dead or
 *          gone).
 * Every member that returns 0 gets the same decision, even when members,
 * the root among them, die meanwhile: members that die are counted
 * failed, never waited for. Blocks until the decision or deadline
 * (psc_now() seconds, 0 = none). Returns 0, -ETIMEDOUT, -ESHUTDOWN (ctx
 * was aborted, or this rank is leaving), -ECONNRESET (the root gave this
 * rank up), -EOPNOTSUPP (a world above PSC_LIVE_AGREE_RANKS) or -ENOMEM, with
 * words in err.
 */
int psc_live_agree(struct psc_live *l, uint32_t ctx, uint32_t seq,
		   const int *world, int n, double deadline, uint32_t *flag,
		   uint32_t *next, bool *failed, char *err, size_t len);

/*
 * The members of that communicator decided its seq-th agreement on the
 * fabric (an allreduce that every member completed or none): keep the
 * decision (flag, next, nobody failed) as psc_live_agree would have,
 * so that a member that did not complete it, and asks through the star,
 * gets the same one. Returns 0 or -ENOMEM.
 */
int psc_live_agree_decided(struct psc_live *l, uint32_t ctx, uint32_t seq,
			   const int *world, int n, uint32_t flag,
			   uint32_t next);

/*
 * Whether world rank r is known dead here; its words (who saw it die,
 * and how) in words when it is.
 */
bool psc_live_dead(struct psc_live *l, int r, char *words, size_t len);

/*
 * The address (IP, without the port) that world rank r's liveness
 * listener has, as its record said, into host: the address its rank
 * serves on. Returns 0, or -ENOENT when r has no listener.
 */
int psc_live_host_of(struct psc_live *l, int r, char *host, size_t len);

/*
 * This rank leaves in good order (after the finalize barrier): a
 * goodbye, so its closing is no death; rank 0 first waits, bounded by
 * the timeout, for every other rank's goodbye, since it relays deaths.
 */
void psc_live_leave(struct psc_live *l);

/*
 * One frame of a liveness link, as it arrives from any peer: type u8, a
 * zero u8, payload length u16 (at most 480), rank u32, all big-endian,
 * then the payload. pl points into the bytes it was decoded from.
 */
struct psc_live_frame {
	int type;
	int rank; /* as sent: the handler checks its range per type */
	const uint8_t *pl;
	size_t plen;
};

/*
 * The first frame of the len bytes at buf (a link's stream so far): its
 * length in bytes, 0 when it is not complete yet, or -EPROTO when its
 * header announces an oversized payload. Never reads outside buf.
 */
int psc_live_frame_next(const uint8_t *buf, size_t len,
			struct psc_live_frame *f);

#endif /* PSC_LIVE_H */
