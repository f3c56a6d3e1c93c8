/*
 * What the liveness monitor's files share (private to lib/live): the
 * frame types and limits, the state of peers, links and watches, and the
 * calls one file makes into the other. live.c runs the monitor (deaths,
 * frames, the thread); live_api.c holds the calls of live.h that open,
 * join, watch and leave, and the watchdog. Every function here expects
 * l->lock held unless it says otherwise.
 */
#ifndef PSC_LIVE_INT_H
#define PSC_LIVE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "live/live.h"
#include "net/auth.h"
#include "net/listener.h"
#include "net/outq.h"
#include "net/net.h"

enum {
	F_HELLO = 1, F_BEAT, F_DEAD, F_BYE, F_ABORT, F_LEFT, F_CHAL, F_PROOF,
	F_REVOKE, F_AGREE, F_DECIDE, F_QUERY
};

#define HDR 8
#define FRAME_MAX 480
#define UNBOUND_S 5.0	      /* how long a stranger may take to authenticate */
#define STUCK_DEAD_S 1.0      /* watchdog limit once a local peer died */
#define TICK_MS 100	      /* the thread's period: checks, watchdog */
#define SUSPECT_S 5.0	      /* rank 0's verdict on a reported death */
#define REJOIN_TRY_S 0.5      /* one attempt to join a new root */

#define ABORT_LOG 16	      /* aborted contexts kept for a new root */
#define AGREE_MAX 32	      /* agreements (contexts) kept at once */
#define AGREE_HDR 20	      /* ctx, group, seq, flag, next; a bitmap */

enum peer_state { P_PENDING, P_UP, P_LEFT, P_DEAD };

struct peer {
	char host[64];
	char addr[80];	      /* its listener, "ip:port" ("-": none) */
	char proc[96];	      /* kernel and pid namespace */
	int pid;
	int pidfd;	      /* same kernel and pid namespace, else -1 */
	enum peer_state state;
	char *dead;	      /* words of its death */
	char *suspect;	      /* seen dead here, reported to rank 0 */
	double suspect_at;
	double left_at;	      /* when it left (P_LEFT) */
	bool left_failed;     /* what still waits for it was failed */
};

/*
 * A link of the star: rank 0's to each rank is a listener connection
 * (lc, fd -1); another rank's to rank 0 is its own socket (fd).
 */
struct link {
	int fd;
	struct psc_lsn_conn *lc;
	int rank;	      /* -1 once closed */
	double since, last_rx, last_tx;
	size_t inlen;
	struct psc_outq out;  /* own socket: what it did not take yet */
	bool reading;	      /* link_read is handling its frames */
	uint8_t in[HDR + FRAME_MAX];
};

struct watch {
	struct psc_ep *ep;
	const void *owner;
	uint32_t ctx;
	int n;
	int *world;
	fi_addr_t *addrs;
	bool failed;
	struct psc_ep_stuck stuck; /* the watchdog's sampler */
	struct watch *next;
};

struct psc_live {
	struct psc_live_config cfg;
	struct psc_iface iface;
	double beat;
	int listen_fd;	      /* rank 0, until the listener takes it */
	struct psc_lsn *lsn;  /* rank 0: the star's listener */
	char addr[80];
	struct psc_auth_key key;
	char proc[96];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running, stop, left;
	int root;		/* the rank at the star's centre (0 at first) */
	int rejoin;		/* join this new root next round, or -1 */
	int bye_to;		/* the root this rank said goodbye to, or -1 */
	int wake[2];
	int refs;
	double started;
	int first;		/* the first rank that died, or -1 */
	struct peer *peers;
	/*
	 * Aborts and revokes seen, for a root taking over: the frame's type
	 * and payload (ctx, words).
	 */
	struct abort_rec {
		int type;
		int from;
		size_t plen;
		uint8_t pl[FRAME_MAX];
	} aborts[ABORT_LOG];
	int naborts;
	bool cut_off;		/* the root gave this rank up */
	struct agreement *agree; /* AGREE_MAX of them (agree.c), or NULL */
	struct link *links;
	int nlinks, maxlinks;
	struct watch *watches;
};

/* A link's socket: non-blocking, without Nagle's delay. Any lock. */
void psc_live_link_setup(int fd);

/*
 * Send one frame without blocking: what the socket does not take waits
 * in the link's queue (or the listener's) for POLLOUT. False when the
 * link is broken; a frame that finds the queue full (PSC_OUTQ_MAX: the
 * peer has read nothing for that long) is dropped.
 */
bool psc_live_send(struct link *k, int type, int rank, const void *pl,
		   size_t plen);

/* The open link bound to rank, or NULL. */
struct link *psc_live_link_of(struct psc_live *l, int rank);

/* Wait on l->cond for at most secs (< 1 s). Lock held. */
void psc_live_wait_for(struct psc_live *l, double secs);

/* Wake the monitor thread. Any lock. */
void psc_live_wake(struct psc_live *l);

/* What a liveness handshake binds: the claimed rank and the size. */
void psc_live_bind(uint8_t *b, int r, int size);

/* Rank r seems dead, with evidence: suspect it (live.c). */
void psc_live_peer_died(struct psc_live *l, int r, const char *evidence);

/* The monitor thread (pthread_create's start routine); no lock held. */
void *psc_live_run(void *arg);

/* Whether link k is open. */
static inline bool psc_live_link_up(const struct link *k)
{
	return k->lc ? psc_lsn_open_p(k->lc) : k->fd >= 0;
}

/*
 * Record an abort or a revoke (type F_ABORT, F_REVOKE; its frame
 * payload: context id, then words) for a root taking over; false when
 * its context had one of that type before.
 */
bool psc_live_abort_log(struct psc_live *l, int type, int from,
			const uint8_t *pl, size_t plen);

/* The listener for the star on l->listen_fd (live.c). */
int psc_live_listen(struct psc_live *l, char *err, size_t len);

/*
 * Connect to root's listener, authenticate (HELLO, CHAL, PROOF) and
 * wait for root's first frame, which says it admitted this rank (when
 * deadline comes first, the socket is handed out all the same: root may
 * have admitted it), blocking until deadline (psc_now() seconds): the socket in *fd, or a
 * negative errno with words in err (-EACCES: root does not know the
 * key; -ECONNREFUSED: nothing listens at its address; -ECONNRESET:
 * the connection closed before root admitted it, which may be tried
 * again). Reads only what is fixed once the monitor starts (root's
 * record, the key); any lock or none (live_api.c).
 */
int psc_live_handshake(struct psc_live *l, int root, double deadline,
		       int *fd, char *err, size_t len);

/*
 * Make fd, authenticated to root, this rank's link to the root, and
 * tell the root what this rank knows: the deaths it saw and the
 * communicators aborted (live.c). False when no slot is free.
 */
bool psc_live_link_root(struct psc_live *l, int root, int fd);

/* Sample every watched endpoint's libfabric call (live_api.c). */
void psc_live_watchdog(struct psc_live *l, double now);

/*
 * Owner is leaving: wait up to REAP_S in all for the processes of its
 * dead ranks that share this kernel and are not stopped (at most
 * REAP_MAX) to exit, and remove the files each left, as the monitor
 * thread does once it sees the exit. A rank that fails its job exits at
 * once, often before the dead rank's exit is complete; without this its
 * queues stayed in /dev/shm. Drops the lock while it waits (live.c).
 */
#define REAP_S 1.0
#define REAP_MAX 64
void psc_live_reap(struct psc_live *l, const void *owner);

/*
 * Agreement (agree.c). A member of a communicator sends the root
 * AGREE(ctx, group, seq, flag, next, members) for its seq-th agreement
 * on the communicator with context ctx and lowest world rank group; the
 * root waits until every member it does not know dead or gone has sent
 * that seq, then sends each DECIDE(ctx, group, seq, AND of the live
 * members' flags, largest next, failed members). A member keeps the last
 * decision per communicator and reports it to a new root (tell_known),
 * which adopts it, so a decision some rank returned never changes.
 * Without failures the members decide on the fabric instead (an
 * allreduce, psc_live_agree_decided): a root collecting a seq then sends
 * QUERY(ctx, group, seq) to the members that did not contribute, and a
 * member that decided it so reports its decision, which the root adopts.
 */

/* Handle an F_AGREE, F_DECIDE or F_QUERY frame from k. Lock held. */
void psc_live_agree_frame(struct psc_live *l, struct link *k, int type,
			  const uint8_t *pl, size_t plen);

/* As the root: decide every agreement that can be decided. Lock held. */
void psc_live_agree_check(struct psc_live *l);

/*
 * Send over k what this rank knows of agreements: to a root its last
 * decisions (as reports) then its pending contributions; from a root,
 * the decisions of agreements k's rank takes part in. Lock held.
 */
void psc_live_agree_tell(struct psc_live *l, struct link *k, bool to_root);

/* Free the agreements' state (at the last release). */
void psc_live_agree_free(struct psc_live *l);

/* Whether rank r's process shares this kernel and pid namespace. */
bool psc_live_is_local(const struct psc_live *l, int r);

#endif /* PSC_LIVE_INT_H */
