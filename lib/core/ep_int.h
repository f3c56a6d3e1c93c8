/*
 * The core's private view of an endpoint: its fields, and the contracts
 * between the core's own files (requests, progress, first messages and
 * their shm rings, registration of request buffers). Included only under
 * lib/core/.
 */
#ifndef PSC_EP_INT_H
#define PSC_EP_INT_H

#include <pthread.h>
#include <stdio.h>

#include "core/ep.h"
#include "fabric/mr.h"

/*
 * What the endpoints of a pair share (psc_ep_acquire_pair): the lock, and
 * the first-message hook with its state (psc_ep_first_register), so that
 * the first message of either fabric meets the receives of both in one
 * posting order. An endpoint alone has its own. refs (under eps_lock)
 * counts the endpoints on it; first_ops and first_arg change under lock.
 */
struct psc_ep_shared {
	pthread_mutex_t lock;
	const struct psc_first_ops *first_ops; /* NULL: none registered */
	void *first_arg;		       /* the hook's state */
	unsigned first_due;		       /* psc_ep_first_due's count */
	int refs;
};

/* Room for an endpoint's registry key (ep_key: settings, FI_PROVIDER). */
#define PSC_EP_KEY_LEN 256

/*
 * One endpoint: its libfabric objects (fab) and the engine state around
 * them. *lock guards everything but the registry links, the source list
 * and the fields that never change after open; pair is the other
 * endpoint of a pair (NULL: none), changed only under *lock and read
 * atomically by the failure calls that take no lock.
 */
struct psc_ep {
	pthread_mutex_t *lock;	       /* &sh->lock */
	struct psc_ep_shared *sh;
	struct psc_ep *pair;
	struct psc_fab fab;
	uint64_t tag_format;	       /* psc_ep_tag_format */
	struct psc_req_queue txq, rxq; /* posts deferred by EAGAIN */
	struct ps_comm_request *live;  /* every allocated request */
	psc_first_fn first_fn;	       /* the hook (sh->first_ops), cached */
	void *first_arg;	       /* its state (sh->first_arg) */
	size_t first_eager;	       /* largest untagged payload */
	bool first_imm;		       /* immediate in CQ data, no prefix */
	uint64_t first_dropped;	       /* malformed arrivals dropped */
	void *first_slab;	       /* the first messages' buffers */
	struct psc_shmring *shmring;   /* shm rings (shmring.c), or NULL */
	size_t posted[2];	       /* sends, receives libfabric holds */
	size_t posted_bounces;	       /* of posted[1]: bounce buffers */
	size_t post_limit[2];	       /* at most this many (queue depth) */
	bool in_progress;	       /* inside psc_progress's CQ reads */
	unsigned ahead;		       /* requests holding a unit of
					* psc_ep_ahead_take, under the lock */
	double spin_us;		       /* busy-poll before backing off */
	bool lean_wait;		       /* block at once, never yield */
	size_t av_count;	       /* addresses inserted: written under
					* the lock, atomic (relaxed: a hint)
					* as block_briefly reads it without */
	double quiet_progress;	       /* a pair's half with no address in
					* its AV: when it was last progressed
					* (progress.c), under the lock */
	/* The process's endpoint registry (endpoint.c). */
	struct psc_ep *next_ep;
	char key[PSC_EP_KEY_LEN];      /* what sharing it requires */
	int refs;		       /* users holding it */
	/* Progress sources (progress.c), under src_lock. */
	pthread_mutex_t src_lock;
	struct psc_prog_src *src_head;
	int src_count;		       /* read without the lock */
	/* Failed owners (fail.c), under fail_lock; fail_count is atomic. */
	pthread_mutex_t fail_lock;
	struct psc_owner_fail *fail_head;
	int fail_count;
	bool poisoned;		       /* atomic: libfabric is off limits */
	/*
	 * The libfabric call in progress, for the watchdog (fail.c): written
	 * by the lock holder with atomic stores, read by anyone. prov_seq
	 * is odd while a call is inside the provider.
	 */
	uint64_t prov_seq;
	const char *prov_call;
	fi_addr_t prov_addr;
};

/*
 * Bracket one libfabric call on ep (lock held): what it is and the peer
 * it is for (FI_ADDR_UNSPEC: none), so the watchdog can name a thread
 * that never comes back.
 */
static inline void psc_prov_enter(struct psc_ep *ep, const char *call,
				   fi_addr_t addr)
{
	__atomic_store_n(&ep->prov_call, call, __ATOMIC_RELAXED);
	__atomic_store_n(&ep->prov_addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&ep->prov_seq, ep->prov_seq + 1, __ATOMIC_RELEASE);
}

static inline void psc_prov_exit(struct psc_ep *ep)
{
	__atomic_store_n(&ep->prov_seq, ep->prov_seq + 1, __ATOMIC_RELEASE);
}

/* Free the failed-owner records at close. */
void psc_fail_close(struct psc_ep *ep);

/*
 * The process's open endpoints, which blocking waits also progress.
 * psc_ep_each_other calls fn on every endpoint but self whose lock it can
 * take without waiting (lock held during fn). psc_ep_count is their
 * number (relaxed read).
 */
void psc_ep_each_other(const struct psc_ep *self,
		       void (*fn)(struct psc_ep *));
int psc_ep_count(void);

/* Cancel every piece of r that libfabric still holds. Lock held. */
void psc_req_cancel_tree(struct ps_comm_request *r);

/* ------------------------------------------ first messages (first.c) */

/*
 * Default largest eager payload of a first message (ep->first_eager: the
 * profile's caps.sw_eager instead when set, less when the provider's
 * max_msg_size is smaller).
 */
#define PSC_FIRST_EAGER 8192

/*
 * The one immediate that is the core's own: a shared-memory ring's
 * announcement (shmring.c), which never reaches the hook. The layers
 * above never send it (p2p's tags leave their protocol field's top
 * value unused, p2p/tag.h).
 */
#define PSC_FIRST_CORE_IMM UINT64_MAX

/* Give a new endpoint the hook that drops what arrives (none yet). */
void psc_first_init(struct psc_ep *ep);
/* Post the endpoint's receive buffers (caps.sw_match). Returns 0/-errno. */
int psc_first_open(struct psc_ep *ep);
/*
 * Free the receive buffers (at close, after psc_fab_close dropped their
 * registration).
 */
void psc_first_close(struct psc_ep *ep);
/* ep joined a pair: take the pair's hook. Lock held. */
void psc_first_pair(struct psc_ep *ep);
/*
 * ep closes: the hook forgets its receives and the arrivals that came on
 * it (ops->detach). Lock held.
 */
void psc_first_detach(struct psc_ep *ep);
/* The last endpoint on sh closed: free the hook's state. */
void psc_first_destroy(struct psc_ep_shared *sh);
/* Withdraw r from the hook's layer (ops->withdraw). Lock held. */
bool psc_first_withdraw(struct psc_ep *ep, struct ps_comm_request *r);
/* A progress pass with work of the hook due (ops->poll). Lock held. */
void psc_first_poll(struct psc_ep *ep);
/*
 * A receive buffer b got a first message: hand it to the hook (a ring's
 * announcement to psc_shmring_accept), then repost b. Lock held.
 */
void psc_first_arrival(struct psc_ep *ep, struct ps_comm_request *b,
		       const struct fi_cq_tagged_entry *ev);

/*
 * Hand one first message to ep's hook, inline: the one indirect call of
 * a delivery. Lock held, inside progress.
 */
static inline void psc_first_deliver(struct psc_ep *ep, uint64_t imm,
				     const uint8_t *data, size_t len)
{
	ep->first_fn(ep->first_arg, ep, imm, data, len);
}


/* ------------------------------------------ request buffer registration */

/*
 * The buffer and descriptor to post r with (ep->mr_local only): r->buf
 * inside its parent's held range, a pinned range or a cached one; small
 * ones (and request scratch) through a slot, into which a send's bytes
 * are copied now. The holds are recorded in r (r->mr, r->mr_slot), so
 * calling it again after -FI_EAGAIN reuses them. Returns 0 or an error
 * (nothing held then).
 */
int psc_reqmr_prepare(struct psc_ep *ep, struct ps_comm_request *r,
		       void **buf, void **desc);

/*
 * The same for an untagged send of hdr (hdrlen bytes) followed by r->buf:
 * one flat slot when both fit, else the header in a slot and the payload
 * registered. Fills iov/desc (2 entries) and *count.
 */
int psc_reqmr_prepare_hdr(struct psc_ep *ep, struct ps_comm_request *r,
			   const void *hdr, size_t hdrlen, struct iovec *iov,
			   void **desc, size_t *count);

/*
 * r's operation is over: copy a receive's first `got` bytes (at most
 * r->len) from its slot to r->buf, then drop r's holds. Idempotent;
 * safe on any request.
 */
void psc_reqmr_done(struct psc_ep *ep, struct ps_comm_request *r,
		     size_t got);

/*
 * Hold [buf, buf + len) for the children of a large message parent, so
 * they pass its descriptor without lookups; dropped by psc_reqmr_done on
 * the parent. No-op without ep->mr_local. Returns 0 or an error.
 */
int psc_reqmr_hold(struct psc_ep *ep, struct ps_comm_request *parent,
		    const void *buf, size_t len);

/* -------------------------------------- shared-memory rings (shmring.c) */

struct psc_shmring;

/*
 * Give ep (shm, first messages with an immediate) its ring state.
 * Returns 0/-ENOMEM.
 */
int psc_shmring_open(struct psc_ep *ep);
/*
 * Unmap every ring at close; a ring's name stays for its receiver when
 * it holds messages the receiver has not mapped yet.
 */
void psc_shmring_close(struct psc_ep *ep);
/*
 * Send first message r through the ring to r->addr: 0 when it is in the
 * ring (r is then done), -FI_EAGAIN when the ring is full, 1 when that
 * address has no ring (post it through libfabric). Lock held.
 */
int psc_shmring_send(struct psc_ep *ep, struct ps_comm_request *r);
/*
 * After a first message to addr went through libfabric: create the ring
 * for addr if there is none and announce it (PSC_FIRST_CORE_IMM); once the
 * announcement is sent, psc_shmring_send takes the next ones. Lock held.
 */
void psc_shmring_offer(struct psc_ep *ep, fi_addr_t addr);
/* An announcement arrived (len bytes at data): map that ring. Lock held. */
void psc_shmring_accept(struct psc_ep *ep, const uint8_t *data, size_t len);
/*
 * Deliver what the mapped rings hold, in each ring's order, to the
 * first-message hook (psc_first_deliver). Returns how many messages.
 * Lock held, inside progress (ep->in_progress), so that no delivery polls
 * the rings again.
 */
int psc_shmring_poll(struct psc_ep *ep);
/*
 * Sleep at most secs, or until a sender rings one of ep's mapped rings
 * (at once when one already holds a message). Returns false, without
 * sleeping, when ep maps no ring. Takes the lock; call without it.
 */
bool psc_shmring_sleep(struct psc_ep *ep, double secs);

/*
 * Publish cpu, the CPU the calling waiter runs on, in each of ep's rings
 * (written only when it changed), and say whether the process at the
 * other end of one of them last waited on that same CPU: 1 if so (it can
 * run only when this thread yields), 0 if not, -1 when ep has no ring to
 * tell. Lock held.
 */
int psc_shmring_cpu_shared(struct psc_ep *ep, int cpu);

/* What ep's rings are doing, for the unit suite (check_shmring.c). */
struct psc_shmring_stats {
	size_t tx_on;	     /* rings ep sends through */
	size_t rx_mapped;    /* rings ep receives from */
	size_t tx_bytes;     /* what its rings take in /dev/shm */
	unsigned tx_sleepers; /* receivers asleep on ep's rings' bells */
	bool bell_heard;     /* a bell woke ep at least once */
};
/* Fill st (zeros without rings). Takes the lock. */
void psc_shmring_stats(struct psc_ep *ep, struct psc_shmring_stats *st);

#endif /* PSC_EP_INT_H */
