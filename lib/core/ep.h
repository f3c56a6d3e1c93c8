/*
 * The endpoint as the layers above the core see it: an opaque handle on
 * one libfabric endpoint with its progress engine, shared by the
 * communicators built on it and told apart by context ids. Posting,
 * progress and blocking waits are here; the fields are private to the
 * core (ep_int.h).
 *
 * Locking: the endpoint lock serialises every libfabric call on the
 * endpoint and every request state change. Functions say "lock held"
 * when the caller must hold it (psc_ep_lock), "takes the lock" when they
 * take it themselves; the others need no lock.
 */
#ifndef PSC_EP_H
#define PSC_EP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/req.h"
#include "core/source.h"
#include "fabric/fabric.h"

struct psc_ep;

/*
 * Get an endpoint for a communicator: the process's open endpoint opened
 * with the same settings if there is one, else a new one (psc_fab_open,
 * then the first messages' receive buffers when the provider needs them).
 * *ctx receives the communicator's context id; ranks that create
 * communicators in the same order get the same ids (ctx NULL: none is
 * taken, for a communicator that keeps its id on another endpoint).
 * Returns 0, or a negative errno with a message in err.
 */
int psc_ep_acquire(struct psc_ep **out, const struct psc_fab_config *cfg,
		   uint32_t *ctx, char *err, size_t len);

/*
 * Like psc_ep_acquire, but always a new endpoint that no later acquire
 * shares (the van serves its endpoint's address and owns all its van
 * traffic). It is still registered, so blocking waits on other endpoints
 * progress it. Its one user's context id is 0.
 */
int psc_ep_acquire_exclusive(struct psc_ep **out,
			     const struct psc_fab_config *cfg, char *err,
			     size_t len);

/*
 * The endpoints of a node-aware communicator: *net on the best network
 * provider (cfg's role ignored: PSC_ROLE_NET) and *shm on shared memory,
 * made one pair, or the pair opened before with the same settings. A
 * pair shares one lock, one queue of software-matched receives (so an
 * ANY_SOURCE receive posted on either takes the first message of both
 * fabrics, in posting order) and context ids, and progressing or
 * waiting on one drives both. One of them is NULL when it cannot open
 * or cannot pair (the network provider cannot match in software); the
 * reason is logged, and when the network endpoint is the one missing,
 * left in err too. *ctx receives the context id (ctx NULL: none is
 * taken, as for psc_ep_acquire). Returns 0, or when
 * neither opens the network endpoint's error with words in err.
 */
int psc_ep_acquire_pair(struct psc_ep **net, struct psc_ep **shm,
			const struct psc_fab_config *cfg, uint32_t *ctx,
			char *err, size_t len);

/*
 * Like psc_ep_acquire_pair, but always a new pair that no later acquire
 * shares (the van's, for the same reasons as psc_ep_acquire_exclusive).
 */
int psc_ep_acquire_pair_exclusive(struct psc_ep **net, struct psc_ep **shm,
				  const struct psc_fab_config *cfg, char *err,
				  size_t len);

/* One more hold on an open endpoint (a split communicator). */
void psc_ep_hold(struct psc_ep *ep);

/*
 * Drop a hold; the last one closes the endpoint in libfabric's order and
 * frees every request left. Never called with the lock held.
 */
void psc_ep_release(struct psc_ep *ep);

/*
 * Context ids, one counter for the process's communicators on every
 * endpoint: the next free one (to agree on with peers), and moving past
 * ctx once the peers agreed. Ids wrap at PSC_EP_CTX_BITS bits (the
 * width p2p's tags give them, p2p/tag.h).
 */
#define PSC_EP_CTX_BITS 12
uint32_t psc_ctx_next(void);
void psc_ctx_reserve(uint32_t ctx);

/* Insert a peer's address into the AV. Takes the lock. */
int psc_ep_av_insert(struct psc_ep *ep, const void *addr, fi_addr_t *out);

void psc_ep_lock(struct psc_ep *ep);
void psc_ep_unlock(struct psc_ep *ep);
/* The lock itself, for callers that keep it (a channel, for speed). */
pthread_mutex_t *psc_ep_mutex(struct psc_ep *ep);

/* What the endpoint runs with; constant while it is open. */
const struct psc_caps *psc_ep_caps(const struct psc_ep *ep);
/*
 * The mem_tag_format tags are made for (0: 64 bits): the provider's, or
 * for a pair the narrower of the two, so one tag layout serves both.
 */
uint64_t psc_ep_tag_format(const struct psc_ep *ep);
/* The largest message sent as one piece. */
size_t psc_ep_single_limit(const struct psc_ep *ep);
/*
 * Let large send r of len bytes go without its receiver's go-ahead (p2p
 * decides which may; caps.ahead_min), if a unit is free: true and r
 * holds it (r->ahead) until it completes or is freed. ep has at most
 * PSC_EP_AHEAD_MAX, and no more than half the receive pool (rx_size)
 * shared among the addresses it knows, so that these sends cannot fill
 * a receiver's pool. A receiver takes such a message whether or not a
 * receive wants it yet, into a buffer of its own (p2p/p2p.c), so len is
 * at most PSC_EP_AHEAD_BYTES shared among the units and the addresses.
 * Lock held.
 */
bool psc_ep_ahead_take(struct psc_ep *ep, struct ps_comm_request *r,
		       size_t len);
#define PSC_EP_AHEAD_MAX 4u
#define PSC_EP_AHEAD_BYTES ((size_t)64 << 20)
const char *psc_ep_provider(const struct psc_ep *ep);
/* The rank the endpoint was opened for, for log lines. */
int psc_ep_rank(const struct psc_ep *ep);
/*
 * The providers that failed to open before this endpoint's, each with
 * why ("P: STEP failed: WHY; ..."), or "" (lib/fabric's fell_back).
 */
const char *psc_ep_fell_back(const struct psc_ep *ep);

/*
 * Remove the shared-memory message rings (core/shmring.c) that process
 * pid made and no receiver mapped yet: for a node-local peer that died.
 */
void psc_shmring_remove_pid(int pid);
uint32_t psc_ep_addr_format(const struct psc_ep *ep);
/* This endpoint's fabric address (fi_getname) and its length. */
const void *psc_ep_name(const struct psc_ep *ep, size_t *len);

/*
 * Busy-polling before a blocking wait backs off, in microseconds; a
 * negative value means "not decided yet" (PS_COMM_SPIN_US=-1).
 */
double psc_ep_spin(const struct psc_ep *ep);
void psc_ep_set_spin(struct psc_ep *ep, double us);

/*
 * A lean wait (for threads that wait most of the time beside busy
 * application threads, such as a van's receiver): sends in flight do
 * not keep a blocked wait yielding. It yields a few times, as every
 * wait does, then blocks on the CQ's wait fd (or sleeps with backoff
 * where there is none). Off by default: a wait with sends in flight
 * yields until they finish, which pushes their data soonest.
 */
void psc_ep_set_lean_wait(struct psc_ep *ep, bool lean);

/*
 * Hand r to libfabric, or queue it behind earlier ones when the provider
 * says EAGAIN. A send with r->untagged set is a first message (below):
 * it goes untagged, r->tag as its immediate, or the first
 * PSC_EP_FIRST_HDR bytes of r->scratch as its prefix, then r->buf; on
 * shm, through the peer's ring once there is one. Lock held. Returns 0
 * or a negative fi error for a failure that is not EAGAIN (r is then not
 * posted).
 */
int psc_ep_post(struct psc_ep *ep, struct ps_comm_request *r);

/* ------------------------------------------------ first messages */

/*
 * On providers whose tag matching cannot be trusted (caps.sw_match), the
 * layer above matches the first message of every send itself. The core
 * only carries such messages: untagged, each with an opaque 64-bit
 * immediate in the CQ data where the provider carries it intact
 * (caps.sw_tag_in_data), else with a prefix of PSC_EP_FIRST_HDR bytes
 * that the layer wrote and reads, then at most psc_ep_single_limit
 * bytes; into receive buffers the core keeps posted, or on shm through
 * rings in shared memory. Every arrival goes to the hook that layer
 * registered (one per endpoint; a pair shares it), which matches it or
 * keeps it. The core never reads the immediate but for its own value
 * (all bits set), which the layer above never sends.
 */
#define PSC_EP_FIRST_HDR 16

/*
 * A first message arrived on ep: imm is its immediate (0 on an endpoint
 * with prefixes, where data begins with the prefix), data its len bytes,
 * valid for the call only. Called by the core inside progress, with the
 * endpoint lock held (that of the pair, which shares it), never with the
 * source list's or the registry's lock. It may match the message to a
 * receive request and complete it (psc_req_move, psc_req_dispatch,
 * psc_req_complete), keep a copy, or drop it with a log line; it may
 * post (psc_ep_post), but never takes or drops the lock, never waits and
 * never calls psc_progress. It returns nothing: the message is consumed.
 */
typedef void (*psc_first_fn)(void *arg, struct psc_ep *ep, uint64_t imm,
			     const uint8_t *data, size_t len);

/*
 * The hook of a layer that matches first messages, registered with
 * psc_ep_first_register. Every member is set.
 */
struct psc_first_ops {
	size_t size; /* sizeof(struct psc_first_ops) */
	/* arrivals on endpoints with an immediate, and with a prefix */
	psc_first_fn arrive_imm;
	psc_first_fn arrive_hdr;
	/*
	 * Make the state (arg) the hook works on, zeroed; NULL when out of
	 * memory. Lock held.
	 */
	void *(*create)(void);
	/*
	 * r is being cancelled: if the layer holds it (a receive waiting
	 * for its message), take it out and complete it with
	 * -FI_ECANCELED, and return true; else false. Lock held.
	 */
	bool (*withdraw)(void *arg, struct ps_comm_request *r);
	/*
	 * ep closes: forget its requests and the arrivals that came on it
	 * (its requests are freed next). Lock held.
	 */
	void (*detach)(void *arg, const struct psc_ep *ep);
	/* The last endpoint sharing arg closed: free it. No lock. */
	void (*destroy)(void *arg);
	/*
	 * Progress passed on ep while the hook counted work due
	 * (psc_ep_first_due): do what is due. Lock held.
	 */
	void (*poll)(void *arg, struct psc_ep *ep);
};

/*
 * Register ops as the first-message hook of ep and of its partner, with
 * a state ops->create makes; an endpoint that has ops already keeps
 * its state. Takes the lock. Returns the state, or NULL when out of
 * memory or when another hook is registered.
 */
void *psc_ep_first_register(struct psc_ep *ep,
			    const struct psc_first_ops *ops);
/* The registered hook's state, or NULL. Lock held. */
void *psc_ep_first_arg(const struct psc_ep *ep);
/*
 * Count work of the hook up (by 1) or down (by -1) on ep and its
 * partner: while any is counted, every progress pass calls its poll.
 * Lock held.
 */
void psc_ep_first_due(struct psc_ep *ep, int by);

/*
 * Hold [buf, buf + len) registered for the children of a large message
 * parent, so they pass its descriptor without lookups; dropped when the
 * parent completes. No-op on providers without local registration.
 * Lock held. Returns 0 or an error.
 */
int psc_ep_hold_range(struct psc_ep *ep, struct ps_comm_request *parent,
		      const void *buf, size_t len);

/* Ask libfabric to cancel r (posted) or drop it from a queue. Lock held. */
void psc_ep_cancel(struct psc_ep *ep, struct ps_comm_request *r);

/*
 * Cancel every request of owner not yet done, failing them with err
 * (internal code); a GENERIC one fails through its cancelled pieces.
 * Takes the lock.
 */
void psc_ep_cancel_owner(struct psc_ep *ep, const void *owner, int err);

/*
 * owner is gone (ps_comm_finalize): its requests' handles are no longer
 * the caller's, so psc_req_valid refuses them; the requests themselves
 * live on as before. Takes the lock.
 */
void psc_ep_disown(struct psc_ep *ep, const void *owner);

/*
 * Read the CQ in batches, dispatch completions and errors, then retry
 * queued posts. Lock held. Returns the number of events handled or a
 * negative fi error when the CQ itself failed.
 */
int psc_progress(struct psc_ep *ep);

/*
 * psc_progress under the lock, then the endpoint's progress sources
 * without it. Takes the lock. Returns how many things moved.
 */
int psc_ep_progress(struct psc_ep *ep);

/* psc_progress when the lock is free at once, else nothing. */
void psc_ep_try_progress(struct psc_ep *ep);

/*
 * Block until done(arg) is true or deadline (psc_now() seconds, 0 = no
 * limit) passes, driving this endpoint, its sources and the process's
 * other endpoints. Takes the lock itself; never spins forever: busy-
 * polls for the spin time, then yields, then blocks on the CQ wait object
 * or sleeps with backoff. Returns 0 or -ETIMEDOUT.
 */
int psc_ep_wait(struct psc_ep *ep, bool (*done)(void *), void *arg,
		double deadline);

/* Progress work of a layer above: core/source.h. */

/* Append src to ep's sources: older work is polled first. */
void psc_ep_add_source(struct psc_ep *ep, struct psc_prog_src *src);

/*
 * Poll ep's sources once, without the lock; 0 when another thread is at
 * it. Returns how many things moved.
 */
int psc_ep_run_sources(struct psc_ep *ep);

/*
 * Run fn(arg) while no source of ep is being polled (to change a
 * source's state from another thread), then poll the sources.
 */
void psc_ep_with_sources(struct psc_ep *ep, void (*fn)(void *), void *arg);

/* ------------------------------------------------------- failures */

/*
 * Fail owner (a communicator whose peer died, or that was aborted): from
 * now on every wait on one of its requests that is not done ends with
 * err (internal code) and a copy of words, and psc_ep_owner_failed
 * reports it. The first failure of an owner wins, but a revoke
 * (-EKEYREVOKED) replaces an earlier one; on a pair it fails on both
 * endpoints. Never blocks on the endpoint lock and never calls
 * libfabric, so any thread may call it, even while another one is stuck
 * inside the provider.
 */
void psc_ep_fail_owner(struct psc_ep *ep, const void *owner, int err,
		       const char *words);

/*
 * owner's failure code, 0 if it has none; words (len > 0) receive its
 * words. Costs one atomic load while no owner of ep failed.
 */
int psc_ep_owner_failed(struct psc_ep *ep, const void *owner, char *words,
			size_t len);

/*
 * Never call libfabric on ep again: a node-local peer died on a provider
 * whose queues it may have left locked (caps.peer_locks). Progress,
 * posts and cancels become no-ops, and closing the endpoint leaves its
 * libfabric objects alone (they may be locked). Its owners must then be
 * failed (psc_ep_fail_owner), since nothing of theirs moves any more.
 * Like psc_ep_fail_owner, callable from any thread at any time.
 */
void psc_ep_poison(struct psc_ep *ep);

/* Whether psc_ep_poison was called on ep (one atomic load). */
bool psc_ep_poisoned(struct psc_ep *ep);

/* Drop owner's failure record (the owner is being freed). */
void psc_ep_forget_owner(struct psc_ep *ep, const void *owner);

/*
 * What ep's lock holder is doing inside libfabric, read without any
 * lock (the watchdog): seq is odd while a call is in progress, and the
 * same odd value twice means the same call; call names it and addr is
 * the peer it is for (FI_ADDR_UNSPEC: none).
 */
struct psc_ep_probe {
	uint64_t seq;
	const char *call;
	fi_addr_t addr;
};
void psc_ep_probe(struct psc_ep *ep, struct psc_ep_probe *p);

/*
 * Watchdogs (the liveness monitor's for communicators, the van's own):
 * one sampler per endpoint, zeroed to start. psc_ep_stuck_for samples
 * ep (into *p) and returns for how long, by now, its lock holder has been
 * inside the same libfabric call: 0 when none is in progress or it is
 * another call than the last sample saw. A call that stays for a peer
 * timeout can never come back (providers' blocking calls are given short
 * timeouts); psc_ep_abandon then removes every file of the process in
 * /dev/shm (the endpoint's, its pair's and the others'), which nothing
 * else will, and ends the process with status (the caller has said why).
 */
struct psc_ep_stuck {
	struct psc_ep_probe last;
	double since;
};
double psc_ep_stuck_for(struct psc_ep *ep, struct psc_ep_stuck *s, double now,
			struct psc_ep_probe *p);
__attribute__((noreturn)) void psc_ep_abandon(struct psc_ep *ep, int status);

/* The status of a process a watchdog ended (psc_ep_abandon). */
#define PSC_EP_STUCK_EXIT 75

/*
 * User registrations (ps_comm_mem_register) on ep's MR cache. Take the
 * lock. Return 0 or an internal code (-ENOENT: not a handle of ep).
 */
int psc_ep_mem_pin(struct psc_ep *ep, const void *buf, size_t len,
		   struct ps_comm_mem **out);
int psc_ep_mem_unpin(struct psc_ep *ep, struct ps_comm_mem *u);

#endif /* PSC_EP_H */
